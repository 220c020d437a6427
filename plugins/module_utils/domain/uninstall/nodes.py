# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GPU nodes whose container runtime config the GPU Operator's container toolkit rewrote, and whether
they are cloud-managed (AKS): what the uninstall guard (``domain.uninstall.plan.check``) reads from the cluster.

Private to the collection: not a public API. Pure: standard library only, from plain Node and ClusterPolicy
dicts.
"""

from __future__ import annotations

CLOUD_LABEL_PREFIX = "kubernetes.azure.com/"
GPU_LABELS = ("nvidia.com/gpu.present", "kubernetes.azure.com/accelerator")
TOOLKIT_DEPLOY_LABEL = "nvidia.com/gpu.deploy.container-toolkit"


def _labels(node):
    return (node.get("metadata") or {}).get("labels") or {}


def toolkit_enabled(cluster_policy):
    """Whether a ClusterPolicy runs the container toolkit (the chart's default is on); None: no ClusterPolicy."""
    if not cluster_policy:
        return False
    toolkit = (cluster_policy.get("spec") or {}).get("toolkit") or {}
    return toolkit.get("enabled", True) is not False


def gpu_nodes(nodes):
    return [n for n in nodes or [] if any(_labels(n).get(k) in ("true", "nvidia") for k in GPU_LABELS)
            and _labels(n).get(TOOLKIT_DEPLOY_LABEL) != "false"]


def cloud_managed(node, cloud_driver="unknown"):
    """Why a node is cloud-managed (AKS), or '' when nothing says so."""
    labels = _labels(node)
    if cloud_driver == "present":
        return "gpu_platform_cloud_driver is present (the cloud's node image ships driver and runtime config)"
    azure = sorted(k for k in labels if k.startswith(CLOUD_LABEL_PREFIX))
    if azure:
        return "AKS node (label %s)" % azure[0]
    provider = (node.get("spec") or {}).get("providerID") or ""
    if provider.startswith("azure://"):
        return "AKS node (providerID azure://)"
    return ""


def runtime_at_risk(settings, cluster):
    """The GPU nodes whose containerd config the toolkit rewrote: [{name, cloud: reason or ''}]."""
    cluster = cluster or {}
    if not toolkit_enabled(cluster.get("cluster_policy")):
        return []
    cloud_driver = settings.get("gpu_platform_cloud_driver") or "unknown"
    return [{"name": n["metadata"]["name"], "cloud": cloud_managed(n, cloud_driver)}
            for n in sorted(gpu_nodes(cluster.get("nodes")), key=lambda n: n["metadata"]["name"])]
