"""Table-driven tests of the dra_driver domain: the version floors, chart values, node labels,
GPU Operator values, the example claim, and bad inputs that must name the role variable."""
import copy

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import dra_driver as dra
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

BASE = {"enabled": True, "driver_root": "/", "gpus_enabled": True, "compute_domains_enabled": False,
        "node_selector": {}, "image_pull_secrets": []}


def settings(**changes):
    out = copy.deepcopy(BASE)
    out.update(changes)
    return out


def raises(func, *args, **kwargs):
    with pytest.raises(ParamError) as err:
        func(*args, **kwargs)
    assert "Fix:" in err.value.msg
    return err.value


# ---------------------------------------------------------------- version floors

@pytest.mark.parametrize("kube, driver, owner, warning_words", [
    ("1.34", "580.65.06", "operator", ["1.34.2"]),              # the floor itself; patch unknown -> warning
    ("v1.34.1-eks", "580.65.06", "operator", ["1.34.2"]),       # distribution build below NVIDIA's patch advice
    ("v1.34.1+k3s1", "580", "host", ["1.34.2"]),
    ("v1.34.2", "580.65.06", "operator", []),
    ("v1.35.0", "580.65.06", "operator", []),
    ("1.36.1-gke.100", "595.91.07", "cloud", []),
    ("v1.35.0", "R580", "host", []),                            # a branch is enough
    ("v1.35.0", "580", "operator", []),
    ("v1.35.0", "", "operator", ["gpu_platform_driver_version is empty", "chart's default", "580"]),
    ("v1.35.0", None, "host", ["gpu_platform_driver_branch is empty", "no branch given", "580"]),
    ("v1.34.0", "", "cloud", ["1.34.2", "dra_driver is empty", "node image"]),
])
def test_supported(kube, driver, owner, warning_words):
    warnings = dra.check_supported(kube, driver, owner)
    text = "\n".join(warnings)
    assert all(word in text for word in warning_words), warnings
    if not warning_words:
        assert warnings == []


@pytest.mark.parametrize("kube, driver, owner, field, words", [
    ("1.33", "580.65.06", "operator", "kubernetes version",
     ["Kubernetes 1.33", "resource.k8s.io/v1 is GA from 1.34", "upgrade the cluster or use the device plugin",
      "gpu_platform_dra_enabled: false", "dra-kubernetes-below-1.34"]),
    ("v1.33.9-gke.1000", "", "cloud", "kubernetes version", ["Kubernetes 1.33.9", "GA from 1.34"]),
    ("v1.32.4", "595.91.07", "host", "kubernetes version", ["Kubernetes 1.32.4"]),
    # both below: the cluster is named first
    ("1.33", "570.195.03", "host", "kubernetes version", ["GA from 1.34"]),
    ("v1.35.0", "575.57.08", "operator", "gpu_platform_driver_version",
     ["driver 575.57.08", "580", "dra-driver-below-580", "pin gpu_platform_driver_version"]),
    ("v1.35.0", "575", "host", "gpu_platform_driver_branch", ["driver 575", "set gpu_platform_driver_branch to 580"]),
    ("v1.35.0", "R570", "host", "gpu_platform_driver_branch", ["driver 570"]),
    ("v1.35.0", "575.64.05", "cloud", "dra_driver", ["node image", "gpu_platform_dra_enabled: false"]),
    ("latest", "580", "operator", "kubernetes version", ["not a Kubernetes version"]),
    (1.34, "580", "operator", "kubernetes version", ["a number", "quote it"]),
    ("v1.35.0", "580.x", "operator", "gpu_platform_driver_version", ["not an NVIDIA driver version"]),
    ("v1.35.0", "580", "gpu-operator", "driver_owner", ["not a driver owner", "host, operator, cloud"]),
])
def test_refused(kube, driver, owner, field, words):
    err = raises(dra.check_supported, kube, driver, owner)
    assert err.field == field
    assert all(word in err.msg for word in words), err.msg


def _with_floor(rule_id, spec):
    rules = []
    for rule in versions.RULES:
        if rule["id"] == rule_id:
            rule = dict(rule, when=dict(rule["when"], **spec))
        rules.append(rule)
    return tuple(rules)


def test_the_floors_come_from_the_version_matrix(monkeypatch):
    monkeypatch.setattr(versions, "RULES", _with_floor(dra.DRIVER_FLOOR_RULE, {"driver": "<590"}))
    err = raises(dra.check_supported, "v1.35.0", "580.65.06", "operator")
    assert "floor of branch 590" in err.msg
    monkeypatch.setattr(versions, "RULES", _with_floor(dra.KUBERNETES_FLOOR_RULE, {"kubernetes": "<1.36"}))
    assert raises(dra.check_supported, "v1.35.0", "580.65.06", "operator").field == "kubernetes version"


def test_a_version_too_imprecise_for_the_floor_is_a_warning(monkeypatch):
    monkeypatch.setattr(versions, "RULES", _with_floor(dra.DRIVER_FLOOR_RULE, {"driver": "<580.65.06"}))
    assert any("too imprecise" in line for line in dra.check_supported("v1.35.0", "580", "host"))
    assert dra.check_supported("v1.35.0", "580.65.06", "host") == []


