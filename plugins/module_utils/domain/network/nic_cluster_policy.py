# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""NVIDIA Network Operator NicClusterPolicy and secondary network: modes, defaults, images, readiness.

Private to the collection: not a public API. Pure: standard library only, no I/O.
Field names follow the v26.4.1 CRDs in shared/upstream/network-operator (NicClusterPolicy,
IPoIBNetwork, HostDeviceNetwork, MacvlanNetwork, NV-IPAM IPPool); the schema tests check every
object this renders against those files.

Three modes (see docs of the nic_cluster_policy module and docs/network.md). Each renders what the
AKS RDMA/InfiniBand guide's policy of that mode has (Azure/aks-rdma-infiniband, configs/nicclusterpolicy):

- ``sriov``: SR-IOV network device plugin; pods claim ``rdma/<resource_name>: N`` (default
  ``rdma/ib``), one VF per NIC, attached through a ``HostDeviceNetwork``. N is ``nics_per_pod``,
  by default every NIC of ``node_type`` (8 on ND H100 v5, as the guide's pods request).
- ``rdma_shared``: RDMA shared device plugin; pods claim ``rdma/<resource_name>: 1`` (default
  ``rdma/shared_ib``), ``rdma_hca_max`` pods share the selected NICs. The network is an
  ``IPoIBNetwork`` on InfiniBand or a ``MacvlanNetwork`` on Ethernet. Its master interface is
  ``ipoib_master`` when given, otherwise the first of ``selectors.interfaces``; one of the two is
  required (the device plugin needs no interface name, the network does).
- ``ipoib``: the guide's IPoIB policy, which is its RDMA shared device plugin policy plus the IPoIB
  CNI: the same shared device plugin (``rdma/shared_ib: 1``, ``rdma_hca_max``) and an
  ``IPoIBNetwork`` on ``ipoib_master`` (required), with the Multus, CNI plugins and IPoIB CNI parts
  of the policy. Pods claim the RDMA resource and carry the network annotation.

The shared modes claim one slot per pod whatever the NIC count: one slot reaches every selected NIC.

The module's options become a NicPolicyRequest in ``domain.network.nic_cluster_policy_validate``; its objects are
rendered in ``domain.network.nic_cluster_policy_render``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images as image_mirrors
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse

SRIOV = "sriov"
RDMA_SHARED = "rdma_shared"
IPOIB = "ipoib"
MODES = (SRIOV, RDMA_SHARED, IPOIB)
# Modes that run the RDMA shared device plugin (the AKS guide's IPoIB policy keeps it beside the IPoIB CNI).
SHARED_MODES = (RDMA_SHARED, IPOIB)

NV_IPAM = "nv-ipam"
WHEREABOUTS = "whereabouts"
IPAMS = (NV_IPAM, WHEREABOUTS)

INFINIBAND = "infiniband"
ETHER = "ether"
LINK_TYPES = (INFINIBAND, ETHER)

POLICY_NAME = "nic-cluster-policy"
POLICY_API = "mellanox.com/v1alpha1"
IPPOOL_API = "nv-ipam.nvidia.com/v1alpha1"
RESOURCE_PREFIX = "rdma"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"

DEFAULT_VENDORS = ("15b3",)  # PCI vendor id of NVIDIA (Mellanox) network adapters
DEFAULT_LINK_TYPE = INFINIBAND
# The AKS guide's names: "ib" in its SR-IOV policy, "shared_ib" in its RDMA shared device plugin policy, which its
# IPoIB policy builds on (configs/nicclusterpolicy/ipoib/kustomization.yaml lists ../rdma-shared-device-plugin).
DEFAULT_RESOURCE_NAMES = {SRIOV: "ib", RDMA_SHARED: "shared_ib", IPOIB: "shared_ib"}
DEFAULT_NETWORK_NAME = "rdma-net"
DEFAULT_NETWORK_NAMESPACE = "default"
DEFAULT_OPERATOR_NAMESPACE = "nvidia-network-operator"
DEFAULT_IPAM = NV_IPAM

# rdmaHcaMax: how many pods on one node may hold the shared RDMA resource at once.
# k8s-rdma-shared-dev-plugin (pkg/resources) only refuses values below 0, and it advertises
# rdmaHcaMax device entries to the kubelet, so 0 means a resource no pod can ever get: the floor
# is 1. The plugin sets no ceiling; 1000 is the largest value in its own README and tests, and
# far above the kubelet's default of 110 pods per node, so anything larger only inflates every
# ListAndWatch answer. 63 is the value of the AKS RDMA/InfiniBand guide (Azure/aks-rdma-infiniband,
# configs/nicclusterpolicy/rdma-shared-device-plugin/rdma.yaml) and of the Network Operator samples.
RDMA_HCA_MAX_DEFAULT = 63
RDMA_HCA_MAX_RANGE = (1, 1000)

# NV-IPAM hands each node one block of perNodeBlockSize addresses of the pool's subnet. nv-ipam
# (api/v1alpha1/ippool_validate.go) refuses blocks below 2 and blocks larger than the subnet's
# addresses minus network and broadcast. 16 leaves 15 nodes in a /24; a smaller subnet gets one
# block of all its addresses.
NV_IPAM_BLOCK_DEFAULT = 16
NV_IPAM_BLOCK_MIN = 2

# Image table: for each Network Operator release, the component images its NicClusterPolicy
# runs (keys are the NicClusterPolicy spec parts). A chart of one release with component
# images of another is refused by build_request (unknown version), never mixed.
#
# Sources (facts only):
# - 26.4.1: Mellanox/network-operator-docs docs/advanced/images-sha256.rst for v26.4.1
#   ("NVIDIA Network Operator Container Images" and "DOCA-OFED Driver Container Images"):
#   every component tag is network-operator-v26.4.1 under nvcr.io/nvidia/mellanox, DOCA driver
#   doca3.4.1-26.04-1.1.0.0-1. The chart's values.yaml at v26.4.1 (shared/upstream/network-operator/
#   values.default.yaml) pins the init container and the SR-IOV device plugin at the same
#   network-operator-v26.4.1 tag (checked by tests/schema/test_nic_policy_schema.py).
# - 26.4.0: the same page for v26.4.0: tags network-operator-v26.4.0, DOCA driver
#   doca3.4.0-26.04-0.8.6.0-0 (also named on docs.nvidia.com/networking/display/kubernetes2640/
#   platform-support.html as cited by other projects). The v26.4.0 CRDs are byte-identical to
#   v26.4.1's (shared/upstream/README.md).
# - 26.1.2: the v26.1.2 tag's own release data, hack/release.yaml (in shared/upstream/src/network-operator-v26.1.2.tar.xz):
#   every component above (RdmaSharedDevicePlugin, SriovDevicePlugin, Multus, CniPlugins, Ipoib, nvIpam) at
#   nvcr.io/nvidia/mellanox with tag network-operator-v26.1.2, Mofed (the DOCA driver) doca-driver
#   doca3.3.0-26.01-1.0.0.0-0; its chart's values.yaml pins the init container and the SR-IOV device plugin at the
#   same tag (checked by tests/schema/test_nic_policy_schema.py). Every NicClusterPolicy field this module writes is
#   in the v26.1.2 CRD too (deployment/network-operator/crds of that archive: v26.4.1 only adds spec.global and
#   spectrumXOperator.xPlane, which are not written); the schema tests validate each rendered policy of this row
#   against that CRD.
# - Whereabouts: deprecated since Network Operator 25.4 (release notes, upgrade notes) and not in
#   any release's image list; the v26.4.1 (and v26.1.2) NicClusterPolicy CRD has no secondaryNetwork.ipamPlugin
#   any more. No release here carries an "ipamPlugin" entry, so with ipam=whereabouts the policy
#   cannot deploy it: the network still gets a whereabouts IPAM config and the request carries a
#   warning that whereabouts must be installed separately.
_MELLANOX = "nvcr.io/nvidia/mellanox"

# Where the policy's pods run by default: nodes with an NVIDIA (Mellanox, PCI vendor 15b3) network adapter, as
# Node Feature Discovery labels them (the GPU Operator's NFD, whose PCI classes include network controllers).
# Without it the DOCA driver and device plugin pods would land on CPU and system nodes too.
NIC_NODE_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
DEFAULT_NODE_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": NIC_NODE_LABEL, "operator": "In", "values": ["true"]}]}]}}
# The DOCA driver's upgrade: automatic, one node at a time, each node drained first (its RDMA pods would lose
# their devices when the driver reloads). Keys and their defaults follow the NicClusterPolicy CRD
# (ofedDriver.upgradePolicy, v26.4.1); the CRD's own default is autoUpgrade false, which leaves an upgraded
# image unapplied.
UPGRADE_POLICY_DEFAULTS = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 1,
    "safeLoad": False,
    "waitForCompletion": {"podSelector": "", "timeoutSeconds": 0},
    "drain": {"enable": True, "force": True, "podSelector": "", "timeoutSeconds": 300, "deleteEmptyDir": True},
}
UPGRADE_POLICY_KINDS = {
    "autoUpgrade": "bool", "maxParallelUpgrades": "count", "safeLoad": "bool",
    "waitForCompletion.podSelector": "selector", "waitForCompletion.timeoutSeconds": "count",
    "drain.enable": "bool", "drain.force": "bool", "drain.podSelector": "selector", "drain.timeoutSeconds": "count",
    "drain.deleteEmptyDir": "bool",
}


