"""The uninstall plan, its guards and the host runtime backup/restore decisions (module_utils/domain/uninstall/plan.py)."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall import plan as uninstall
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SETTINGS = {
    "gpu_platform_uninstall_confirm": True, "gpu_platform_uninstall_accept_runtime_loss": False,
    "gpu_platform_uninstall_crds": False, "gpu_platform_render_to": "", "gpu_platform_cloud_driver": "unknown",
    "smoke_tests_namespace": "gpu-platform-smoke", "monitoring_namespace": "gpu-operator",
    "monitoring_dashboard_namespace": "gpu-operator",
    "scheduling_objects": [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "a100"}, "spec": {}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "vision"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "gpu", "namespace": "vision"}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "vision"}}],
    "scheduling_team_namespaces": ["vision"],
    "scheduling_volcano_namespace": "volcano-system", "scheduling_kai_namespace": "kai-scheduler",
    "scheduling_kueue_namespace": "kueue-system", "dra_driver_namespace": "dra-driver-nvidia-gpu",
    "gpu_platform_time_slicing_config_map": "time-slicing-config", "gpu_sharing_namespace": "gpu-operator",
    "gpu_operator_release_name": "gpu-operator", "gpu_platform_gpu_operator_namespace": "gpu-operator",
    "gpu_platform_nfd_in_gpu_operator": True, "gpu_platform_network_operator_release_name": "network-operator",
    "gpu_platform_network_operator_namespace": "nvidia-network-operator", "network_operator_nfd_enabled": False,
    "gpu_platform_network_mode": "rdma_shared", "peermem_namespace": "nvidia-peermem",
}


def settings(**over):
    return dict(SETTINGS, **over)


def layer(plan, name):
    return next(item for item in plan["layers"] if item["layer"] == name)


def node(name, labels=None, provider=None):
    obj = {"metadata": {"name": name, "labels": dict({"nvidia.com/gpu.present": "true"}, **(labels or {}))}}
    if provider:
        obj["spec"] = {"providerID": provider}
    return obj


POLICY = {"spec": {"toolkit": {"enabled": True}}}


def test_the_layers_go_in_reverse_install_order():
    plan = uninstall.plan(SETTINGS)
    assert [item["layer"] for item in plan["layers"]] == [
        "smoke_tests", "monitoring", "scheduling", "dra_driver", "gpu_sharing", "gpu_operator", "network_operator",
        "peermem", "host_runtime"]
    assert plan["order"] == list(uninstall.ORDER)
    lines = uninstall.describe(plan)
    assert lines[0] == "1. smoke-test leftovers: namespace gpu-platform-smoke"
    assert lines[-1] == "9. hosts' container runtime config: the container runtime config restored from host_driver's backup (GPU hosts)"


def test_each_layer_lists_what_it_made():
    plan = uninstall.plan(SETTINGS)
    monitoring = layer(plan, "monitoring")
    assert [uninstall.identity(o) for o in monitoring["objects_before"]] == [
        "ServiceMonitor gpu-operator/gpu-platform-dcgm-exporter", "PrometheusRule gpu-operator/gpu-platform-dcgm-exporter",
        "ConfigMap gpu-operator/gpu-platform-dcgm-dashboard"]
    scheduling = layer(plan, "scheduling")
    # Kueue's objects while its controller runs (finalizers); Volcano's queues after its release (its webhook
    # refuses to delete an open queue).
    assert [o["kind"] for o in scheduling["objects_before"]] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    assert scheduling["objects_before"][0] == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                               "metadata": {"name": "a100"}}, "only the identity is kept"
    assert [o["kind"] for o in scheduling["objects_after"]] == ["Queue"]
    assert [r["name"] for r in scheduling["releases"]] == ["volcano", "kai-scheduler", "kueue"]
    assert scheduling["namespaces"] == ["volcano-system", "kai-scheduler", "kueue-system", "kai-resource-reservation"]
    dra = layer(plan, "dra_driver")
    assert dra["releases"] == [{"name": "dra-driver-nvidia-gpu", "namespace": "dra-driver-nvidia-gpu"}]
    assert dra["node_labels"] == [{"key": "nvidia.com/dra-kubelet-plugin", "value": None},
                                  {"key": "nvidia.com/gpu.deploy.device-plugin", "value": "false"}]
    sharing = layer(plan, "gpu_sharing")
    assert [uninstall.identity(o) for o in sharing["objects_before"]] == ["ConfigMap gpu-operator/time-slicing-config"]
    assert sharing["node_labels"] == [{"key": "nvidia.com/device-plugin.config", "value": None}]
    assert sharing["namespaces"] == [], "gpu-operator goes with the GPU Operator layer"
    assert layer(plan, "gpu_operator")["namespaces"] == ["gpu-operator"]
    network = layer(plan, "network_operator")
    assert network["nic_cluster_policy"] and network["namespaces"] == ["nvidia-network-operator"]
    peermem = layer(plan, "peermem")
    assert peermem["namespaces"] == ["nvidia-peermem"]
    assert peermem["host_files"] == ["/etc/modules-load.d/gpu-platform-nvidia-peermem.conf",
                                     "/etc/modprobe.d/gpu-platform-nvidia-peermem.conf"]
    assert layer(plan, "host_runtime")["host_runtime"]


def test_a_shared_namespace_goes_with_the_last_layer_and_system_namespaces_never():
    plan = uninstall.plan(settings(dra_driver_namespace="gpu-operator", smoke_tests_namespace="default"))
    assert layer(plan, "dra_driver")["namespaces"] == []
    assert layer(plan, "gpu_operator")["namespaces"] == ["gpu-operator"]
    assert layer(plan, "smoke_tests")["namespaces"] == []


def test_crds_stay_by_default_and_are_named():
    plan = uninstall.plan(SETTINGS)
    assert all(item["crds"] == [] and item["cr_kinds"] == [] for item in plan["layers"])
    assert "clusterpolicies.nvidia.com" in plan["crds_kept"] and "queues.scheduling.volcano.sh" in plan["crds_kept"]
    assert any(line.startswith("CRDs and their custom resources (set gpu_platform_uninstall_crds: true")
               for line in plan["kept"])
    assert any("the teams' namespaces vision" in line for line in plan["kept"])
    assert any(line.startswith("the NVIDIA host driver") for line in plan["kept"])


def test_crds_when_asked_custom_resources_first_and_only_what_the_cluster_serves():
    served = ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com", "queues.scheduling.volcano.sh",
              "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"]
    plan = uninstall.plan(settings(gpu_platform_uninstall_crds=True), served)
    operator = layer(plan, "gpu_operator")
    assert operator["cr_kinds"] == [
        {"api_version": "nvidia.com/v1", "kind": "ClusterPolicy", "crd": "clusterpolicies.nvidia.com"},
        {"api_version": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "crd": "nvidiadrivers.nvidia.com"}]
    assert [c["metadata"]["name"] for c in operator["crds"]] == ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"]
    scheduling = layer(plan, "scheduling")
    assert [c["metadata"]["name"] for c in scheduling["crds"]] == [
        "queues.scheduling.volcano.sh", "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"]
    # ResourceFlavors' CRD is not served: there is none to delete; neither ServiceMonitors nor the NicClusterPolicy.
    assert [o["kind"] for o in scheduling["objects_before"]] == ["ClusterQueue", "LocalQueue"]
    assert [o["kind"] for o in layer(plan, "monitoring")["objects_before"]] == ["ConfigMap"]
    assert not layer(plan, "network_operator")["nic_cluster_policy"]
    assert plan["crds_kept"] == [] and not any("CRDs" in line for line in plan["kept"])
    lines = " ".join(uninstall.describe(plan))
    assert "custom resources of ClusterPolicy, NVIDIADriver" in lines and "CRD clusterpolicies.nvidia.com" in lines


def test_nfd_crds_follow_the_operator_that_runs_nfd():
    gpu = uninstall.plan(settings(gpu_platform_uninstall_crds=True))
    assert "nodefeatures.nfd.k8s-sigs.io" in [c["metadata"]["name"] for c in layer(gpu, "gpu_operator")["crds"]]
    net = uninstall.plan(settings(gpu_platform_uninstall_crds=True, gpu_platform_nfd_in_gpu_operator=False,
                                  network_operator_nfd_enabled=True))
    assert "nodefeatures.nfd.k8s-sigs.io" not in [c["metadata"]["name"] for c in layer(net, "gpu_operator")["crds"]]
    assert "nodefeatures.nfd.k8s-sigs.io" in [c["metadata"]["name"] for c in layer(net, "network_operator")["crds"]]


@pytest.mark.parametrize("over, field", [
    ({"gpu_platform_uninstall_confirm": "yes"}, "gpu_platform_uninstall_confirm"),
    ({"gpu_platform_uninstall_crds": 1}, "gpu_platform_uninstall_crds"),
    ({"gpu_platform_gpu_operator_namespace": "GPU_Operator"}, "gpu_platform_gpu_operator_namespace"),
    ({"gpu_operator_release_name": "Bad_Name"}, "gpu_operator_release_name"),
    ({"smoke_tests_namespace": ""}, "smoke_tests_namespace"),
    ({"scheduling_objects": [{"kind": "ClusterQueue"}]}, "scheduling_objects[0]"),
    ({"scheduling_objects": "queues"}, "scheduling_objects"),
])
def test_bad_inputs_name_the_variable(over, field):
    with pytest.raises(ParamError) as exc:
        uninstall.plan(settings(**over))
    assert exc.value.field == field and "Fix:" in exc.value.msg


def test_render_mode_is_refused_with_the_git_way_out():
    result = uninstall.check(uninstall.plan(SETTINGS), settings(gpu_platform_render_to="/srv/platform"))
    assert len(result["refusals"]) == 1
    assert result["refusals"][0].startswith("gpu_platform_render_to is set (/srv/platform)")
    assert "remove the bundle's folder" in result["refusals"][0] and "prune" in result["refusals"][0]


def test_no_confirmation_lists_what_would_be_removed():
    plan = uninstall.plan(settings(gpu_platform_uninstall_confirm=False))
    refusal = uninstall.check(plan, settings(gpu_platform_uninstall_confirm=False))["refusals"][0]
    assert refusal.startswith("gpu_platform_uninstall_confirm is not true")
    assert "Helm release gpu-operator/gpu-operator" in refusal and "namespace nvidia-network-operator" in refusal
    assert refusal.index("smoke-test leftovers") < refusal.index("GPU Operator:") < refusal.index("Network Operator")
    assert "-e gpu_platform_uninstall_confirm=true" in refusal
    assert uninstall.check(plan, SETTINGS)["refusals"] == []


@pytest.mark.parametrize("nodes, cloud_driver, reason", [
    ([node("aks-gpu-1", {"kubernetes.azure.com/agentpool": "gpu"})], "unknown",
     "aks-gpu-1 (AKS node (label kubernetes.azure.com/agentpool))"),
    ([node("aks-gpu-1", provider="azure:///subscriptions/x/vm/0")], "unknown", "aks-gpu-1 (AKS node (providerID azure://))"),
    ([node("gpu-1")], "present", "gpu-1 (gpu_platform_cloud_driver is present"),
])
def test_the_toolkit_on_cloud_managed_nodes_is_refused_naming_nodes_and_variable(nodes, cloud_driver, reason):
    plan = uninstall.plan(SETTINGS)
    result = uninstall.check(plan, settings(gpu_platform_cloud_driver=cloud_driver),
                             {"cluster_policy": POLICY, "nodes": nodes + [{"metadata": {"name": "cpu-1"}}]})
    assert len(result["refusals"]) == 1
    refusal = result["refusals"][0]
    assert reason in refusal and "cpu-1" not in refusal
    assert "gpu-operator#188, container-toolkit#1328" in refusal
    assert "set gpu_platform_uninstall_accept_runtime_loss: true and recreate or reimage" in refusal
    accepted = uninstall.check(plan, settings(gpu_platform_cloud_driver=cloud_driver,
                                              gpu_platform_uninstall_accept_runtime_loss=True),
                               {"cluster_policy": POLICY, "nodes": nodes})
    assert accepted["refusals"] == []
    assert accepted["warnings"][0].startswith("gpu_platform_uninstall_accept_runtime_loss is true")


@pytest.mark.parametrize("policy", [None, {"spec": {"toolkit": {"enabled": False}}}])
def test_no_toolkit_no_refusal(policy):
    nodes = [node("aks-gpu-1", {"kubernetes.azure.com/agentpool": "gpu"})]
    result = uninstall.check(uninstall.plan(SETTINGS), SETTINGS, {"cluster_policy": policy, "nodes": nodes})
    assert result == {"refusals": [], "warnings": []}


def test_self_managed_nodes_with_the_toolkit_only_warn():
    nodes = [node("gpu-2"), node("gpu-1"), node("gpu-3", {"nvidia.com/gpu.deploy.container-toolkit": "false"})]
    result = uninstall.check(uninstall.plan(SETTINGS), SETTINGS, {"cluster_policy": {"spec": {}}, "nodes": nodes})
    assert result["refusals"] == []
    assert result["warnings"][0].startswith("The container toolkit changed the containerd config of gpu-1, gpu-2 ")


# ------------------------------------------------------------------ host runtime backup and restore

FILES = [{"path": "/etc/containerd/config.toml", "exists": True, "checksum": "ab", "mode": "0640"},
         {"path": "/etc/crio/crio.conf", "exists": False},
         {"path": "/etc/containerd/conf.d/10-user.toml", "exists": True, "checksum": "cd", "mode": "0644"}]
DIRS = {"/etc/containerd/conf.d": ["/etc/containerd/conf.d/10-user.toml"], "/etc/crio/crio.conf.d": None}


def test_the_manifest_records_what_existed_and_what_did_not():
    manifest = uninstall.backup_manifest(FILES, DIRS, "2026-01-01T00:00:00Z")
    assert manifest["format"] == 1 and manifest["runtime_service"] == "containerd"
    assert manifest["files"][1] == {"path": "/etc/containerd/config.toml", "present": True, "sha256": "ab",
                                    "mode": "0640", "backup": "etc__containerd__config.toml"}
    assert {"path": "/etc/crio/crio.conf", "present": False} in manifest["files"]
    assert manifest["dropin_dirs"] == DIRS


@pytest.mark.parametrize("files, dirs, field", [
    ([{"path": "etc/containerd/config.toml", "exists": True}], {}, "files[0].path"),
    ([], {"conf.d": None}, "host_driver_runtime_dropin_dirs"),
    ([{"path": "/etc/../root/x", "exists": True}], {}, "files[0].path"),
])
def test_the_manifest_refuses_relative_paths(files, dirs, field):
    with pytest.raises(ParamError) as exc:
        uninstall.backup_manifest(files, dirs, "t")
    assert exc.value.field == field


def test_restore_puts_back_what_existed_and_removes_what_did_not():
    manifest = uninstall.backup_manifest(FILES, DIRS, "t")
    now = {"/etc/containerd/conf.d": ["/etc/containerd/conf.d/10-user.toml", "/etc/containerd/conf.d/99-nvidia.toml"],
           "/etc/crio/crio.conf.d": ["/etc/crio/crio.conf.d/99-nvidia.conf"]}
    plan = uninstall.restore_plan(manifest, "/var/lib/gpu-platform/runtime-backup/", now)
    assert plan["restore"] == [
        {"path": "/etc/containerd/conf.d/10-user.toml", "mode": "0644", "sha256": "cd",
         "src": "/var/lib/gpu-platform/runtime-backup/files/etc__containerd__conf.d__10-user.toml"},
        {"path": "/etc/containerd/config.toml", "mode": "0640", "sha256": "ab",
         "src": "/var/lib/gpu-platform/runtime-backup/files/etc__containerd__config.toml"}]
    assert plan["remove"] == ["/etc/crio/crio.conf", "/etc/containerd/conf.d/99-nvidia.toml", "/etc/crio/crio.conf.d"]
    # Nothing new since: only the (idempotent) copies and the removal of the never-present file.
    clean = uninstall.restore_plan(manifest, "/b", {"/etc/containerd/conf.d": ["/etc/containerd/conf.d/10-user.toml"],
                                                    "/etc/crio/crio.conf.d": None})
    assert clean["remove"] == ["/etc/crio/crio.conf"]


def test_restore_refuses_something_that_is_not_a_manifest():
    with pytest.raises(ParamError) as exc:
        uninstall.restore_plan({"files": []}, "/b", {})
    assert exc.value.field == "manifest" and "host_driver_runtime_backup_dir" in exc.value.msg


def test_the_network_operator_charts_nic_node_policy_crd_goes_too():
    """Network Operator v26.4.0's chart (crds/mellanox.com_nicnodepolicies.yaml) installs the NicNodePolicy's CRD
    beside the NicClusterPolicy's: uninstall with gpu_platform_uninstall_crds removes it (the real chart left it)."""
    plan = uninstall.plan(settings(gpu_platform_uninstall_crds=True))
    names = [c["metadata"]["name"] for c in layer(plan, "network_operator")["crds"]]
    assert "nicnodepolicies.mellanox.com" in names and "nicclusterpolicies.mellanox.com" in names
    kinds = [k["kind"] for k in layer(plan, "network_operator")["cr_kinds"]]
    assert "NicNodePolicy" in kinds


