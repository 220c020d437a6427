# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params + host facts + what the cluster shows -> the driver owner, for gpu_driver_mode.

Private to the collection: not a public API. The decision is domain/drivers/gpu_driver_mode.py (pure); this
file only gathers the cluster's evidence (reads, never writes) and merges it with the host facts.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode, gpudirect
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

CLUSTER_POLICY = ("nvidia.com/v1", "ClusterPolicy")
NVIDIA_DRIVER = ("nvidia.com/v1alpha1", "NVIDIADriver")


def host_evidence(hosts):
    """{node name: host facts}; refuses facts without a node name and two hosts claiming one node."""
    out = {}
    for index, host in enumerate(hosts or []):
        if not isinstance(host, dict) or not host.get("node_name"):
            raise ParamError("hosts[%d]" % index, "has no node_name",
                             "pass the gpu_host facts that gpu_platform.cluster.gpu_host_facts returns")
        name = host["node_name"]
        if name in out:
            raise ParamError("hosts[%d].node_name" % index, "%r is given by two hosts" % name,
                             "give each inventory host its own node name (gpu_platform_node_name)")
        out[name] = host
    return out


def read_cluster(kube, node_selector):
    """Nodes (by selector), the operator's driver pods per node, the ClusterPolicy and NVIDIADriver objects, and each
    node's kernel release (status.nodeInfo.kernelVersion)."""
    found = kube.list("v1", "Node", label_selector=node_selector)
    nodes = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in found}
    kernels = {n["metadata"]["name"]: ((n.get("status") or {}).get("nodeInfo") or {}).get("kernelVersion") or ""
               for n in found}
    pods = {}
    for selector in gpu_driver_mode.DRIVER_POD_SELECTORS:
        for pod in kube.list("v1", "Pod", label_selector=selector):
            node = (pod.get("spec") or {}).get("nodeName")
            phase = (pod.get("status") or {}).get("phase")
            if node and phase not in ("Succeeded", "Failed"):
                meta = pod["metadata"]
                pods.setdefault(node, set()).add("%s/%s" % (meta.get("namespace"), meta["name"]))
    cluster = {"cluster_policy": None, "nvidia_drivers": []}
    if kube.serves(*CLUSTER_POLICY):
        for policy in kube.list(*CLUSTER_POLICY):
            driver = (policy.get("spec") or {}).get("driver") or {}
            cluster["cluster_policy"] = {"name": policy["metadata"]["name"],
                                         "driver_enabled": driver.get("enabled"),
                                         "use_nvidia_driver_crd": bool(driver.get("useNvidiaDriverCRD")),
                                         "rdma_enabled": (driver.get("rdma") or {}).get("enabled") is True}
    if kube.serves(*NVIDIA_DRIVER):
        cluster["nvidia_drivers"] = sorted(d["metadata"]["name"] for d in kube.list(*NVIDIA_DRIVER))
    return nodes, pods, cluster, kernels


def evidence(hosts, nodes=None, pods=None, kernels=None):
    """Per-node evidence for gpu_driver_mode.decide: every cluster GPU node and every inventory GPU host."""
    hosts = host_evidence(hosts)
    nodes = nodes if nodes is not None else {}
    pods = pods or {}
    kernels = kernels or {}
    out = []
    for name in sorted(set(hosts) | set(nodes) | set(pods)):
        out.append({"name": name, "host": hosts.get(name),
                    "labels": nodes.get(name) if name in nodes else None,
                    "driver_pods": sorted(pods.get(name, ())),
                    "kernel": kernels.get(name) or ""})
    return out


def run(params, kube_factory):
    """The decision; reads the cluster only when ``read_cluster`` is true. Never changes anything."""
    mode = params["mode"]
    gpu_driver_mode.check_inputs(mode, params["cloud_driver"], params["rdma"], params["host_mofed"])
    gpudirect.check_inputs(params["gpudirect_path"], params["kernel_module_type"], params.get("driver_version") or "",
                           params.get("host_kernel_modules") or "")
    gpudirect.check_pools(params.get("node_pools"))
    validate.parse_selector("node_selector", params.get("node_selector"))
    if params["read_cluster"]:
        nodes, pods, cluster, kernels = read_cluster(kube_factory(), params["node_selector"])
    else:
        nodes, pods, cluster, kernels = None, None, {}, None
    result = gpu_driver_mode.decide(mode, evidence(params.get("hosts"), nodes, pods, kernels), cluster,
                                    cloud_driver=params["cloud_driver"], rdma=params["rdma"],
                                    host_mofed=params["host_mofed"], gpudirect_path=params["gpudirect_path"],
                                    node_pools=params.get("node_pools"),
                                    kernel_module_type=params["kernel_module_type"],
                                    driver_version=params.get("driver_version") or "",
                                    host_kernel_modules=params.get("host_kernel_modules") or "")
    result["changed"] = False
    result["cluster_read"] = bool(params["read_cluster"])
    return result
