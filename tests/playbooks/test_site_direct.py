"""site.yml in direct mode: real ansible-playbook, real helm, the fake GPU cluster."""
from __future__ import annotations

import pytest


pytestmark = pytest.mark.slow


def test_install_wait_smoke_then_idempotent_then_check_mode(direct_site):
    runner, api, repo = direct_site()
    first = runner.run()
    assert first.failed == 0, first.failure_messages() or first.debug_text()
    assert first.changed > 0
    policy = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["status"]["state"] == "ready"
    assert policy["spec"]["driver"]["enabled"] is True and policy["spec"]["mig"]["strategy"] == "single"
    ns = api.store.get("v1", "Namespace", "gpu-operator")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    release = api.store.list("v1", "Secret", "gpu-operator", label_selector="owner=helm,status=deployed")
    assert len(release) == 1 and release[0]["metadata"]["labels"]["name"] == "gpu-operator"
    smoke = first.result("The nvidia-smi pod must show the GPU table")["smoke"]
    assert smoke["passed"] and "driver 595.91.07" in smoke["reason"]
    assert smoke["removed"] == ["pod-gpu-operator-gpu-platform-smoke-cuda"]
    assert api.store.get("v1", "Pod", "gpu-platform-smoke-cuda", "gpu-operator") is None, "smoke pod cleaned up"
    # The scheduling layer's gang ran as a Volcano Job in the smoke namespace and is gone again.
    gang = [w for w in api.writes() if w["method"] in ("POST", "PATCH") and "/jobs/gpu-platform-smoke-gang" in w["path"]]
    assert gang and api.store.list("batch.volcano.sh/v1alpha1", "Job", "gpu-platform-smoke") == []
    summary = first.result("What was written and which versions are pinned")["msg"]
    assert summary[0] == "The platform was installed directly on the cluster."
    assert "gpu-operator chart gpu-operator v26.7.0" in summary[2]
    assert summary[-1] == "Smoke tests passed for gpu_operator and scheduling."

    second = runner.run()
    assert second.failed == 0, second.failure_messages()
    assert second.changed == 0, second.changed_tasks()

    api.clear_log()
    repo.clear()
    check = runner.run("--check")
    assert check.failed == 0, check.failure_messages()
    assert check.changed == 0, check.changed_tasks()
    assert api.writes() == []
    assert repo.count() == 0


def label_nodes(api, labels, names=("gpu-node-1", "gpu-node-2")):
    for name in names:
        api.store.set_labels("v1", "Node", name, labels)


def test_host_mode_turns_the_operator_driver_off(direct_site):
    runner, api, repo = direct_site()
    # The GPU Operator found a working host driver on both nodes before (GFD's label).
    label_nodes(api, {"nvidia.com/gpu.deploy.driver": "pre-installed"})
    api.clear_log()
    result = runner.run(gpu_platform_driver_mode="auto", gpu_platform_mig_strategy="mixed",
                        gpu_operator_dcgm_exporter_enabled=False)
    assert result.failed == 0, result.failure_messages()
    decision = result.result("The decision")["msg"]
    assert decision.startswith("host owns the NVIDIA driver (auto: every GPU node (2) has a host driver)")
    spec = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]
    assert spec["driver"]["enabled"] is False and spec["mig"]["strategy"] == "mixed"
    assert api.store.get("apps/v1", "DaemonSet", "nvidia-driver-daemonset", "gpu-operator") is None
    assert spec["dcgmExporter"]["enabled"] is False
    summary = result.result("What was written and which versions are pinned")["msg"]
    assert "gpu-operator driver host-installed (host)" in summary[2]


