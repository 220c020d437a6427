# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Who owns the NVIDIA driver on each GPU node: the host or the GPU Operator's driver container.

Private to the collection: not a public API. Pure: standard library only.

The two owners are mutually exclusive: a host driver plus the operator's driver container leaves
nodes NotReady, and removing the operator later cannot restore a host's containerd configuration
(gpu-operator#188, container-toolkit#1328). ``decide`` reads per-node evidence (host facts from
``gpu_host_facts``, node labels and driver pods from the cluster) and cluster evidence (the
ClusterPolicy's driver settings, NVIDIADriver objects) and returns the mode, the GPU Operator values
that follow from it, and the evidence per node, or raises Refusal naming every node in the way and
the two ways out.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpudirect
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

MODES = ("host", "operator", "auto")
CLOUD_DRIVER = ("unknown", "present", "absent")
# Node labels read as evidence (GPU Operator / GPU Feature Discovery).
GPU_PRESENT = "nvidia.com/gpu.present"
DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"
# GFD's driver version label: the current name, then the deprecated one GFD still writes beside it (k8s-device-plugin
# internal/lm/nvml.go); either one says a driver works on the node.
CUDA_DRIVER_MAJOR = ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")
# Label selectors of the operator's driver pods: the ClusterPolicy DaemonSet, and the
# NVIDIADriver CRD path's DaemonSets.
DRIVER_POD_SELECTORS = ("app=nvidia-driver-daemonset", "app.kubernetes.io/component=nvidia-driver")

WAYS_OUT = {
    "host_in_operator": (
        "Either (1) let the hosts own the driver: set gpu_platform_driver_mode: host (host_driver manages hosts "
        "in the gpu_hosts group, and the GPU Operator gets driver.enabled=false), or (2) remove the host driver "
        "from those nodes (uninstall its packages and reboot; on AKS create the node pool with --gpu-driver none) "
        "and run again."),
    "operator_in_host": (
        "Either (1) let the operator own the driver: set gpu_platform_driver_mode: operator, or (2) remove the "
        "operator's driver first: set driver.enabled=false and driver.nvidiaDriverCRD.enabled=false on the GPU "
        "Operator release, delete any NVIDIADriver objects, wait until no driver pod is left, and run again."),
    "unmanaged": (
        "Either (1) add those nodes' hosts to the gpu_hosts inventory group (set gpu_platform_node_name where the "
        "inventory name is not the node name) so host_driver installs the driver, or (2) set "
        "gpu_platform_driver_mode: operator and let the GPU Operator's driver container own every node."),
    "mixed": (
        "Either (1) set gpu_platform_driver_mode: host and add the nodes without a driver to the gpu_hosts group "
        "so host_driver installs one, or (2) set gpu_platform_driver_mode: operator and remove the host driver "
        "from the nodes that have one (uninstall its packages and reboot; on AKS use --gpu-driver none)."),
    "both": (
        "Either (1) keep the host driver: remove the operator's driver (driver.enabled=false and "
        "driver.nvidiaDriverCRD.enabled=false, delete NVIDIADriver objects) and set gpu_platform_driver_mode: host, "
        "or (2) keep the operator's driver: remove the host driver packages from those nodes, reboot them, and "
        "set gpu_platform_driver_mode: operator."),
}


def _bool(field, value):
    if not isinstance(value, bool):
        raise ParamError(field, "%r is not true or false" % (value,), "set it to true or false")
    return value


def check_inputs(mode, cloud_driver, rdma, host_mofed):
    if mode not in MODES:
        raise ParamError("mode", "%r is not a driver mode" % (mode,),
                         "use host (the hosts own the driver), operator (the GPU Operator's driver container) or "
                         "auto (decide from what the nodes have)")
    if cloud_driver not in CLOUD_DRIVER:
        raise ParamError("cloud_driver", "%r is not one of %s" % (cloud_driver, ", ".join(CLOUD_DRIVER)),
                         "use present (the cloud's node image ships the driver, e.g. a default AKS GPU pool), "
                         "absent (e.g. an AKS pool created with --gpu-driver none) or unknown")
    _bool("rdma", rdma)
    _bool("host_mofed", host_mofed)
    if host_mofed and not rdma:
        raise ParamError("host_mofed", "is true but rdma is false", "enable rdma or drop host_mofed")


def host_driver_findings(host):
    """What a host's facts (from gpu_host_facts) say about a host-installed driver."""
    if not host:
        return []
    found = []
    if host.get("driver_loaded"):
        found.append("driver %s loaded (/proc/driver/nvidia/version)" % (host.get("driver_version") or "?"))
    packages = host.get("driver_packages") or {}
    if packages:
        found.append("driver packages installed: %s" % ", ".join(
            "%s %s" % (name, version) for name, version in sorted(packages.items())))
    if host.get("nvidia_smi") and not found:
        found.append("nvidia-smi at %s" % host["nvidia_smi"])
    return found


def classify(node, cloud_driver="unknown"):
    """One node's evidence -> {name, managed, host_driver, operator_driver, host_toolkit, findings}.

    ``node``: {name, host: gpu_host_facts result or None, labels: dict or None,
    driver_pods: [pod names on this node]}.
    """
    name = node["name"]
    host = node.get("host") or None
    labels = node.get("labels") or {}
    pods = sorted(node.get("driver_pods") or [])
    host_found = host_driver_findings(host)
    if labels.get(DEPLOY_DRIVER) == "pre-installed":
        host_found.append("label %s=pre-installed (the GPU Operator found a host driver)" % DEPLOY_DRIVER)
    gfd_driver = next((name for name in CUDA_DRIVER_MAJOR if labels.get(name)), None)
    if gfd_driver and not pods and not host_found:
        host_found.append("label %s=%s with no operator driver pod (a working driver the operator did not "
                          "install)" % (gfd_driver, labels[gfd_driver]))
    if cloud_driver == "present":
        host_found.append("the cloud node image ships the driver (cloud_driver=present)")
    operator_found = ["operator driver pod %s" % pod for pod in pods]
    toolkit = bool(host and host.get("toolkit_packages")) or cloud_driver == "present"
    findings = host_found + operator_found
    if not findings:
        findings = ["no NVIDIA driver found"]
    return {
        "name": name,
        "managed": host is not None,
        "host_driver": bool(host_found),
        "operator_driver": bool(operator_found),
        "host_toolkit": toolkit,
        "in_cluster": node.get("labels") is not None,
        "findings": findings,
    }


def _lines(nodes):
    return "; ".join("%s: %s" % (n["name"], ", ".join(n["findings"])) for n in nodes)


def _refuse(what, nodes, ways_out):
    raise Refusal("%s. %s. %s Nothing was changed." % (what, _lines(nodes), WAYS_OUT[ways_out]),
                  nodes=nodes)


def _operator_cluster_findings(cluster):
    """Cluster-level signs that the operator deploys (or would keep deploying) drivers."""
    found = []
    drivers = sorted(cluster.get("nvidia_drivers") or [])
    if drivers:
        found.append("NVIDIADriver objects %s" % ", ".join(drivers))
    policy = cluster.get("cluster_policy") or {}
    if policy.get("use_nvidia_driver_crd"):
        detail = "ClusterPolicy %s has driver.useNvidiaDriverCRD=true" % policy.get("name", "cluster-policy")
        if policy.get("driver_enabled") is False:
            detail += " while driver.enabled=false (the CRD path ignores driver.enabled, gpu-operator#1795)"
        found.append(detail)
    return found


def _values(mode, nodes, path, host_mofed, keep_driver_crd, cloud=False):
    # Cloud images that ship the driver ship the container toolkit too (AKS); so may hosts.
    toolkit = not (cloud or (nodes and all(n["host_toolkit"] for n in nodes)))
    if mode == "host":
        driver = {"enabled": False, "nvidiaDriverCRD": {"enabled": False}}
    else:
        crd = {"enabled": True, "deployDefaultCR": False} if keep_driver_crd else {"enabled": False}
        # driver.rdma.enabled is the legacy nvidia-peermem sidecar; DMA-BUF needs it off and the open modules, and
        # keeps useHostMofed for the hosts' network drivers (gpu-operator-rdma.rst's DMA-BUF install commands).
        driver = {"enabled": True, "nvidiaDriverCRD": crd,
                  "rdma": {"enabled": path == "peermem", "useHostMofed": host_mofed}}
        if path == "dmabuf":
            driver["kernelModuleType"] = "open"
    return {"driver": driver, "toolkit": {"enabled": toolkit}}


def decide(mode, nodes, cluster=None, cloud_driver="unknown", rdma=False, host_mofed=False, gpudirect_path="auto",
           node_pools=None, kernel_module_type="auto", driver_version="", host_kernel_modules=""):
    """The driver owner for the whole cluster, or Refusal naming each node in the way; and the GPUDirect RDMA path
    (domain/drivers/gpudirect.py), or Refusal naming each pool or node where an explicit dmabuf cannot work.

    ``nodes``: per-node evidence (see ``classify``; ``kernel``, the node's status.nodeInfo.kernelVersion, is read by
    the GPUDirect decision); ``cluster``: {cluster_policy: {name, driver_enabled, use_nvidia_driver_crd,
    rdma_enabled} or None, nvidia_drivers: [names]}. ``kernel_module_type`` is the GPU Operator's driver.kernelModuleType,
    ``driver_version`` its pinned driver, ``host_kernel_modules`` the flavour host_driver installs.
    Returns {mode, requested, owner, peermem, reason, gpudirect, gpu_operator_values, nodes}.
    """
    check_inputs(mode, cloud_driver, rdma, host_mofed)
    gpudirect.check_inputs(gpudirect_path, kernel_module_type, driver_version, host_kernel_modules)
    cluster = cluster or {}
    seen = [classify(n, cloud_driver) for n in sorted(nodes, key=lambda n: n["name"])]
    both = [n for n in seen if n["host_driver"] and n["operator_driver"]]
    if both:
        _refuse("Both a host driver and the GPU Operator's driver container are on %d node(s)" % len(both),
                both, "both")
    with_host = [n for n in seen if n["host_driver"]]
    without = [n for n in seen if not n["host_driver"]]
    operator_cluster = _operator_cluster_findings(cluster)
    # The cloud's node image ships the driver on every GPU node, also on nodes not seen yet (a pool at zero).
    cloud = cloud_driver == "present"
    chosen = mode
    if mode == "auto":
        if with_host and without:
            _refuse("gpu_platform_driver_mode is auto but the GPU nodes disagree: %d have a host driver and %d "
                    "do not" % (len(with_host), len(without)), seen, "mixed")
        if cloud and not seen:
            chosen, reason = "host", "auto: the cloud's GPU node image ships the driver (cloud_driver=present)"
        elif with_host:
            chosen, reason = "host", "auto: every GPU node (%d) has a host driver" % len(seen)
        elif seen:
            chosen, reason = "operator", "auto: no GPU node (of %d) has a host driver" % len(seen)
        else:
            chosen, reason = "operator", ("auto: no GPU node seen yet; the GPU Operator's driver container installs "
                                          "the driver on GPU nodes as they join")
    else:
        reason = "requested: %s" % mode
    if chosen == "operator":
        if cloud and not with_host:
            cloud_finding = "the cloud node image ships the driver (cloud_driver=present)"
            with_host = [{"name": "every GPU node", "findings": [cloud_finding]}]
        if with_host:
            _refuse("gpu_platform_driver_mode is operator but %d GPU node(s) already have a host driver"
                    % len(with_host), with_host, "host_in_operator")
        keep_crd = bool(cluster.get("nvidia_drivers"))
        owner, peermem = "operator", "operator"
    else:
        in_the_way = [n for n in seen if n["operator_driver"]]
        if operator_cluster:
            in_the_way.append({"name": "cluster", "findings": operator_cluster})
        if in_the_way:
            _refuse("gpu_platform_driver_mode is host but the GPU Operator deploys drivers", in_the_way,
                    "operator_in_host")
        unmanaged = [n for n in without if not n["managed"]]
        if unmanaged:
            _refuse("gpu_platform_driver_mode is host but %d GPU node(s) have no driver and no host in the gpu_hosts "
                    "group to install one" % len(unmanaged), unmanaged, "unmanaged")
        keep_crd = False
        owner = "cloud" if cloud_driver == "present" else "host"
        # Loading nvidia-peermem through modules-load.d needs every node's host in the inventory;
        # otherwise (cloud images, hosts set up elsewhere) a DaemonSet loads it on each node.
        peermem = "host" if seen and all(n["managed"] for n in seen) and owner == "host" else "daemonset"
    policy = cluster.get("cluster_policy") or {}
    # nvidia-peermem already in the operator's driver pods: auto keeps it (gpudirect.decide, ``running``).
    running = ("ClusterPolicy %s has driver.rdma.enabled=true" % policy.get("name", "cluster-policy")
               if owner == "operator" and policy.get("rdma_enabled") is True else "")
    path = gpudirect.decide(gpudirect_path, owner, sorted(nodes, key=lambda n: n["name"]), rdma, node_pools,
                            kernel_module_type, driver_version, host_kernel_modules, running_peermem=running)
    return {
        "mode": chosen,
        "requested": mode,
        "owner": owner,
        # DMA-BUF needs no nvidia-peermem: the peermem role then does nothing.
        "peermem": "none" if path["path"] == "dmabuf" else peermem,
        "reason": reason,
        "rdma": rdma,
        "gpudirect": path,
        "gpu_operator_values": _values(chosen, seen, path["path"], host_mofed, keep_crd, cloud),
        "nodes": seen,
    }
