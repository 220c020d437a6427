# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The NVIDIA DRA driver for GPUs: version floors, chart values, node labels, GPU Operator values
and an example ResourceClaimTemplate + Pod, for the dra_driver role.

Private to the collection: not a public API. Pure: standard library only, no I/O.
Value keys follow chart ``dra-driver-nvidia-gpu`` 0.4.1, the one the role pins (its values.yaml read from the
source archive in shared/upstream/src; 0.4.0's is shared/upstream/dra-driver/values.default.v0.4.0.yaml): the
schema tests check every key this produces against it, and the GPU Operator keys against the values.yaml of the
GPU Operator chart the gpu_operator role pins. The keys this module sets are the same in 25.12.0's chart.

Facts this follows (sources in brackets; nothing copied):

- Chart ``nvidia-dra-driver-gpu`` from https://helm.ngc.nvidia.com/nvidia is calendar-versioned
  (25.3.0 ... 25.12.0, no ``v`` prefix); values.default.yaml here is its 25.12.0 values.yaml (image
  nvcr.io/nvidia/k8s-dra-driver-gpu, "Default values for k8s-dra-driver-gpu"). From 0.4.0 the project
  moved to kubernetes-sigs and the chart was renamed ``dra-driver-nvidia-gpu`` (values.default.v0.4.0.yaml)
  [shared/upstream/README.md, DRA driver section; NVIDIA/k8s-dra-driver-gpu
  deployments/helm/nvidia-dra-driver-gpu/Chart.yaml "Note(JP): no v prefix allowed";
  https://github.com/NVIDIA/k8s-test-infra/pull/875].
- Install values [https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-intro-install.html,
  source NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst]: ``nvidiaDriverRoot`` is ``/`` for a
  driver installed on the host (the chart default) and ``/run/nvidia/driver`` for the GPU Operator's
  driver container; ``gpuResourcesEnabledOverride=true`` is required to enable GPU allocation;
  ``resources.gpus.enabled`` / ``resources.computeDomains.enabled`` turn the two halves on or off;
  ``kubeletPlugin.nodeSelector: {nvidia.com/dra-kubelet-plugin: "true"}`` with the same label on the
  nodes; ``imagePullSecrets`` is rendered with toYaml into the pod spec, so it is a list of ``{name}``
  [deployments/helm/nvidia-dra-driver-gpu/templates/kubeletplugin.yaml].
- ``resourceApiVersion`` pins the resource.k8s.io version of the chart's DeviceClasses; left empty the
  chart picks the highest one in .Capabilities.APIVersions and fails when there is none, as in an offline
  ``helm template`` (GitOps rendering) [values.default.yaml comment; shared/upstream/README.md].
- Requirements for GPU allocation with the GPU Operator [dra-intro-install.html, Prerequisites]:
  Kubernetes v1.34.2 or newer; GPU Operator v25.10.0 or later with the device plugin disabled; CDI in the
  container runtime and NVIDIA driver 580 or later. 1.34.2 avoids a known issue
  (https://github.com/kubernetes/kubernetes/issues/133920).
  DRA's resource.k8s.io/v1 is GA (on by default) from Kubernetes 1.34
  [https://kubernetes.io/blog/2025/07/28/kubernetes-v1-34-sneak-peek/]. The floors themselves are rows of
  the version matrix (versions.RULES ``dra-kubernetes-below-1.34``, ``dra-driver-below-580``); this module
  reads them from there.
- DeviceClasses: ``gpu.nvidia.com`` and ``mig.nvidia.com`` when GPU allocation is on,
  ``compute-domain-daemon.nvidia.com`` and ``compute-domain-default-channel.nvidia.com`` when
  ComputeDomains are on [dra-intro-install.html "Validate Installation"; shared/upstream/README.md].
- GPU Operator side [dra-intro-install.html "Install the NVIDIA GPU Operator", Known Issues]: install with
  ``devicePlugin.enabled=false`` and ``driver.manager.env[0] = {name: NODE_LABEL_FOR_GPU_POD_EVICTION,
  value: nvidia.com/dra-kubelet-plugin}``, the value matching the DRA chart's node selector label; without
  it the driver manager does not evict the DRA kubelet plugin before a driver container upgrade. The driver
  manager reads that label on the node, sets it to a ``paused-...`` value (so the kubelet plugin, selected
  by ``="true"``, leaves the node) and restores it afterwards [NVIDIA/k8s-driver-manager
  cmd/driver-manager/main.go, fetchCurrentLabels, evictAllGPUOperatorComponents, maybeSetPaused].
- Per node instead of cluster-wide: the operator's device plugin DaemonSet selects
  ``nvidia.com/gpu.deploy.device-plugin=true``, and the operator only adds a missing state label: "If a
  required state label already exists on the node, honor the current value", so
  ``nvidia.com/gpu.deploy.device-plugin=false`` keeps the device plugin off that node while other nodes
  keep it [NVIDIA/gpu-operator controllers/state_manager.go gpuStateLabels, addGPUStateLabels].
- resource.k8s.io/v1 claim shape: ``spec.spec.devices.requests[]`` = ``{name, exactly: {deviceClassName,
  allocationMode, count}}`` (v1beta1 put ``deviceClassName`` on the request itself); a Pod lists
  ``spec.resourceClaims[{name, resourceClaimTemplateName}]`` and a container names it in
  ``resources.claims[{name}]``
  [https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/resource-claim-v1/;
  kubernetes Python client 37.0.2 models V1DeviceRequest, V1ExactDeviceRequest, V1PodResourceClaim,
  CoreV1ResourceClaim].
"""

from __future__ import annotations

import copy
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import (
    images, objects, validate, version_parse)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.helm_pinned_release import deep_merge
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import placement
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

RESOURCE_API = "resource.k8s.io/v1"
GPU_DEVICE_CLASS = "gpu.nvidia.com"
DEVICE_CLASSES = {
    "gpus": ("gpu.nvidia.com", "mig.nvidia.com"),
    "compute_domains": ("compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"),
}

HOST_DRIVER_ROOT = "/"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
DRIVER_OWNERS = ("host", "operator", "cloud")

KUBELET_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
EVICTION_ENV = "NODE_LABEL_FOR_GPU_POD_EVICTION"

# The floors are rows of the version matrix; check_supported reads them from versions.RULES.
KUBERNETES_FLOOR_RULE = "dra-kubernetes-below-1.34"
DRIVER_FLOOR_RULE = "dra-driver-below-580"
# NVIDIA asks for 1.34.2 or newer for GPU allocation (kubernetes/kubernetes#133920); older 1.34
# patch releases pass the floor with a warning.
RECOMMENDED_PATCH = ((1, 34), 2)
RECOMMENDED_SOURCE = ("https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-intro-install.html "
                      "(Prerequisites: Kubernetes v1.34.2 or newer), "
                      "https://github.com/kubernetes/kubernetes/issues/133920")

DRIVER_SOURCE = ("https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-intro-install.html "
                 "(Prerequisites: NVIDIA Driver version 580 or later)")

CHART = "dra-driver-nvidia-gpu"  # the chart's name (its image data in domain.core.images)
FIELDS = {
    "enabled": "gpu_platform_dra_enabled",
    "driver_root": "dra_driver_driver_root",
    "gpus_enabled": "dra_driver_gpus_enabled",
    "compute_domains_enabled": "dra_driver_compute_domains_enabled",
    "node_selector": "dra_driver_node_selector",
    "image_pull_secrets": "dra_driver_image_pull_secrets",
    "image_mirrors": "dra_driver_image_mirrors",
    "namespace": "dra_driver_smoke_namespace",
    "name": "dra_driver_smoke_name",
    "image": "dra_driver_smoke_image",
}
# Where the driver version comes from, per driver owner (gpu_driver_mode's "owner").
DRIVER_FIELDS = {"operator": "gpu_platform_driver_version", "host": "gpu_platform_driver_branch", "cloud": "dra_driver"}
DRIVER_FIXES = {
    "operator": "pin gpu_platform_driver_version to a 580 or newer driver (e.g. 580.95.05), or use the device "
                "plugin (gpu_platform_dra_enabled: false)",
    "host": "set gpu_platform_driver_branch to 580 or newer, or use the device plugin (gpu_platform_dra_enabled: false)",
    "cloud": "use a node image whose NVIDIA driver is branch 580 or newer, or use the device plugin "
             "(gpu_platform_dra_enabled: false)",
}
UNKNOWN_DRIVER = {"operator": "the GPU Operator chart's default driver", "host": "no branch given",
                  "cloud": "the node image's driver, version not known"}
KUBERNETES_FIX = "upgrade the cluster or use the device plugin (gpu_platform_dra_enabled: false)"
PARSE_WORDS = {
    "kubernetes": ("a Kubernetes version", "the cluster's version, such as v1.34.2 or 1.34"),
    "driver": ("an NVIDIA driver version or branch",
               "a driver version such as 580.95.05 or the branch 580, or leave it empty for the chart's default"),
}


# -- version floors --------------------------------------------------------------------------------

def _rule(rule_id):
    for rule in versions.RULES:
        if rule["id"] == rule_id:
            return rule
    raise ParamError("versions.RULES", "the DRA floor rule %s is missing" % rule_id,
                     "restore it in plugins/module_utils/domain/platform/versions.py")


def _floor(rule, key):
    """The bound of a ``<X`` rule, for messages (``1.34``, ``580``)."""
    return str(rule["when"][key]).lstrip("<= ")


def _owner(driver_owner):
    if driver_owner not in DRIVER_OWNERS:
        raise ParamError("driver_owner", "%r is not a driver owner" % (driver_owner,),
                         "pass the owner that gpu_platform.cluster.gpu_driver_mode returns: %s"
                         % ", ".join(DRIVER_OWNERS))
    return driver_owner


def _parse(key, value, field):
    if isinstance(value, float):
        raise ParamError(field, "%r is a number, not a version string (YAML reads 1.30 as 1.3)" % (value,),
                         "quote it, e.g. \"1.34\"" if key == "kubernetes" else "quote it, e.g. \"580.95.05\"")
    try:
        return version_parse.parse_version(key, value)
    except ParamError:
        what, example = PARSE_WORDS[key]
        raise ParamError(field, "%r is not %s" % (value, what), "give %s" % example) from None


def check_supported(kubernetes_version, driver_version, driver_owner):
    """Refuse a cluster below the DRA floors; return warning lines for what cannot be confirmed.

    ``driver_version`` is the driver the nodes run or will run (``580.95.05``, a branch ``580``), or ""
    for the chart's default (allowed, with a warning). ``driver_owner`` is host, operator or cloud.
    Raises ParamError naming ``kubernetes version`` or the variable that sets the driver.
    """
    owner = _owner(driver_owner)
    driver_field = DRIVER_FIELDS[owner]
    kube = _parse("kubernetes", kubernetes_version, "kubernetes version")
    warnings = []
    kube_rule = _rule(KUBERNETES_FLOOR_RULE)
    outcome = version_parse.in_range("kubernetes", kube, kube_rule["when"]["kubernetes"])
    if outcome is True:
        raise ParamError("kubernetes version", "Kubernetes %s is below the DRA floor of %s: DRA's %s is GA from %s "
                         "[%s, source: %s]" % (kube, _floor(kube_rule, "kubernetes"), RESOURCE_API,
                                               _floor(kube_rule, "kubernetes"), kube_rule["id"], kube_rule["source"]),
                         KUBERNETES_FIX)
    if outcome is None:
        warnings.append("Kubernetes %s is too imprecise to check the DRA floor [%s]" % (kube, kube_rule["id"]))
    minor, patch = RECOMMENDED_PATCH
    if kube.parts[:2] == minor and (len(kube.parts) < 3 or kube.parts[2] < patch):
        warnings.append("Kubernetes %s: NVIDIA asks for %d.%d.%d or newer for DRA GPU allocation, to avoid a known "
                        "issue; upgrade the cluster's patch release [source: %s]"
                        % ((kube,) + minor + (patch, RECOMMENDED_SOURCE)))
    text = "" if driver_version is None else str(driver_version).strip()
    driver_rule = _rule(DRIVER_FLOOR_RULE)
    if not text:
        warnings.append("%s is empty (%s): the DRA driver needs NVIDIA driver branch %s or newer and this could not "
                        "be checked; pin it, or confirm with nvidia-smi on a GPU node [%s, source: %s]"
                        % (driver_field, UNKNOWN_DRIVER[owner], _floor(driver_rule, "driver"), driver_rule["id"],
                           driver_rule["source"]))
        return warnings
    driver = _parse("driver", text, driver_field)
    outcome = version_parse.in_range("driver", driver, driver_rule["when"]["driver"])
    if outcome is True:
        raise ParamError(driver_field, "driver %s is below the DRA floor of branch %s: the DRA driver needs NVIDIA "
                         "driver %s or later [%s, source: %s; %s]" % (
                             driver, _floor(driver_rule, "driver"), _floor(driver_rule, "driver"), driver_rule["id"],
                             driver_rule["source"], DRIVER_SOURCE), DRIVER_FIXES[owner])
    if outcome is None:
        warnings.append("driver %s is too imprecise to check the DRA floor [%s]" % (driver, driver_rule["id"]))
    return warnings


# -- chart values ----------------------------------------------------------------------------------

def _bool(settings, key, default=None):
    value = settings.get(key, default)
    if not isinstance(value, bool):
        raise ParamError(FIELDS[key], "%r is not true or false" % (value,), "set it to true or false")
    return value


def driver_root(value, driver_owner=None):
    """``nvidiaDriverRoot``: "/" or an absolute path; empty picks the owner's default (host, cloud: "/";
    operator: /run/nvidia/driver). A root that contradicts the owner is refused."""
    field = FIELDS["driver_root"]
    owner = None if driver_owner is None else _owner(driver_owner)
    text = "" if value is None else value
    if not isinstance(text, str):
        raise ParamError(field, "%r is not a path" % (value,), "give \"/\" (host driver) or %s (GPU Operator driver)"
                         % OPERATOR_DRIVER_ROOT)
    text = text.strip()
    if not text:
        if owner is None:
            raise ParamError(field, "is empty and no driver owner was given", "give \"/\" for a driver installed on "
                             "the host or %s for the GPU Operator's driver container" % OPERATOR_DRIVER_ROOT)
        return OPERATOR_DRIVER_ROOT if owner == "operator" else HOST_DRIVER_ROOT
    parts = text.split("/")
    if not text.startswith("/") or ".." in parts or re.search(r"\s", text):
        raise ParamError(field, "%r is not \"/\" or an absolute path" % value,
                         "give \"/\" (host driver) or an absolute path such as %s (GPU Operator driver)"
                         % OPERATOR_DRIVER_ROOT)
    root = "/" + "/".join(p for p in parts if p)
    if owner == "operator" and root == HOST_DRIVER_ROOT:
        raise ParamError(field, "is \"/\" but the GPU Operator's driver container owns the driver (it lives under %s)"
                         % OPERATOR_DRIVER_ROOT, "set %s: %s, or leave it empty" % (field, OPERATOR_DRIVER_ROOT))
    if owner in ("host", "cloud") and root == OPERATOR_DRIVER_ROOT:
        raise ParamError(field, "is %s but the driver is installed on the host (owner %s), not by the GPU Operator"
                         % (OPERATOR_DRIVER_ROOT, owner), "set %s: \"/\" (or the host's driver root), or leave it "
                         "empty" % field)
    return root


def node_selector(value):
    """The kubelet plugin's nodeSelector: the DRA label plus the user's labels (string values only)."""
    field = FIELDS["node_selector"]
    selector = validate.labels(field, value)
    given = selector.get(KUBELET_PLUGIN_LABEL)
    if given not in (None, "true"):
        raise ParamError(field, "sets %s=%r, but the nodes get %s=true and the GPU Operator's driver manager "
                         "evicts the kubelet plugin by flipping that label" % (KUBELET_PLUGIN_LABEL, given,
                                                                               KUBELET_PLUGIN_LABEL),
                         "drop %s from %s (it is always added with the value \"true\")" % (KUBELET_PLUGIN_LABEL, field))
    out = {KUBELET_PLUGIN_LABEL: "true"}
    out.update(selector)
    return out


# The chart's compute-domain controller (rendered with resources.computeDomains.enabled) requires a node labelled
# node-role.kubernetes.io/control-plane (values controller.affinity, v25.12.0): a managed control plane (AKS, EKS,
# GKE) has none, and the controller stays Pending [NVIDIA/aicr#174; kubernetes-sigs/dra-driver-nvidia-gpu#308,
# #1047]. The collection prefers a control-plane node, then a node without GPUs, and requires neither (null removes
# the chart's required term when helm merges the values), as the renamed chart's 0.4.0 defaults do (#1054).
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
CONTROLLER_AFFINITY = {"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": None,
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [{"key": CONTROL_PLANE_LABEL, "operator": "Exists"}]}},
        {"weight": 50, "preference": {"matchExpressions": [
            {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]}]}}]}}


def values(settings):
    """Chart values for nvidia-dra-driver-gpu from the role's settings (keys without ``dra_driver_``):
    driver_root, gpus_enabled, compute_domains_enabled, node_selector, image_pull_secrets, and
    optionally enabled (default true) and driver_owner (host, operator or cloud, to check driver_root).
    """
    if not isinstance(settings, dict):
        raise ParamError("dra_driver", "settings must be a dictionary", "pass the role's dra_driver_* variables")
    if not _bool(settings, "enabled", True):
        raise ParamError(FIELDS["enabled"], "is false, so the DRA driver is not installed and has no chart values",
                         "set gpu_platform_dra_enabled: true, or skip the dra_driver layer")
    gpus = _bool(settings, "gpus_enabled")
    domains = _bool(settings, "compute_domains_enabled")
    if not gpus and not domains:
        raise ParamError(FIELDS["enabled"],
                         "is true but dra_driver_gpus_enabled and dra_driver_compute_domains_enabled are both false, "
                         "so the chart would deploy no kubelet plugin",
                         "enable GPU allocation (dra_driver_gpus_enabled: true) or ComputeDomains, or set "
                         "gpu_platform_dra_enabled: false")
    out = {
        "nvidiaDriverRoot": driver_root(settings.get("driver_root"), settings.get("driver_owner")),
        "resourceApiVersion": RESOURCE_API,
        "gpuResourcesEnabledOverride": gpus,
        "resources": {"gpus": {"enabled": gpus}, "computeDomains": {"enabled": domains}},
        "kubeletPlugin": {"nodeSelector": node_selector(settings.get("node_selector"))},
    }
    if domains:
        out["controller"] = {"affinity": copy.deepcopy(CONTROLLER_AFFINITY)}
    secrets = validate.secret_names(FIELDS["image_pull_secrets"], settings.get("image_pull_secrets"))
    if secrets:
        out["imagePullSecrets"] = [{"name": name} for name in secrets]
    mirrors = images.check_mirrors(settings.get("image_mirrors"), FIELDS["image_mirrors"])
    out.update(images.chart_values(CHART, mirrors))
    return deep_merge(out, placement.chart_values(CHART, settings.get("placement")))


def node_labels(gpus_enabled=True):
    """Labels for the nodes chosen for DRA: the kubelet plugin's selector label and, when DRA allocates
    the GPUs, the GPU Operator's per-node switch that keeps its device plugin off those nodes."""
    labels = {KUBELET_PLUGIN_LABEL: "true"}
    if gpus_enabled:
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
    return labels


def gpu_operator_values(disable_device_plugin=False):
    """GPU Operator chart values for the DRA path: the driver manager evicts the DRA kubelet plugin
    (selected by ``nvidia.com/dra-kubelet-plugin``) before a driver upgrade. ``disable_device_plugin``
    also turns the device plugin off cluster-wide (NVIDIA's documented way when every GPU node uses DRA);
    otherwise node_labels() turns it off per node."""
    out = {"driver": {"manager": {"env": [{"name": EVICTION_ENV, "value": KUBELET_PLUGIN_LABEL}]}}}
    if disable_device_plugin:
        out["devicePlugin"] = {"enabled": False}
    return out


def gpu_operator_values_when(enabled):
    """gpu_operator_values() when the DRA path is ``enabled`` (DRA on and the operator owns the driver), else {}."""
    return gpu_operator_values() if enabled else {}


# -- example claim ---------------------------------------------------------------------------------

def example_claim(namespace, name="gpu-claim", image="nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04",
                  device_class=GPU_DEVICE_CLASS, labels=None):
    """[ResourceClaimTemplate, Pod]: the Pod gets one ``device_class`` device through DRA
    (resource.k8s.io/v1), runs ``nvidia-smi`` once and ends (restartPolicy Never). Both are named ``name``
    and carry ``labels`` besides the collection's own. The docs' example and the DRA smoke test are this."""
    validate.dns_label(FIELDS["namespace"], namespace)
    validate.dns_label(FIELDS["name"], name)
    image = validate.pinned_image(FIELDS["image"], image)
    labels = dict(dict(MANAGED_BY, **{"app.kubernetes.io/name": name}), **(labels or {}))
    template = {
        "apiVersion": RESOURCE_API, "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount",
                                        "count": 1}},
        ]}}},
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": objects.restricted({
            "restartPolicy": "Never",
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": name}],
            "tolerations": [dict(taints.GPU_TOLERATION)],
            "containers": [{"name": "nvidia-smi", "image": image, "command": ["nvidia-smi"],
                            "resources": {"claims": [{"name": "gpu"}]}}],
        }),
    }
    return [template, pod]
