"""Tests of the gpu_sharing domain's node labels, chart values, warnings, expected allocatable, and the
config hash and restart patch."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema import crdschema, pinned_charts
from tests.unit.sharing_helpers import MIGP, TS, WHOLE, one, pool


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


def test_device_plugin_values_name_and_keys_exist_in_the_chart():
    values = sharing.device_plugin_values(sharing.validate_pools([TS]), name="dp-config")
    assert values["devicePlugin"]["config"]["name"] == "dp-config"
    for version in pinned_charts.pair_versions("gpu-operator"):
        assert crdschema.check_values_keys(values, pinned_charts.values_path("gpu-operator", version)) == [], version
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
