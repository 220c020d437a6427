"""What the real Network Operator v26.4.0 showed about nic_cluster_policy: the NV-IPAM IPPool waits for its CRD,
which the operator installs from the NicClusterPolicy; a ready policy is one that stays ready.

Network Operator v26.4.0's chart carries no nv-ipam.nvidia.com CRD: the operator applies IPPool's and CIDRPool's CRDs
when it reconciles the policy's nvIpam (manifests/state-nv-ipam-cni/005-*.yaml). So the IPPool is applied after the
policy, once the cluster serves it; before, nothing of the layer was applied ("the cluster does not serve
nv-ipam.nvidia.com/v1alpha1 IPPool") on a cluster where the operator had just been installed.
"""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_render)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import nic_cluster_policy as workflow

PARAMS = {"mode": "rdma_shared", "network_operator_version": "26.4.0", "ip_range": "192.168.100.0/24",
          "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}
IPPOOL = ("nv-ipam.nvidia.com/v1alpha1", "IPPool")


class Clock:
    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class OperatorCluster:
    """Serves every kind but IPPool until the policy has been applied and the operator had ``delay`` polls."""

    def __init__(self, delay=2):
        self.delay, self.applied, self.served_ippool = delay, [], False

    def serves(self, api_version, kind):
        if (api_version, kind) != IPPOOL:
            return True
        if not self.served_ippool and any(o["kind"] == "NicClusterPolicy" for o in self.applied):
            self.delay -= 1
            self.served_ippool = self.delay < 0
        return self.served_ippool

    def apply_objects(self, objects, check_mode=False, missing=None):
        del missing
        if not check_mode:
            self.applied.extend(objects)
        return ["%s %s" % (o["kind"], o["metadata"]["name"]) for o in objects], []


def objects():
    policy, _outputs = workflow.request(dict(PARAMS))
    return nic_cluster_policy_render.render(policy)


def test_the_ippool_is_applied_after_the_policy_once_the_operator_serves_its_crd():
    kube, everything = OperatorCluster(), objects()
    result = workflow.apply(kube, everything, "present", False, 60, Clock(), 1.0)
    kinds = [o["kind"] for o in kube.applied]
    assert kinds.index("NicClusterPolicy") < kinds.index("IPPool")
    assert sorted(kinds) == sorted(o["kind"] for o in everything)
    assert result["changed"] and any(name.startswith("IPPool") for name in result["changed_objects"])


def test_an_ippool_crd_that_never_comes_names_the_kind_and_the_operator():
    kube = OperatorCluster(delay=10 ** 6)
    with pytest.raises(GpuPlatformError) as caught:
        workflow.apply(kube, objects(), "present", False, 10, Clock(), 1.0)
    assert "nv-ipam.nvidia.com/v1alpha1 IPPool" in caught.value.msg and "nvIpam" in caught.value.msg
    assert [o["kind"] for o in kube.applied if o["kind"] == "IPPool"] == []
    assert any(o["kind"] == "NicClusterPolicy" for o in kube.applied)


def test_check_mode_reports_the_ippool_as_a_change_without_waiting():
    kube, clock = OperatorCluster(), Clock()
    result = workflow.apply(kube, objects(), "present", True, 60, clock, 1.0)
    assert result["changed"] and any(name.startswith("IPPool") for name in result["left_out"])
    assert clock.now == 0.0 and kube.applied == []


def test_a_served_ippool_goes_with_the_rest_in_one_apply():
    kube = OperatorCluster()
    kube.served_ippool = True
    everything = objects()
    workflow.apply(kube, everything, "present", False, 60, Clock(), 1.0)
    assert kube.applied == everything


class Statuses:
    """The NicClusterPolicy as the operator writes it, one status per read."""

    def __init__(self, states):
        self.states, self.reads = list(states), 0

    def get(self, api_version, kind, name, namespace=None):
        del api_version, kind, name, namespace
        state = self.states[min(self.reads, len(self.states) - 1)]
        self.reads += 1
        return {"metadata": {"name": "nic-cluster-policy"}, "status": {"state": state}}


def test_a_ready_seen_once_between_not_ready_is_not_a_ready_policy():
    """A crash-looping device plugin is Ready for a moment at each start: the operator writes ready, then notReady."""
    kube = Statuses(["notReady", "ready", "notReady", "notReady", "ready", "ready"])
    workflow.wait_ready(kube, 60, Clock(), 1.0)
    assert kube.reads == 6


def test_a_policy_ready_at_once_takes_two_reads():
    kube = Statuses(["ready"])
    clock = Clock()
    workflow.wait_ready(kube, 60, clock, 1.0)
    assert kube.reads == 2 and clock.now == 1.0
