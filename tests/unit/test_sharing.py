"""Table-driven tests of the gpu_sharing domain: pool validation, the device-plugin config and its
ConfigMap, node labels, chart values, warnings, expected allocatable and the restart hash."""
import copy
import json
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import sharing, sharing_pool
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal
from tests.schema import crdschema

TS = {"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4}
WHOLE = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}
MIGP = {"name": "notebooks", "node_selector": {"nodepool": "notebooks"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}


def pool(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def one(base, **changes):
    return sharing.validate_pools([pool(base, **changes)])[0]


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


# ---------------------------------------------------------------- node labels, values, warnings

def test_node_config_labels():
    pools = sharing.validate_pools([WHOLE, TS, MIGP])
    assert sharing.node_config_labels(pools) == [
        {"pool": "training", "node_selector": {"nodepool": "training"},
         "labels": {"nvidia.com/device-plugin.config": "default"}},
        {"pool": "inference", "node_selector": {"nodepool": "inference"},
         "labels": {"nvidia.com/device-plugin.config": "inference"}},
        {"pool": "notebooks", "node_selector": {"nodepool": "notebooks"},
         "labels": {"nvidia.com/device-plugin.config": "default"}},
    ]


def test_every_label_names_a_config_map_key():
    pools = sharing.validate_pools([WHOLE, TS, MIGP, pool(TS, name="dev", node_selector={"nodepool": "dev"})])
    keys = set(sharing.config_map(pools)["data"])
    assert {e["labels"][sharing.CONFIG_LABEL] for e in sharing.node_config_labels(pools)} <= keys


@pytest.mark.parametrize("pools, expected", [
    ([TS], {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "default"}}}),
    ([WHOLE, TS, MIGP], {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "default"}}}),
    ([], {}),
    ([WHOLE], {}),
    ([MIGP, WHOLE], {}),
])
def test_device_plugin_values(pools, expected):
    assert sharing.device_plugin_values(sharing.validate_pools(pools)) == expected


def test_device_plugin_values_name_and_keys_exist_in_the_chart(shared_dir):
    values = sharing.device_plugin_values(sharing.validate_pools([TS]), name="dp-config")
    assert values["devicePlugin"]["config"]["name"] == "dp-config"
    defaults = os.path.join(shared_dir, "upstream", "gpu-operator", "values.default.yaml")
    assert crdschema.check_values_keys(values, defaults) == []
    with pytest.raises(ParamError):
        sharing.device_plugin_values([], name="Bad Name")


def test_default_key_named_in_values_exists_in_the_config_map():
    pools = sharing.validate_pools([TS])
    default = sharing.device_plugin_values(pools)["devicePlugin"]["config"]["default"]
    assert default in sharing.config_map(pools)["data"]


@pytest.mark.parametrize("raws, expected", [
    ([pool(TS, multi_tenant=True)], ["isolation"]),
    ([pool(TS, multi_tenant=False)], []),
    ([TS], []),
    ([pool(WHOLE, multi_tenant=True)], []),
    ([pool(MIGP, multi_tenant=True)], []),  # MIG isolates memory and faults
    ([pool(TS, fail_requests_greater_than_one=False)], ["proportion"]),
    ([pool(TS, multi_tenant=True, fail_requests_greater_than_one=False)], ["isolation", "proportion"]),
    ([pool(TS, multi_tenant=True), pool(TS, name="b", node_selector={"nodepool": "b"}, multi_tenant=True)],
     ["isolation", "isolation"]),
])
def test_warnings(raws, expected):
    got = sharing.warnings(sharing.validate_pools(raws))
    assert len(got) == len(expected)
    for text, kind in zip(got, expected):
        if kind == "isolation":
            assert "time-slicing gives no memory or fault isolation" in text and "multi_tenant" in text
        else:
            assert "fail_requests_greater_than_one is false" in text
    if got:
        assert repr(raws[0]["name"]) in got[0]


# ---------------------------------------------------------------- allocatable

