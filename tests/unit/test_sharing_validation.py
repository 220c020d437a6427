"""Table-driven tests of the gpu_sharing domain's pool validation: good input and bad input (each naming
the field and the fix)."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import (
    pools as sharing, pool as sharing_pool)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.sharing_helpers import MIGP, TS, WHOLE, one, pool


# ---------------------------------------------------------------- validation: good input

@pytest.mark.parametrize("raw, expected", [
    (TS, {"sharing": "time-slicing", "replicas": 4, "rename_by_default": False, "fail_requests_greater_than_one": True,
          "multi_tenant": False, "mig_profile": None, "mig_strategy": None}),
    (pool(TS, replicas=2, rename_by_default=True, fail_requests_greater_than_one=False, multi_tenant=True),
     {"replicas": 2, "rename_by_default": True, "fail_requests_greater_than_one": False, "multi_tenant": True}),
    (pool(TS, replicas=sharing_pool.MAX_REPLICAS), {"replicas": 64}),
    (WHOLE, {"sharing": "none", "replicas": None, "mig_profile": None, "mig_strategy": None}),
    (MIGP, {"sharing": "mig", "mig_profile": "all-1g.10gb", "mig_strategy": "single", "replicas": None}),
    (pool(MIGP, mig_strategy="mixed", mig_profile="all-balanced"), {"mig_strategy": "mixed", "mig_profile": "all-balanced"}),
    # the other modes' defaults are tolerated, so a role may combine every pool with one defaults dict
    (pool(WHOLE, rename_by_default=False, fail_requests_greater_than_one=True, mig_strategy="single", replicas=None),
     {"sharing": "none", "rename_by_default": False}),
    (pool(MIGP, rename_by_default=False, fail_requests_greater_than_one=True, multi_tenant=True),
     {"sharing": "mig", "multi_tenant": True}),
    (pool(TS, node_selector={"nvidia.com/gpu.product": "Tesla-T4", "kubernetes.azure.com/agentpool": "gpu1"}),
     {"node_selector": {"kubernetes.azure.com/agentpool": "gpu1", "nvidia.com/gpu.product": "Tesla-T4"}}),
])
def test_valid_pools(raw, expected):
    got = sharing.validate_pools([raw])[0]
    assert isinstance(got, sharing_pool.Pool)
    assert got.name == raw["name"] and got.field == "gpu_platform_node_pools[0]"
    for key, value in expected.items():
        assert getattr(got, key) == value, key


def test_empty_and_none_mean_no_pools():
    assert sharing.validate_pools([]) == [] and sharing.validate_pools(None) == []


def test_validation_does_not_keep_references_to_the_input():
    raw = pool(TS)
    got = sharing.validate_pools([raw])[0]
    raw["node_selector"]["nodepool"] = "changed"
    assert got.node_selector == {"nodepool": "inference"}


def test_several_pools_keep_order_and_index_their_fields():
    pools = sharing.validate_pools([WHOLE, TS, MIGP])
    assert [p.name for p in pools] == ["training", "inference", "notebooks"]
    assert [p.field for p in pools] == ["gpu_platform_node_pools[0]", "gpu_platform_node_pools[1]", "gpu_platform_node_pools[2]"]


def test_to_dict_has_the_inventory_keys():
    assert sorted(one(TS).to_dict()) == sorted(sharing_pool.POOL_KEYS)


# ---------------------------------------------------------------- validation: bad input

BAD = [
    # (pools, field, words in the problem)
    ({"name": "x"}, "gpu_platform_node_pools", "must be a list"),
    ("inference", "gpu_platform_node_pools", "must be a list"),
    (["inference"], "gpu_platform_node_pools[0]", "is not a pool"),
    ([pool(TS, replica=4)], "gpu_platform_node_pools[0]", "unknown key(s) replica"),
    ([pool(TS, name=None)], "gpu_platform_node_pools[0].name", "is empty"),
    ([pool(TS, name="Inference")], "gpu_platform_node_pools[0].name", "is not a valid name"),
    ([pool(TS, name="a" * 64)], "gpu_platform_node_pools[0].name", "at most 63"),
    ([pool(TS, name="pool_1")], "gpu_platform_node_pools[0].name", "is not a valid name"),
    ([pool(TS, name="default")], "gpu_platform_node_pools[0].name", "is reserved"),
    ([WHOLE, pool(TS, name="training", node_selector={"x": "y"})], "gpu_platform_node_pools[1].name", "also the name of pool 0"),
    ([pool(TS, sharing="mps")], "gpu_platform_node_pools[0].sharing", "'mps' is not a sharing mode"),
    ([pool(TS, sharing=None)], "gpu_platform_node_pools[0].sharing", "is not a sharing mode"),
    ([pool(TS, node_selector=None)], "gpu_platform_node_pools[0].node_selector", "is required and empty"),
    ([pool(TS, node_selector={})], "gpu_platform_node_pools[0].node_selector", "is required and empty"),
    ([pool(TS, node_selector="nodepool=inference")], "gpu_platform_node_pools[0].node_selector", "must be a dictionary"),
    ([pool(TS, node_selector={"bad key!": "x"})], "gpu_platform_node_pools[0].node_selector", "not a valid Kubernetes label"),
    ([pool(TS, node_selector={"gpu": True})], "gpu_platform_node_pools[0].node_selector", "not a string"),
    ([pool(TS, node_selector={"gpu": "-bad-"})], "gpu_platform_node_pools[0].node_selector", "invalid value"),
    ([WHOLE, pool(TS, node_selector={"nodepool": "training"})], "gpu_platform_node_pools[1].node_selector",
     "same as pool 'training'"),
    ([pool(TS, replicas=None)], "gpu_platform_node_pools[0].replicas", "is required when sharing is time-slicing"),
    ([pool(WHOLE), pool(TS, replicas=1)], "gpu_platform_node_pools[1].replicas", "below 2"),
    ([pool(TS, replicas=0)], "gpu_platform_node_pools[0].replicas", "below 2"),
    ([pool(TS, replicas=-4)], "gpu_platform_node_pools[0].replicas", "below 2"),
    ([pool(TS, replicas=65)], "gpu_platform_node_pools[0].replicas", "above 64"),
    ([pool(TS, replicas=400)], "gpu_platform_node_pools[0].replicas", "above 64"),
    ([pool(TS, replicas="4")], "gpu_platform_node_pools[0].replicas", "not a whole number"),
    ([pool(TS, replicas=4.0)], "gpu_platform_node_pools[0].replicas", "not a whole number"),
    ([pool(TS, replicas=True)], "gpu_platform_node_pools[0].replicas", "not a whole number"),
    ([pool(WHOLE, replicas=4)], "gpu_platform_node_pools[0].replicas", "applies only to sharing: time-slicing"),
    ([pool(MIGP, replicas=4)], "gpu_platform_node_pools[0].replicas", "applies only to sharing: time-slicing"),
    ([pool(MIGP, rename_by_default=True)], "gpu_platform_node_pools[0].rename_by_default", "applies only to sharing: time"),
    ([pool(WHOLE, fail_requests_greater_than_one=False)], "gpu_platform_node_pools[0].fail_requests_greater_than_one",
     "applies only to sharing: time-slicing"),
    ([pool(TS, rename_by_default="yes")], "gpu_platform_node_pools[0].rename_by_default", "not true or false"),
    ([pool(TS, fail_requests_greater_than_one="true")], "gpu_platform_node_pools[0].fail_requests_greater_than_one",
     "not true or false"),
    ([pool(TS, multi_tenant=1)], "gpu_platform_node_pools[0].multi_tenant", "not true or false"),
    ([pool(MIGP, mig_profile=None)], "gpu_platform_node_pools[0].mig_profile", "is required when sharing is mig"),
    ([pool(MIGP, mig_profile="")], "gpu_platform_node_pools[0].mig_profile", "is required when sharing is mig"),
    ([pool(MIGP, mig_profile="all 1g")], "gpu_platform_node_pools[0].mig_profile", "not a MIG configuration name"),
    ([pool(MIGP, mig_profile=7)], "gpu_platform_node_pools[0].mig_profile", "not a MIG configuration name"),
    ([pool(MIGP, mig_profile="all-disabled")], "gpu_platform_node_pools[0].mig_profile", "turns MIG off"),
    ([pool(TS, mig_profile="all-1g.10gb")], "gpu_platform_node_pools[0].mig_profile", "applies only to sharing: mig"),
    ([pool(WHOLE, mig_profile="all-1g.10gb")], "gpu_platform_node_pools[0].mig_profile", "applies only to sharing: mig"),
    ([pool(TS, mig_strategy="mixed")], "gpu_platform_node_pools[0].mig_strategy", "applies only to sharing: mig"),
    ([pool(MIGP, mig_strategy="none")], "gpu_platform_node_pools[0].mig_strategy", "is not a MIG strategy"),
    ([pool(MIGP, mig_strategy="Single")], "gpu_platform_node_pools[0].mig_strategy", "is not a MIG strategy"),
    ([MIGP, pool(MIGP, name="b", node_selector={"nodepool": "b"}, mig_strategy="mixed")], "gpu_platform_node_pools",
     "different mig_strategy values"),
]


@pytest.mark.parametrize("pools, field, words", BAD)
def test_bad_input_names_the_field_and_the_fix(pools, field, words):
    with pytest.raises(ParamError) as info:
        sharing.validate_pools(pools)
    err = info.value
    assert err.field == field
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    assert ". Fix: " in str(err) and not str(err).endswith("Fix: ")


def test_there_are_many_bad_inputs():
    assert len(BAD) >= 10
