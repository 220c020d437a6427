# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The nic_cluster_policy module's options validated into a NicPolicyRequest (``build_request``).

Private to the collection: not a public API. Pure: standard library only, no I/O.
The modes, defaults and image table are in ``domain.network.nic_cluster_policy``; the objects rendered from the request in
``domain.network.nic_cluster_policy_render``. Every bad option is a ParamError naming it (``selectors.<key>`` for a selector)
and the fix.
"""

from __future__ import annotations

import copy
import ipaddress
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images as image_mirrors
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import node_types
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate, version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network.nic_cluster_policy import (
    COMPONENT_IMAGES, DEFAULT_IPAM, DEFAULT_LINK_TYPE, DEFAULT_NETWORK_NAME, DEFAULT_NETWORK_NAMESPACE,
    DEFAULT_NODE_AFFINITY, DEFAULT_OPERATOR_NAMESPACE, DEFAULT_RESOURCE_NAMES, DEFAULT_VENDORS, ETHER, IPAMS, IPOIB,
    LINK_TYPES, MODES, NV_IPAM, NV_IPAM_BLOCK_DEFAULT, NV_IPAM_BLOCK_MIN, RDMA_HCA_MAX_DEFAULT, RDMA_HCA_MAX_RANGE,
    RESOURCE_PREFIX, SHARED_MODES, SRIOV, UPGRADE_POLICY_DEFAULTS, UPGRADE_POLICY_KINDS, WHEREABOUTS,
    NicPolicyRequest, known_versions)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

HEX4 = re.compile(r"^[0-9a-fA-F]{4}$")
# Linux interface names: at most 15 bytes (IFNAMSIZ 16), no '/', ':' or white space.
IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")
# The resource name part must satisfy both Kubernetes (a qualified-name part: at most 63
# characters, alphanumeric at both ends) and the device plugins, which accept only
# [a-zA-Z0-9_]+ (validResourceName in k8s-rdma-shared-dev-plugin and sriov-network-device-plugin).
RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_]{0,61}[A-Za-z0-9])?$")
SELECTOR_KEYS = ("vendors", "device_ids", "interfaces", "link_type")


def _unset(value):
    return value is None or (isinstance(value, str) and not value.strip())


def _version(value):
    field_name = "network_operator_version"
    if _unset(value):
        raise ParamError(field_name, "is required", "give the Network Operator release in use, one of %s"
                         % ", ".join(known_versions()))
    try:
        text = version_parse.parse_version("network_operator", value).text
    except ParamError:
        text = ""
    release = text[1:] if text.startswith("v") else text
    if release not in COMPONENT_IMAGES:
        raise ParamError(field_name, "%r is not a Network Operator release with pinned component images "
                         "(known: %s)" % (value, ", ".join(known_versions())),
                         "use one of %s, the same release as the installed chart" % ", ".join(known_versions()))
    return release


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


def _ofed(value):
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ParamError("ofed_driver", "%r is not true or false" % (value,),
                         "set it to true (DOCA driver container) or false (the hosts' MOFED)")
    return value


def _some_device(vendors, device_ids, interfaces):
    if not (vendors or device_ids or interfaces):
        raise ParamError("selectors", "select no device at all (vendors, device_ids and interfaces are all empty)",
                         "give at least one, e.g. vendors: [\"15b3\"]")


def _pool(value, ipam, network_name):
    if ipam == NV_IPAM:
        return validate.dns_label("nv_ipam_pool", value or network_name)
    if not _unset(value):
        raise ParamError("nv_ipam_pool", "is set but ipam is whereabouts", "drop nv_ipam_pool, or use ipam nv-ipam")
    return None


def _upgrade_policy(policy, ofed):
    if policy and not ofed:
        raise ParamError("driver_upgrade_policy", "is set but ofed_driver is false (the hosts' MOFED is not upgraded "
                         "by the operator)", "drop driver_upgrade_policy, or set ofed_driver: true")
    return gpu_driver_upgrade.check_policy(policy, "driver_upgrade_policy", UPGRADE_POLICY_DEFAULTS,
                                           UPGRADE_POLICY_KINDS, "the NicClusterPolicy's ofedDriver.upgradePolicy")


def build_request(params):
    """Validate the module options and return a NicPolicyRequest.

    Unknown keys in ``params`` are ignored (the module passes its connection options too).
    Every option is checked (a check that needs an option found wrong is left out) and every mistake is reported:
    a ParamError naming the option (``selectors.<key>`` for a selector) and the fix, or one naming them all.
    """
    found = validate.Mistakes("NicClusterPolicy options")
    mode = found.check(lambda: _choice("mode", params.get("mode"), MODES))
    version = found.check(lambda: _version(params.get("network_operator_version")))
    ofed = found.check(lambda: _ofed(params.get("ofed_driver")), fallback=True)
    selectors = found.check(lambda: _selectors(params.get("selectors")))
    vendors, device_ids, interfaces, link_type = selectors or ((), (), (), None)
    devices = bool(selectors) and found.check(lambda: _some_device(vendors, device_ids, interfaces) or True, False)
    rdma_hca_max = resource_name = nics = node_type = master = None
    if mode is not None:
        rdma_hca_max = found.check(lambda: _rdma_hca_max(params.get("rdma_hca_max"), mode))
        resource_name = found.check(lambda: _resource_name(params.get("resource_name"), mode))
        if resource_name is not None:
            nics, node_type = found.check(lambda: _nics_per_pod(params, mode, resource_name), fallback=(None, None))
        if devices:
            master = found.check(lambda: _master(params, mode, link_type, interfaces))
    ipam = found.check(lambda: _choice("ipam", params.get("ipam"), IPAMS, DEFAULT_IPAM))
    network = found.check(lambda: _network(params.get("ip_range")))
    gateway = found.check(lambda: _gateway(params.get("ip_gateway"), network)) if network is not None else None
    network_name = found.check(lambda: validate.dns_label("network_name",
                                                          params.get("network_name") or DEFAULT_NETWORK_NAME))
    network_namespace = found.check(lambda: validate.dns_label(
        "network_namespace", params.get("network_namespace") or DEFAULT_NETWORK_NAMESPACE))
    operator_namespace = found.check(lambda: validate.dns_label(
        "operator_namespace", params.get("operator_namespace") or DEFAULT_OPERATOR_NAMESPACE))
    pool = block = None
    if ipam is not None and network_name is not None:
        pool = found.check(lambda: _pool(params.get("nv_ipam_pool"), ipam, network_name))
    if ipam is not None and network is not None:
        block = found.check(lambda: _block_size(params.get("nv_ipam_block_size"), ipam, network))
    mirrors = found.check(lambda: image_mirrors.check_mirrors(params.get("image_mirrors"), "image_mirrors"))
    secrets = found.check(lambda: validate.secret_names("image_pull_secrets", params.get("image_pull_secrets")))
    affinity = found.check(lambda: _node_affinity(params.get("node_affinity")))
    tolerations = found.check(lambda: tuple(taints.tolerations("tolerations", params.get("tolerations"))))
    policy = found.check(lambda: _upgrade_policy(params.get("driver_upgrade_policy"), ofed))
    found.raise_any()
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
        node_affinity=affinity, tolerations=tolerations, upgrade_policy=policy, nics_per_pod=nics, node_type=node_type)