def test_volcanos_own_queues_are_left_to_their_crds_deletion():
    """Volcano's webhook refuses to delete its `root` and `default` Queues ("`root` queue can not be deleted",
    found by running the real Volcano v1.15.1): they go with the CRD; the teams' queues and the rest are deleted."""
    def queue(name):
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
    results = [
        {"item": {"api_version": "scheduling.volcano.sh/v1beta1", "kind": "Queue"},
         "resources": [queue("root"), queue("default"), queue("vision")]},
        {"item": {"api_version": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"},
         "resources": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "root"}}]},
        {"item": {"api_version": "batch.volcano.sh/v1alpha1", "kind": "Job"}, "skipped": True},
    ]
    assert [(o["kind"], o["metadata"]["name"]) for o in uninstall.deletable_crs(results)] == [
        ("Queue", "vision"), ("ClusterQueue", "root")]


def test_kais_topology_crd_and_its_reservation_namespace_go_too():
    """KAI Scheduler v0.13.0's chart (crds/kai.scheduler_topologies.yaml) installs a Topology CRD, and it makes a
    namespace for its resource-reservation pods that helm uninstall keeps (helm.sh/resource-policy: keep): both were
    left behind on the local cluster by uninstall.yml with the real chart, and both go now."""
    plan = uninstall.plan(settings(gpu_platform_uninstall_crds=True))
    scheduling = layer(plan, "scheduling")
    assert "topologies.kai.scheduler" in [c["metadata"]["name"] for c in scheduling["crds"]]
    assert {"api_version": "kai.scheduler/v1alpha1", "kind": "Topology", "crd": "topologies.kai.scheduler"} \
        in scheduling["cr_kinds"]
    assert "kai-resource-reservation" in scheduling["namespaces"]


def test_each_layer_label_becomes_a_node_labels_entry_that_removes_it():
    assert uninstall.label_removals([{"key": "nvidia.com/dra-kubelet-plugin", "value": None},
                                     {"key": "nvidia.com/gpu.deploy.device-plugin", "value": "false"},
                                     {"key": "nvidia.com/dra-kubelet-plugin", "value": None}]) == [
        {"name": "nvidia.com/dra-kubelet-plugin", "selector": "nvidia.com/dra-kubelet-plugin",
         "labels": {"nvidia.com/dra-kubelet-plugin": None}},
        {"name": "nvidia.com/gpu.deploy.device-plugin=false", "selector": "nvidia.com/gpu.deploy.device-plugin=false",
         "labels": {"nvidia.com/gpu.deploy.device-plugin": None}}]
    assert [e["selector"] for e in layer(uninstall.plan(SETTINGS), "dra_driver")["label_removals"]] == [
        "nvidia.com/dra-kubelet-plugin", "nvidia.com/gpu.deploy.device-plugin=false"]
