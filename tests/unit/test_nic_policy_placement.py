"""Tests of the NicClusterPolicy domain's node placement (node affinity) and DOCA driver upgrade policy."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_render, nic_cluster_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

BASE_POLICY = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
               "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}}


def test_the_policy_runs_on_mellanox_nic_nodes_by_default():
    spec = nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(BASE_POLICY))["spec"]
    [term] = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In",
                                          "values": ["true"]}]}
    mine = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nodepool", "operator": "In", "values": ["training"]}]}]}}
    spec = nic_cluster_policy_render.render_policy(
        nic_cluster_policy_validate.build_request(dict(BASE_POLICY, node_affinity=mine)))["spec"]
    assert spec["nodeAffinity"] == mine
    assert "nodeAffinity" not in nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(
        dict(BASE_POLICY, node_affinity={})))["spec"], "{} means every node"


@pytest.mark.parametrize("value, field", [
    ("nodepool=training", "node_affinity"), ({"nodeSelector": {}}, "node_affinity"),
    ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
     "node_affinity.requiredDuringSchedulingIgnoredDuringExecution"),
])
def test_a_bad_node_affinity_is_refused(value, field):
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(dict(BASE_POLICY, node_affinity=value))
    assert err.value.field == field


def test_the_doca_driver_upgrades_one_drained_node_at_a_time():
    driver = nic_cluster_policy_render.render_policy(
        nic_cluster_policy_validate.build_request(BASE_POLICY))["spec"]["ofedDriver"]
    policy = driver["upgradePolicy"]
    assert policy["autoUpgrade"] is True and policy["maxParallelUpgrades"] == 1
    assert policy["drain"]["enable"] is True and policy["drain"]["timeoutSeconds"] == 300
    changed = nic_cluster_policy_validate.build_request(dict(BASE_POLICY, driver_upgrade_policy={
        "maxParallelUpgrades": 2, "drain": {"timeoutSeconds": 600}}))
    assert changed.upgrade_policy["maxParallelUpgrades"] == 2 and changed.upgrade_policy["drain"]["timeoutSeconds"] == 600
    assert changed.upgrade_policy["drain"]["enable"] is True, "the keys left out keep the safe default"


@pytest.mark.parametrize("policy, field", [
    ({"maxUnavailable": 1}, "driver_upgrade_policy.maxUnavailable"),
    ({"drain": {"enable": "yes"}}, "driver_upgrade_policy.drain.enable"),
    ({"maxParallelUpgrades": -1}, "driver_upgrade_policy.maxParallelUpgrades"),
    ({"waitForCompletion": {"podSelector": "(("}}, "driver_upgrade_policy.waitForCompletion.podSelector"),
])
def test_a_bad_doca_upgrade_policy_is_refused_naming_the_key(policy, field):
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(dict(BASE_POLICY, driver_upgrade_policy=policy))
    assert err.value.field == field


def test_an_upgrade_policy_without_the_doca_driver_is_refused():
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(
            dict(BASE_POLICY, ofed_driver=False, driver_upgrade_policy={"autoUpgrade": False}))
    assert err.value.field == "driver_upgrade_policy"
