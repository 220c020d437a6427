"""playbooks/uninstall.yml on the fake GPU cluster: real ansible-playbook and helm, after a real site.yml."""
from __future__ import annotations

import pytest

import json
import sys

import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall import plan as uninstall
from tests.playbooks.conftest import ROOT

pytestmark = pytest.mark.slow

UNINSTALL = str(ROOT / "playbooks" / "uninstall.yml")
FLAVORS = [{"name": "a100", "gpu_product": "NVIDIA-A100-SXM4-80GB"}]
TEAMS = [{"name": "vision", "namespaces": ["vision"], "quota": {"a100": 8}}]
POOLS = [{"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4}]
INSTALL = {"scheduling_flavors": FLAVORS, "gpu_platform_teams": TEAMS, "gpu_platform_node_pools": POOLS,
           "gpu_platform_dra_enabled": True, "dra_driver_nodes": "nodepool=training"}
CRD = "apiextensions.k8s.io/v1"


def deletes(api):
    return [r["path"] for r in api.request_log if r["method"] == "DELETE"
            and "All" not in str(r["query"].get("dryRun", ""))]


def first(paths, needle):
    found = [i for i, path in enumerate(paths) if path.endswith(needle)]
    assert found, "no DELETE of %s in %s" % (needle, paths)
    return found[0]


def test_uninstall_removes_the_layers_in_reverse_order_once(direct_site):
    runner, api, repo = direct_site()
    installed = runner.run(**INSTALL)
    assert installed.failed == 0, installed.failure_messages() or installed.debug_text()
    assert api.store.get("v1", "Node", "gpu-node-2")["metadata"]["labels"]["nvidia.com/dra-kubelet-plugin"] == "true"
    assert api.store.get("v1", "Node", "gpu-node-1")["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "inference"

    # Without the confirmation: refused before any write, naming the variable and listing what would go.
    api.clear_log()
    refused = runner.run(playbook=UNINSTALL)
    assert refused.failed == 1
    msg = refused.failure_messages()[-1]
    assert msg.startswith("gpu_platform_uninstall_confirm is not true")
    assert "-e gpu_platform_uninstall_confirm=true" in msg and "Nothing was changed." in msg
    assert "1. smoke-test leftovers: namespace gpu-platform-smoke" in msg
    assert "Helm release gpu-operator/gpu-operator" in msg and "Helm release kueue-system/kueue" in msg
    assert api.request_log == [], "refused before the cluster is contacted"

    # Check mode: what would be removed, and no write.
    check = runner.run("--check", playbook=UNINSTALL, gpu_platform_uninstall_confirm=True)
    assert check.failed == 0, check.failure_messages()
    assert check.changed > 0
    assert api.writes() == []
    assert api.store.get("v1", "Namespace", "gpu-operator") is not None
    summary = check.result("What was removed and what stays")["msg"]
    assert summary[0] == "Check mode: nothing was changed; this is what would be removed."
    assert "gpu_operator: release gpu-operator" in summary[1]

    api.clear_log()
    removed = runner.run(playbook=UNINSTALL)
    assert removed.failed == 0, removed.failure_messages() or removed.debug_text()
    order = deletes(api)
    steps = [first(order, "/namespaces/gpu-platform-smoke"),
             first(order, "/configmaps/gpu-platform-dcgm-dashboard"),
             first(order, "/localqueues/gpu"),
             first(order, "/secrets/sh.helm.release.v1.kueue.v1"),
             first(order, "/queues/vision"),                       # Volcano's queue goes after its release
             first(order, "/namespaces/kueue-system"),
             first(order, "/secrets/sh.helm.release.v1.dra-driver-nvidia-gpu.v1"),
             first(order, "/configmaps/time-slicing-config"),
             first(order, "/secrets/sh.helm.release.v1.gpu-operator.v1"),
             first(order, "/namespaces/gpu-operator"),
             first(order, "/namespaces/nvidia-peermem")]
    assert steps == sorted(steps), order
    # Helm waited: the operator's own objects are gone with their release, and so are the namespaces.
    for namespace in ("gpu-operator", "volcano-system", "kueue-system", "dra-driver-nvidia-gpu", "gpu-platform-smoke"):
        assert api.store.get("v1", "Namespace", namespace) is None, namespace
    assert api.store.list("v1", "Secret", label_selector="owner=helm") == []
    assert api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy") is None
    assert api.store.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "vision") is None
    assert api.store.get("scheduling.volcano.sh/v1beta1", "Queue", "vision") is None
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in api.store.list("v1", "Node")}
    assert "nvidia.com/dra-kubelet-plugin" not in labels["gpu-node-2"]
    assert "nvidia.com/gpu.deploy.device-plugin" not in labels["gpu-node-2"]
    assert "nvidia.com/device-plugin.config" not in labels["gpu-node-1"]
    assert labels["gpu-node-1"]["nvidia.com/gpu.present"] == "true", "GFD's labels stay"
    # What stays by default: the teams' namespaces and the CRDs (named in the summary).
    assert api.store.get("v1", "Namespace", "vision") is not None
    assert api.store.get(CRD, "CustomResourceDefinition", "clusterpolicies.nvidia.com") is not None
    assert api.store.get(CRD, "CustomResourceDefinition", "queues.scheduling.volcano.sh") is not None
    summary = removed.result("What was removed and what stays")["msg"]
    assert summary[0] == "Removed."
    assert "gpu_operator: release gpu-operator, namespace-gpu-operator;" in summary[1]
    assert "network_operator: nothing left" in summary[1]
    assert summary[2] == "GPU hosts: none in the inventory"
    stays = summary[3]
    assert "the NVIDIA host driver" in stays and "runtime backups" in stays
    assert "set gpu_platform_uninstall_crds: true to remove them" in stays and "clusterpolicies.nvidia.com" in stays
    assert "the teams' namespaces vision" in stays
    warnings = removed.result("Warnings")["msg"]
    assert any("gpu-node-1, gpu-node-2" in w and "gpu-operator#188" in w for w in warnings), warnings

    api.clear_log()
    again = runner.run(playbook=UNINSTALL)
    assert again.failed == 0, again.failure_messages()
    assert again.changed == 0, again.changed_tasks()
    # manifests deletes without reading first: on a clean cluster every delete finds nothing (404).
    assert {(w["method"], w["code"]) for w in api.writes()} == {("DELETE", 404)}

    # Custom resources and CRDs only when asked: the custom resources first, then the CRDs.
    api.store.create({"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "left-over"},
                      "spec": {"driverType": "gpu"}})
    api.store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "user"},
                      "spec": {"weight": 1}})
    api.clear_log()
    crds = runner.run(playbook=UNINSTALL, gpu_platform_uninstall_crds=True)
    assert crds.failed == 0, crds.failure_messages() or crds.debug_text()
    order = deletes(api)
    assert first(order, "/nvidiadrivers/left-over") < first(order, "/customresourcedefinitions/nvidiadrivers.nvidia.com")
    assert first(order, "/queues/user") < first(order, "/customresourcedefinitions/queues.scheduling.volcano.sh")
    assert first(order, "/customresourcedefinitions/queues.scheduling.volcano.sh") < first(
        order, "/customresourcedefinitions/clusterpolicies.nvidia.com")
    for name in ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com", "queues.scheduling.volcano.sh",
                 "clusterqueues.kueue.x-k8s.io", "nicclusterpolicies.mellanox.com", "computedomains.resource.nvidia.com"):
        assert api.store.get(CRD, "CustomResourceDefinition", name) is None, name
    assert api.store.get(CRD, "CustomResourceDefinition", "servicemonitors.monitoring.coreos.com") is not None, \
        "the Prometheus Operator's CRDs are not the platform's"
    assert "CRDs" not in crds.result("What was removed and what stays")["msg"][3]

    api.clear_log()
    clean = runner.run(playbook=UNINSTALL, gpu_platform_uninstall_crds=True)
    assert clean.failed == 0 and clean.changed == 0, clean.failure_messages() or clean.changed_tasks()
    assert {(w["method"], w["code"]) for w in api.writes()} == {("DELETE", 404)}