def test_host_mode_refuses_the_operators_driver_pods_before_any_write(direct_site):
    runner, api, repo = direct_site()
    first = runner.run()  # auto, nothing on the nodes: the operator's driver container owns it
    assert first.failed == 0, first.failure_messages()
    assert len(api.store.list("v1", "Pod", "gpu-operator", label_selector="app=nvidia-driver-daemonset")) == 2
    api.clear_log()
    result = runner.run(gpu_platform_driver_mode="host")
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "gpu_platform_driver_mode is host but the GPU Operator deploys drivers" in msg
    for node in ("gpu-node-1", "gpu-node-2"):
        assert "%s: operator driver pod gpu-operator/nvidia-driver-daemonset-%s" % (node, node) in msg
    assert "Either (1) let the operator own the driver" in msg and "(2) remove the operator's driver first" in msg
    assert api.writes() == []


def test_a_host_driver_beside_the_operators_driver_is_refused_per_node(direct_site):
    runner, api, repo = direct_site()
    assert runner.run().failed == 0
    # Someone installed a driver on one host too: GFD/the operator report it as pre-installed.
    label_nodes(api, {"nvidia.com/gpu.deploy.driver": "pre-installed"}, names=("gpu-node-2",))
    api.clear_log()
    result = runner.run()
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "Both a host driver and the GPU Operator's driver container are on 1 node(s)" in msg
    assert "gpu-node-2: label nvidia.com/gpu.deploy.driver=pre-installed" in msg and "gpu-node-1" not in msg
    assert api.writes() == []


def test_auto_refuses_a_mixed_cluster_naming_each_node(direct_site):
    runner, api, repo = direct_site()
    label_nodes(api, {"nvidia.com/cuda.driver.major": "535"}, names=("gpu-node-1",))
    api.clear_log()
    result = runner.run(gpu_platform_driver_mode="auto")
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "the GPU nodes disagree: 1 have a host driver and 1 do not" in msg
    assert "gpu-node-1: label nvidia.com/cuda.driver.major=535" in msg
    assert "gpu-node-2: no NVIDIA driver found" in msg
    assert "Nothing was changed." in msg
    assert api.writes() == []


def test_host_mode_refuses_nvidia_driver_objects_while_driver_enabled_is_false(direct_site):
    runner, api, repo = direct_site()
    label_nodes(api, {"nvidia.com/gpu.deploy.driver": "pre-installed"})
    api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                      "spec": {"driver": {"enabled": False, "useNvidiaDriverCRD": True}}})
    api.store.create({"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "default"},
                      "spec": {"driverType": "gpu"}})
    api.clear_log()
    result = runner.run(gpu_platform_driver_mode="host")
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "cluster: NVIDIADriver objects default" in msg
    assert "driver.useNvidiaDriverCRD=true while driver.enabled=false" in msg and "gpu-operator#1795" in msg
    assert api.writes() == []


def test_cloud_managed_driver_gets_the_peermem_loader_daemonset(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_driver_mode="host", gpu_platform_cloud_driver="present", **NETWORK)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    loader = api.store.get("apps/v1", "DaemonSet", "nvidia-peermem-loader", "nvidia-peermem")
    assert loader["status"]["numberReady"] == 2
    probe = loader["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
    assert probe == ["grep", "-q", "^nvidia_peermem ", "/proc/modules"]
    spec = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]
    assert spec["driver"]["enabled"] is False and spec["toolkit"]["enabled"] is False
    assert not spec["driver"].get("rdma", {}).get("enabled"), "a host driver: peermem is the loader's job"
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_cluster_policy_never_ready_names_the_operands(direct_site):
    runner, api, repo = direct_site(never_ready=("nvidia-driver-daemonset",))
    result = runner.run()
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "ClusterPolicy is not ready after 4s (state: notReady)" in msg
    assert "nvidia-driver-daemonset (0/2 ready)" in msg
    assert "nvidia-device-plugin-daemonset" not in msg


def test_smoke_pod_without_gpu_table_fails(direct_site):
    runner, api, repo = direct_site(cuda_log="Failed to initialize NVML: Driver/library version mismatch\n")
    result = runner.run()
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert msg.startswith("gpu_operator: FAIL - pod-gpu-operator-gpu-platform-smoke-cuda - ")
    assert "did not print its GPU table" in msg and "Driver/library version mismatch" in msg
    assert api.store.get("v1", "Pod", "gpu-platform-smoke-cuda", "gpu-operator") is None


