"""The MIG catalog data against its documentation table and against the GPU Operator's default mig-parted config."""
import pathlib
import re

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import (
    layouts as mig, catalog as mig_catalog)

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "mig_catalog.md"

# Facts taken from NVIDIA/gpu-operator assets/state-mig-manager/0400_configmap.yaml at commit
# a22dbf671f2e26f9a1e342f8eea28e196235e110 (2026-08-21): every PCI device ID that the default
# mig-parted config names in a device-filter (all-balanced and all-1g.10gb, all-1g.35gb), with the
# product name of the comment above it. Entries without a filter apply to every GPU and name none.
UPSTREAM_REPO = "NVIDIA/gpu-operator"
UPSTREAM_PATH = "assets/state-mig-manager/0400_configmap.yaml"
UPSTREAM_COMMIT = "a22dbf671f2e26f9a1e342f8eea28e196235e110"
UPSTREAM_DEVICES = {
    "0x294110DE": "GB200 HGX",
    "0x2BB510DE": "RTX-PRO-6000-96GB",
    "0x290110DE": "B200",
    "0x234810DE": "GH200 144G HBM3e",
    "0x233510DE": "H200 141GB",
    "0x233B10DE": "H200 NVL",
    "0x232110DE": "H100 NVL",
    "0x233A10DE": "H800 NVL",
    "0x233010DE": "H100-80GB",
    "0x233110DE": "H100-80GB",
    "0x232210DE": "H800-80GB",
    "0x232410DE": "H800-80GB",
    "0x20B210DE": "A100-80GB",
    "0x20B510DE": "A100-80GB",
    "0x20F310DE": "A800-80GB",
    "0x20F510DE": "A800-80GB",
    "0x20B010DE": "A100-40GB",
    "0x20B110DE": "A100-40GB",
    "0x20F110DE": "A100-40GB",
    "0x20F610DE": "A800-40GB",
    "0x20B710DE": "A30-24GB",
    "0x234210DE": "GH200",
    "0x233D10DE": "H100-96GB",
    "0x20B610DE": "PG506-96GB",
    "0x232910DE": "H20",
    "0x318210DE": "B300",
    "0x31C210DE": "GB300",
}
# The all-balanced mix upstream gives each device, to compare with the catalog's.
UPSTREAM_BALANCED = {
    "0x294110DE": {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1},
    "0x2BB510DE": {"1g.24gb": 2, "2g.48gb": 1},
    "0x290110DE": {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
    "0x234810DE": {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
    "0x233510DE": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    "0x232110DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    "0x233010DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x20B010DE": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    "0x20B710DE": {"1g.6gb": 2, "2g.12gb": 1},
    "0x234210DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    "0x318210DE": {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1},
    "0x31C210DE": {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1},
}
# Blackwell and newer products the issue named: they must be in the catalog by name.
REQUIRED = ("RTX-PRO-6000-96GB", "GB200", "B200", "B300", "GB300")


def _by_device():
    return {i.upper(): key for key, spec in mig.CATALOG.items() for i in spec["device_ids"]}


def _doc_rows():
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or cells[0] in ("product", "") or set(cells[0]) <= set("-"):
            continue
        rows[cells[0]] = cells
    return rows


def test_upstream_fact_list_names_its_origin():
    assert UPSTREAM_REPO == "NVIDIA/gpu-operator" and UPSTREAM_PATH.endswith("0400_configmap.yaml")
    assert re.match(r"^[0-9a-f]{40}$", UPSTREAM_COMMIT)
    assert all(mig.DEVICE_ID.match(i) for i in UPSTREAM_DEVICES)


@pytest.mark.parametrize("device, name", sorted(UPSTREAM_DEVICES.items()))
def test_every_device_of_the_operator_default_config_is_in_the_catalog(device, name):
    assert device.upper() in _by_device(), "%s (%s) has a layout upstream but is not in the catalog" % (device, name)


@pytest.mark.parametrize("device, mix", sorted(UPSTREAM_BALANCED.items()))
def test_balanced_mix_matches_the_operator_default_config(device, mix):
    spec = mig.CATALOG[_by_device()[device.upper()]]
    assert spec["balanced"] == mix
    assert mig.named_layout("all-balanced", spec["product"])[0]["mig-devices"] == mix


@pytest.mark.parametrize("product", REQUIRED)
def test_named_blackwell_products_are_in_the_catalog(product):
    assert product in mig.CATALOG
    assert mig.layout_names(product)[:3] == ["all-disabled", "all-enabled", "all-balanced"]


def test_catalog_grew_and_keeps_the_known_gaps_named():
    assert len(mig.CATALOG) >= 20
    assert set(mig_catalog.NOT_IN_CATALOG).isdisjoint(mig.CATALOG)


def test_every_product_of_the_data_is_in_the_doc_with_its_facts_and_source():
    rows = _doc_rows()
    for key, spec in mig.CATALOG.items():
        assert key in rows, "%s is in the data but not in docs/mig_catalog.md" % key
        ids, labels, memory, slices, profiles, source = rows[key][1:]
        assert re.findall(r"0x[0-9A-F]{8}", ids) == spec["device_ids"], key
        assert re.findall(r"`([^`]+)`", labels) == spec["labels"], key
        assert memory == "%d GB" % spec["memory_gb"] and slices == str(spec["slices"]), key
        assert profiles == ", ".join("%s x%d" % (n, p["max_instances"]) for n, p in spec["profiles"].items()), key
        assert source == spec["source"], key


def test_every_product_of_the_doc_is_in_the_data():
    extra = sorted(set(_doc_rows()) - set(mig.CATALOG))
    assert not extra, "docs/mig_catalog.md lists products the data does not have: %s" % extra


def test_doc_names_the_guide_products_left_out():
    text = DOC.read_text(encoding="utf-8")
    for name in mig_catalog.NOT_IN_CATALOG:
        assert name in text


@pytest.mark.parametrize("label, product", [
    ("NVIDIA-GB200", "GB200"),
    ("NVIDIA-B300-SXM6-AC", "B300"),
    ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb", "RTX-PRO-6000-96GB"),
    ("NVIDIA-H20", "H20-96GB"),
    ("NVIDIA-H800", "H800-80GB"),
    ("NVIDIA-A800-SXM4-80GB", "A800-80GB"),
])
def test_new_labels_resolve(label, product):
    assert mig.product_for_label(label) == product


def test_rtx_pro_6000_graphics_and_media_profiles_fit_by_slices():
    mig.validate_layout("RTX-PRO-6000-96GB", {"2g.48gb+gfx": 1, "1g.24gb-me": 2})
    mig.validate_layout("RTX-PRO-6000-96GB", {"4g.96gb+gfx": 1})
    with pytest.raises(mig.ParamError) as err:
        mig.validate_layout("RTX-PRO-6000-96GB", {"2g.48gb": 2, "1g.24gb": 1})
    assert "compute slices" in err.value.msg
    assert mig.named_layout("all-1g.24gb.me.all", "RTX-PRO-6000-96GB")[0]["mig-devices"] == {"1g.24gb+me.all": 1}
    assert mig.resources("RTX-PRO-6000-96GB", mig.named_layout("all-1g.24gb-me", "RTX-PRO-6000-96GB"), "mixed", 2) == {
        "nvidia.com/mig-1g.24gb-me": 8}


def test_gb300_one_slice_profile_allows_seven():
    assert mig.named_layout("all-1g.35gb", "GB300")[0]["mig-devices"] == {"1g.35gb": 7}
    assert mig.named_layout("all-1g.35gb", "H200-141GB")[0]["mig-devices"] == {"1g.35gb": 4}


def test_every_driver_dependent_spelling_of_the_data_is_in_the_doc_with_its_source():
    text = DOC.read_text(encoding="utf-8")
    rows = {}
    for line in text.split("## Profile names that depend on the driver", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] in mig.CATALOG:
            rows[cells[0]] = cells
    spelled = {key: spec["spellings"] for key, spec in mig.CATALOG.items() if spec["spellings"]}
    assert set(rows) == set(spelled)
    for key, spellings in spelled.items():
        assert [rows[key][1], rows[key][2]] == [", ".join(row["names"]) for row in spellings], key
        assert all(row["source"] in text and (row["driver"] is None or row["driver"] in text) for row in spellings), key
