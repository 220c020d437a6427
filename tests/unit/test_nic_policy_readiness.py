"""Tests of the NicClusterPolicy domain's readiness: component states, policy readiness and descriptions."""
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import nic_policy

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
    assert nic_policy.component_states(NOT_READY) == {
        "state-multus-cni": "ready", "state-OFED": "notReady", "state-ib-kubernetes": "ignore",
        "state-nv-ipam-cni": "error"}
    assert nic_policy.component_states({}) == {}
    assert nic_policy.component_states(None) == {}
    assert nic_policy.component_states({"status": {"state": "ready"}}) == {}


def test_policy_ready():
    assert nic_policy.policy_ready({"status": {"state": "ready"}}) is True
    assert nic_policy.policy_ready(NOT_READY) is False
    assert nic_policy.policy_ready({}) is False
    assert nic_policy.policy_ready(None) is False


def test_describe_states():
    assert nic_policy.describe_states(NOT_READY) == (
        "state notReady: state-OFED=notReady (waiting for pod), state-multus-cni=ready, "
        "state-nv-ipam-cni=error (image pull failed)")
    assert nic_policy.describe_states({}) == "state unknown (no status yet)"
    assert nic_policy.describe_states({"status": {"state": "error", "reason": "bad spec"}}) == \
        "state error (bad spec)"