def _component_images(tag, doca_driver):
    return {
        "ofedDriver": {"repository": _MELLANOX, "image": "doca-driver", "version": doca_driver},
        "rdmaSharedDevicePlugin": {"repository": _MELLANOX, "image": "k8s-rdma-shared-dev-plugin", "version": tag},
        "sriovDevicePlugin": {"repository": _MELLANOX, "image": "sriov-network-device-plugin", "version": tag},
        "multus": {"repository": _MELLANOX, "image": "multus-cni", "version": tag},
        "cniPlugins": {"repository": _MELLANOX, "image": "plugins", "version": tag},
        "ipoib": {"repository": _MELLANOX, "image": "ipoib-cni", "version": tag},
        "nvIpam": {"repository": _MELLANOX, "image": "nvidia-k8s-ipam", "version": tag},
    }


COMPONENT_IMAGES = {
    "26.1.2": _component_images("network-operator-v26.1.2", "doca3.3.0-26.01-1.0.0.0-0"),
    "26.4.0": _component_images("network-operator-v26.4.0", "doca3.4.0-26.04-0.8.6.0-0"),
    "26.4.1": _component_images("network-operator-v26.4.1", "doca3.4.1-26.04-1.1.0.0-1"),
}


@dataclass(frozen=True)
class NicPolicyRequest:
    """A validated request: what the NicClusterPolicy and the secondary network need."""

    mode: str
    network_operator_version: str
    ofed_driver: bool
    ipam: str
    ip_range: str
    ip_gateway: str | None
    vendors: tuple
    device_ids: tuple
    interfaces: tuple
    link_type: str
    rdma_hca_max: int | None
    resource_name: str | None
    network_name: str
    network_namespace: str
    master: str | None
    nv_ipam_pool: str | None
    nv_ipam_block_size: int | None
    operator_namespace: str
    warnings: tuple = field(default=())
    # (registry, mirror) pairs: the component images are pulled from these mirrors, pins unchanged.
    mirrors: tuple = field(default=())
    # Names of image pull Secrets (in the operator's namespace) every component pulls with.
    pull_secrets: tuple = field(default=())
    node_affinity: dict = field(default_factory=lambda: copy.deepcopy(DEFAULT_NODE_AFFINITY))
    # The policy's pods' tolerations besides nvidia.com/gpu's (the GPU pools' own taints); none: the operator's own.
    tolerations: tuple = ()
    upgrade_policy: dict = field(default_factory=lambda: copy.deepcopy(UPGRADE_POLICY_DEFAULTS))
    # RDMA NICs one pod claims: the count of rdma/<resource> in sriov, 1 in the shared modes. None only when the
    # request removes the objects (state absent) and nothing says how many.
    nics_per_pod: int | None = 1
    # The node type's short name (nd-h100-v5) when one was given.
    node_type: str | None = None

    @property
    def images(self):
        images = image_mirrors.policy_images(COMPONENT_IMAGES[self.network_operator_version], dict(self.mirrors))
        if self.pull_secrets:
            images = {part: dict(spec, imagePullSecrets=list(self.pull_secrets)) for part, spec in images.items()}
        return images

    @property
    def resource(self):
        """The extended resource pods request (``rdma/shared_ib``, ``rdma/ib``)."""
        return "%s/%s" % (RESOURCE_PREFIX, self.resource_name) if self.resource_name else None

    @property
    def network_kind(self):
        if self.mode == SRIOV:
            return "HostDeviceNetwork"
        if self.mode == RDMA_SHARED and self.link_type == ETHER:
            return "MacvlanNetwork"
        return "IPoIBNetwork"


