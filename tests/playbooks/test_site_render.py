"""site.yml in render mode (the offline default): the GitOps bundle, validated and built with kustomize."""
from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle_domain
from local_gpu_cluster.charts import TOOLS_BIN
from tests.playbooks.conftest import bundle, kustomizations
from tests.schema import crdschema, pinned_charts

pytestmark = pytest.mark.slow


def kustomize(out):
    """What the bundle applies but the smoke tests, built with kubectl kustomize unit by unit: with Flux, the units
    the root's Flux Kustomizations point at; with Argo CD, the unit folders the root lists, and those synced by an
    Application of their own (monitoring: docs/gitops.md)."""
    listed = yaml.safe_load((out / "kustomization.yaml").read_text())["resources"]
    if all((out / name).is_dir() for name in listed):  # Argo CD: the unit folders
        assert not set(listed) & set(bundle_domain.APART), "a unit apart is in the root's sync"
        units = listed + [u for u in bundle_domain.APART if (out / u / "kustomization.yaml").exists()]
    else:  # Flux: one Kustomization per unit, pointing at its folder
        paths = [o["spec"]["path"] for o in _build(out) if o["kind"] == "Kustomization"]
        assert all(p.startswith("./%s/" % out.name) for p in paths), paths
        units = [p.rsplit("/", 1)[1] for p in paths]
    return [o for unit in units if unit != "smoke" for o in _build(out / unit)]


