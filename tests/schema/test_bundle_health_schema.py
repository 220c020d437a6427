"""The bundle's readiness: the Flux Kustomizations gitops_bundle writes (health checks included) against the pinned
kustomize-controller's CRD, and the order check (tests/schema/bundle_order.py) on a bundle of real releases.

../shared/upstream/flux has no Kustomization CRD: the pinned kustomize-controller's (local_gpu_cluster/go/flux/kustomize-controller)
comes with the Flux build (``make flux-build`` copies it into ``<cache>/bin/flux-*/crds``; the Go module cache has it
once the module was downloaded). Without it the CRD test is skipped with that reason, except under CI, where
``make test`` builds Flux first: there it fails."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import (
    gitops_bundle as bundle, flux_argocd as gitops)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import (
    helm_pinned_release)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import gitops_bundle
from local_gpu_cluster.build import cache_root, flux_pins
from tests.schema import crdschema
from tests.schema.bundle_order import order_problems

CRD_FILE = "kustomize.toolkit.fluxcd.io_kustomizations.yaml"


def kustomization_crd_dir():
    """A folder holding the pinned kustomize-controller's Kustomization CRD, or None."""
    pin = flux_pins()["kustomize-controller"]
    candidates = [crdschema.UPSTREAM_DIR / "flux"]
    for manifest in sorted((cache_root() / "bin").glob("flux-*/manifest.json")):
        if json.loads(manifest.read_text()).get("pins", {}).get("kustomize-controller") == pin:
            candidates.append(manifest.parent / "crds")
    candidates.append(cache_root() / "go" / "mod" / "github.com" / "fluxcd" / ("kustomize-controller@" + pin) / "config"
                      / "crd" / "bases")
    for folder in candidates:
        if any(folder.glob(CRD_FILE)) or any(folder.glob("kustomizations.kustomize.toolkit.fluxcd.io.yaml")):
            return folder
    return None


@pytest.fixture(scope="module")
def crd_dir():
    folder = kustomization_crd_dir()
    if folder is None:
        reason = ("the pinned kustomize-controller %s's Kustomization CRD is not on this machine: make flux-build puts "
                  "it in %s/bin/flux-*/crds" % (flux_pins()["kustomize-controller"], cache_root()))
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return folder


def release_objects(name, namespace, chart, fmt):
    """The objects helm_pinned_release renders for a release of ``chart`` (Namespace, HelmRepository, HelmRelease;
    or the Application)."""
    request = helm_pinned_release.build_request({
        "release_name": name, "release_namespace": namespace, "chart_ref": chart,
        "chart_repo_url": "https://helm.ngc.nvidia.com/nvidia", "chart_version": "v26.7.0", "create_namespace": True,
        "wait": True, "wait_timeout": "900s", "render_to": "/unused", "render_format": fmt})
    return gitops.render(request)


NIC_POLICY = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
              "metadata": {"name": "nic-cluster-policy"}, "spec": {}}
NETWORK = {"apiVersion": "mellanox.com/v1alpha1", "kind": "IPoIBNetwork", "metadata": {"name": "rdma-net"},
           "spec": {"networkNamespace": "default", "master": "ibs1f0"}}
SERVICE_MONITOR = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                   "metadata": {"name": "dcgm-exporter", "namespace": "gpu-operator"},
                   "spec": {"selector": {}, "endpoints": [{"port": "gpu-metrics"}]}}
DASHBOARD = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dashboard", "namespace": "gpu-operator"},
             "data": {"gpu.json": "{}"}}


def render_bundle(root, fmt):
    """A bundle of the network, GPU Operator and monitoring units as the layers write them, tied by gitops_bundle."""
    units = {
        "network-operator": release_objects("network-operator", "nvidia-network-operator", "network-operator", fmt),
        "network-config": [NIC_POLICY, NETWORK],
        "gpu-operator": release_objects("gpu-operator", "gpu-operator", "gpu-operator", fmt),
        "monitoring": [SERVICE_MONITOR, DASHBOARD],
    }
    for unit, objects in units.items():
        render.write_objects(str(root / unit), objects, gitops.file_name, "test")
    result = gitops_bundle.run({"render_to": str(root), "render_format": fmt})
    assert result["units"] == list(units)
    return root


