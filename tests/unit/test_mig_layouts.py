"""Table-driven tests of the MIG domain's layouts: the named layouts of each product and the validation of
layouts on one GPU."""
import copy

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from tests.unit.mig_helpers import NAMED, PRODUCTS, PROFILES, config, refused


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
