# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""NVIDIA Network Operator NicClusterPolicy and secondary network: validation, rendering, readiness.

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
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
from dataclasses import dataclass, field

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import driver_upgrade
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import images as image_mirrors
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import node_types
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

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
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}

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
# - Whereabouts: deprecated since Network Operator 25.4 (release notes, upgrade notes) and not in
#   either release's image list; the v26.4.1 NicClusterPolicy CRD has no secondaryNetwork.ipamPlugin
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
    "26.4.0": _component_images("network-operator-v26.4.0", "doca3.4.0-26.04-0.8.6.0-0"),
    "26.4.1": _component_images("network-operator-v26.4.1", "doca3.4.1-26.04-1.1.0.0-1"),
}

# The example pod's image: the DOCA full runtime image (RDMA user space, Ubuntu based), public on
# NGC. The tag 3.0.0-full-rt-host is the one Mellanox/spectrum-x-operator builds FROM in its
# Dockerfile. It is a shell for `kubectl exec`: the pod only sleeps.
EXAMPLE_POD_IMAGE = "nvcr.io/nvidia/doca/doca:3.0.0-full-rt-host"

HEX4 = re.compile(r"^[0-9a-fA-F]{4}$")
# Linux interface names: at most 15 bytes (IFNAMSIZ 16), no '/', ':' or white space.
IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")
# The resource name part must satisfy both Kubernetes (a qualified-name part: at most 63
# characters, alphanumeric at both ends) and the device plugins, which accept only
# [a-zA-Z0-9_]+ (validResourceName in k8s-rdma-shared-dev-plugin and sriov-network-device-plugin).
RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_]{0,61}[A-Za-z0-9])?$")
VERSION = re.compile(r"^v?(\d+\.\d+\.\d+)$")
SELECTOR_KEYS = ("vendors", "device_ids", "interfaces", "link_type")


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


def _unset(value):
    return value is None or (isinstance(value, str) and not value.strip())


def known_versions():
    return sorted(COMPONENT_IMAGES, key=lambda v: tuple(int(p) for p in v.split(".")))


def _version(value):
    field_name = "network_operator_version"
    if _unset(value):
        raise ParamError(field_name, "is required", "give the Network Operator release in use, one of %s"
                         % ", ".join(known_versions()))
    match = VERSION.match(str(value).strip())
    if not match or match.group(1) not in COMPONENT_IMAGES:
        raise ParamError(field_name, "%r is not a Network Operator release with pinned component images "
                         "(known: %s)" % (value, ", ".join(known_versions())),
                         "use one of %s, the same release as the installed chart" % ", ".join(known_versions()))
    return match.group(1)


def _choice(field_name, value, choices, default=None):
    if _unset(value) and default is not None:
        return default
    if value not in choices:
        raise ParamError(field_name, "%r is not one of %s" % (value, ", ".join(choices)),
                         "use one of %s" % ", ".join(choices))
    return value


def _hex_ids(field_name, value, default, what):
    if value is None:
        return tuple(default)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ParamError(field_name, "must be a list of 4-digit hexadecimal PCI %s ids" % what,
                         "give a list such as [\"%s\"]" % ("15b3" if what == "vendor" else "101b"))
    out = []
    for item in value:
        if not isinstance(item, str):
            raise ParamError(field_name, "%r is not a string; a PCI %s id is 4 hexadecimal digits" % (item, what),
                             "quote it, e.g. \"%s\" (unquoted, YAML reads digits as a number)" % item)
        if not HEX4.match(item.strip()):
            raise ParamError(field_name, "%r is not a PCI %s id (4 hexadecimal digits)" % (item, what),
                             "use the id from `lspci -nn`, e.g. \"%s\"" % ("15b3" if what == "vendor" else "101b"))
        text = item.strip().lower()
        if text not in out:
            out.append(text)
    return tuple(out)


def _interfaces(field_name, value):
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ParamError(field_name, "must be a list of network interface names", "give a list such as [\"ibs1f0\"]")
    out = []
    for item in value:
        if not isinstance(item, str) or not IFNAME.match(item):
            raise ParamError(field_name, "%r is not a network interface name (letters, digits, '_', '.', '-', "
                             "at most 15 characters)" % (item,), "use the name `ip link` shows, e.g. ibs1f0")
        if item not in out:
            out.append(item)
    return tuple(out)