def test_old_kubernetes_is_refused_before_any_write(direct_site):
    runner, api, repo = direct_site(git_version="v1.29.4")
    result = runner.run()
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "Kubernetes 1.29.4 is outside GPU Operator v26.7.0's validated range >=1.33,<1.38" in msg
    assert "gpu_platform_accept_unverified: true" in msg
    assert api.writes() == []
    # Acknowledging does not lower the GPU Operator role's own floor: its release's validated minimum.
    again = runner.run(gpu_platform_accept_unverified=True)
    assert again.failed == 1
    assert ("Kubernetes v1.29.4 is older than the floor GPU Operator v26.7.0 is validated on (1.33)"
            in " ".join(again.failure_messages()[-1].split())), again.failure_messages()
    assert api.writes() == []


def test_second_gpu_operator_elsewhere_is_refused_before_any_write(direct_site):
    runner, api, repo = direct_site()
    api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-gpu-operator"}})
    first = runner.run(gpu_platform_gpu_operator_namespace="nvidia-gpu-operator", gpu_operator_wait=False)
    assert first.failed == 0, first.failure_messages()
    api.clear_log()
    result = runner.run(gpu_platform_gpu_operator_namespace="gpu-operator", gpu_operator_wait=True)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "nvidia-gpu-operator/gpu-operator" in msg and "already released elsewhere" in msg
    assert api.writes() == []


@pytest.mark.parametrize("over, words", [
    ({"gpu_platform_host_mofed": True}, "gpu_platform_host_mofed: is true but gpu_platform_gpudirect_rdma is false"),
    ({"gpu_platform_driver_mode": "hosts"}, "value of gpu_platform_driver_mode must be one of: host, operator, auto, got: hosts"),
    ({"gpu_platform_driver_mode": "host"}, "have no driver and no host in the gpu_hosts group"),
    ({"gpu_operator_extra_values": {"driver": {"enabled": False}}},
     "gpu_operator_extra_values.driver.enabled: False contradicts the driver owner"),
    ({"gpu_platform_mig_strategy": "all"}, "gpu_platform_mig_strategy"),
    ({"gpu_operator_chart_version": "latest"}, "gpu_operator_chart_version: 'latest' is not a GPU Operator chart version"),
])
def test_bad_choices_fail_before_any_write(direct_site, over, words):
    runner, api, repo = direct_site()
    result = runner.run(**over)
    assert result.failed == 1
    assert any(words in m for m in result.failure_messages()), result.failure_messages()
    assert api.writes() == []