def flux_kustomizations(root):
    return {path.name: yaml.safe_load(path.read_text()) for path in sorted(Path(root).glob("gpu-platform-*.yaml"))}


def test_the_flux_kustomizations_are_valid_kustomize_controller_objects(tmp_path, crd_dir):
    kustomizations = flux_kustomizations(render_bundle(tmp_path / "platform", "flux"))
    assert len(kustomizations) == 4
    assert kustomizations["gpu-platform-network-config.yaml"]["spec"]["healthCheckExprs"]
    assert kustomizations["gpu-platform-gpu-operator.yaml"]["spec"]["healthChecks"]
    for name, obj in kustomizations.items():
        assert crdschema.crd_errors(obj, upstream_dir=crd_dir) == [], name
    # The validation bites: an expression entry without its required current is refused.
    broken = kustomizations["gpu-platform-network-config.yaml"]
    del broken["spec"]["healthCheckExprs"][0]["current"]
    assert any("current" in e for e in crdschema.crd_errors(broken, upstream_dir=crd_dir))


def test_the_flux_bundle_tells_flux_when_the_policies_are_ready(tmp_path):
    root = render_bundle(tmp_path / "platform", "flux")
    assert order_problems(root) == []
    spec = flux_kustomizations(root)["gpu-platform-gpu-operator.yaml"]["spec"]
    assert {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"} in spec["healthChecks"]
    # What the check reports without the health checks (the bundle as it was before them).
    for name, drop in (("gpu-platform-network-config.yaml", ["healthCheckExprs"]),
                       ("gpu-platform-gpu-operator.yaml", ["healthCheckExprs"])):
        obj = yaml.safe_load((root / name).read_text())
        for key in drop:
            del obj["spec"][key]
        (root / name).write_text(yaml.safe_dump(obj))
    problems = "\n".join(order_problems(root))
    assert ("gpu-platform-network-config: applies NicClusterPolicy nic-cluster-policy, whose readiness is status.state, "
            "without a healthCheckExprs entry for its kind") in problems
    assert "gpu-platform-gpu-operator: its chart gpu-operator makes the ClusterPolicy cluster-policy" in problems
    assert "IPoIBNetwork" not in problems  # a secondary network: not judged by its status (docs/gitops.md)
    obj = yaml.safe_load((root / "gpu-platform-gpu-operator.yaml").read_text())
    obj["spec"]["healthChecks"] = obj["spec"]["healthChecks"][1:]
    (root / "gpu-platform-gpu-operator.yaml").write_text(yaml.safe_dump(obj))
    assert "healthChecks instead of wait, without its own" in "\n".join(order_problems(root))


def test_the_argocd_bundle_syncs_monitoring_on_its_own(tmp_path):
    root = render_bundle(tmp_path / "platform", "argocd")
    assert order_problems(root) == []
    listed = yaml.safe_load((root / "kustomization.yaml").read_text())["resources"]
    assert listed == ["network-operator", "network-config", "gpu-operator"]
    monitoring = yaml.safe_load((root / "monitoring" / "kustomization.yaml").read_text())
    assert sorted(monitoring["resources"]) == ["configmap-gpu-operator-dashboard.yaml",
                                               "servicemonitor-gpu-operator-dcgm-exporter.yaml"]
    assert bundle.SYNC_WAVE not in monitoring["commonAnnotations"]
    # The root's sync as it was: monitoring's ServiceMonitor in wave 3, before the waves it would stop.
    (root / "kustomization.yaml").write_text(yaml.safe_dump({"resources": listed + ["monitoring"]}))
    problems = "\n".join(order_problems(root))
    assert ("monitoring/ServiceMonitor gpu-operator/dcgm-exporter: its CRD comes from the Prometheus Operator, outside "
            "the platform, and it is in the root's sync") in problems
