"""Tests of the MIG domain's resources of a config and of when a MIG mode change may need a reboot."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from tests.unit.mig_helpers import FILTERED, GOOD_CONFIG, refused


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
