"""Each named release pair's real charts render the values the roles build (``helm template``, tools/bin/helm).

For every pair of gpu_platform_release_pairs (roles/gpu_platform/defaults), the GPU Operator chart and the Network
Operator chart of that pair's versions are taken out of their source archives in shared/upstream/src (the chart folders
``deployments/gpu-operator`` and ``deployment/network-operator``, with the subcharts they carry; extracted once per
process by tests/schema/pinned_charts.py) and rendered with the values the roles give them: gpu_operator.build_values
(the gpu_operator role's _gpu_operator_settings, with a driver decision of gpu_driver_mode, as
tests/schema/test_gpu_operator_values.py builds them) and network_operator.build_values (the network_operator role's
_network_operator_values). The rendered manifests must carry the pair's operator images and the role's driver and RDMA
choices, and the GPU Operator's ClusterPolicy must be valid against that release's own CRD.

The GPU Operator's git tree carries a development Chart.yaml (version v1.0.0-devel, appVersion main-latest); NVIDIA's
release workflow packages it with the tag as version and appVersion (.github/workflows/release-rc-assets.yaml in each
archive: ``helm package --version "${RELEASE_TAG}" --app-version "${RELEASE_TAG}"``), which is what is done here before
rendering. The Network Operator's Chart.yaml carries its release already.
"""
from __future__ import annotations

import functools
import os
import tempfile

import pytest
import yaml
from local_gpu_cluster import pins
from local_gpu_cluster.charts import TOOLS_BIN, helm_env, package_chart, run_helm

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator, network_operator
from tests.schema import crdschema, pinned_charts
from tests.schema.crdschema_syntax import REPO_ROOT
from tests.schema.test_gpu_operator_values import BASE, HOST_TOOLKIT, decided

HELM = TOOLS_BIN / "helm"
# The local GPU cluster's Kubernetes (the version the charts are installed on in this project's tests).
KUBE_VERSION = "1.35.8"
PAIRS = pins.release_pairs(REPO_ROOT)

# The gpu_operator role's settings for the two driver owners, as gpu_driver_mode decides them: the operator's driver
# with GPUDirect RDMA over the Network Operator's DOCA driver (the network layer on, so NFD comes with the Network
# Operator), and the hosts' driver (every node with its toolkit) without RDMA.
GPU_SETTINGS = {
    "operator-rdma": dict(BASE, driver_values=decided("operator", rdma=True), rdma_enabled=True, nfd_enabled=False,
                          image_pull_secrets=["ngc-pull"],
                          device_plugin_config={"name": "time-slicing-config", "default": "any"}),
    "host": dict(BASE, driver_values=decided("host", nodes=[HOST_TOOLKIT])),
    # inventories/aks: the operands no pool needs off, as the AKS RDMA/InfiniBand guide's values have them
    "aks": dict(BASE, driver_values=decided("operator", rdma=True), rdma_enabled=True, nfd_enabled=False,
                disable_unused_operands=True, mig_pools=[], mig_config=None),
}
TRIMMED = ("migManager", "vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin")
NETWORK_SETTINGS = {
    "nfd": {"nfd_enabled": True, "image_mirrors": {}, "extra_values": {}},
    "mirrored": {"nfd_enabled": False, "image_mirrors": {"nvcr.io": "harbor.example.com/nvcr"}, "extra_values": {}},
}


@functools.lru_cache(maxsize=1)
def _work():
    return tempfile.mkdtemp(prefix="release-pair-charts-", dir=pinned_charts._folder())


@functools.lru_cache(maxsize=None)
def _packaged(chart, version):
    """The chart of ``version`` packaged as its release is (the GPU Operator: version and appVersion the tag)."""
    folder = pinned_charts.chart_dir(chart, version)
    app_version = version if chart == "gpu-operator" else None
    return str(package_chart(folder, os.path.join(_work(), "%s-%s" % (chart, version)), version, app_version, HELM))