def _selectors(value):
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ParamError("selectors", "must be a dictionary with vendors, device_ids, interfaces and link_type",
                         "give e.g. {vendors: [\"15b3\"], link_type: infiniband}")
    unknown = sorted(str(k) for k in value if k not in SELECTOR_KEYS)
    if unknown:
        raise ParamError("selectors", "unknown key(s) %s" % ", ".join(unknown),
                         "use only %s" % ", ".join(SELECTOR_KEYS))
    vendors = _hex_ids("selectors.vendors", value.get("vendors"), DEFAULT_VENDORS, "vendor")
    device_ids = _hex_ids("selectors.device_ids", value.get("device_ids"), (), "device")
    interfaces = _interfaces("selectors.interfaces", value.get("interfaces"))
    link_type = _choice("selectors.link_type", value.get("link_type"), LINK_TYPES, DEFAULT_LINK_TYPE)
    return vendors, device_ids, interfaces, link_type


def _rdma_hca_max(value, mode):
    field_name = "rdma_hca_max"
    if mode not in SHARED_MODES:
        # A value equal to the default carries no intent (roles pass their default in every mode).
        if value is not None and value != RDMA_HCA_MAX_DEFAULT:
            raise ParamError(field_name, "is set to %r but mode %s has no RDMA shared device plugin" % (value, mode),
                             "drop rdma_hca_max, or use mode rdma_shared or ipoib")
        return None
    if value is None:
        return RDMA_HCA_MAX_DEFAULT
    low, high = RDMA_HCA_MAX_RANGE
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(field_name, "%r is not a whole number" % (value,),
                         "give the number of pods per node that may share the NICs, %d to %d (default %d)"
                         % (low, high, RDMA_HCA_MAX_DEFAULT))
    if not low <= value <= high:
        raise ParamError(field_name, "%d is out of range %d..%d (0 would offer no resource at all; the kubelet "
                         "runs at most 110 pods per node by default)" % (value, low, high),
                         "give %d to %d; %d is the usual value" % (low, high, RDMA_HCA_MAX_DEFAULT))
    return value


def _resource_name(value, mode):
    field_name = "resource_name"
    if _unset(value):
        return DEFAULT_RESOURCE_NAMES[mode]
    if not isinstance(value, str) or not RESOURCE_NAME.match(value):
        raise ParamError(field_name, "%r is not a valid resource name: pods request %s/<name>, which Kubernetes and "
                         "the device plugin accept only with letters, digits and '_' (alphanumeric at both ends, at "
                         "most 63 characters)" % (value, RESOURCE_PREFIX),
                         "use a name such as %s" % DEFAULT_RESOURCE_NAMES[mode])
    return value


def _nics_per_pod(params, mode, resource_name):
    """``(count, node type name)``: the RDMA NICs one pod claims, from ``nics_per_pod`` or ``node_type``.

    node_types.nics_per_pod decides (sriov: every NIC of the node type; shared modes: 1). On top of it: a
    shared mode claims exactly one slot (one slot already reaches every selected NIC, more only use up
    rdma_hca_max), and a count above the node type's NICs would leave every pod Pending. Removing the objects
    (state absent) needs no count.
    """
    given = params.get("nics_per_pod")
    name, facts = node_types.lookup("node_type", params.get("node_type"))
    if mode == SRIOV and _unset(given) and facts is None and params.get("state") == "absent":
        return None, None
    count = node_types.nics_per_pod("nics_per_pod", mode, name, given, type_field="node_type")
    if mode in SHARED_MODES and count != 1:
        raise ParamError("nics_per_pod", "is %d but mode %s shares every selected NIC through one %s/%s slot per pod "
                         "(more slots give a pod no more NICs and use up rdma_hca_max)"
                         % (count, mode, RESOURCE_PREFIX, resource_name),
                         "leave nics_per_pod empty (or 1), or use mode sriov for one VF per NIC")
    if facts is not None and count > facts["nics"]:
        raise ParamError("nics_per_pod", "is %d but a %s node has %d RDMA NICs, so no node could run the pod"
                         % (count, name, facts["nics"]),
                         "give at most %d, or leave it empty for all %d" % (facts["nics"], facts["nics"]))
    return count, name


def _network(value):
    if _unset(value):
        raise ParamError("ip_range", "is required", "give the secondary network's subnet in CIDR form, "
                         "e.g. 192.168.100.0/24")
    text = str(value).strip()
    if "/" not in text:
        raise ParamError("ip_range", "%r has no prefix length" % text, "give a CIDR such as 192.168.100.0/24")
    try:
        network = ipaddress.ip_network(text)
    except ValueError:
        try:
            loose = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ParamError("ip_range", "%r is not a CIDR subnet" % text,
                             "give a CIDR such as 192.168.100.0/24") from None
        raise ParamError("ip_range", "%r has host bits set" % text, "use the network address: %s" % loose) from None
    if network.num_addresses < 4:
        raise ParamError("ip_range", "%s is too small for pods (fewer than 2 usable addresses)" % network,
                         "use a larger subnet such as a /24")
    return network


