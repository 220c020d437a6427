"""node_maintenance, run in-process against a cluster: a missing node, a refused drain, check mode, drain,
no-op and uncordon.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
from tests.integration.conftest import TEST_LABEL
from tests.integration.modules_cluster_helpers import CUDA_IMAGE, ok, run


# ---------------------------------------------------------------------------------------------- node_maintenance

def bound_pod(cluster, name, node, labels):
    """A pod bound to ``node`` with no controller. Without a kubelet it stays Pending on a real cluster; a grace
    period of 0 lets the API server delete it at once when it is evicted."""
    return cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": cluster.namespace, "labels": dict(labels, **{TEST_LABEL: cluster.namespace})},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": CUDA_IMAGE, "command": ["sleep", "infinity"]}]}})


def unschedulable(cluster, node):
    return (cluster.get("v1", "Node", node).get("spec") or {}).get("unschedulable")


def test_node_maintenance_missing_node_is_refused(cluster):
    missing = cluster.namespace + "-no-such-node"
    failed, result = run(cluster, "node_maintenance", {"name": missing, "state": "drained"})
    assert failed and result["msg"].startswith("name: node %s does not exist" % missing)


def test_node_maintenance_refusal_check_mode_drain_noop_and_uncordon(cluster):
    cluster.require_cluster_scoped("a Node object gpi-*-drain-0 (no kubelet), cordons and uncordons it")
    node, ns = cluster.namespace + "-drain-0", cluster.namespace
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {TEST_LABEL: ns}}})
    bound_pod(cluster, "loner", node, {"role": "evict"})
    bound_pod(cluster, "keeper", node, {"role": "keep"})
    params = {"name": node, "state": "drained", "pod_selector": "role=evict", "wait_timeout": "60s"}

    failed, refused = run(cluster, "node_maintenance", params)
    assert failed and "force: pods that no controller manages would not be recreated: %s/loner" % ns in refused["msg"]
    assert not unschedulable(cluster, node), "refused before the cordon"

    params["force"] = True
    checked = ok(run(cluster, "node_maintenance", params, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["evicted"] == ["%s/loner" % ns]
    assert checked["not_evicted"] == [{"pod": "%s/keeper" % ns, "reason": "does not match pod_selector role=evict"}]
    assert checked["diff"][0]["after"] == {"unschedulable": True, "pods": ["%s/keeper" % ns]}
    assert not unschedulable(cluster, node)
    assert cluster.get("v1", "Pod", "loner", ns) is not None, "check mode evicted a pod"

    drained = ok(run(cluster, "node_maintenance", params))
    assert drained["changed"] is True and drained["cordoned"] is True and drained["evicted"] == ["%s/loner" % ns]
    assert unschedulable(cluster, node) is True
    assert cluster.get("v1", "Pod", "loner", ns) is None and cluster.get("v1", "Pod", "keeper", ns) is not None

    again = ok(run(cluster, "node_maintenance", params))
    assert again["changed"] is False and again["evicted"] == []

    uncordoned = ok(run(cluster, "node_maintenance", {"name": node, "state": "uncordoned"}))
    assert uncordoned["changed"] is True and uncordoned["cordoned"] is False
    assert not unschedulable(cluster, node)
    assert ok(run(cluster, "node_maintenance", {"name": node, "state": "uncordoned"}))["changed"] is False
