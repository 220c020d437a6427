"""The fake's building blocks on their own: patches, selectors, protobuf, store semantics."""

import base64

import pytest

from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.errors import ApiError
from local_gpu_cluster.kinds import Registry
from local_gpu_cluster.patches import apply_merge, json_patch, merge_patch, strategic_merge
from local_gpu_cluster.protobuf import decode
from local_gpu_cluster.selectors import FieldSelector, LabelSelector, ObjectFilter
from local_gpu_cluster.store import Store

# ---------------------------------------------------------------- patches


def test_merge_patch_rfc7386():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3},
                                                           "l": [2]}) == {
        "a": {"c": 2, "d": 3}, "l": [2]}


def test_json_patch_operations_and_failed_test():
    doc = {"a": [1, 2], "b": {"c": "x"}}
    result = json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3},
                              {"op": "replace", "path": "/b/c", "value": "y"},
                              {"op": "copy", "from": "/b", "path": "/d"},
                              {"op": "move", "from": "/a/0", "path": "/first"},
                              {"op": "test", "path": "/d/c", "value": "y"}])
    assert result == {"a": [2, 3], "b": {"c": "y"}, "d": {"c": "y"}, "first": 1}
    assert doc == {"a": [1, 2], "b": {"c": "x"}}
    with pytest.raises(ApiError) as error:
        json_patch(doc, [{"op": "test", "path": "/b/c", "value": "nope"}])
    assert error.value.code == 422
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_strategic_merge_keys_and_directives():
    current = {"spec": {"containers": [{"name": "a", "image": "1", "env": [
        {"name": "X", "value": "1"}]}, {"name": "b", "image": "1"}],
        "ports": [{"containerPort": 80, "name": "http"}], "args": ["x"]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "a"}],
                      "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]},
                                     {"name": "b", "$patch": "delete"}],
                      "ports": [{"containerPort": 443}], "args": ["y"]}}
    assert strategic_merge(current, patch) == {"spec": {
        "containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"},
                                                           {"name": "Y", "value": "2"}]}],
        "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
        "args": ["y"]}}


def test_apply_merge_prunes_what_the_manager_stopped_applying():
    previous = {"data": {"a": "1", "b": "2"}, "spec": {"containers": [
        {"name": "x", "image": "1"}, {"name": "y", "image": "1"}]}}
    current = {"data": {"a": "1", "b": "2", "other": "keep"}, "spec": {"containers": [
        {"name": "x", "image": "1"}, {"name": "y", "image": "1"},
        {"name": "z", "image": "other-manager"}]}}
    applied = {"data": {"a": "3"}, "spec": {"containers": [{"name": "x", "image": "2"}]}}
    assert apply_merge(current, applied, previous) == {
        "data": {"a": "3", "other": "keep"},
        "spec": {"containers": [{"name": "x", "image": "2"},
                                {"name": "z", "image": "other-manager"}]}}


# ---------------------------------------------------------------- selectors

@pytest.mark.parametrize("selector, labels, expected", [
    ("a=1", {"a": "1"}, True), ("a==1", {"a": "2"}, False), ("a!=1", {}, True),
    ("a in (1, 2)", {"a": "2"}, True), ("a notin (1,2)", {"a": "1"}, False),
    ("a notin (1,2)", {}, True), ("a", {"a": ""}, True), ("!a", {"a": "x"}, False),
    ("a>3", {"a": "4"}, True), ("a<3", {"a": "4"}, False), ("a,b=2", {"a": "1"}, False),
    ("", {"x": "y"}, True), ("a in (1),!b", {"a": "1"}, True),
])
def test_label_selector(selector, labels, expected):
    assert LabelSelector.parse(selector).matches(labels) is expected


def test_label_selector_from_spec_and_field_selector():
    selector = LabelSelector.from_spec({"matchLabels": {"app": "x"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["db"]}]})
    assert selector.matches({"app": "x", "tier": "web"})
    assert not selector.matches({"app": "x", "tier": "db"})
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "hostNetwork": True},
           "status": {"phase": "Running"}}
    assert FieldSelector.parse("spec.nodeName=n1,status.phase!=Failed").matches(pod)
    assert FieldSelector.parse("spec.hostNetwork=true,spec.missing=").matches(pod)
    assert not FieldSelector.parse("metadata.name==q").matches(pod)