def _gateway(value, network):
    if _unset(value):
        return None
    text = str(value).strip()
    try:
        gateway = ipaddress.ip_address(text)
    except ValueError:
        raise ParamError("ip_gateway", "%r is not an IP address" % text, "give an address inside ip_range, "
                         "e.g. %s" % next(network.hosts())) from None
    if gateway.version != network.version or gateway not in network:
        raise ParamError("ip_gateway", "%s is outside ip_range %s" % (gateway, network),
                         "give an address inside %s, e.g. %s, or leave it empty" % (network, next(network.hosts())))
    if gateway == network.network_address or (network.version == 4 and gateway == network.broadcast_address):
        raise ParamError("ip_gateway", "%s is the network or broadcast address of %s" % (gateway, network),
                         "give a host address such as %s" % next(network.hosts()))
    return str(gateway)


def _block_size(value, ipam, network):
    field_name = "nv_ipam_block_size"
    possible = network.num_addresses - 2  # what nv-ipam counts: subnet minus network and broadcast
    if ipam != NV_IPAM:
        if value is not None:
            raise ParamError(field_name, "is set but ipam is %s" % ipam, "drop it, or use ipam nv-ipam")
        return None
    if value is None:
        return min(NV_IPAM_BLOCK_DEFAULT, possible)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(field_name, "%r is not a whole number" % (value,),
                         "give the addresses per node, e.g. %d" % NV_IPAM_BLOCK_DEFAULT)
    if not NV_IPAM_BLOCK_MIN <= value <= possible:
        raise ParamError(field_name, "%d is out of range %d..%d for ip_range %s"
                         % (value, NV_IPAM_BLOCK_MIN, possible, network),
                         "give %d to %d addresses per node, or a larger ip_range" % (NV_IPAM_BLOCK_MIN, possible))
    return value


def _master(params, mode, link_type, interfaces):
    given = params.get("ipoib_master")
    master = None
    if not _unset(given):
        if not isinstance(given, str) or not IFNAME.match(given):
            raise ParamError("ipoib_master", "%r is not a network interface name" % (given,),
                             "use the IPoIB interface name `ip link` shows, e.g. ibs1f0")
        master = given
    if mode == SRIOV:
        if master:
            raise ParamError("ipoib_master", "is set but mode sriov attaches VFs through a HostDeviceNetwork, "
                             "which has no master", "drop ipoib_master, or use mode ipoib")
        return None
    if link_type == ETHER:
        if mode == IPOIB:
            raise ParamError("selectors.link_type", "is ether but IPoIB runs on InfiniBand only",
                             "set selectors.link_type to infiniband, or use mode rdma_shared for RoCE")
        if master:
            raise ParamError("ipoib_master", "is set but selectors.link_type is ether (no IPoIB on Ethernet)",
                             "drop ipoib_master and put the Ethernet interface first in selectors.interfaces")
        if not interfaces:
            raise ParamError("selectors.interfaces", "is empty but rdma_shared on Ethernet attaches pods through a "
                             "MacvlanNetwork on the first listed interface",
                             "list the RDMA Ethernet interface(s), e.g. [\"ens1f0np0\"]")
        return interfaces[0]
    if mode == IPOIB and not master:
        raise ParamError("ipoib_master", "is required for mode ipoib (the IPoIBNetwork's parent interface)",
                         "give the IPoIB interface name, e.g. ibs1f0")
    if not master and not interfaces:
        raise ParamError("ipoib_master", "is required: rdma_shared on InfiniBand attaches pods through an "
                         "IPoIBNetwork and selectors.interfaces is empty",
                         "give ipoib_master (e.g. ibs1f0) or list the interface(s) in selectors.interfaces")
    return master or interfaces[0]


