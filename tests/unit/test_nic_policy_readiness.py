"""Tests of the NicClusterPolicy domain's readiness: component states, policy readiness and descriptions."""
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy)

NOT_READY = {
    "metadata": {"name": "nic-cluster-policy"},
    "status": {"state": "notReady", "appliedStates": [
        {"name": "state-multus-cni", "state": "ready"},
        {"name": "state-OFED", "state": "notReady", "message": "waiting for pod"},
        {"name": "state-ib-kubernetes", "state": "ignore"},
        {"name": "state-nv-ipam-cni", "state": "error", "message": "image pull failed"},
    ]},
}


def test_component_states():
    assert nic_cluster_policy.component_states(NOT_READY) == {
        "state-multus-cni": "ready", "state-OFED": "notReady", "state-ib-kubernetes": "ignore",
        "state-nv-ipam-cni": "error"}
    assert nic_cluster_policy.component_states({}) == {}
    assert nic_cluster_policy.component_states(None) == {}
    assert nic_cluster_policy.component_states({"status": {"state": "ready"}}) == {}


def test_policy_ready():
    assert nic_cluster_policy.policy_ready({"status": {"state": "ready"}}) is True
    assert nic_cluster_policy.policy_ready(NOT_READY) is False
    assert nic_cluster_policy.policy_ready({}) is False
    assert nic_cluster_policy.policy_ready(None) is False


def test_describe_states():
    assert nic_cluster_policy.describe_states(NOT_READY) == (
        "state notReady: state-OFED=notReady (waiting for pod), state-multus-cni=ready, "
        "state-nv-ipam-cni=error (image pull failed)")
    assert nic_cluster_policy.describe_states({}) == "state unknown (no status yet)"
    assert nic_cluster_policy.describe_states({"status": {"state": "error", "reason": "bad spec"}}) == \
        "state error (bad spec)"


def _daemonset(name, uid, desired, available, owner="policy-uid"):
    return {"metadata": {"name": name, "namespace": "network", "uid": uid,
                         "ownerReferences": [{"uid": owner, "controller": True, "kind": "NicClusterPolicy"}]},
            "status": {"desiredNumberScheduled": desired, "numberAvailable": available}}


def _pod(owner_uid, node, ready, waiting=None):
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if waiting:
        status["containerStatuses"] = [{"state": {"waiting": {"reason": waiting[0], "message": waiting[1]}}}]
    return {"metadata": {"ownerReferences": [{"uid": owner_uid}]}, "spec": {"nodeName": node}, "status": status}


def test_a_time_out_names_the_component_daemonsets_and_the_nodes_whose_pods_are_not_ready():
    daemonsets = [_daemonset("rdma-shared-dp-ds", "ds-1", 2, 1), _daemonset("mofed-ubuntu22.04-ds", "ds-2", 0, 0),
                  _daemonset("kube-multus-ds", "ds-3", 2, 2), _daemonset("someone-elses", "ds-4", 1, 0, owner="x")]
    pods = [_pod("ds-1", "gpu-node-1", False, ("CrashLoopBackOff", "back-off restarting")),
            _pod("ds-1", "gpu-node-2", True), _pod("ds-3", "gpu-node-1", True), _pod("ds-4", "gpu-node-9", False)]
    text = nic_cluster_policy.describe_components("policy-uid", daemonsets, pods)
    assert text == ("DaemonSet network/mofed-ubuntu22.04-ds: no node matches its node affinity and selector; "
                    "DaemonSet network/rdma-shared-dp-ds: pods not Ready on node gpu-node-1 (CrashLoopBackOff: "
                    "back-off restarting)")
    assert nic_cluster_policy.describe_components(
        "policy-uid", [_daemonset("kube-multus-ds", "ds-3", 2, 2)], pods) == ""