NETWORK = {"gpu_platform_network_mode": "rdma_shared",
           "network_operator_selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}


def test_network_layer_goes_first_and_the_gpu_operator_gets_rdma(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_gpudirect_rdma=True, **NETWORK)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    policy = api.store.get("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
    assert policy["status"]["state"] == "ready"
    operator = api.store.get("apps/v1", "Deployment", "network-operator", "nvidia-network-operator")
    # One NFD, the Network Operator's: installed first, it labels the nodes its NicClusterPolicy is placed on.
    assert operator["metadata"]["labels"]["nfd-enabled"] == "true", "one NFD: the Network Operator's"
    assert api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]["rdma"]["enabled"] is True
    paths = [r["path"] for r in api.writes()]
    policy_write = next(i for i, p in enumerate(paths) if "nicclusterpolicies" in p)
    gpu_release_write = next(i for i, p in enumerate(paths) if "/namespaces/gpu-operator/secrets" in p)
    assert policy_write < gpu_release_write, "the GPU Operator must go on after the NicClusterPolicy"
    shown = result.result("What pods must request for RDMA, and an example pod")["msg"]
    assert '{"rdma/shared_ib": 1}' in shown[0] and "IPC_LOCK" in shown[1]
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def boot_kernel(api, release, names=("gpu-node-1", "gpu-node-2")):
    for name in names:
        api.store.patch_status("v1", "Node", name, {"nodeInfo": {"kernelVersion": release}})
    api.clear_log()


def test_rdma_over_dma_buf_where_the_nodes_can_run_it_needs_no_peermem(direct_site):
    """auto, the operator's driver (the chart's default, open modules), kernel 6.8 and A100s: DMA-BUF, so the
    ClusterPolicy gets no nvidia-peermem sidecar and nothing loads nvidia-peermem."""
    runner, api, repo = direct_site()
    boot_kernel(api, "6.8.0-60-generic")
    result = runner.run(**NETWORK)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    decision = result.result("The decision")["msg"]
    assert "GPUDirect RDMA over dmabuf (auto: every GPU node (2) has the open kernel modules" in decision
    driver = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]
    assert driver["rdma"]["enabled"] is False and driver["kernelModuleType"] == "open"
    assert api.store.get("apps/v1", "DaemonSet", "nvidia-peermem-loader", "nvidia-peermem") is None
    summary = result.result("What was written and which versions are pinned")["msg"]
    assert "GPUDirect RDMA: dmabuf (open kernel modules, kernel 6.8, Ampere)." in summary
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_auto_does_not_move_a_cluster_already_on_peermem_when_the_evidence_grows(direct_site):
    """The first run cannot read the nodes' kernel (nvidia-peermem, in the operator's driver pods); the nodes then
    show a 6.8 kernel: a re-run keeps nvidia-peermem and changes nothing, and only dmabuf moves the cluster."""
    runner, api, repo = direct_site()
    first = runner.run(**NETWORK)
    assert first.failed == 0, first.failure_messages() or first.debug_text()
    assert api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]["rdma"]["enabled"] is True
    boot_kernel(api, "6.8.0-60-generic")
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()
    assert "but the cluster already runs nvidia-peermem (ClusterPolicy cluster-policy has driver.rdma.enabled=true)" \
        in again.result("The decision")["msg"]
    moved = runner.run(gpu_platform_gpudirect_path="dmabuf")
    assert moved.failed == 0, moved.failure_messages()
    driver = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]
    assert driver["rdma"]["enabled"] is False and driver["kernelModuleType"] == "open"