def build_request(params):
    """Validate the module options and return a NicPolicyRequest.

    Unknown keys in ``params`` are ignored (the module passes its connection options too).
    Raises ParamError naming the option (``selectors.<key>`` for a selector) and the fix.
    """
    mode = _choice("mode", params.get("mode"), MODES)
    version = _version(params.get("network_operator_version"))
    ofed = params.get("ofed_driver")
    if ofed is None:
        ofed = True
    if not isinstance(ofed, bool):
        raise ParamError("ofed_driver", "%r is not true or false" % (ofed,),
                         "set it to true (DOCA driver container) or false (the hosts' MOFED)")
    vendors, device_ids, interfaces, link_type = _selectors(params.get("selectors"))
    if not (vendors or device_ids or interfaces):
        raise ParamError("selectors", "select no device at all (vendors, device_ids and interfaces are all empty)",
                         "give at least one, e.g. vendors: [\"15b3\"]")
    rdma_hca_max = _rdma_hca_max(params.get("rdma_hca_max"), mode)
    resource_name = _resource_name(params.get("resource_name"), mode)
    nics, node_type = _nics_per_pod(params, mode, resource_name)
    master = _master(params, mode, link_type, interfaces)
    ipam = _choice("ipam", params.get("ipam"), IPAMS, DEFAULT_IPAM)
    network = _network(params.get("ip_range"))
    gateway = _gateway(params.get("ip_gateway"), network)
    network_name = validate.dns_label("network_name", params.get("network_name") or DEFAULT_NETWORK_NAME)
    network_namespace = validate.dns_label("network_namespace",
                                           params.get("network_namespace") or DEFAULT_NETWORK_NAMESPACE)
    operator_namespace = validate.dns_label("operator_namespace",
                                            params.get("operator_namespace") or DEFAULT_OPERATOR_NAMESPACE)
    pool = params.get("nv_ipam_pool")
    if ipam == NV_IPAM:
        pool = validate.dns_label("nv_ipam_pool", pool or network_name)
    elif not _unset(pool):
        raise ParamError("nv_ipam_pool", "is set but ipam is whereabouts", "drop nv_ipam_pool, or use ipam nv-ipam")
    else:
        pool = None
    block = _block_size(params.get("nv_ipam_block_size"), ipam, network)
    mirrors = image_mirrors.check_mirrors(params.get("image_mirrors"), "image_mirrors")
    secrets = validate.secret_names("image_pull_secrets", params.get("image_pull_secrets"))
    affinity = _node_affinity(params.get("node_affinity"))
    policy = params.get("driver_upgrade_policy")
    if policy and not ofed:
        raise ParamError("driver_upgrade_policy", "is set but ofed_driver is false (the hosts' MOFED is not upgraded "
                         "by the operator)", "drop driver_upgrade_policy, or set ofed_driver: true")
    policy = driver_upgrade.check_policy(policy, "driver_upgrade_policy", UPGRADE_POLICY_DEFAULTS,
                                         UPGRADE_POLICY_KINDS, "the NicClusterPolicy's ofedDriver.upgradePolicy")
    warnings = []
    if ipam == WHEREABOUTS and "ipamPlugin" not in COMPONENT_IMAGES[version]:
        warnings.append("Network Operator %s no longer deploys whereabouts from the NicClusterPolicy (deprecated "
                        "since 25.4); install whereabouts separately or use ipam nv-ipam" % version)
    return NicPolicyRequest(
        mode=mode, network_operator_version=version, ofed_driver=ofed, ipam=ipam, ip_range=str(network),
        ip_gateway=gateway, vendors=vendors, device_ids=device_ids, interfaces=interfaces, link_type=link_type,
        rdma_hca_max=rdma_hca_max, resource_name=resource_name, network_name=network_name,
        network_namespace=network_namespace, master=master, nv_ipam_pool=pool, nv_ipam_block_size=block,
        operator_namespace=operator_namespace, warnings=tuple(warnings), mirrors=tuple(sorted(mirrors.items())), pull_secrets=secrets,
        node_affinity=affinity, upgrade_policy=policy, nics_per_pod=nics, node_type=node_type)


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


def _node_affinity(value):
    """The policy's nodeAffinity: the Mellanox-NIC nodes by default; ``{}`` for every node; or a NodeAffinity
    (required and/or preferred terms) of the user's."""
    if value is None:
        return copy.deepcopy(DEFAULT_NODE_AFFINITY)
    if not isinstance(value, dict) or set(value) - {"requiredDuringSchedulingIgnoredDuringExecution",
                                                    "preferredDuringSchedulingIgnoredDuringExecution"}:
        raise ParamError("node_affinity", "%r is not a NodeAffinity" % (value,),
                         "give {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [...]}}, or {} "
                         "for every node")
    required = value.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None and (not isinstance(required, dict) or not isinstance(required.get("nodeSelectorTerms"),
                                                                                  list) or not required["nodeSelectorTerms"]):
        raise ParamError("node_affinity.requiredDuringSchedulingIgnoredDuringExecution",
                         "needs a non-empty nodeSelectorTerms list", "give at least one term with matchExpressions")
    return copy.deepcopy(value)


def render_policy(request):
    spec = {}
    if request.node_affinity:
        spec["nodeAffinity"] = copy.deepcopy(request.node_affinity)
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
