"""Shared data and helpers of the MIG domain tests: the catalog's products, named layouts and profiles, a refusal
checker, and mig-parted configs."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
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