# ---------------------------------------------------------------- protobuf

def _varint(value):
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def _field(number, payload):
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _entry(number, key, value):
    return _field(number, _field(1, key) + _field(2, value))


def test_protobuf_secret_and_delete_options():
    meta = (_field(1, "sh.helm.release.v1.demo.v1") + _field(3, "default")
            + _entry(11, "owner", "helm") + _entry(11, "status", "deployed"))
    secret = _field(1, meta) + _entry(2, "release", b"\x1f\x8b\x00binary") + _field(
        3, "helm.sh/release.v1")
    body = b"k8s\x00" + _field(1, _field(1, "v1") + _field(2, "Secret")) + _field(2, secret)
    assert decode(body) == {
        "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
        "metadata": {"name": "sh.helm.release.v1.demo.v1", "namespace": "default",
                     "labels": {"owner": "helm", "status": "deployed"}},
        "data": {"release": base64.b64encode(b"\x1f\x8b\x00binary").decode()}}
    options = b"k8s\x00" + _field(1, _field(1, "v1") + _field(2, "DeleteOptions")) + _field(
        2, _field(4, "Foreground") + _field(5, "All"))
    assert decode(options)["propagationPolicy"] == "Foreground"
    assert decode(options)["dryRun"] == ["All"]


# ---------------------------------------------------------------- store semantics

@pytest.fixture
def store():
    return Store(Registry(), FakeClock(), history=5)


def _cm(name, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", **meta}}


def test_finalizers_delay_deletion(store):
    store.create(_cm("held", finalizers=["example.com/hold"]))
    store.delete("v1", "ConfigMap", "held")
    marked = store.get("v1", "ConfigMap", "held")
    assert marked["metadata"]["deletionTimestamp"] == "2025-01-01T00:00:00Z"
    store.patch("v1", "ConfigMap", "held", {"metadata": {"finalizers": None}})
    assert store.get("v1", "ConfigMap", "held") is None


def test_orphan_propagation_keeps_dependents(store):
    owner = store.create(_cm("owner"))
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                 "uid": owner["metadata"]["uid"]}
    store.create(_cm("orphan", ownerReferences=[reference]))
    store.create(_cm("other-owner"))
    store.delete("v1", "ConfigMap", "owner", propagation_policy="Orphan")
    assert "ownerReferences" not in store.get("v1", "ConfigMap", "orphan")["metadata"]


def test_generation_bumps_only_for_spec_changes(store):
    store.create(_cm("g"))
    store.set_labels("v1", "ConfigMap", "g", {"x": "y"})
    assert store.get("v1", "ConfigMap", "g")["metadata"]["generation"] == 1
    store.patch("v1", "ConfigMap", "g", {"data": {"k": "v"}})
    assert store.get("v1", "ConfigMap", "g")["metadata"]["generation"] == 2


def test_validation_errors(store):
    with pytest.raises(ApiError) as error:
        store.create(_cm("Bad_Name"))
    assert error.value.code == 422 and error.value.status()["reason"] == "Invalid"
    with pytest.raises(ApiError) as error:
        store.create({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "d", "namespace": "default"},
                      "spec": {"selector": {"matchLabels": {"app": "a"}},
                               "template": {"metadata": {"labels": {"app": "b"}},
                                            "spec": {"containers": [{"name": "c",
                                                                     "image": "i"}]}}}})
    assert "selector" in error.value.message
    with pytest.raises(ApiError) as error:
        store.create(_cm("l", labels={"bad key!": "x"}))
    assert error.value.code == 422


def test_watch_from_a_forgotten_resource_version_is_gone(store):
    rtype = store.resource("v1", "ConfigMap")
    start = store.resource_version
    for number in range(8):
        store.create(_cm(f"c{number}"))
    events = list(store.watch(rtype, ObjectFilter(), start, timeout=0.1))
    assert events[0][0] == "ERROR" and events[0][1]["code"] == 410
    recent = str(int(store.resource_version) - 2)
    events = list(store.watch(rtype, ObjectFilter(), recent, timeout=0.1))
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "c6"), ("ADDED", "c7")]
