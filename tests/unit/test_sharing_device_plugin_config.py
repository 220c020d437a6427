"""Tests of the gpu_sharing domain's device-plugin config (its documented format, exact text, determinism)
and of its ConfigMap."""
import json

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.sharing_helpers import MIGP, TS, WHOLE, one, pool


# ---------------------------------------------------------------- the device-plugin config

CONFIG_CASES = [
    # (pool, renameByDefault, failRequestsGreaterThanOne, replicas)
    (TS, False, True, 4),
    (pool(TS, replicas=2, rename_by_default=True), True, True, 2),
    (pool(TS, replicas=10, fail_requests_greater_than_one=False), False, False, 10),
    (pool(TS, replicas=64, rename_by_default=True, fail_requests_greater_than_one=False), True, False, 64),
]


@pytest.mark.parametrize("parse", [json.loads, yaml.safe_load], ids=["json", "yaml"])
@pytest.mark.parametrize("raw, rename, fail, replicas", CONFIG_CASES)
def test_config_follows_the_documented_format(raw, rename, fail, replicas, parse):
    text = sharing.time_slicing_config(one(raw))
    config = parse(text)
    # k8s-device-plugin README "With CUDA Time-Slicing" and api/config/v1: field by field
    assert sorted(config) == ["flags", "sharing", "version"]
    assert config["version"] == "v1"
    assert config["flags"] == {"migStrategy": "none"}
    assert list(config["sharing"]) == ["timeSlicing"]
    ts = config["sharing"]["timeSlicing"]
    assert sorted(ts) == ["failRequestsGreaterThanOne", "renameByDefault", "resources"]
    assert ts["renameByDefault"] is rename
    assert ts["failRequestsGreaterThanOne"] is fail
    assert ts["resources"] == [{"name": "nvidia.com/gpu", "replicas": replicas}]
    assert isinstance(ts["resources"][0]["replicas"], int) and not isinstance(ts["resources"][0]["replicas"], bool)
    assert ts["resources"][0]["replicas"] >= 2  # the plugin's own floor


def test_config_text_is_exactly_this():
    assert sharing.time_slicing_config(one(TS)) == (
        '{\n'
        '  "flags": {\n'
        '    "migStrategy": "none"\n'
        '  },\n'
        '  "sharing": {\n'
        '    "timeSlicing": {\n'
        '      "failRequestsGreaterThanOne": true,\n'
        '      "renameByDefault": false,\n'
        '      "resources": [\n'
        '        {\n'
        '          "name": "nvidia.com/gpu",\n'
        '          "replicas": 4\n'
        '        }\n'
        '      ]\n'
        '    }\n'
        '  },\n'
        '  "version": "v1"\n'
        '}')


def test_config_is_deterministic_whatever_the_input_order():
    forward = {"name": "a", "node_selector": {"x": "1", "y": "2"}, "sharing": "time-slicing", "replicas": 8,
               "rename_by_default": True, "fail_requests_greater_than_one": True}
    backward = dict(reversed(list(forward.items())))
    backward["node_selector"] = {"y": "2", "x": "1"}
    texts = {sharing.time_slicing_config(sharing.validate_pools([p])[0]) for p in (forward, backward, forward)}
    assert len(texts) == 1
    cms = [sharing.config_map(sharing.validate_pools(order)) for order in ([TS, WHOLE], [WHOLE, TS])]
    assert json.dumps(cms[0]) == json.dumps(cms[1])
    assert sharing.config_map_hash(cms[0]) == sharing.config_map_hash(cms[1])


@pytest.mark.parametrize("raw", [WHOLE, MIGP])
def test_config_only_for_time_slicing_pools(raw):
    with pytest.raises(ParamError) as info:
        sharing.time_slicing_config(one(raw))
    assert info.value.field == "gpu_platform_node_pools[0].sharing" and "Fix:" in str(info.value)


def test_default_config_has_no_sharing():
    assert json.loads(sharing.default_config()) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert yaml.safe_load(sharing.default_config()) == json.loads(sharing.default_config())


# ---------------------------------------------------------------- the ConfigMap

def test_config_map_shape():
    pools = sharing.validate_pools([WHOLE, TS, pool(TS, name="dev", node_selector={"nodepool": "dev"}, replicas=8),
                                    MIGP])
    cm = sharing.config_map(pools)
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    assert cm["metadata"] == {"name": "time-slicing-config", "namespace": "gpu-operator",
                              "labels": {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}}
    assert list(cm["data"]) == ["default", "dev", "inference"]  # sorted; whole-GPU and MIG pools get no key
    assert all(isinstance(v, str) for v in cm["data"].values())  # ConfigMap data values are strings
    assert json.loads(cm["data"]["default"]) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert json.loads(cm["data"]["dev"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 8
    assert cm["data"]["inference"] == sharing.time_slicing_config(pools[1])
    assert sorted(cm) == ["apiVersion", "data", "kind", "metadata"]


def test_config_map_name_and_namespace():
    cm = sharing.config_map(sharing.validate_pools([TS]), name="dp-config", namespace="nvidia-gpu-operator")
    assert cm["metadata"]["name"] == "dp-config" and cm["metadata"]["namespace"] == "nvidia-gpu-operator"


@pytest.mark.parametrize("pools", [[], [WHOLE], [MIGP], [WHOLE, MIGP]])
def test_no_config_map_without_time_slicing(pools):
    assert sharing.config_map(sharing.validate_pools(pools)) is None
    assert sharing.config_map_hash(None) is None


@pytest.mark.parametrize("kwargs, field", [
    ({"name": "Time_Slicing"}, "gpu_platform_time_slicing_config_map"),
    ({"name": ""}, "gpu_platform_time_slicing_config_map"),
    ({"namespace": "GPU"}, "gpu_sharing_namespace"),
    ({"namespace": ""}, "gpu_sharing_namespace"),
])
def test_config_map_bad_name_or_namespace(kwargs, field):
    with pytest.raises(ParamError) as info:
        sharing.config_map(sharing.validate_pools([TS]), **kwargs)
    assert info.value.field == field and "Fix:" in str(info.value)