def known_versions():
    return sorted(COMPONENT_IMAGES, key=lambda v: version_parse.parse_version("network_operator", v).parts)


def _status(policy):
    status = (policy or {}).get("status")
    return status if isinstance(status, dict) else {}


def component_states(policy):
    """{component: state} from status.appliedStates (``ignore`` entries included)."""
    out = {}
    for item in _status(policy).get("appliedStates") or []:
        if isinstance(item, dict) and item.get("name"):
            out[item["name"]] = item.get("state") or "unknown"
    return out


def policy_ready(policy):
    return _status(policy).get("state") == "ready"


def describe_states(policy):
    """One line for failure messages: the policy state, then each deployed component's state.

    Components the operator reports as ``ignore`` (not part of this policy) are left out.
    """
    status = _status(policy)
    head = "state %s" % (status.get("state") or "unknown (no status yet)")
    if status.get("reason"):
        head += " (%s)" % status["reason"]
    parts = []
    items = [i for i in status.get("appliedStates") or [] if isinstance(i, dict) and i.get("name")]
    for item in sorted(items, key=lambda i: i["name"]):
        state = item.get("state") or "unknown"
        if state == "ignore":
            continue
        text = "%s=%s" % (item["name"], state)
        if item.get("message"):
            text += " (%s)" % item["message"]
        parts.append(text)
    return "%s: %s" % (head, ", ".join(parts)) if parts else head