@pytest.mark.parametrize("raw, gpus, expected", [
    (TS, 1, {"nvidia.com/gpu": 4}),
    (TS, 8, {"nvidia.com/gpu": 32}),
    (pool(TS, replicas=10), 8, {"nvidia.com/gpu": 80}),  # the README's own example
    (pool(TS, rename_by_default=True), 4, {"nvidia.com/gpu.shared": 16}),  # gpu-sharing.rst: T4 x4, replicas 4
    (pool(TS, rename_by_default=True), 0, {"nvidia.com/gpu.shared": 0}),
    (WHOLE, 8, {"nvidia.com/gpu": 8}),
    (WHOLE, 0, {"nvidia.com/gpu": 0}),
    (MIGP, 8, None),
])
def test_expected_allocatable(raw, gpus, expected):
    assert sharing.expected_allocatable(one(raw), gpus) == expected


@pytest.mark.parametrize("gpus", [-1, True, "8", 2.0, None])
def test_expected_allocatable_bad_gpu_count(gpus):
    with pytest.raises(ParamError) as info:
        sharing.expected_allocatable(one(TS), gpus)
    assert info.value.field == "gpus_per_node" and "Fix:" in str(info.value)


@pytest.mark.parametrize("raw, name", [(TS, "nvidia.com/gpu"), (pool(TS, rename_by_default=True), "nvidia.com/gpu.shared"),
                                       (WHOLE, "nvidia.com/gpu")])
def test_resource_name(raw, name):
    assert one(raw).resource_name == name


# ---------------------------------------------------------------- hash and restart

def test_config_hash_is_sha256_hex():
    assert sharing.config_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    text = sharing.time_slicing_config(one(TS))
    assert sharing.config_hash(text) == sharing.config_hash(sharing.time_slicing_config(one(TS)))
    assert len(sharing.config_hash(text)) == 64


@pytest.mark.parametrize("change", [
    {"replicas": 8}, {"rename_by_default": True}, {"fail_requests_greater_than_one": False},
])
def test_hash_changes_when_the_config_changes(change):
    before = sharing.config_map(sharing.validate_pools([WHOLE, TS]))
    after = sharing.config_map(sharing.validate_pools([WHOLE, pool(TS, **change)]))
    assert sharing.config_hash(before["data"]["inference"]) != sharing.config_hash(after["data"]["inference"])
    assert sharing.config_map_hash(before) != sharing.config_map_hash(after)


@pytest.mark.parametrize("change", [{"multi_tenant": True}, {"node_selector": {"nodepool": "other"}}])
def test_hash_ignores_what_the_plugin_does_not_read(change):
    before = sharing.config_map(sharing.validate_pools([TS]))
    after = sharing.config_map(sharing.validate_pools([pool(TS, **change)]))
    assert sharing.config_map_hash(before) == sharing.config_map_hash(after)


def test_restart_patch():
    digest = sharing.config_map_hash(sharing.config_map(sharing.validate_pools([TS])))
    assert sharing.restart_patch(digest) == {
        "spec": {"template": {"metadata": {"annotations": {"gpu-platform.io/device-plugin-config-sha256": digest}}}}}
    assert sharing.RESTART_DAEMONSETS == ("nvidia-device-plugin-daemonset", "gpu-feature-discovery")
    objects = sharing.restart_objects("gpu-operator", digest)
    assert [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects] == [
        ("DaemonSet", "gpu-operator", "nvidia-device-plugin-daemonset"), ("DaemonSet", "gpu-operator", "gpu-feature-discovery")]
    assert all(o["spec"] == sharing.restart_patch(digest)["spec"] and o["apiVersion"] == "apps/v1" for o in objects), \
        "partial objects: server-side apply sets the annotation and nothing else"


# ---------------------------------------------------------------- MIG strategy and node assignment

@pytest.mark.parametrize("raws, expected", [
    ([TS, WHOLE], None),
    ([MIGP], "single"),
    ([pool(MIGP, mig_strategy="mixed"), TS], "mixed"),
    ([MIGP, pool(MIGP, name="b", node_selector={"nodepool": "b"}, mig_profile="all-3g.40gb")], "single"),
])
def test_cluster_mig_strategy(raws, expected):
    assert sharing.cluster_mig_strategy(sharing.validate_pools(raws)) == expected


