"""tests/fakes/live_store.py (LiveStore) and live_volcano.place_gang, against the fake API server over HTTP.

The fake runs no controllers (``controllers=[]``): what LiveStore sends is what the fake logs.
"""


import pytest

from .controllers import set_status
from .gpu_operator import gpu_node
from .live_store import LiveStore, NotServed
from .live_volcano import place_gang

CONTAINERS = [{"name": "c", "image": "img:1"}]


@pytest.fixture
def fake(fake_api_factory):
    return fake_api_factory(controllers=[])


def _writes(server):
    return [(r["method"], r["path"]) for r in server.writes()]


def _policy(name="cluster-policy", **spec):
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": name}, "spec": spec}


# ---------------------------------------------------------------- LiveStore


def test_store_reads_writes_and_skips_writes_that_change_nothing(fake):
    lines = []
    store = LiveStore(fake.kubeconfig, log=lines.append)
    created = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"a": "1"}},
                            "data": {"k": "v"}})
    assert created["metadata"]["namespace"] == "default" and lines == ["create v1 ConfigMap default/cm"]
    assert store.get("v1", "ConfigMap", "cm")["data"] == {"k": "v"}
    assert store.get("v1", "ConfigMap", "absent") is None
    listed = store.list("v1", "ConfigMap", label_selector="a=1")
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in listed] == [("v1", "ConfigMap", "cm")]
    assert not store.resource("v1", "ConfigMap").has_status and store.resource("apps/v1", "Deployment").has_status
    with pytest.raises(NotServed):
        store.resource("example.com/v1", "Nothing")

    fake.clear_log()
    store.modify("v1", "ConfigMap", "cm", lambda cm: cm)
    store.set_labels("v1", "ConfigMap", "cm", {"a": "1"})
    store.patch("v1", "ConfigMap", "cm", {"data": {"k": "v"}})
    assert _writes(fake) == []  # nothing would change: nothing sent

    store.modify("v1", "ConfigMap", "cm", lambda cm: cm["data"].update(k="w"))
    store.set_labels("v1", "ConfigMap", "cm", {"a": None, "b": "2"})
    assert _writes(fake) == [("PUT", "/api/v1/namespaces/default/configmaps/cm"),
                             ("PATCH", "/api/v1/namespaces/default/configmaps/cm")]
    stored = fake.store.get("v1", "ConfigMap", "cm")
    assert stored["data"] == {"k": "w"} and stored["metadata"]["labels"] == {"b": "2"}

    store.delete("v1", "ConfigMap", "cm")
    assert fake.store.get("v1", "ConfigMap", "cm") is None and lines[-1] == "delete v1 ConfigMap default/cm"


def test_status_goes_to_the_status_subresource(fake):
    store = LiveStore(fake.kubeconfig, log=lambda text: None)
    store.create(_policy())
    fake.clear_log()
    set_status(store, store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy"), {"state": "notReady"})
    store.patch_status("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"state": "ready"})
    store.patch_status("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"state": "ready"})  # no change
    assert _writes(fake) == [("PUT", "/apis/nvidia.com/v1/clusterpolicies/cluster-policy/status"),
                             ("PATCH", "/apis/nvidia.com/v1/clusterpolicies/cluster-policy/status")]
    assert fake.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["status"] == {"state": "ready"}

    fake.clear_log()  # privileged create, as the fake's: the status given is written after the object
    store.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"app": "ds"}},
                           "template": {"metadata": {"labels": {"app": "ds"}}, "spec": {"containers": CONTAINERS}}},
                  "status": {"numberReady": 1}})
    assert _writes(fake)[-1] == ("PUT", "/apis/apps/v1/namespaces/default/daemonsets/ds/status")
    assert fake.store.get("apps/v1", "DaemonSet", "ds", "default")["status"] == {"numberReady": 1}


def test_modify_reads_again_and_retries_on_conflict(fake):
    store = LiveStore(fake.kubeconfig, log=lambda text: None)
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {}})
    calls = []

    def change(cm):
        calls.append(dict(cm["data"]))
        if len(calls) == 1:  # someone else writes between our read and our write
            fake.store.patch("v1", "ConfigMap", "cm", {"data": {"theirs": "1"}})
        cm["data"]["ours"] = "1"
    store.modify("v1", "ConfigMap", "cm", change)
    assert calls == [{}, {"theirs": "1"}]
    assert fake.store.get("v1", "ConfigMap", "cm")["data"] == {"theirs": "1", "ours": "1"}
    assert [r["code"] for r in fake.writes()].count(409) == 1


# ---------------------------------------------------------------- place_gang


class _Listing:
    """Just ``list`` of nodes and pods, for ``place_gang``."""

    def __init__(self, nodes, pods=()):
        self.objects = {"Node": list(nodes), "Pod": list(pods)}

    def list(self, api_version, kind, namespace=None, label_selector="", field_selector=""):
        return self.objects[kind]


def _pod(name, gpus=1, **spec):
    return {"metadata": {"name": name, "namespace": "default", "labels": {}},
            "spec": dict(spec, containers=[{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}])}


def test_place_gang_honours_readiness_taints_selectors_and_free_resources():
    nodes = [gpu_node("a"), gpu_node("b"), gpu_node("c"), gpu_node("d")]
    nodes[0]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    nodes[1]["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    nodes[3]["metadata"]["labels"]["pool"] = "big"
    busy = dict(_pod("busy", 6), spec=dict(_pod("busy", 6)["spec"], nodeName="c"), status={"phase": "Running"})
    done = dict(_pod("done", 8), spec=dict(_pod("done", 8)["spec"], nodeName="d"), status={"phase": "Succeeded"})
    store = _Listing(nodes, [busy, done])
    assert place_gang(store, [_pod("p0", 2), _pod("p1", 2)]) == {"p0": "c", "p1": "d"}
    assert place_gang(store, [_pod("p0", 3), _pod("p1", 3)]) == {"p0": "d", "p1": "d"}  # 2 GPUs free on c
    assert place_gang(store, [_pod("p0", 8, nodeSelector={"pool": "big"}), _pod("p1", 1, nodeSelector={
        "pool": "big"})]) == {}  # the gang does not fit as a whole: nothing is placed
    tolerant = _pod("p0", 8, tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert place_gang(store, [tolerant]) == {"p0": "b"}