def _pod_ready(pod):
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _pod_problem(pod):
    """Why a pod is not Ready, from its containers' waiting or terminated state (empty when none says)."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        state = container.get("state") or {}
        detail = state.get("waiting") or state.get("terminated")
        if detail and detail.get("reason"):
            return detail["reason"] + (": %s" % detail["message"] if detail.get("message") else "")
    return (pod.get("status") or {}).get("phase") or "not Ready"


def describe_components(policy_uid, daemonsets, pods):
    """Where the policy's component DaemonSets stand, node by node, for a time-out message: each DaemonSet the
    operator made for the policy (its controller owner) that is not ready, with the nodes whose pods are not Ready
    and why, or that no node matches it. Empty when every one is ready (or none is found)."""
    parts = []
    for daemonset in sorted(daemonsets, key=lambda d: d["metadata"]["name"]):
        meta = daemonset["metadata"]
        if not any(ref.get("uid") == policy_uid and ref.get("controller") for ref in meta.get("ownerReferences") or []):
            continue
        status = daemonset.get("status") or {}
        desired = status.get("desiredNumberScheduled", 0)
        if desired == 0:
            parts.append("DaemonSet %s/%s: no node matches its node affinity and selector"
                         % (meta["namespace"], meta["name"]))
            continue
        owned = [p for p in pods if any(ref.get("uid") == meta.get("uid") for ref in
                                        p["metadata"].get("ownerReferences") or [])]
        waiting = sorted("node %s (%s)" % ((p.get("spec") or {}).get("nodeName") or "unscheduled", _pod_problem(p))
                         for p in owned if not _pod_ready(p))
        if waiting:
            parts.append("DaemonSet %s/%s: pods not Ready on %s" % (meta["namespace"], meta["name"], ", ".join(waiting)))
        elif status.get("numberAvailable", 0) < desired:
            available = status.get("numberAvailable", 0)
            parts.append("DaemonSet %s/%s: %s of %s pods available"
                         % (meta["namespace"], meta["name"], available, desired))
    return "; ".join(parts)