def test_cloud_managed_gpu_nodes_with_the_toolkit_are_refused_naming_nodes_and_variable(direct_site):
    runner, api, repo = direct_site()
    # The GPU Operator ran its container toolkit on AKS GPU nodes (AKS labels every node kubernetes.azure.com/*).
    api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                      "spec": {"driver": {"enabled": False}, "toolkit": {"enabled": True}}})
    for node in ("gpu-node-1", "gpu-node-2"):
        api.store.set_labels("v1", "Node", node, {"kubernetes.azure.com/agentpool": "gpu"})
    api.clear_log()
    refused = runner.run(playbook=UNINSTALL, gpu_platform_uninstall_confirm=True)
    assert refused.failed == 1
    msg = refused.failure_messages()[-1]
    assert msg.startswith("The GPU Operator's container toolkit is enabled on 2 cloud-managed GPU node(s): "
                          "gpu-node-1 (AKS node (label kubernetes.azure.com/agentpool)); gpu-node-2")
    assert "gpu-operator#188, container-toolkit#1328" in msg
    assert "set gpu_platform_uninstall_accept_runtime_loss: true and recreate or reimage those node pools" in msg
    assert api.writes() == []

    # Told the cloud image owns the driver: every GPU node counts, labels or not.
    for node in ("gpu-node-1", "gpu-node-2"):
        api.store.set_labels("v1", "Node", node, {"kubernetes.azure.com/agentpool": None})
    refused = runner.run(playbook=UNINSTALL, gpu_platform_cloud_driver="present")
    assert refused.failed == 1
    assert "gpu_platform_cloud_driver is present" in refused.failure_messages()[-1]
    assert api.writes() == []

    # GitOps: refused with the fix, without contacting the cluster.
    api.clear_log()
    rendered = runner.run(playbook=UNINSTALL, gpu_platform_render_to=str(runner.dir / "bundle"))
    assert rendered.failed == 1
    msg = rendered.failure_messages()[-1]
    assert msg.startswith("gpu_platform_render_to is set") and "remove the bundle's folder" in msg
    assert api.request_log == []

    # Accepted: it goes on, and says which nodes need a new node image. A GPU host in the inventory gets the
    # runtime config host_driver backed up put back (paths in a temporary folder; restart off).
    config, backup = gpu_host_with_a_backup(runner)
    runner.write_vars(gpu_platform_render_to="")
    accepted = runner.run(playbook=UNINSTALL, gpu_platform_uninstall_accept_runtime_loss=True)
    assert accepted.failed == 0, accepted.failure_messages()
    warnings = accepted.result("Warnings")["msg"]
    assert any(w.startswith("gpu_platform_uninstall_accept_runtime_loss is true") and "gpu-node-1, gpu-node-2" in w
               for w in warnings), warnings
    assert config.read_bytes() == b"# before the platform\n"
    assert not (config.parent / "conf.d").exists()
    hosts = accepted.result("What was removed and what stays")["msg"][2]
    assert hosts.startswith("GPU hosts: gpu-host-1: restored %s, removed %s" % (config, config.parent / "conf.d"))