def render(chart, version, values, namespace):
    """The manifests ``helm template`` renders from ``chart`` at ``version`` with ``values``, by (kind, name)."""
    archive = _packaged(chart, version)
    path = os.path.join(tempfile.mkdtemp(dir=_work()), "values.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(values, handle)
    out = run_helm(HELM, ["template", chart, archive, "--namespace", namespace, "--kube-version", KUBE_VERSION,
                          "--values", path], helm_env(os.path.join(_work(), "helm"))).stdout
    docs = [doc for doc in yaml.safe_load_all(out) if doc]
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def container(manifests, name):
    return manifests[("Deployment", name)]["spec"]["template"]["spec"]["containers"][0]


GPU_CASES = [(pair, case) for pair in sorted(PAIRS) for case in sorted(GPU_SETTINGS)]
NETWORK_CASES = [(pair, case) for pair in sorted(PAIRS) for case in sorted(NETWORK_SETTINGS)]


@pytest.mark.parametrize("pair, case", GPU_CASES, ids=["%s-%s" % c for c in GPU_CASES])
def test_the_pairs_gpu_operator_chart_renders_the_roles_values(pair, case):
    version = PAIRS[pair]["gpu_operator"]
    settings = GPU_SETTINGS[case]
    values = gpu_operator.build_values(settings)
    manifests = render("gpu-operator", version, values, "gpu-operator")
    assert container(manifests, "gpu-operator")["image"] == "nvcr.io/nvidia/gpu-operator:%s" % version
    spec = manifests[("ClusterPolicy", "cluster-policy")]["spec"]
    crdschema.validate(manifests[("ClusterPolicy", "cluster-policy")],
                       upstream_dir=os.path.join(pinned_charts.chart_dir("gpu-operator", version), "crds"))
    chart_defaults = pinned_charts.values("gpu-operator", version)
    assert spec["driver"]["enabled"] is values["driver"]["enabled"]
    assert spec["toolkit"]["enabled"] is values["toolkit"]["enabled"]
    assert spec["mig"]["strategy"] == settings["mig_strategy"]
    assert spec["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    # the chart leaves sandboxDevicePlugin.enabled out when it is false, which the operator reads as off
    # (api/nvidia/v1/clusterpolicy_types.go: SandboxDevicePluginSpec.IsEnabled, nil is false)
    enabled = {name: spec[name].get("enabled", False) for name in TRIMMED}
    assert enabled == {name: case != "aks" for name in TRIMMED}
    if case == "operator-rdma":
        assert spec["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
        # the release's own default driver (v26.7.0: 595.91.07, v26.3.3: 580.126.20)
        assert spec["driver"]["version"] == chart_defaults["driver"]["version"]
        assert spec["devicePlugin"]["config"] == {"name": "time-slicing-config", "default": "any"}
        assert spec["driver"]["imagePullSecrets"] == ["ngc-pull"]
        # NFD comes with the Network Operator: none of the GPU Operator's
        assert not [key for key in manifests if "node-feature-discovery" in key[1]]
    elif case == "aks":
        assert spec["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
    else:
        assert spec["driver"]["rdma"]["enabled"] is False
        assert any("node-feature-discovery" in key[1] for key in manifests)


@pytest.mark.parametrize("pair, case", NETWORK_CASES, ids=["%s-%s" % c for c in NETWORK_CASES])
def test_the_pairs_network_operator_chart_renders_the_roles_values(pair, case):
    version = PAIRS[pair]["network_operator"]
    with open(os.path.join(pinned_charts.chart_dir("network-operator", version), "Chart.yaml"), encoding="utf-8") as f:
        chart = yaml.safe_load(f)
    assert (chart["version"], chart["appVersion"]) == (version, "v" + version), "the archive's chart is its release"
    settings = NETWORK_SETTINGS[case]
    manifests = render("network-operator", version, network_operator.build_values(settings), "nvidia-network-operator")
    registry = "harbor.example.com/nvcr" if settings["image_mirrors"] else "nvcr.io"
    operator = container(manifests, "network-operator")
    assert operator["image"] == "%s/nvidia/cloud-native/network-operator:v%s" % (registry, version)
    env = {e["name"]: e.get("value") for e in operator.get("env") or []}
    assert env["OFED_INIT_CONTAINER_IMAGE"] == ("%s/nvidia/mellanox/network-operator-init-container:"
                                                "network-operator-v%s" % (registry, version))
    # the SR-IOV Network Operator subchart stays off; NFD follows network_operator_nfd_enabled
    assert not [key for key in manifests if "sriov-network-operator" in key[1]]
    assert any("node-feature-discovery" in key[1] for key in manifests) is settings["nfd_enabled"]


def test_every_pairs_charts_are_rendered():
    """Each pair's two versions are among the rendered ones (a pair added without its archives skips above)."""
    assert {PAIRS[p]["gpu_operator"] for p, c in GPU_CASES} == set(pinned_charts.pair_versions("gpu-operator"))
    assert {PAIRS[p]["network_operator"] for p, c in NETWORK_CASES} == set(pinned_charts.pair_versions("network-operator"))
