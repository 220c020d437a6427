"""Table-driven tests of the MIG domain: catalog, labels, layouts, mig-parted configs, resources."""
import copy
import itertools

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import mig
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

PRODUCTS = list(mig.CATALOG)
NAMED = [(product, name) for product in PRODUCTS for name in mig.layout_names(product)]
PROFILES = [(product, name) for product in PRODUCTS for name in mig.CATALOG[product]["profiles"]]


def refused(call, *args, **kwargs):
    with pytest.raises(ParamError) as err:
        call(*args, **kwargs)
    assert "Fix:" in err.value.msg
    return err.value


def config(**configs):
    return {"version": "v1", "mig-configs": configs}


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


# --- named layouts -------------------------------------------------------------------------------

@pytest.mark.parametrize("product, name", NAMED)
def test_every_product_and_named_layout_resolves_and_validates(product, name):
    entries = mig.named_layout(name, product)
    assert entries and all(e["devices"] == "all" for e in entries)
    nodes = {"node-a": product}
    nodes.update({"node-%d" % i: label for i, label in enumerate(mig.CATALOG[product]["labels"])})
    assert mig.validate_mig_parted_config(config(**{name: entries}), nodes) == [name]
    for entry in entries:
        if entry["mig-enabled"] and entry["mig-devices"]:
            mig.validate_layout(product, entry["mig-devices"])
    allocatable = mig.resources(product, entries, "mixed", 8)
    if name == "all-disabled":
        assert allocatable == {"nvidia.com/gpu": 8}


@pytest.mark.parametrize("product, profile", PROFILES)
def test_all_profile_layout_asks_for_the_maximum(product, profile):
    name = "all-" + profile.replace("+", ".")
    maximum = mig.CATALOG[product]["profiles"][profile]["max_instances"]
    assert mig.named_layout(name, product) == [{"devices": "all", "mig-enabled": True,
                                                "mig-devices": {profile: maximum}}]


