"""Table-driven tests of the MIG domain's catalog (entries, device ids, balanced mixes, slice counts)
and of its node labels."""
import itertools

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from tests.unit.mig_helpers import PRODUCTS


# --- catalog -------------------------------------------------------------------------------------

@pytest.mark.parametrize("product", PRODUCTS)
def test_catalog_entry_is_complete_and_sourced(product):
    spec = mig.CATALOG[product]
    assert spec["product"] == product
    assert spec["source"].startswith("https://")
    assert spec["placements_source"] is None or spec["placements_source"].startswith("https://")
    assert (spec["slices"], spec["memory_slices"]) in ((7, 8), (4, 4))
    # Labels only where one was seen on a GFD-labelled node; every product has its device IDs.
    assert spec["device_ids"] and isinstance(spec["labels"], list)
    assert spec["facts_source"].startswith("https://")
    assert all(mig.DEVICE_ID.match(i) and i.upper().endswith("10DE") for i in spec["device_ids"])
    full = [p for n, p in spec["profiles"].items() if p["slices"] == spec["slices"] and "+" not in n]
    assert len(full) == 1 and full[0]["memory_slices"] == spec["memory_slices"]
    assert full[0]["memory_gb"] == spec["memory_gb"]
    for name, profile in spec["profiles"].items():
        assert mig.PROFILE_NAME.match(name)
        assert name.startswith("%dg." % profile["slices"])
        assert profile["slices"] * profile["max_instances"] <= spec["slices"]
        assert profile["memory_slices"] * profile["max_instances"] <= spec["memory_slices"]
        if "+me" in name:
            assert profile["max_instances"] == 1
        # The memory in the name is the product's memory split in memory slices, rounded.
        share = float(spec["memory_gb"]) * profile["memory_slices"] / spec["memory_slices"]
        assert abs(profile["memory_gb"] - share) <= 1.5, (name, share)
    assert set(spec["balanced"]) <= set(spec["profiles"])
    assert (spec["placements_source"] is not None) == mig._has_placements(spec)


def test_device_ids_and_labels_are_unique_across_products():
    ids = [i.upper() for spec in mig.CATALOG.values() for i in spec["device_ids"]]
    labels = [label.upper() for spec in mig.CATALOG.values() for label in spec["labels"]]
    assert len(ids) == len(set(ids))
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("product", PRODUCTS)
def test_balanced_mix_follows_the_mig_parted_rule(product):
    """mig-parted's generated all-balanced (pkg/mig/builder/balanced.go): 7 slices -> 2 x 1g + 1 x 2g +
    1 x 3g, 4 slices -> 2 x 1g + 1 x 2g, each the base profile (no +me) with the highest instance count.
    The catalog's table (from the GPU Operator's static default config) must say the same."""
    spec = mig.CATALOG[product]
    formula = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}[spec["slices"]]
    expected = {}
    for g, count in formula.items():
        base = [(p["max_instances"], n) for n, p in spec["profiles"].items()
                if "+" not in n and "-" not in n and p["slices"] == g]
        expected[max(base)[1]] = count
    assert spec["balanced"] == expected


@pytest.mark.parametrize("product", [p for p in PRODUCTS if mig._has_placements(mig.CATALOG[p])])
def test_slice_count_rule_agrees_with_published_placements(product):
    """Where NVIDIA's -lgipp placements are public, the slice-count fallback accepts exactly the same
    combinations as the placement search: every count of every profile up to its limit."""
    spec = mig.CATALOG[product]
    names = list(spec["profiles"])
    checked = 0
    for counts in itertools.product(*[range(spec["profiles"][n]["max_instances"] + 1) for n in names]):
        devices = {n: c for n, c in zip(names, counts) if c}
        if not devices:
            continue
        compute = sum(spec["profiles"][n]["slices"] * c for n, c in devices.items())
        placed = compute <= spec["slices"] and mig._place(spec, devices) is not None
        assert placed == mig._fits_by_count(spec, devices), devices
        checked += 1
    assert checked > 1000


# --- labels --------------------------------------------------------------------------------------

@pytest.mark.parametrize("label, product", [
    ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
    ("NVIDIA-A100-80GB-PCIe", "A100-80GB"),
    ("NVIDIA-A100-80GB-PCIe-MIG-1g.10gb", "A100-80GB"),
    ("NVIDIA-A100-SXM4-40GB", "A100-40GB"),
    ("NVIDIA-A100-PCIE-40GB", "A100-40GB"),
    ("A100-SXM4-40GB", "A100-40GB"),                       # drivers before the NVIDIA prefix
    ("A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-40GB"),     # single strategy + time-slicing
    ("NVIDIA-A100-SXM4-80GB-SHARED", "A100-80GB"),
    ("nvidia-a100-sxm4-80gb", "A100-80GB"),
    ("  NVIDIA-A30  ", "A30-24GB"),
    ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),
    ("NVIDIA-H100-80GB-HBM3-MIG-3g.40gb", "H100-80GB"),
    ("NVIDIA-H100-PCIe", "H100-80GB"),
    ("NVIDIA-H100-NVL", "H100-94GB"),
    ("NVIDIA-GH200-480GB", "GH200-96GB"),
    ("NVIDIA-H200", "H200-141GB"),
    ("NVIDIA-H200-NVL", "H200-141GB"),
    ("NVIDIA-GH200-144G-HBM3e", "GH200-144GB"),
    ("NVIDIA-B200", "B200"),
    ("Tesla-T4", None),
    ("NVIDIA-L40S", None),
    ("NVIDIA-L4", None),
    ("Tesla-V100-SXM2-16GB", None),
    ("NVIDIA-GH200-120GB", None),                          # memory of its GPU not documented here
    ("NVIDIA-A100-SXM4-80GBX", None),
    ("", None),
    (None, None),
])
def test_product_for_label(label, product):
    assert mig.product_for_label(label) == product


@pytest.mark.parametrize("product", PRODUCTS)
def test_every_catalog_label_maps_back(product):
    for label in mig.CATALOG[product]["labels"]:
        assert mig.product_for_label(label) == product
        assert mig.product_for_label(label + "-MIG-1g.10gb") == product
