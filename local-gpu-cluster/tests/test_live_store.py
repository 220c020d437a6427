"""local_gpu_cluster/live_store.py (LiveStore), against the fake API server over HTTP.

The fake runs no controllers (``controllers=[]``): what LiveStore sends is what the fake logs.
"""


import pytest

from local_gpu_cluster.controllers import set_status
from local_gpu_cluster.live_store import LiveStore, NotServed

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
