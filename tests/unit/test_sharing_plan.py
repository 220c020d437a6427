"""sharing_plan: what the gpu_sharing role applies, assembled from its pools and custom mig-parted config."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import (
    pools as sharing, plan as sharing_plan)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

TS = {"name": "inference", "node_selector": {"zone": "b", "nodepool": "inference"}, "sharing": "time-slicing",
      "replicas": 4}
WHOLE = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}
MIG = {"name": "mig", "node_selector": {"nodepool": "mig"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}
CUSTOM = {"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}],
                                           "mix": [{"devices": "all", "mig-enabled": True,
                                                    "mig-devices": {"1g.10gb": 7}}]}}
KEY = "nvidia.com/device-plugin.config"


def text_of(config):
    return "text of %s\n" % sorted(config)


def plan(pools, **kwargs):
    return sharing_plan.plan(pools, config_text=text_of, **kwargs)


def test_selector_is_sorted_and_stable():
    assert sharing_plan.selector({"zone": "b", "nodepool": "inference"}) == "nodepool=inference,zone=b"
    assert sharing_plan.selector({}) == ""


def test_the_plan_of_time_sliced_whole_and_mig_pools():
    out = plan([TS, WHOLE, MIG])
    checked = sharing.validate_pools([TS, WHOLE, MIG])
    assert out["config_map"] == sharing.config_map(checked)
    assert out["restart_objects"] == sharing.restart_objects("gpu-operator", sharing.config_map_hash(out["config_map"]))
    assert out["label_requests"] == [
        {"name": "inference", "selector": "nodepool=inference,zone=b", "labels": {KEY: "inference"}},
        {"name": "training", "selector": "nodepool=training", "labels": {KEY: "default"}},
        {"name": "mig", "selector": "nodepool=mig", "labels": {KEY: "default"}}]
    assert [e["selector"] for e in out["node_labels"]] == [r["selector"] for r in out["label_requests"]]
    assert out["mig_pools"] == [{"name": "mig", "profile": "all-1g.10gb", "strategy": "single",
                                 "selector": "nodepool=mig"}]
    # the node_labels module's entries for the bundle: a MIG pool's layout is a second entry for its selector
    assert out["label_patches"] == out["label_requests"] + [
        {"name": "mig MIG layout", "selector": "nodepool=mig", "labels": {"nvidia.com/mig.config": "all-1g.10gb"}}]
    assert out["device_plugin_config"] == {"name": "time-slicing-config", "default": "default"}
    assert out["expected_per_gpu"] == {"inference": {"nvidia.com/gpu": 4}, "training": {"nvidia.com/gpu": 1}}
    assert out["mig_strategy"] == "single" and out["warnings"] == sharing.warnings(checked)
    assert out["mig_config"] is None and out["mig_config_map"] is None and out["mig_manager_values"] == {}


def test_without_time_slicing_there_is_no_config_map_and_no_hash():
    out = plan([WHOLE], name="my-config", namespace="gpu")
    assert out["config_map"] is None and out["device_plugin_config"] == {}
    assert out["restart_objects"] == sharing.restart_objects("gpu", "")


def test_the_custom_mig_config_gets_its_config_map_from_the_callers_text():
    out = plan([dict(MIG, mig_profile="mix")], namespace="gpu", mig_config=CUSTOM, mig_config_map_name="mine")
    assert out["mig_config"] == CUSTOM
    cm = out["mig_config_map"]
    assert cm["metadata"]["name"] == "mine" and cm["metadata"]["namespace"] == "gpu"
    assert cm["data"] == {"config.yaml": text_of(CUSTOM)}
    assert out["mig_manager_values"]["migManager"]["config"]["name"] == "mine"


def test_the_text_is_asked_for_only_with_a_custom_config():
    def refuse(config):
        raise AssertionError("no custom config, no text: %r" % (config,))
    assert sharing_plan.plan([MIG], config_text=refuse)["mig_config_map"] is None


@pytest.mark.parametrize("pools, kwargs, field", [
    ([dict(TS, replicas=1)], {}, "gpu_platform_node_pools[0].replicas"),
    ([TS], {"name": "Bad_Name"}, "gpu_platform_time_slicing_config_map"),
    ([TS], {"namespace": "Bad"}, "gpu_sharing_namespace"),
    ([], {"mig_config": {"version": "v2", "mig-configs": {}}}, "gpu_platform_mig_config.version"),
])
def test_bad_inputs_name_the_role_variable(pools, kwargs, field):
    with pytest.raises(ParamError) as err:
        plan(pools, **kwargs)
    assert err.value.field == field


def test_pool_dicts_are_the_validated_pools_with_their_resource():
    dicts = sharing_plan.pool_dicts([TS, dict(TS, name="renamed", node_selector={"nodepool": "r"}, rename_by_default=True)])
    assert [(d["name"], d["resource_name"]) for d in dicts] == [("inference", "nvidia.com/gpu"), ("renamed", "nvidia.com/gpu.shared")]
    assert dicts[0]["replicas"] == 4 and "field" not in dicts[0]
    assert sharing_plan.pool_dicts(None) == [] and sharing_plan.pool_dicts([]) == []
    with pytest.raises(ParamError) as err:
        sharing_plan.pool_dicts([dict(MIG, mig_profile="mix")])
    assert err.value.field == "gpu_platform_node_pools[0].mig_profile"
    assert sharing_plan.pool_dicts([dict(MIG, mig_profile="mix")], CUSTOM)[0]["mig_profile"] == "mix"