def node(name, **labels):
    return {"metadata": {"name": name, "labels": labels}}


def test_assign_nodes():
    pools = sharing.validate_pools([WHOLE, TS])
    nodes = [node("n3", nodepool="inference"), node("n1", nodepool="training"), node("cpu1"), {"metadata": {"name": "x"}}]
    assert sharing.assign_nodes(pools, nodes) == {"n1": "training", "n3": "inference"}


def test_assign_nodes_refuses_overlapping_selectors():
    pools = sharing.validate_pools([pool(WHOLE, node_selector={"gpu": "a100"}), pool(TS, node_selector={"zone": "b"})])
    with pytest.raises(Refusal) as info:
        sharing.assign_nodes(pools, [node("n7", gpu="a100", zone="b")])
    assert "n7" in str(info.value) and "training, inference" in str(info.value) and "Fix:" in str(info.value)


def test_label_requests_change_only_the_nodes_whose_config_label_differs():
    from ansible_collections.gpu_platform.cluster.plugins.filter import gpu_sharing as sharing_filters
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import node_labels
    key = "nvidia.com/device-plugin.config"
    plan = sharing_filters.gpu_sharing_plan([
        {"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4},
        {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}])
    assert plan["label_requests"] == [
        {"name": "inference", "selector": "nodepool=inference", "labels": {key: "inference"}},
        {"name": "training", "selector": "nodepool=training", "labels": {key: "default"}}]

    def node(name, labels):
        return {"metadata": {"name": name, "labels": labels}}

    requests = node_labels.check_requests(plan["label_requests"])
    report, changes = node_labels.plan(requests, [[node("a", {key: "inference"}), node("b", {key: "default"}), node("c", {})],
                                                  [node("d", None)]])
    assert [(name, labels) for name, labels, before in changes] == [
        ("b", {key: "inference"}), ("c", {key: "inference"}), ("d", {key: "default"})]
    assert [entry["nodes"] for entry in report] == [["a", "b", "c"], ["d"]]
    # Every node already labelled: nothing to write.
    assert node_labels.plan(requests, [[node("a", {key: "inference"})], []])[1] == []


MIG_POOL = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}


@pytest.mark.parametrize("over, field, words", [
    ({"mig_profile": "all-9g.99gb"}, "gpu_platform_node_pools[0].mig_profile", "not a MIG layout of any GPU"),
    ({"mig_profile": "all-1g.12gb", "gpu_product": "A100-80GB"}, "gpu_platform_node_pools[0].mig_profile",
     "needs the MIG profile 1g.12gb, which A100-80GB does not have"),
    ({"gpu_product": "NVIDIA-T4"}, "gpu_platform_node_pools[0].gpu_product", "not a MIG-capable GPU"),
    ({"mig_profile": "all-balanced", "gpu_product": "RTX-9000"}, "gpu_platform_node_pools[0].gpu_product", "RTX-9000"),
])
def test_a_mig_layout_is_checked_against_the_catalog_without_a_cluster(over, field, words):
    with pytest.raises(ParamError) as err:
        sharing.validate_pools([dict(MIG_POOL, **over)])
    assert err.value.field == field and words in err.value.msg and "Fix:" in err.value.msg


@pytest.mark.parametrize("product, key", [("A100-80GB", "A100-80GB"), ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
                                          (None, None)])
def test_a_layout_of_the_pools_gpu_passes(product, key):
    raw = dict(MIG_POOL, gpu_product=product) if product else dict(MIG_POOL)
    [pool] = sharing.validate_pools([raw])
    assert pool.gpu_product == key and pool.mig_profile == "all-1g.10gb"


def test_gpu_product_belongs_to_mig_pools_only():
    with pytest.raises(ParamError) as err:
        sharing.validate_pools([{"name": "a", "node_selector": {"a": "b"}, "sharing": "none", "gpu_product": "A100-80GB"}])
    assert err.value.field == "gpu_platform_node_pools[0].gpu_product"