def test_a_missing_floor_rule_is_an_error_not_a_pass(monkeypatch):
    monkeypatch.setattr(versions, "RULES", tuple(r for r in versions.RULES if r["id"] != dra.DRIVER_FLOOR_RULE))
    assert raises(dra.check_supported, "v1.35.0", "575.57.08", "host").field == "versions.RULES"


# ---------------------------------------------------------------- chart values

@pytest.mark.parametrize("given, expected", [
    (settings(), {
        "nvidiaDriverRoot": "/", "resourceApiVersion": "resource.k8s.io/v1", "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"}}}),
    (settings(driver_root="", driver_owner="operator", compute_domains_enabled=True,
              node_selector={"nodepool": "dra"}, image_pull_secrets=["ngc-pull"]), {
        "nvidiaDriverRoot": "/run/nvidia/driver", "resourceApiVersion": "resource.k8s.io/v1",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true", "nodepool": "dra"}},
        "controller": {"affinity": dra.CONTROLLER_AFFINITY},
        "imagePullSecrets": [{"name": "ngc-pull"}]}),
    # ComputeDomains only: no GPU allocation, so no override of the chart's device-plugin guard
    (settings(driver_root=None, driver_owner="host", gpus_enabled=False, compute_domains_enabled=True), {
        "nvidiaDriverRoot": "/", "resourceApiVersion": "resource.k8s.io/v1", "gpuResourcesEnabledOverride": False,
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"}},
        "controller": {"affinity": dra.CONTROLLER_AFFINITY}}),
    # GKE's host driver root; the enabled key may be left out (the role only calls values() when enabled)
    ({"driver_root": "/home/kubernetes/bin/nvidia/", "driver_owner": "cloud", "gpus_enabled": True,
      "compute_domains_enabled": False}, {
        "nvidiaDriverRoot": "/home/kubernetes/bin/nvidia", "resourceApiVersion": "resource.k8s.io/v1",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"}}}),
])
def test_values(given, expected):
    before = copy.deepcopy(given)
    assert dra.values(given) == expected
    assert given == before


def test_the_compute_domain_controller_runs_without_a_control_plane_node():
    """The chart requires a node labelled node-role.kubernetes.io/control-plane for its controller; a managed control
    plane has none (the controller stayed Pending on the local cluster's fleet, as on EKS: NVIDIA/aicr#174). The
    values drop that requirement (null) and only prefer such a node, then one without GPUs."""
    affinity = dra.values(settings(compute_domains_enabled=True))["controller"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] is None
    preferred = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["preference"]["matchExpressions"][0]["key"] == "node-role.kubernetes.io/control-plane"
    assert "controller" not in dra.values(settings())  # not rendered without compute domains: nothing to place


@pytest.mark.parametrize("root, owner, expected", [
    ("/", None, "/"), ("/", "host", "/"), ("/", "cloud", "/"),
    ("/run/nvidia/driver", "operator", "/run/nvidia/driver"), ("/run//nvidia/driver/", None, "/run/nvidia/driver"),
    ("", "operator", "/run/nvidia/driver"), ("", "host", "/"), (None, "cloud", "/"),
    ("/opt/nvidia/driver", "operator", "/opt/nvidia/driver"),  # a custom hostPaths.driverInstallDir
])
def test_driver_root(root, owner, expected):
    assert dra.driver_root(root, owner) == expected


@pytest.mark.parametrize("over, field, words", [
    ({"driver_root": "run/nvidia/driver"}, "dra_driver_driver_root", "not \"/\" or an absolute path"),
    ({"driver_root": "/run/../driver"}, "dra_driver_driver_root", "not \"/\" or an absolute path"),
    ({"driver_root": "/run/nvidia driver"}, "dra_driver_driver_root", "not \"/\" or an absolute path"),
    ({"driver_root": 5}, "dra_driver_driver_root", "not a path"),
    ({"driver_root": ""}, "dra_driver_driver_root", "no driver owner"),
    ({"driver_root": "/", "driver_owner": "operator"}, "dra_driver_driver_root", "GPU Operator's driver container"),
    ({"driver_root": "/run/nvidia/driver", "driver_owner": "host"}, "dra_driver_driver_root", "installed on the host"),
    ({"driver_root": "/run/nvidia/driver/", "driver_owner": "cloud"}, "dra_driver_driver_root", "on the host"),
    ({"driver_owner": "operator-driver"}, "driver_owner", "not a driver owner"),
    ({"node_selector": {"nodepool": True}}, "dra_driver_node_selector", "not a string"),
    ({"node_selector": "nodepool=dra"}, "dra_driver_node_selector", "must be a dictionary"),
    ({"node_selector": {"bad key!": "x"}}, "dra_driver_node_selector", "not a valid Kubernetes label name"),
    ({"node_selector": {"nvidia.com/dra-kubelet-plugin": "yes"}}, "dra_driver_node_selector",
     "driver manager evicts the kubelet plugin"),
    ({"enabled": False}, "gpu_platform_dra_enabled", "not installed"),
    ({"enabled": "yes"}, "gpu_platform_dra_enabled", "not true or false"),
    ({"gpus_enabled": False, "compute_domains_enabled": False}, "gpu_platform_dra_enabled", "both false"),
    ({"gpus_enabled": None}, "dra_driver_gpus_enabled", "not true or false"),
    ({"compute_domains_enabled": "false"}, "dra_driver_compute_domains_enabled", "not true or false"),
    ({"image_pull_secrets": "ngc-pull"}, "dra_driver_image_pull_secrets", "not a list"),
    ({"image_pull_secrets": ["NGC_Pull"]}, "dra_driver_image_pull_secrets[0]", "is not a Secret name"),
])
def test_bad_settings_name_the_variable(over, field, words):
    err = raises(dra.values, settings(**over))
    assert err.field == field and words in err.msg, err.msg