def gpu_host_with_a_backup(runner):
    """A GPU host (this machine, local connection) whose runtime config the toolkit changed after the backup."""
    etc = runner.dir.parent / "gpu-host-1" / "etc" / "containerd"
    (etc / "conf.d").mkdir(parents=True)
    config = etc / "config.toml"
    config.write_text('imports = ["conf.d/*.toml"]\n')
    (etc / "conf.d" / "99-nvidia.toml").write_text("# the toolkit's runtime\n")
    backup = runner.dir.parent / "gpu-host-1" / "backup"
    (backup / "files").mkdir(parents=True)
    (backup / "files" / uninstall.backup_name(str(config))).write_bytes(b"# before the platform\n")
    manifest = uninstall.backup_manifest([{"path": str(config), "exists": True, "checksum": "-", "mode": "0644"}],
                                         {str(etc / "conf.d"): None}, "2026-01-01T00:00:00Z")
    (backup / "manifest.json").write_text(json.dumps(manifest))
    inventory = yaml.safe_load((runner.dir / "hosts.yml").read_text())
    inventory["all"]["children"]["gpu_hosts"] = {"hosts": {"gpu-host-1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "host_driver_runtime_backup_dir": str(backup), "host_driver_runtime_config_files": [str(config)],
        "host_driver_runtime_dropin_dirs": [str(etc / "conf.d")], "host_driver_runtime_restart": False}}}
    (runner.dir / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return config, backup
