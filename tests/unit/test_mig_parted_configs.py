"""Table-driven tests of the MIG domain's mig-parted configs: structure, device filters, product checks
and refusals of malformed or overlapping configs."""
import copy

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from tests.unit.mig_helpers import FILTERED, GOOD_CONFIG, config, refused


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