def test_the_user_selector_keeps_the_dra_label():
    selector = dra.values(settings(node_selector={"nvidia.com/dra-kubelet-plugin": "true", "zone": "a"}))[
        "kubeletPlugin"]["nodeSelector"]
    assert selector == {"nvidia.com/dra-kubelet-plugin": "true", "zone": "a"}


# ---------------------------------------------------------------- node labels and GPU Operator values

def test_node_labels():
    assert dra.node_labels() == {"nvidia.com/dra-kubelet-plugin": "true",
                                 "nvidia.com/gpu.deploy.device-plugin": "false"}
    # ComputeDomains only: the device plugin keeps serving the GPUs on those nodes
    assert dra.node_labels(gpus_enabled=False) == {"nvidia.com/dra-kubelet-plugin": "true"}


def test_gpu_operator_values():
    assert dra.gpu_operator_values() == {"driver": {"manager": {"env": [
        {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"}]}}}
    assert dra.gpu_operator_values(disable_device_plugin=True)["devicePlugin"] == {"enabled": False}
    assert dra.gpu_operator_values_when(True) == dra.gpu_operator_values()
    assert dra.gpu_operator_values_when(False) == {}


def test_the_three_sides_name_the_same_label():
    """The nodes' label, the kubelet plugin's selector and the driver manager's eviction label must agree."""
    labels = dra.node_labels()
    selector = dra.values(settings())["kubeletPlugin"]["nodeSelector"]
    eviction = dra.gpu_operator_values()["driver"]["manager"]["env"][0]["value"]
    assert eviction in labels and eviction in selector
    assert labels[eviction] == selector[eviction] == "true"


# ---------------------------------------------------------------- example claim

def test_example_claim():
    template, pod = dra.example_claim("smoke")
    assert template["apiVersion"] == "resource.k8s.io/v1" and template["kind"] == "ResourceClaimTemplate"
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com" and "deviceClassName" not in request
    assert request["exactly"]["count"] == 1
    spec = pod["spec"]
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod" and spec["restartPolicy"] == "Never"
    assert spec["resourceClaims"] == [
        {"name": request["name"], "resourceClaimTemplateName": template["metadata"]["name"]}]
    container = spec["containers"][0]
    assert container["command"] == ["nvidia-smi"]
    assert container["image"] == "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
    assert container["resources"] == {"claims": [{"name": request["name"]}]}
    assert {o["metadata"]["namespace"] for o in (template, pod)} == {"smoke"}
    assert {o["metadata"]["name"] for o in (template, pod)} == {"gpu-claim"}


@pytest.mark.parametrize("image", [
    "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04",
    "registry.local:5000/cuda:12.9.1",
    "nvcr.io/nvidia/cuda@sha256:" + "a" * 64,
    "nvcr.io/nvidia/cuda:12.9.1@sha256:" + "b" * 64,
])
def test_pinned_images(image):
    assert dra.example_claim("smoke", "claim-a", image)[1]["spec"]["containers"][0]["image"] == image


@pytest.mark.parametrize("args, field, words", [
    (("smoke", "gpu-claim", "nvcr.io/nvidia/cuda"), "dra_driver_smoke_image", "no tag or digest"),
    (("smoke", "gpu-claim", "registry.local:5000/cuda"), "dra_driver_smoke_image", "no tag or digest"),
    (("smoke", "gpu-claim", "nvcr.io/nvidia/cuda:latest"), "dra_driver_smoke_image", "latest"),
    (("smoke", "gpu-claim", "nvcr.io/NVIDIA/cuda:12.9.1"), "dra_driver_smoke_image", "not an image reference"),
    (("smoke", "gpu-claim", ""), "dra_driver_smoke_image", "is empty"),
    (("Smoke", "gpu-claim"), "dra_driver_smoke_namespace", "not a valid name"),
    (("smoke", "gpu_claim"), "dra_driver_smoke_name", "not a valid name"),
])
def test_bad_example_claim_inputs(args, field, words):
    err = raises(dra.example_claim, *args)
    assert err.field == field and words in err.msg, err.msg


def test_the_docs_show_the_example_claim_the_code_builds():
    """docs/dra.md's ResourceClaimTemplate and pod are exactly what example_claim returns."""
    import os
    import yaml
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "dra.md")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert list(yaml.safe_load_all(block)) == dra.example_claim("gpu-test")
