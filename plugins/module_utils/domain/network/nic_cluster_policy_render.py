# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The objects of a validated NicPolicyRequest: the NicClusterPolicy, the NV-IPAM IPPool, the secondary
network, and an example pod that joins it.

Private to the collection: not a public API. Pure: standard library only, no I/O.
Field names follow the v26.4.1 CRDs in shared/upstream/network-operator (see ``domain.network.nic_cluster_policy``); every config
string is deterministic JSON, so a re-run renders byte-identical objects.
"""

from __future__ import annotations

import copy
import ipaddress
import json

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network.nic_cluster_policy import (
    IPPOOL_API, NETWORKS_ANNOTATION, NV_IPAM, POLICY_API, POLICY_NAME, RESOURCE_PREFIX, SHARED_MODES,
    SRIOV, WHEREABOUTS)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# The example pod's image: the DOCA full runtime image (RDMA user space, Ubuntu based), public on
# NGC. The tag 3.0.0-full-rt-host is the one Mellanox/spectrum-x-operator builds FROM in its
# Dockerfile. It is a shell for `kubectl exec`: the pod only sleeps.
EXAMPLE_POD_IMAGE = "nvcr.io/nvidia/doca/doca:3.0.0-full-rt-host"


def _json(obj):
    """Deterministic JSON for config strings: a re-run renders byte-identical objects."""
    return json.dumps(obj, sort_keys=True)


def _plugin_selectors(request, device_ids, interfaces):
    """The NIC selectors of a device plugin's config; the two plugins name device IDs and interfaces apart."""
    selectors = {"linkTypes": [request.link_type]}
    for key, values in (("vendors", request.vendors), (device_ids, request.device_ids), (interfaces, request.interfaces)):
        if values:
            selectors[key] = list(values)
    return selectors


def rdma_shared_config(request):
    """The k8s-rdma-shared-dev-plugin configuration (JSON string) of the request."""
    selectors = _plugin_selectors(request, device_ids="deviceIDs", interfaces="ifNames")
    return _json({"configList": [{"resourceName": request.resource_name, "resourcePrefix": RESOURCE_PREFIX,
                                  "rdmaHcaMax": request.rdma_hca_max, "selectors": selectors}]})


def sriov_config(request):
    """The sriov-network-device-plugin configuration (JSON string): one RDMA resource pool."""
    selectors = dict(_plugin_selectors(request, device_ids="devices", interfaces="pfNames"), isRdma=True)
    return _json({"resourceList": [{"resourceName": request.resource_name, "resourcePrefix": RESOURCE_PREFIX,
                                    "selectors": selectors}]})


def ipam_config(request):
    """The IPAM JSON string of the secondary network."""
    if request.ipam == NV_IPAM:
        return _json({"type": "nv-ipam", "poolName": request.nv_ipam_pool})
    config = {"type": "whereabouts", "range": request.ip_range}
    if request.ip_gateway:
        config["gateway"] = request.ip_gateway
        # keep the gateway out of the pods' addresses
        config["exclude"] = [str(ipaddress.ip_network(request.ip_gateway))]
    return _json(config)


def _image(request, part):
    return dict(request.images[part])


def render_policy(request):
    spec = {}
    if request.node_affinity:
        spec["nodeAffinity"] = copy.deepcopy(request.node_affinity)
    if request.tolerations:
        spec["tolerations"] = taints.gpu_pod_tolerations(list(request.tolerations))
    if request.ofed_driver:
        spec["ofedDriver"] = dict(_image(request, "ofedDriver"), upgradePolicy=copy.deepcopy(request.upgrade_policy))
    if request.mode in SHARED_MODES:
        spec["rdmaSharedDevicePlugin"] = dict(_image(request, "rdmaSharedDevicePlugin"),
                                              config=rdma_shared_config(request))
    elif request.mode == SRIOV:
        spec["sriovDevicePlugin"] = dict(_image(request, "sriovDevicePlugin"), config=sriov_config(request))
    secondary = {"multus": _image(request, "multus"), "cniPlugins": _image(request, "cniPlugins")}
    if request.network_kind == "IPoIBNetwork":
        secondary["ipoib"] = _image(request, "ipoib")
    if request.ipam == WHEREABOUTS and "ipamPlugin" in request.images:
        secondary["ipamPlugin"] = _image(request, "ipamPlugin")
    spec["secondaryNetwork"] = secondary
    if request.ipam == NV_IPAM:
        spec["nvIpam"] = dict(_image(request, "nvIpam"), enableWebhook=False)
    return {"apiVersion": POLICY_API, "kind": "NicClusterPolicy",
            "metadata": {"name": POLICY_NAME, "labels": dict(MANAGED_BY)}, "spec": spec}


def render_ippool(request):
    spec = {"subnet": request.ip_range, "perNodeBlockSize": request.nv_ipam_block_size}
    if request.ip_gateway:
        spec["gateway"] = request.ip_gateway
    return {"apiVersion": IPPOOL_API, "kind": "IPPool",
            "metadata": {"name": request.nv_ipam_pool, "namespace": request.operator_namespace,
                         "labels": dict(MANAGED_BY)},
            "spec": spec}


def render_network(request):
    spec = {"networkNamespace": request.network_namespace, "ipam": ipam_config(request)}
    kind = request.network_kind
    if kind == "HostDeviceNetwork":
        spec["resourceName"] = request.resource
    elif kind == "MacvlanNetwork":
        spec.update(master=request.master, mode="bridge")
    else:
        spec["master"] = request.master
    return {"apiVersion": POLICY_API, "kind": kind,
            "metadata": {"name": request.network_name, "labels": dict(MANAGED_BY)}, "spec": spec}


def render(request):
    """Objects in apply order: the NicClusterPolicy, the NV-IPAM IPPool (nv-ipam), the network."""
    objects = [render_policy(request)]
    if request.ipam == NV_IPAM:
        objects.append(render_ippool(request))
    objects.append(render_network(request))
    return objects


def pod_resources(request):
    """Extended resources a pod of this mode requests: {"rdma/shared_ib": 1} in the shared modes (rdma_shared,
    ipoib), {"rdma/ib": N} in sriov with N the NICs per pod (8 on ND H100 v5)."""
    if request.nics_per_pod is None:
        raise ParamError("nics_per_pod", "is unknown for mode sriov (the request was built to remove the objects)",
                         "give nics_per_pod or node_type")
    return {request.resource: request.nics_per_pod}


def example_pod(request, gpus=1):
    """A Pod that joins the secondary network with its RDMA resource and ``gpus`` GPUs; it sleeps for exec."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ParamError("gpus", "%r is not a positive whole number" % (gpus,), "give 1 or more GPUs, e.g. 1")
    limits = {"nvidia.com/gpu": gpus}
    limits.update(pod_resources(request))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "rdma-test-%s" % request.network_name, "namespace": request.network_namespace,
                     "labels": dict(MANAGED_BY), "annotations": {NETWORKS_ANNOTATION: request.network_name}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "rdma-test",
                "image": EXAMPLE_POD_IMAGE,
                "command": ["sleep", "infinity"],
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                "resources": {"limits": limits},
            }],
        },
    }