def test_dmabuf_on_an_old_kernel_is_refused_before_any_write_naming_the_pool(direct_site):
    runner, api, repo = direct_site()
    boot_kernel(api, "5.4.0-150-generic", names=("gpu-node-2",))
    pools = [{"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}]
    result = runner.run(gpu_platform_gpudirect_path="dmabuf", gpu_platform_node_pools=pools, **NETWORK)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert msg.startswith("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on 1 GPU node(s): pool "
                          "training, node gpu-node-2: kernel 5.4.0-150-generic (status.nodeInfo.kernelVersion) is "
                          "older than 5.12 - fix: boot a kernel 5.12 or newer."), msg
    assert "gpu-node-1" not in msg
    assert api.writes() == []


def test_network_policy_never_ready_stops_before_the_gpu_operator(direct_site):
    runner, api, repo = direct_site(network_stuck=("state-OFED",))
    result = runner.run(**NETWORK)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "NicClusterPolicy nic-cluster-policy is not ready after 6s" in msg and "state-OFED=notReady" in msg
    assert api.store.list("v1", "Secret", "gpu-operator", label_selector="owner=helm") == []


POOLS = [{"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4},
         {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}]


def test_sharing_time_slicing_reaches_the_device_plugin_and_mig_rolls_out(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_node_pools=POOLS)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    policy = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"]["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "default"}
    inference = api.store.get("v1", "Node", "gpu-node-1")
    assert inference["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "inference"
    assert inference["status"]["allocatable"]["nvidia.com/gpu"] == "32", "8 GPUs x 4 replicas"
    training = api.store.get("v1", "Node", "gpu-node-2")["metadata"]["labels"]
    assert training["nvidia.com/mig.config"] == "all-1g.10gb" and training["nvidia.com/mig.config.state"] == "success"
    allocatable = api.store.get("v1", "Node", "gpu-node-2")["status"]["allocatable"]
    assert allocatable["nvidia.com/gpu"] == "56", "single strategy: 8 A100-80GB x 7 x 1g.10gb"
    api.clear_log()
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()
    sharing_writes = [w["path"] for w in api.writes()
                      if "/daemonsets/" in w["path"] or "time-slicing-config" in w["path"] or "/nodes/" in w["path"]]
    assert sharing_writes == [], "a converged ConfigMap, restart annotation and node labels are not written again"

    pools = [dict(POOLS[0], replicas=2), POOLS[1]]
    third = runner.run(gpu_platform_node_pools=pools)
    assert third.failed == 0, third.failure_messages()
    assert api.store.get("v1", "Node", "gpu-node-1")["status"]["allocatable"]["nvidia.com/gpu"] == "16", \
        "a changed ConfigMap restarted the device plugin"


def test_sharing_bad_pool_fails_before_any_write(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_node_pools=[dict(POOLS[0], replicas=1)])
    assert result.failed == 1
    assert any("gpu_platform_node_pools[0].replicas" in m for m in result.failure_messages()), result.failure_messages()
    assert api.writes() == []


def test_mig_mixed_strategy_advertises_mig_resources(direct_site):
    runner, api, repo = direct_site()
    pools = [dict(POOLS[1], mig_strategy="mixed")]
    result = runner.run(gpu_platform_node_pools=pools, gpu_platform_mig_strategy="mixed")
    assert result.failed == 0, result.failure_messages()
    allocatable = api.store.get("v1", "Node", "gpu-node-2")["status"]["allocatable"]
    assert allocatable["nvidia.com/mig-1g.10gb"] == "56", "mixed strategy: 8 GPUs x 7 x 1g.10gb"


def test_mig_strategy_must_match_the_cluster(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_node_pools=[dict(POOLS[1], mig_strategy="mixed")], gpu_operator_wait=False)
    assert result.failed == 1
    assert result.failure_messages() == [
        "gpu_platform_node_pools: the MIG pools use mig_strategy mixed but gpu_platform_mig_strategy is single. "
        "Fix: set gpu_platform_mig_strategy to mixed (the strategy is one per cluster)"]
    # checks.yml finds it: the GPU Operator, whose release carries the strategy, is not installed first.
    assert api.writes() == [], [w["path"] for w in api.writes()]


def test_a_registry_password_reaches_only_its_secret(direct_site, tmp_path):
    """The NGC password goes into the pull Secret and nowhere else: not the play's output (every task result), the
    release's values, nor any file the run left."""
    import base64
    import json
    runner, api, repo = direct_site()
    password = "nvapi-s3cr3t-Zq81x"
    result = runner.run(gpu_operator_registry_credentials=[
        {"name": "ngc-pull", "registry": "nvcr.io", "username": "$oauthtoken", "password": password}])
    assert result.failed == 0, result.failure_messages()
    secret = api.store.get("v1", "Secret", "ngc-pull", "gpu-operator")
    auths = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))["auths"]
    assert auths["nvcr.io"]["password"] == password, "the Secret holds it"
    assert password not in result.stdout
    encoded = base64.b64encode(("$oauthtoken:" + password).encode()).decode()
    assert encoded not in result.stdout
    releases = [s for s in api.store.list("v1", "Secret", "gpu-operator") if s["metadata"]["name"].startswith("sh.helm")]
    assert releases and all(password not in json.dumps(s) for s in releases), "not in the release's values"
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and password.encode() in p.read_bytes()
                 and "inventory" not in p.relative_to(tmp_path).parts]  # the inventory is where the test put it
    assert leftovers == [], "a file of the run holds it"