@pytest.mark.parametrize("name, product, devices", [
    # GPU Operator default-mig-parted-config and the MIG User Guide's tables.
    ("all-1g.10gb", "A100-80GB", {"1g.10gb": 7}),
    ("all-1g.10gb", "H100-80GB", {"1g.10gb": 7}),
    ("all-1g.10gb", "A100-40GB", {"1g.10gb": 4}),     # the 2-memory-slice 1g on A100-40GB (R525+)
    ("all-1g.5gb", "A100-40GB", {"1g.5gb": 7}),
    ("all-1g.5gb.me", "A100-40GB", {"1g.5gb+me": 1}),
    ("all-1g.10gb.me", "A100-80GB", {"1g.10gb+me": 1}),
    ("all-1g.20gb", "A100-80GB", {"1g.20gb": 4}),
    ("all-2g.20gb", "A100-80GB", {"2g.20gb": 3}),
    ("all-3g.40gb", "A100-80GB", {"3g.40gb": 2}),
    ("all-7g.80gb", "A100-80GB", {"7g.80gb": 1}),
    ("all-1g.6gb", "A30-24GB", {"1g.6gb": 4}),
    ("all-2g.12gb.me", "A30-24GB", {"2g.12gb+me": 1}),
    ("all-3g.71gb", "H200-141GB", {"3g.71gb": 2}),
    ("all-1g.12gb", "H100-94GB", {"1g.12gb": 7}),
    ("all-3g.48gb", "GH200-96GB", {"3g.48gb": 2}),
    ("all-1g.36gb", "GH200-144GB", {"1g.36gb": 4}),
    ("all-4g.90gb", "B200", {"4g.90gb": 1}),
    ("all-balanced", "A100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("all-balanced", "H100-80GB", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("all-balanced", "A100-40GB", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    ("all-balanced", "A30-24GB", {"1g.6gb": 2, "2g.12gb": 1}),
    ("all-balanced", "H100-94GB", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    ("all-balanced", "GH200-96GB", {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
    ("all-balanced", "H200-141GB", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
    ("all-balanced", "GH200-144GB", {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}),
    ("all-balanced", "B200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
])
def test_named_layout_facts(name, product, devices):
    assert mig.named_layout(name, product) == [{"devices": "all", "mig-enabled": True, "mig-devices": devices}]


@pytest.mark.parametrize("product", PRODUCTS)
def test_disabled_and_enabled_layouts(product):
    assert mig.named_layout("all-disabled", product) == [{"devices": "all", "mig-enabled": False}]
    assert mig.named_layout("all-enabled", product) == [{"devices": "all", "mig-enabled": True, "mig-devices": {}}]


def test_named_layout_returns_a_copy():
    entries = mig.named_layout("all-balanced", "A100-80GB")
    entries[0]["mig-devices"]["1g.10gb"] = 99
    assert mig.CATALOG["A100-80GB"]["balanced"]["1g.10gb"] == 2
    assert mig.named_layout("all-balanced", "A100-80GB")[0]["mig-devices"]["1g.10gb"] == 2


@pytest.mark.parametrize("name, product, words", [
    ("all-1g.5gb", "A100-80GB", ["all-1g.5gb needs the MIG profile 1g.5gb", "A100-80GB does not have",
                                 "A100-40GB, A800-40GB have it"]),
    ("all-1g.6gb", "H100-80GB", ["needs the MIG profile 1g.6gb", "A30-24GB has it"]),
    ("all-1g.10gb.me", "A100-40GB", ["needs the MIG profile 1g.10gb+me", "A100-80GB, A800-80GB, H100-80GB, H800-80GB have it"]),
    ("all-3g.40gb", "A100-40GB", ["needs the MIG profile 3g.40gb"]),
    ("all-9g.99gb", "B200", ["needs the MIG profile 9g.99gb", "B200 does not have"]),
    ("custom-1", "A100-80GB", ["'custom-1' is not a standard MIG layout name for A100-80GB", "mig_config"]),
    ("all-balanced-x", "H200-141GB", ["is not a standard MIG layout name"]),
    ("", "A30-24GB", ["'' is not a standard MIG layout name"]),
    (None, "A30-24GB", ["'None' is not a standard MIG layout name"]),
])
def test_named_layout_refusals(name, product, words):
    err = refused(mig.named_layout, name, product)
    assert err.field == "profile"
    for word in words:
        assert word in err.msg
    for known in mig.layout_names(product):
        assert known in err.msg


@pytest.mark.parametrize("product, words", [
    ("Tesla-T4", ["'Tesla-T4' is not a MIG-capable product"]),
    ("NVIDIA-A100-SXM4-80GB", ["that is a GPU label; its product is A100-80GB"]),
    ("A100", ["'A100' is not a MIG-capable product"]),
    (None, ["None is not a MIG-capable product"]),
])
def test_unknown_product_refused(product, words):
    err = refused(mig.named_layout, "all-disabled", product)
    assert err.field == "product"
    for word in words:
        assert word in err.msg


# --- layouts on one GPU --------------------------------------------------------------------------

@pytest.mark.parametrize("product, devices", [
    ("A100-40GB", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    ("A100-40GB", {"4g.20gb": 1, "3g.20gb": 1}),        # allowed since R510 (MIG User Guide)
    ("A100-40GB", {"1g.10gb": 4}),
    ("A100-40GB", {"1g.10gb": 2, "1g.5gb": 3}),
    ("A100-40GB", {"2g.10gb": 3, "1g.5gb": 1}),
    ("A100-40GB", {"1g.5gb+me": 1, "1g.5gb": 6}),
    ("A100-40GB", {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}),
    ("A100-40GB", {"7g.40gb": 1}),
    ("A100-80GB", {"1g.10gb": 5, "1g.10gb+me": 1, "1g.20gb": 1}),   # k8s-device-plugin#1462's layout
    ("A100-80GB", {"3g.40gb": 2}),
    ("A100-80GB", {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}),
    ("A100-80GB", {"1g.20gb": 4}),
    ("H100-80GB", {"3g.40gb": 1, "1g.20gb": 1, "1g.10gb": 1}),
    ("H100-80GB", {"1g.10gb": 7}),
    ("H100-94GB", {"3g.47gb": 1, "1g.24gb": 1, "1g.12gb": 1}),       # the -cgi 9,15,19 example on H100 NVL
    ("GH200-96GB", {"3g.48gb": 1, "2g.24gb": 1, "1g.12gb": 2}),
    ("H200-141GB", {"3g.71gb": 2}),                                  # "142GB" by name, documented valid
    ("H200-141GB", {"4g.71gb": 1, "3g.71gb": 1}),
    ("H200-141GB", {"1g.18gb": 7}),
    ("GH200-144GB", {"3g.72gb": 2}),
    ("B200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
    ("B200", {"4g.90gb": 1, "3g.90gb": 1}),
    ("B200", {"1g.45gb": 4}),
    ("A30-24GB", {"2g.12gb": 1, "1g.6gb": 2}),
    ("A30-24GB", {"1g.6gb+me": 1, "1g.6gb": 3}),
    ("A30-24GB", {"2g.12gb+me": 1, "2g.12gb": 1}),
    ("A30-24GB", {"4g.24gb": 1}),
])
def test_valid_layouts_pass(product, devices):
    assert mig.validate_layout(product, devices) is None


@pytest.mark.parametrize("product, devices, words", [
    # a profile of another product (the memory in the name does not match this GPU)
    ("A100-40GB", {"3g.40gb": 1}, ["3g.40gb (a profile of A100-80GB, A800-80GB, H100-80GB, H800-80GB) is not a MIG profile of A100-40GB",
                                   "use the profiles of A100-40GB: 1g.5gb"]),
    ("A100-80GB", {"1g.5gb": 7}, ["1g.5gb (a profile of A100-40GB, A800-40GB) is not a MIG profile of A100-80GB"]),
    ("H100-94GB", {"1g.10gb": 7}, ["1g.10gb (a profile of A100-40GB, A800-40GB, A100-80GB, A800-80GB, H100-80GB, H800-80GB) is not a MIG profile"]),
    ("H200-141GB", {"3g.72gb": 1, "1g.5gb": 1}, ["are not MIG profiles of H200-141GB"]),
    # a profile nobody has
    ("H100-80GB", {"9g.99gb": 1}, ["9g.99gb (no GPU in the catalog has it)"]),
    ("A30-24GB", {"big": 1}, ["'big' is not a MIG profile name"]),
    # more instances than NVIDIA allows
    ("A100-80GB", {"1g.10gb": 8}, ["asks for 8 x 1g.10gb but A100-80GB allows at most 7"]),
    ("A100-40GB", {"1g.10gb": 5}, ["asks for 5 x 1g.10gb but A100-40GB allows at most 4"]),
    ("H100-80GB", {"1g.10gb+me": 2}, ["allows at most 1"]),
    ("A30-24GB", {"2g.12gb": 3}, ["asks for 3 x 2g.12gb but A30-24GB allows at most 2"]),
    # compute slices overflow
    ("A100-80GB", {"3g.40gb": 2, "2g.20gb": 1}, ["2 x 3g.40gb + 1 x 2g.20gb needs 8 compute slices but A100-80GB has 7"]),
    ("A30-24GB", {"4g.24gb": 1, "1g.6gb": 1}, ["needs 5 compute slices but A30-24GB has 4"]),
    ("B200", {"7g.180gb": 1, "1g.23gb": 1}, ["needs 8 compute slices"]),
    # memory overflow (memory slices)
    ("A100-80GB", {"1g.20gb": 4, "1g.10gb": 1}, ["needs 9 of the 8 memory slices of A100-80GB",
                                                 "about 90 GB of 80 GB"]),
    ("H200-141GB", {"3g.71gb": 2, "1g.18gb": 1}, ["needs 9 of the 8 memory slices of H200-141GB"]),
    ("H100-80GB", {"4g.40gb": 1, "1g.20gb": 2, "1g.10gb": 1}, ["needs 9 of the 8 memory slices"]),
    # not a positive whole number / not a dictionary
    ("A100-80GB", {"1g.10gb": 0}, ["the count of 1g.10gb is 0; it must be at least 1"]),
    ("A100-80GB", {"1g.10gb": -2}, ["the count of 1g.10gb is -2"]),
    ("A100-80GB", {"1g.10gb": "2"}, ["the count of 1g.10gb is '2', not a whole number"]),
    ("A100-80GB", {"1g.10gb": True}, ["not a whole number"]),
    ("A100-80GB", {"1g.10gb": 1.5}, ["not a whole number"]),
    ("A100-80GB", ["1g.10gb"], ["must be a dictionary of MIG profile to instance count"]),
    ("A100-80GB", None, ["must be a dictionary"]),
])
def test_bad_layouts_refused(product, devices, words):
    err = refused(mig.validate_layout, product, devices)
    assert err.field == "mig_devices"
    assert err.msg.startswith("mig_devices: ")
    for word in words:
        assert word in err.msg


def test_placement_table_refuses_what_counts_allow(monkeypatch):
    """A combination within every count but outside the placement table is refused (synthetic board:
    no real catalog product has such a combination, see test_slice_count_rule_agrees_...)."""
    spec = copy.deepcopy(mig.CATALOG["A100-40GB"])
    spec["product"] = "TEST-BOARD"
    spec["profiles"]["2g.10gb"]["placements"] = [0, 4]
    monkeypatch.setitem(mig.CATALOG, "TEST-BOARD", spec)
    mig.validate_layout("TEST-BOARD", {"2g.10gb": 2, "1g.5gb": 3})
    err = refused(mig.validate_layout, "TEST-BOARD", {"2g.10gb": 3})
    assert "3 x 2g.10gb cannot be placed together on TEST-BOARD" in err.msg
    assert "2g.10gb starts at 0,4" in err.msg


# --- mig-parted configs ----------------------------------------------------------------------------

GOOD_CONFIG = config(**{
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "custom-1": [
        {"devices": [0, 1], "mig-enabled": False},
        {"devices": [2], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [3], "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
    ],
    "enabled-only": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
})

# One config for two products through device-filter (format of the GPU Operator's default config).
FILTERED = config(**{"all-small": [
    {"device-filter": ["0x20B210DE", "0x20B510DE"], "devices": "all", "mig-enabled": True,
     "mig-devices": {"1g.10gb": 7}},
    {"device-filter": "0x20B010DE", "devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
]})


def test_good_config_structure_and_names():
    assert mig.validate_mig_parted_config(GOOD_CONFIG) == ["all-disabled", "custom-1", "enabled-only"]
    nodes = {"gpu-1": "NVIDIA-A100-SXM4-80GB", "gpu-2": "H100-80GB"}
    assert mig.validate_mig_parted_config(GOOD_CONFIG, nodes) == ["all-disabled", "custom-1", "enabled-only"]


def test_device_filter_picks_the_entry_per_product():
    nodes = {"a": "NVIDIA-A100-SXM4-80GB", "b": "NVIDIA-A100-PCIE-40GB", "c": "A100-80GB"}
    assert mig.validate_mig_parted_config(FILTERED, nodes) == ["all-small"]
    err = refused(mig.validate_mig_parted_config, FILTERED, {"h1": "NVIDIA-H100-80GB-HBM3"})
    assert err.field == "mig_config"
    assert "mig-configs.all-small has no entry for H100-80GB" in err.msg
    assert "(for H100-80GB on h1)" in err.msg


@pytest.mark.parametrize("nodes, words", [
    ({"gpu-2": "NVIDIA-A100-SXM4-40GB"},
     ["mig-configs.custom-1[1].mig-devices (for A100-40GB on gpu-2): 3g.40gb (a profile of A100-80GB, A800-80GB, H100-80GB, H800-80GB) "
      "is not a MIG profile of A100-40GB"]),
    ({"gpu-3": "NVIDIA-A30", "gpu-4": "NVIDIA-A30"},
     ["mig-configs.custom-1[1].mig-devices (for A30-24GB on gpu-3, gpu-4)"]),
    ({"gpu-9": "Tesla-T4"}, ["node gpu-9 has GPU 'Tesla-T4', which does not support MIG"]),
    ({"gpu-9": "NVIDIA-L40S"}, ["node gpu-9 has GPU 'NVIDIA-L40S'"]),
])
def test_config_checked_against_node_products(nodes, words):
    err = refused(mig.validate_mig_parted_config, GOOD_CONFIG, nodes)
    assert err.field == "mig_config"
    for word in words:
        assert word in err.msg


def test_config_too_big_for_the_product():
    cfg = config(**{"big": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 8}}]})
    err = refused(mig.validate_mig_parted_config, cfg, {"n1": "H100-80GB"})
    assert "mig-configs.big[0].mig-devices (for H100-80GB on n1): asks for 8 x 1g.10gb" in err.msg


def test_profile_restricts_the_product_check():
    both = dict(FILTERED["mig-configs"])
    both["h100-only"] = [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    cfg = config(**both)
    nodes = {"h1": "NVIDIA-H100-80GB-HBM3"}
    assert mig.validate_mig_parted_config(cfg, nodes, profile="h100-only") == ["all-small", "h100-only"]
    refused(mig.validate_mig_parted_config, cfg, nodes)               # all-small has no H100 entry
    err = refused(mig.validate_mig_parted_config, cfg, nodes, profile="missing")
    assert "has no config named 'missing'" in err.msg
    assert "all-small, h100-only" in err.msg


def one(entry):
    return config(**{"custom-1": [entry]})


@pytest.mark.parametrize("cfg, words", [
    ("version: v1", ["must be a mig-parted config"]),
    ({"mig-configs": GOOD_CONFIG["mig-configs"]}, ["version is None; mig-parted reads only version v1"]),
    ({"version": "v2", "mig-configs": GOOD_CONFIG["mig-configs"]}, ["version is 'v2'"]),
    ({"version": 1, "mig-configs": GOOD_CONFIG["mig-configs"]}, ["version is 1"]),
    (dict(GOOD_CONFIG, extra=1), ["extra is not a field of a mig-parted config"]),
    (config(), ["mig-configs must be a non-empty dictionary"]),
    ({"version": "v1", "mig-configs": [{"devices": "all"}]}, ["mig-configs must be a non-empty dictionary"]),
    (config(**{"bad name!": [{"devices": "all", "mig-enabled": False}]}),
     ["mig-configs.bad name!: 'bad name!' is not usable as the value of the nvidia.com/mig.config label"]),
    (config(**{"x" * 64: [{"devices": "all", "mig-enabled": False}]}), ["is not usable as the value"]),
    (config(**{"custom-1": []}), ["mig-configs.custom-1 must be a non-empty list of entries"]),
    (config(**{"custom-1": {"devices": "all"}}), ["mig-configs.custom-1 must be a non-empty list"]),
    (config(**{"custom-1": ["all"]}), ["mig-configs.custom-1[0] must be a dictionary"]),
    (one({"devices": "all", "mig_enabled": True}), ["mig-configs.custom-1[0].mig_enabled is not a field"]),
    (one({"mig-enabled": False}), ["mig-configs.custom-1[0] has no devices"]),
    (one({"devices": "all"}), ["mig-configs.custom-1[0] has no mig-enabled"]),
    (one({"devices": "some", "mig-enabled": False}), ["mig-configs.custom-1[0].devices is 'some'"]),
    (one({"devices": 0, "mig-enabled": False}), ["mig-configs.custom-1[0].devices is 0"]),
    (one({"devices": [], "mig-enabled": False}), ["devices is []"]),
    (one({"devices": [-1], "mig-enabled": False}), ["devices is [-1]"]),
    (one({"devices": [True], "mig-enabled": False}), ["devices is [True]"]),
    (one({"devices": ["0"], "mig-enabled": False}), ["devices is ['0']"]),
    (one({"devices": [0, 0], "mig-enabled": False}), ["lists a GPU index twice"]),
    (one({"devices": "all", "mig-enabled": "true"}), ["mig-configs.custom-1[0].mig-enabled is 'true', not true or false"]),
    (one({"devices": "all", "mig-enabled": 1}), ["mig-enabled is 1, not true or false"]),
    (one({"devices": "all", "mig-enabled": True}), ["mig-enabled: true but no mig-devices"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": None}), ["mig-enabled: true but no mig-devices"]),
    (one({"devices": "all", "mig-enabled": False, "mig-devices": {"1g.10gb": 7}}),
     ["mig-enabled: false but lists mig-devices"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 0}}),
     ["mig-configs.custom-1[0].mig-devices: the count of 1g.10gb is 0"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": -1}}),
     ["mig-configs.custom-1[0].mig-devices: the count of 1g.10gb is -1"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": "7"}}),
     ["mig-configs.custom-1[0].mig-devices: the count of 1g.10gb is '7', not a whole number"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 2.0}}), ["not a whole number"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": ["1g.10gb"]}),
     ["mig-configs.custom-1[0].mig-devices: must be a dictionary"]),
    (one({"devices": "all", "mig-enabled": True, "mig-devices": {"ten-gig": 1}}),
     ["mig-configs.custom-1[0].mig-devices: 'ten-gig' is not a MIG profile name"]),
    (one({"device-filter": "20B2", "devices": "all", "mig-enabled": False}),
     ["mig-configs.custom-1[0].device-filter is '20B2'"]),
    (one({"device-filter": [], "devices": "all", "mig-enabled": False}), ["device-filter is []"]),
])
def test_malformed_configs_refused(cfg, words):
    err = refused(mig.validate_mig_parted_config, cfg)
    assert err.field == "mig_config"
    assert err.msg.startswith("mig_config: ")
    for word in words:
        assert word in err.msg


@pytest.mark.parametrize("entries, words", [
    ([{"devices": "all", "mig-enabled": False}, {"devices": [0], "mig-enabled": False}],
     ["mig-configs.custom-1[1] and mig-configs.custom-1[0] (devices: all) both set GPU 0"]),
    ([{"devices": [1], "mig-enabled": False}, {"devices": "all", "mig-enabled": False}],
     ["mig-configs.custom-1[1] (devices: all) and mig-configs.custom-1[0] both set the same GPUs"]),
    ([{"devices": [0, 1], "mig-enabled": False}, {"devices": [1], "mig-enabled": False}],
     ["mig-configs.custom-1[0] and mig-configs.custom-1[1] both set GPU 1"]),
])
def test_overlapping_entries_refused_for_a_product(entries, words):
    err = refused(mig.validate_mig_parted_config, config(**{"custom-1": entries}), {"n": "A100-80GB"})
    for word in words:
        assert word in err.msg


def test_overlap_across_device_filters_is_fine():
    entries = [{"device-filter": "0x20B210DE", "devices": "all", "mig-enabled": False},
               {"device-filter": "0x233010DE", "devices": "all", "mig-enabled": False}]
    assert mig.validate_mig_parted_config(config(**{"c": entries}), {"a": "A100-80GB", "h": "H100-80GB"}) == ["c"]


def test_config_validation_does_not_change_input():
    before = copy.deepcopy(GOOD_CONFIG)
    mig.validate_mig_parted_config(GOOD_CONFIG, {"n": "A100-80GB"})
    assert GOOD_CONFIG == before


# --- resources -----------------------------------------------------------------------------------

CUSTOM_1 = GOOD_CONFIG["mig-configs"]["custom-1"]


@pytest.mark.parametrize("product, layout, strategy, gpus, expected", [
    ("A100-80GB", "all-1g.10gb", "single", 8, {"nvidia.com/gpu": 56}),
    ("A100-80GB", "all-1g.10gb", "mixed", 8, {"nvidia.com/mig-1g.10gb": 56}),
    ("H100-80GB", "all-1g.10gb", "mixed", 4, {"nvidia.com/mig-1g.10gb": 28}),
    ("A100-40GB", "all-1g.10gb", "single", 2, {"nvidia.com/gpu": 8}),
    ("A100-80GB", "all-3g.40gb", "single", 4, {"nvidia.com/gpu": 8}),
    ("A100-80GB", "all-balanced", "mixed", 2,
     {"nvidia.com/mig-1g.10gb": 4, "nvidia.com/mig-2g.20gb": 2, "nvidia.com/mig-3g.40gb": 2}),
    ("A30-24GB", "all-balanced", "mixed", 1, {"nvidia.com/mig-1g.6gb": 2, "nvidia.com/mig-2g.12gb": 1}),
    ("H200-141GB", "all-7g.141gb", "single", 8, {"nvidia.com/gpu": 8}),
    ("A100-80GB", "all-disabled", "single", 4, {"nvidia.com/gpu": 4}),
    ("A100-80GB", "all-disabled", "mixed", 4, {"nvidia.com/gpu": 4}),
    ("A100-80GB", "all-disabled", "none", 4, {"nvidia.com/gpu": 4}),
    ("A100-80GB", "all-enabled", "single", 2, {"nvidia.com/gpu": 0}),
    ("A100-80GB", "all-enabled", "mixed", 2, {}),
    ("A100-80GB", "all-1g.10gb.me", "mixed", 2, {"nvidia.com/mig-1g.10gb": 2}),
    ("A100-80GB", CUSTOM_1, "mixed", 4, {"nvidia.com/gpu": 2, "nvidia.com/mig-3g.40gb": 3,
                                         "nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1}),
    # k8s-device-plugin#1462: +me instances show under the base profile's resource
    ("A100-80GB", [{"devices": [0, 1], "mig-enabled": True,
                    "mig-devices": {"1g.10gb": 5, "1g.10gb+me": 1, "1g.20gb": 1}}], "mixed", 2,
     {"nvidia.com/mig-1g.10gb": 12, "nvidia.com/mig-1g.20gb": 2}),
    # entries for other GPUs (device-filter) are skipped
    ("A100-40GB", FILTERED["mig-configs"]["all-small"], "single", 2, {"nvidia.com/gpu": 14}),
    ("A100-80GB", FILTERED["mig-configs"]["all-small"], "mixed", 1, {"nvidia.com/mig-1g.10gb": 7}),
])
def test_resources(product, layout, strategy, gpus, expected):
    entries = mig.named_layout(layout, product) if isinstance(layout, str) else layout
    assert mig.resources(product, entries, strategy, gpus) == expected


@pytest.mark.parametrize("product, entries, strategy, gpus, field, words", [
    ("A100-80GB", "all-balanced", "single", 2, "strategy",
     ["is single, but the layout mixes MIG profiles (1g.10gb, 2g.20gb, 3g.40gb)", "use the mixed strategy"]),
    ("A100-80GB", CUSTOM_1, "single", 4, "strategy", ["leaves 2 of 4 GPUs without MIG"]),
    ("A100-80GB", "all-1g.10gb", "none", 1, "strategy", ["is none, but the layout turns MIG on"]),
    ("A100-80GB", "all-1g.10gb", "auto", 1, "strategy", ["'auto' is not a MIG strategy"]),
    ("A100-80GB", "all-1g.10gb", "mixed", 0, "gpus", ["0 is not a number of GPUs"]),
    ("A100-80GB", "all-1g.10gb", "mixed", True, "gpus", ["True is not a number of GPUs"]),
    ("A100-80GB", [], "mixed", 1, "mig_config", ["non-empty list of mig-parted entries"]),
    ("A100-80GB", CUSTOM_1, "mixed", 3, "mig_config", ["layout[2].devices names GPU 3 but the node has 3 GPUs"]),
    ("A100-80GB", [{"devices": [0], "mig-enabled": False}], "mixed", 2, "mig_config",
     ["no entry of the layout sets GPU 1"]),
    ("A100-80GB", [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}], "mixed", 1,
     "mig_config", ["layout[0].mig-devices: 1g.5gb (a profile of A100-40GB, A800-40GB) is not a MIG profile of A100-80GB"]),
    ("H100-80GB", FILTERED["mig-configs"]["all-small"], "mixed", 1, "mig_config", ["no entry of the layout sets GPU 0"]),
    ("Tesla-T4", "all-disabled", "mixed", 1, "product", ["'Tesla-T4' is not a MIG-capable product"]),
])
def test_resources_refused(product, entries, strategy, gpus, field, words):
    if isinstance(entries, str):
        entries = mig.named_layout(entries, "A100-80GB")
    err = refused(mig.resources, product, entries, strategy, gpus)
    assert err.field == field
    for word in words:
        assert word in err.msg


# --- MIG mode changes ------------------------------------------------------------------------------

@pytest.mark.parametrize("before, after, reboot", [
    (False, True, True),      # enabling MIG: GPU reset, a reboot when the reset is refused
    (True, False, True),      # disabling MIG: gpu-operator#668
    (True, True, False),      # another profile with MIG on: no mode change
    (False, False, False),
])
def test_reboot_may_be_needed(before, after, reboot):
    assert mig.reboot_may_be_needed(before, after) is reboot
