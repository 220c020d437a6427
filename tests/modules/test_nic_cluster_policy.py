"""nic_cluster_policy against the fake cluster with a simulated Network Operator."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import nic_cluster_policy as workflow
from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import default_controllers
from local_gpu_cluster.network_operator import SimulatedNetworkOperator
from tests.modules.harness import run_module
from tests.schema import crdschema

BASE = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
        "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}


@pytest.fixture
def net_api(fake_api_factory):
    clock = FakeClock()
    operator = SimulatedNetworkOperator(ready_after=5.0)
    api = fake_api_factory(clock=clock, controllers=[operator] + default_controllers())
    api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-network-operator"}})
    api.operator = operator
    api.clear_log()
    return api


def run(api, check_mode=False, diff=False, **over):
    params = dict(BASE, kubeconfig=api.kubeconfig, **over)
    return run_module("nic_cluster_policy", params, check_mode=check_mode, diff=diff)


def policy(api):
    return api.store.get("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")


def test_check_mode_then_apply_then_idempotent(net_api):
    failed, result = run(net_api, check_mode=True, diff=True)
    assert not failed, result
    assert result["changed"] and result["changed_objects"]
    assert all(d["after"] for d in result["diff"])
    assert net_api.writes() == [] and policy(net_api) is None

    failed, result = run(net_api)
    assert not failed, result
    assert result["changed"]
    assert policy(net_api)["spec"]["rdmaSharedDevicePlugin"]
    assert result["pod_resources"] == {"rdma/shared_ib": 1}
    pod = result["example_pod"]
    container = pod["spec"]["containers"][0]
    assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"]
    assert container["resources"]["limits"]["rdma/shared_ib"] == 1
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "rdma-net"

    net_api.clear_log()
    failed, again = run(net_api)
    assert not failed and again["changed"] is False and again["changed_objects"] == []
    assert net_api.writes() == []


def test_a_changed_option_changes_only_the_policy(net_api):
    run(net_api)
    failed, result = run(net_api, rdma_hca_max=16, diff=True)
    assert not failed, result
    assert result["changed_objects"] == ["NicClusterPolicy nic-cluster-policy"]
    config = policy(net_api)["spec"]["rdmaSharedDevicePlugin"]["config"]
    assert '"rdmaHcaMax": 16' in config


def test_wait_moves_through_not_ready_to_ready_on_the_injected_clock(net_api):
    kube = KubeClient(kubeconfig=net_api.kubeconfig)
    params = dict(BASE, wait=True, wait_timeout="60s")
    started = net_api.clock.time()
    result = workflow.run(params, lambda: kube, clock=net_api.clock, interval=2.0)
    assert set(result["states"].values()) == {"ready"}
    assert "state-RDMA-device-plugin" in result["states"] and "state-OFED" in result["states"]
    assert 5.0 <= net_api.clock.time() - started <= 8.0


def test_wait_time_out_reports_each_component(net_api):
    net_api.operator.stuck.add("state-OFED")
    kube = KubeClient(kubeconfig=net_api.kubeconfig)
    with pytest.raises(GpuPlatformError) as err:
        workflow.run(dict(BASE, wait=True, wait_timeout="30s"), lambda: kube, clock=net_api.clock, interval=2.0)
    assert "not ready after 30s" in err.value.msg
    assert "state-OFED=notReady" in err.value.msg and "driver build failed" in err.value.msg
    assert err.value.details["states"]["state-OFED"] == "notReady"
    assert err.value.details["states"]["state-RDMA-device-plugin"] == "ready"


def test_state_absent(net_api):
    run(net_api)
    failed, result = run(net_api, state="absent", check_mode=True)
    assert result["changed"] and policy(net_api) is not None
    failed, result = run(net_api, state="absent")
    assert result["changed"] and policy(net_api) is None
    failed, again = run(net_api, state="absent")
    assert again["changed"] is False


def test_sriov_objects_are_removed_without_a_nic_count(net_api):
    failed, result = run(net_api, mode="sriov", node_type="nd-h100-v5")
    assert not failed, result
    assert result["pod_resources"] == {"rdma/ib": 8}
    assert policy(net_api)["spec"]["sriovDevicePlugin"]
    failed, result = run(net_api, mode="sriov", state="absent")
    assert not failed, result
    assert result["changed"] and policy(net_api) is None


@pytest.mark.parametrize("over, words", [
    ({"mode": "ipoib", "selectors": {"vendors": ["15b3"], "link_type": "infiniband"}}, "ipoib_master"),
    ({"ip_range": "192.168.100.0/33"}, "ip_range"),
    ({"network_operator_version": "1.0.0"}, "network_operator_version"),
    ({"selectors": {"vendors": []}}, "selectors"),
    ({"wait_timeout": "soon", "wait": True}, "wait_timeout"),
    ({"selectors": {"vendors": ["15B3X"]}}, "selectors.vendors"),
    ({"selectors": {"vendors": ["15b3"], "link_type": "token-ring", "interfaces": ["ibs1f0"]}}, "selectors.link_type"),
    ({"rdma_hca_max": 0}, "rdma_hca_max"),
    ({"resource_name": "shared-ib"}, "resource_name"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "selectors": {
     "vendors": ["15b3"], "link_type": "ether"}}, "selectors.link_type"),
    ({"ip_gateway": "10.0.0.1"}, "ip_gateway"),
    ({"network_name": "RDMA_NET"}, "network_name"),
    ({"mode": "sriov"}, "nics_per_pod: is empty and node_type is not set"),
    ({"mode": "sriov", "node_type": "Standard_NC24ads_A100_v4"}, "node_type: 'Standard_NC24ads_A100_v4' is not a known"),
    ({"mode": "sriov", "node_type": "nd-h100-v5", "nics_per_pod": 9}, "nics_per_pod: is 9 but a nd-h100-v5 node"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "nics_per_pod": 2}, "nics_per_pod: is 2 but mode ipoib"),
])
def test_bad_input_writes_nothing(net_api, over, words):
    failed, result = run(net_api, **over)
    assert failed and result["msg"].startswith(words), result["msg"]
    assert "Fix:" in result["msg"]
    assert net_api.writes() == []


@pytest.mark.parametrize("mode, extra, resources", [
    ("rdma_shared", {}, {"rdma/shared_ib": 1}),
    ("sriov", {"node_type": "Standard_ND96isr_H100_v5"}, {"rdma/ib": 8}),
    ("sriov", {"nics_per_pod": "4"}, {"rdma/ib": 4}),
    ("ipoib", {"ipoib_master": "ibs1f0"}, {"rdma/shared_ib": 1}),
])
def test_render_to_validates_and_is_idempotent(tmp_path, shared_dir, mode, extra, resources):
    out = tmp_path / "platform"
    params = dict(BASE, mode=mode, render_to=str(out), kubeconfig="/nonexistent", **extra)
    failed, result = run_module("nic_cluster_policy", params)
    assert not failed, result
    assert result["changed"]
    assert result["pod_resources"] == resources
    assert result["example_pod"]["spec"]["containers"][0]["resources"]["limits"] == dict(resources, **{
        "nvidia.com/gpu": 1})
    spec = result["objects"][0]["spec"]
    assert ("rdmaSharedDevicePlugin" in spec) is (mode != "sriov")
    for name in os.listdir(out):
        crdschema.validate(yaml.safe_load((out / name).read_text()))
    failed, again = run_module("nic_cluster_policy", params)
    assert again["changed"] is False


def test_render_ipam_to_puts_the_ippool_in_a_folder_of_its_own(tmp_path, shared_dir):
    """The IPPool's CRD comes from the operator once it reconciles the policy (its chart has none): site.yml writes the
    IPPool to the bundle's network-ipam unit, which a reconciler applies once the policy is ready."""
    config, ipam = tmp_path / "platform" / "network-config", tmp_path / "platform" / "network-ipam"
    config.mkdir(parents=True)
    (config / "ippool-nvidia-network-operator-rdma-net.yaml").write_text("stale: an earlier render's IPPool\n")
    params = dict(BASE, render_to=str(config), render_ipam_to=str(ipam), kubeconfig="/nonexistent")
    failed, result = run_module("nic_cluster_policy", params)
    assert not failed, result
    kinds = {name: yaml.safe_load((config / name).read_text())["kind"] for name in os.listdir(config)}
    assert "IPPool" not in kinds.values() and "NicClusterPolicy" in kinds.values()
    assert [yaml.safe_load((ipam / name).read_text())["kind"] for name in os.listdir(ipam)] == ["IPPool"]
    assert result["rendered"]["ipam"]["files"] == os.listdir(ipam)
    assert "ippool-nvidia-network-operator-rdma-net.yaml" in result["rendered"]["changed_files"]  # the stale one
    failed, again = run_module("nic_cluster_policy", params)
    assert not failed and again["changed"] is False
    failed, gone = run_module("nic_cluster_policy", dict(params, state="absent"))
    assert not failed and gone["changed"] and os.listdir(config) == [] and os.listdir(ipam) == []


def test_examples_validate_and_the_render_example_runs(tmp_path, shared_dir, monkeypatch):
    from ansible_collections.gpu_platform.cluster.plugins.modules import nic_cluster_policy as mod
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
        nic_cluster_policy_validate)
    tasks = [t["gpu_platform.cluster.nic_cluster_policy"] for t in yaml.safe_load(mod.EXAMPLES)
             if "gpu_platform.cluster.nic_cluster_policy" in t]
    for params in tasks:
        nic_cluster_policy_validate.build_request(params)
    rendered = [p for p in tasks if "render_to" in p]
    assert rendered
    # What the module passes to AnsibleModule.warn, caught there: where ansible-core files a warning
    # depends on what the process imported before (controller code routes it to Display).
    warned = []
    from ansible.module_utils import basic
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning: warned.append(warning))
    for params in rendered:
        del warned[:]
        failed, result = run_module("nic_cluster_policy", dict(params, render_to=str(tmp_path / "out")))
        assert not failed, result
        if params.get("ipam") == "whereabouts":
            assert any("whereabouts" in w for w in warned), "the whereabouts caveat reaches the user"
        for obj in result["objects"]:
            crdschema.validate(obj)