def _build(folder):
    proc = subprocess.run([str(TOOLS_BIN / "kubectl"), "kustomize", str(folder)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


@pytest.mark.parametrize("fmt, kinds", [
    # GPU Operator, then the scheduling layer's Volcano (a Helm repository) and Kueue (an OCI chart), and the
    # monitoring layer's Grafana dashboard (a ConfigMap; its Prometheus Operator objects are not rendered by default).
    ("flux", ["ConfigMap"] + ["HelmRelease"] * 3 + ["HelmRepository"] * 2 + ["Namespace"] * 3 + ["OCIRepository"]),
    ("argocd", ["Application"] * 3 + ["ConfigMap"]),
])
def test_bundle_is_valid_idempotent_and_builds(render_site, shared_dir, fmt, kinds):
    runner, out = render_site
    first = runner.run(gpu_platform_render_format=fmt)
    assert first.failed == 0, first.failure_messages() or first.debug_text()
    assert first.changed > 0
    # Nothing the collection ships makes Ansible warn (a duplicate YAML key in a role's meta once did); this test
    # inventory has no gpu_hosts group, which Ansible mentions.
    warnings = [line for line in first.stderr.splitlines() if "[WARNING]" in line and "host pattern" not in line]
    assert not warnings, first.stderr[-2000:]
    assert "" in kustomizations(out), "the root the user points one bootstrap Kustomization (or Application) at"
    objects = kustomize(out)
    assert sorted(o["kind"] for o in objects) == kinds
    for obj in objects:
        if obj["kind"] in ("Namespace", "ConfigMap"):
            crdschema.validate_core(obj)
        else:
            crdschema.validate(obj)
    summary = first.result("What was written and which versions are pinned")["msg"]
    assert summary[0].startswith("The platform was written as a GitOps bundle to %s for %s, in " % (out, {"flux": "Flux", "argocd": "Argo CD"}[fmt]))
    assert "applied in this order: gpu-operator, " in summary[0] and "gpu-operator v26.7.0" in summary[2]

    second = runner.run()
    assert second.failed == 0 and second.changed == 0, second.changed_tasks()

    check = runner.run("--check")
    assert check.failed == 0 and check.changed == 0, check.changed_tasks()


def test_namespace_is_privileged_and_values_follow_the_inventory(render_site, shared_dir):
    runner, out = render_site
    result = runner.run(gpu_platform_driver_mode="host", gpu_platform_mig_strategy="mixed",
                        gpu_operator_device_plugin_config={"name": "time-slicing-config", "default": "any"},
                        gpu_operator_image_pull_secrets=["ngc-pull"])
    assert result.failed == 0, result.failure_messages()
    files = bundle(out)
    assert files["namespace-gpu-operator.yaml"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    release = files["helmrelease-gpu-operator-gpu-operator.yaml"]
    assert release["spec"]["chart"]["spec"]["version"] == "v26.7.0"
    values = release["spec"]["values"]
    assert values["driver"]["enabled"] is False and values["driver"]["nvidiaDriverCRD"] == {"enabled": False}
    assert "rdma" not in values["driver"]
    assert values["mig"] == {"strategy": "mixed"}
    assert values["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "any"}
    assert values["operator"]["imagePullSecrets"] == ["ngc-pull"]
    defaults = pinned_charts.values_path("gpu-operator")
    assert crdschema.check_values_keys(values, defaults) == []


def test_registry_credentials_are_never_rendered_or_logged(render_site):
    runner, out = render_site
    result = runner.run(gpu_operator_registry_credentials=[
        {"name": "ngc-pull", "registry": "nvcr.io", "username": "$oauthtoken", "password": "s3cr3t-token"}])
    assert result.failed == 0, result.failure_messages()
    assert "s3cr3t-token" not in result.stdout + result.stderr
    for text in (p.read_text() for p in out.rglob("*") if p.is_file()):
        assert "s3cr3t-token" not in text
    assert bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]["driver"]["imagePullSecrets"] == ["ngc-pull"]


@pytest.mark.parametrize("inventory", ["aks", "aks-no-rdma", "baremetal"])
def test_example_inventories_choices_are_valid(render_site, shared_dir, inventory):
    """The annotated example inventories' choices build valid values (rendered here instead of installed)."""
    runner, out = render_site
    path = os.path.join(os.path.dirname(__file__), "..", "..", "inventories", inventory, "group_vars", "all", "platform.yml")
    with open(path, encoding="utf-8") as handle:
        # Where the cluster is (kubeconfig, context) is not a choice: the test renders instead.
        choices = {k: v for k, v in yaml.safe_load(handle).items()
                   if k not in ("gpu_platform_kubeconfig", "gpu_platform_context")}
    # The AKS RDMA inventory's one blank, the user's NCCL image (test_aks_rdma_inventory.py shows it stops the run):
    # the fixture's image stands in for it.
    if choices.get("smoke_tests_nccl_image") == "":
        del choices["smoke_tests_nccl_image"]
    result = runner.run(**choices)
    assert result.failed == 0, result.failure_messages()
    values = bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]
    assert values["driver"]["enabled"] is (choices["gpu_platform_driver_mode"] == "operator")
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": False}
    defaults = pinned_charts.values_path("gpu-operator")
    assert crdschema.check_values_keys(values, defaults) == []


def test_bundle_with_the_network_layer(render_site, shared_dir):
    runner, out = render_site
    # Only the layers under test (the scheduling layer's releases are tested in test_site_layers.py).
    result = runner.run(gpu_platform_network_mode="rdma_shared", gpu_platform_scheduling_enabled=False,
                        network_operator_selectors={"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]})
    assert result.failed == 0, result.failure_messages()
    objects = kustomize(out)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ConfigMap", "HelmRelease", "HelmRelease", "HelmRepository", "HelmRepository", "IPPool",
                     "IPoIBNetwork", "Namespace", "Namespace", "NicClusterPolicy"]
    for obj in objects:
        if obj["kind"] in ("Namespace", "ConfigMap"):
            crdschema.validate_core(obj)
        else:
            crdschema.validate(obj)
    network = next(o for o in objects if o["kind"] == "HelmRelease" and o["metadata"]["name"] == "network-operator")
    assert network["spec"]["chart"]["spec"]["version"] == "26.4.1"
    # One NFD, the Network Operator's: it is installed first, and its NicClusterPolicy places the components on NFD's
    # labels (the GPU Operator's NFD would come after, and the policy would wait for ever).
    assert network["spec"]["values"]["nfd"] == {"enabled": True}, "one NFD: the Network Operator's"
    gpu = next(o for o in objects if o["kind"] == "HelmRelease" and o["metadata"]["name"] == "gpu-operator")
    assert gpu["spec"]["values"]["nfd"] == {"enabled": False}
    defaults = pinned_charts.values_path("network-operator")
    assert crdschema.check_values_keys(network["spec"]["values"], defaults) == []
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_known_broken_versions_stop_the_play_before_anything_is_written(render_site):
    runner, out = render_site
    result = runner.run(gpu_operator_chart_version="v24.9.2", gpu_platform_network_mode="rdma_shared",
                        network_operator_selectors={"vendors": ["15b3"], "interfaces": ["ibs1f0"]})
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "GPU Operator v24.9.2" in msg and "Network Operator 26.4.1" in msg
    assert "kubernetes2640" in msg, "the refusal cites its source"
    assert not out.exists()


def test_the_default_pair_with_rdma_renders_and_prints_its_notes(render_site):
    runner, out = render_site
    result = runner.run(gpu_platform_network_mode="rdma_shared",
                        network_operator_selectors={"vendors": ["15b3"], "interfaces": ["ibs1f0"]})
    assert result.failed == 0, result.failure_messages()
    printed = result.result("The release pair in use, who validated it, what the data could not check, and what was "
                            "acknowledged (read it)")["msg"]
    # Known-good (the aicr pair, an NVIDIA recipe), so nothing is unverified; NVIDIA's open validation of 26.7.0 with
    # Network Operator 26.x is a note, and the render-mode platform facts that were not given are named.
    assert printed[0].startswith("release pair aicr (gpu_platform_release_pair): GPU Operator v26.7.0 with Network "
                                 "Operator 26.4.1; GPUDirect RDMA an NVIDIA recipe"), printed
    assert not any("unverified" in line for line in printed), printed
    assert any("gpu-operator-26.7-rdma-not-yet-validated" in line for line in printed)
    assert any("gpu_platform_node_os" in line for line in printed)


def test_bundle_with_gpu_sharing(render_site, shared_dir):
    import json
    runner, out = render_site
    pools = [{"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4,
              "multi_tenant": True},
             {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}]
    result = runner.run(gpu_platform_node_pools=pools, gpu_platform_scheduling_enabled=False)
    assert result.failed == 0, result.failure_messages()
    warned = result.result("Warnings about the chosen sharing (time-slicing is no isolation)")["msg"]
    assert any("no memory or fault isolation" in w for w in warned)
    objects = {o["kind"]: o for o in kustomize(out) if o["metadata"]["name"] != "gpu-platform-dcgm-dashboard"}
    config = json.loads(objects["ConfigMap"]["data"]["inference"])
    assert config["version"] == "v1"
    assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    crdschema.validate_core(objects["ConfigMap"])
    values = objects["HelmRelease"]["spec"]["values"]
    assert values["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "default"}
    labels = yaml.safe_load((out / "gpu-sharing" / "gpu-sharing-node-labels.yaml").read_text())["patches"]
    assert {"selector": "nodepool=training", "labels": {"nvidia.com/mig.config": "all-1g.10gb"}} in labels
    assert "gpu-sharing-node-labels.yaml" not in str(kustomizations(out))
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_cloud_managed_driver_renders_the_peermem_loader(render_site):
    """AKS-managed GPU pools with RDMA: host mode, owner cloud; the loader DaemonSet joins the bundle."""
    runner, out = render_site
    result = runner.run(gpu_platform_driver_mode="host", gpu_platform_cloud_driver="present",
                        gpu_platform_network_mode="rdma_shared",
                        network_operator_selectors={"vendors": ["15b3"], "link_type": "infiniband",
                                                    "interfaces": ["ibs1f0"]},
                        peermem_node_selector={"kubernetes.azure.com/accelerator": "nvidia"})
    assert result.failed == 0, result.failure_messages()
    files = bundle(out)
    loader = files["daemonset-nvidia-peermem-nvidia-peermem-loader.yaml"]
    assert loader["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.azure.com/accelerator": "nvidia"}
    assert files["namespace-nvidia-peermem.yaml"]["metadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "privileged"}
    crdschema.validate_core(files["namespace-nvidia-peermem.yaml"])
    values = files["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert "daemonset-nvidia-peermem-nvidia-peermem-loader.yaml" in kustomizations(out)["peermem"]["resources"]
    gpu_operator = files["gpu-platform-gpu-operator.yaml"]["spec"]
    assert {"name": "gpu-platform-peermem"} in gpu_operator["dependsOn"], "the loader's unit comes first"
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_an_unverified_pair_stops_the_render_unless_acknowledged(render_site):
    """GPU Operator v26.7.0 with Network Operator 26.4.0 (set directly, leaving the pairs): no validated GPUDirect
    RDMA pair, so nothing is written until gpu_platform_accept_unverified says so; then the reasons are printed and the
    bundle is written."""
    runner, out = render_site
    network = {"gpu_platform_network_mode": "rdma_shared",
               "network_operator_selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]},
               "network_operator_chart_version": "26.4.0", "gpu_platform_kubernetes_version": "1.35",
               "gpu_platform_node_os": "Ubuntu 24.04", "gpu_platform_container_runtime": "containerd 2.0.5",
               "smoke_tests_nccl_image": "registry.example.com/hpc/nccl-tests@sha256:" + "a" * 64,
               "gpu_platform_rdma_node_type": "nd-h100-v5"}
    refused = runner.run(**network)
    assert refused.failed == 1
    msg = " ".join(refused.failure_messages()[-1].split())
    assert "no known-good fact for GPU Operator x Network Operator x GPUDirect RDMA" in msg, msg
    assert "set gpu_platform_accept_unverified: true to go on anyway" in msg
    assert not out.exists()
    accepted = runner.run(gpu_platform_accept_unverified=True, **network)
    assert accepted.failed == 0, accepted.failure_messages()
    printed = " ".join(accepted.stdout.split())
    assert "going on although unverified (gpu_platform_accept_unverified is true)" in printed
    assert "NVIDIA/gpu-operator#2301" in printed
    # who validated the versions in use comes first, truthfully: nobody, for this GPUDirect RDMA pair
    assert "validation of GPU Operator v26.7.0 + Network Operator 26.4.0 + Kubernetes 1.35 + features" in printed
    assert "GPU Operator x Network Operator x GPUDirect RDMA: unverified (no fact covers it)" in printed
    assert bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["chart"]["spec"]["version"] == "v26.7.0"


def test_the_inventorys_platform_is_checked_in_render_mode(render_site):
    runner, out = render_site
    result = runner.run(gpu_platform_node_os="Ubuntu 18.04", gpu_platform_container_runtime="containerd 1.6.20")
    assert result.failed == 1
    msg = " ".join(result.failure_messages()[-1].split())
    assert "the inventory: the operating system 'Ubuntu 18.04' is not one GPU Operator v26.7.0 is validated on" in msg
    assert "the container runtime 'containerd 1.6.20'" in msg
    assert not out.exists()


def test_a_custom_mig_config_reaches_the_gpu_operator_release(render_site, shared_dir):
    """docs/sharing.md's example: the ConfigMap is in the bundle and the GPU Operator's MIG manager reads it."""
    runner, out = render_site
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "sharing.md"), encoding="utf-8").read()
    example = yaml.safe_load(text.split("## A custom mig-parted config", 1)[1].split("```yaml", 1)[1].split("```", 1)[0])
    result = runner.run(gpu_platform_mig_strategy="mixed", **example)
    assert result.failed == 0, result.failure_messages()
    values = bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]
    assert values["migManager"]["config"] == {"name": "custom-mig-parted-config", "default": "all-disabled",
                                              "create": False}
    maps = [o for o in kustomize(out) if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "custom-mig-parted-config"]
    assert len(maps) == 1 and yaml.safe_load(maps[0]["data"]["config.yaml"]) == example["gpu_platform_mig_config"]
    defaults = pinned_charts.values_path("gpu-operator")
    assert crdschema.check_values_keys(values, defaults) == []


RDMA_NETWORK = {"gpu_platform_network_mode": "rdma_shared", "gpu_platform_scheduling_enabled": False,
                "network_operator_selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}


def test_dmabuf_renders_the_operator_without_peermem_and_with_the_open_modules(render_site, shared_dir):
    runner, out = render_site
    result = runner.run(gpu_platform_gpudirect_path="dmabuf", gpu_platform_host_mofed=True, **RDMA_NETWORK)
    assert result.failed == 0, result.failure_messages()
    files = bundle(out)
    values = files["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]
    assert values["driver"]["rdma"] == {"enabled": False, "useHostMofed": True}, "no nvidia-peermem sidecar"
    assert values["driver"]["kernelModuleType"] == "open"
    assert crdschema.check_values_keys(values, pinned_charts.values_path("gpu-operator")) == []
    assert not any("peermem" in name for name in files), "no loader DaemonSet"
    decision = result.result("The decision")["msg"]
    assert "GPUDirect RDMA over dmabuf (requested: dmabuf (not verified: no GPU node seen yet))" in decision
    assert "nvidia-peermem via" not in decision
    summary = result.result("What was written and which versions are pinned")["msg"]
    assert "GPUDirect RDMA: dmabuf (requested: dmabuf (not verified: no GPU node seen yet))." in summary
    # auto, with no GPU node to read, keeps nvidia-peermem and says why
    result = runner.run(gpu_platform_gpudirect_path="auto")
    assert result.failed == 0, result.failure_messages()
    values = bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]["spec"]["values"]
    assert values["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}
    assert "kernelModuleType" not in values["driver"]
    line = next(s for s in result.result("What was written and which versions are pinned")["msg"]
                if s.startswith("GPUDirect RDMA: "))
    assert line.startswith("GPUDirect RDMA: peermem, nvidia-peermem loaded by the GPU Operator's driver container "
                           "(driver.rdma.enabled) (auto: no GPU node seen yet")


@pytest.mark.parametrize("over, words", [
    ({"gpu_platform_driver_mode": "host", "gpu_platform_cloud_driver": "present"},
     "every GPU node: the cloud's node image ships its own driver (gpu_platform_cloud_driver: present)"),
    ({"gpu_operator_extra_values": {"driver": {"kernelModuleType": "proprietary"}}},
     "every GPU node: the proprietary kernel module (driver.kernelModuleType=proprietary) - fix: set "
     "driver.kernelModuleType: open in gpu_operator_extra_values"),
    # 535 is not a driver GPU Operator v26.7.0 is known with: accepting that lets the DMA-BUF check speak
    ({"gpu_platform_driver_version": "535.288.01", "gpu_platform_accept_unverified": True},
     "the proprietary kernel module (driver.kernelModuleType=auto with driver 535.288.01 (before R570))"),
], ids=["cloud-driver", "operator-proprietary", "operator-535"])
def test_dmabuf_that_cannot_work_stops_the_run_before_anything_is_written(render_site, over, words):
    runner, out = render_site
    result = runner.run(gpu_platform_gpudirect_path="dmabuf", **over, **RDMA_NETWORK)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert msg.startswith("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on "), msg
    assert words in msg, msg
    assert "set gpu_platform_gpudirect_path: peermem" in msg and msg.endswith("Nothing was changed.")
    assert not out.exists()
