"""Tests of the NicClusterPolicy domain's refusals of bad input, each naming the field and the fix."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, nic_cluster_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.nic_policy_helpers import params

BAD = [
    # (changes, field, words)
    ({"mode": "hostdev"}, "mode", "'hostdev' is not one of sriov, rdma_shared, ipoib"),
    ({"mode": None}, "mode", "is not one of"),
    ({"network_operator_version": "25.10.0"}, "network_operator_version", "known: 26.1.2, 26.4.0, 26.4.1"),
    ({"network_operator_version": "26.4"}, "network_operator_version", "known: 26.1.2, 26.4.0, 26.4.1"),
    ({"network_operator_version": "latest"}, "network_operator_version", "not a Network Operator release"),
    ({"network_operator_version": ""}, "network_operator_version", "is required"),
    ({"ofed_driver": "yes"}, "ofed_driver", "'yes' is not true or false"),
    ({"ofed_driver": 1}, "ofed_driver", "not true or false"),
    ({"selectors": {"vendors": [], "device_ids": [], "interfaces": []}}, "selectors", "select no device at all"),
    ({"selectors": {"vendors": []}}, "selectors", "select no device at all"),
    ({"selectors": ["15b3"]}, "selectors", "must be a dictionary"),
    ({"selectors": {"vendor": ["15b3"]}}, "selectors", "unknown key(s) vendor"),
    ({"selectors": {"vendors": ["15b"]}}, "selectors.vendors", "'15b' is not a PCI vendor id"),
    ({"selectors": {"vendors": ["mlnx"]}}, "selectors.vendors", "not a PCI vendor id"),
    ({"selectors": {"vendors": "15b3"}}, "selectors.vendors", "must be a list"),
    ({"selectors": {"device_ids": [1017]}}, "selectors.device_ids", "1017 is not a string"),
    ({"selectors": {"device_ids": ["10171"]}}, "selectors.device_ids", "not a PCI device id"),
    ({"selectors": {"interfaces": ["ib s1"]}}, "selectors.interfaces", "not a network interface name"),
    ({"selectors": {"interfaces": ["a-very-long-interface0"]}}, "selectors.interfaces", "at most 15 characters"),
    ({"selectors": {"interfaces": ["ibs1f0"], "link_type": "ethernet"}}, "selectors.link_type",
     "'ethernet' is not one of infiniband, ether"),
    ({"rdma_hca_max": 0}, "rdma_hca_max", "0 is out of range 1..1000"),
    ({"rdma_hca_max": 1001}, "rdma_hca_max", "1001 is out of range 1..1000"),
    ({"rdma_hca_max": -5}, "rdma_hca_max", "out of range"),
    ({"rdma_hca_max": "63"}, "rdma_hca_max", "'63' is not a whole number"),
    ({"rdma_hca_max": 6.3}, "rdma_hca_max", "not a whole number"),
    ({"rdma_hca_max": True}, "rdma_hca_max", "not a whole number"),
    ({"mode": "sriov", "rdma_hca_max": 10}, "rdma_hca_max", "mode sriov has no RDMA shared device plugin"),
    ({"mode": "sriov", "nics_per_pod": 8, "rdma_hca_max": 10}, "rdma_hca_max", "use mode rdma_shared or ipoib"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "rdma_hca_max": 0}, "rdma_hca_max", "0 is out of range 1..1000"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "selectors": {"vendors": []}}, "selectors",
     "select no device at all"),
    ({"resource_name": "shared-ib"}, "resource_name", "'shared-ib' is not a valid resource name"),
    ({"resource_name": "rdma/shared_ib"}, "resource_name", "not a valid resource name"),
    ({"resource_name": "_ib"}, "resource_name", "not a valid resource name"),
    ({"resource_name": "x" * 64}, "resource_name", "at most 63 characters"),
    ({"resource_name": "ib.shared"}, "resource_name", "not a valid resource name"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "resource_name": "shared-ib"}, "resource_name",
     "'shared-ib' is not a valid resource name"),
    ({"mode": "sriov"}, "nics_per_pod", "is empty and node_type is not set, so the NICs per pod are unknown for "
     "mode sriov"),
    ({"mode": "sriov", "node_type": ""}, "nics_per_pod", "set node_type (one of nd-a100-v4"),
    ({"mode": "sriov", "nics_per_pod": ""}, "nics_per_pod", "or give nics_per_pod"),
    ({"mode": "sriov", "nics_per_pod": 0}, "nics_per_pod", "is 0; it must be from 1 to 32"),
    ({"mode": "sriov", "nics_per_pod": 33}, "nics_per_pod", "is 33; it must be from 1 to 32"),
    ({"mode": "sriov", "nics_per_pod": "eight"}, "nics_per_pod", "'eight' is not a whole number"),
    ({"mode": "sriov", "nics_per_pod": True}, "nics_per_pod", "True is not a whole number"),
    ({"mode": "sriov", "nics_per_pod": 2.5}, "nics_per_pod", "not a whole number"),
    ({"mode": "sriov", "node_type": "nd-b200-v6"}, "node_type", "'nd-b200-v6' is not a known RDMA node type"),
    ({"mode": "sriov", "node_type": 8}, "node_type", "8 is not a node type name"),
    ({"mode": "sriov", "node_type": "nd-a100-v4", "nics_per_pod": 9}, "nics_per_pod",
     "is 9 but a nd-a100-v4 node has 8 RDMA NICs"),
    ({"nics_per_pod": 2}, "nics_per_pod", "is 2 but mode rdma_shared shares every selected NIC through one "
     "rdma/shared_ib slot"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "node_type": "nd-h100-v5", "nics_per_pod": 8}, "nics_per_pod",
     "mode ipoib shares every selected NIC"),
    ({"rdma_hca_max": 63, "node_type": "Standard_ND96isr_H100_v6"}, "node_type", "not a known RDMA node type"),
    ({"mode": "ipoib"}, "ipoib_master", "is required for mode ipoib"),
    ({"mode": "ipoib", "ipoib_master": "ib/0"}, "ipoib_master", "not a network interface name"),
    ({"mode": "ipoib", "ipoib_master": "ibs1f0", "selectors": {"link_type": "ether"}}, "selectors.link_type",
     "IPoIB runs on InfiniBand only"),
    ({"selectors": {"vendors": ["15b3"]}}, "ipoib_master", "rdma_shared on InfiniBand attaches pods through an"),
    ({"selectors": {"vendors": ["15b3"], "link_type": "ether"}}, "selectors.interfaces",
     "attaches pods through a MacvlanNetwork"),
    ({"selectors": {"interfaces": ["ens1f0"], "link_type": "ether"}, "ipoib_master": "ib0"}, "ipoib_master",
     "selectors.link_type is ether"),
    ({"mode": "sriov", "nics_per_pod": 8, "ipoib_master": "ib0"}, "ipoib_master", "HostDeviceNetwork"),
    ({"ip_range": "192.168.100.0/33"}, "ip_range", "not a CIDR subnet"),
    ({"ip_range": "192.168.100.0"}, "ip_range", "has no prefix length"),
    ({"ip_range": "192.168.300.0/24"}, "ip_range", "not a CIDR subnet"),
    ({"ip_range": "192.168.100.7/24"}, "ip_range", "has host bits set"),
    ({"ip_range": "192.168.100.0/31"}, "ip_range", "too small"),
    ({"ip_range": ""}, "ip_range", "is required"),
    ({"ip_range": None}, "ip_range", "is required"),
    ({"ip_gateway": "10.0.0.1"}, "ip_gateway", "10.0.0.1 is outside ip_range 192.168.100.0/24"),
    ({"ip_gateway": "fd00::1"}, "ip_gateway", "is outside ip_range"),
    ({"ip_gateway": "192.168.100.0"}, "ip_gateway", "network or broadcast address"),
    ({"ip_gateway": "192.168.100.255"}, "ip_gateway", "network or broadcast address"),
    ({"ip_gateway": "gateway"}, "ip_gateway", "'gateway' is not an IP address"),
    ({"ipam": "host-local"}, "ipam", "'host-local' is not one of nv-ipam, whereabouts"),
    ({"network_name": "RDMA_net"}, "network_name", "'RDMA_net' is not a valid name"),
    ({"network_name": "n" * 64}, "network_name", "is not a valid name"),
    ({"network_namespace": "Team A"}, "network_namespace", "is not a valid name"),
    ({"operator_namespace": "nvidia.network"}, "operator_namespace", "is not a valid name"),
    ({"nv_ipam_pool": "Pool_1"}, "nv_ipam_pool", "is not a valid name"),
    ({"ipam": "whereabouts", "nv_ipam_pool": "pool-a"}, "nv_ipam_pool", "ipam is whereabouts"),
    ({"nv_ipam_block_size": 1}, "nv_ipam_block_size", "1 is out of range 2..254"),
    ({"nv_ipam_block_size": 300}, "nv_ipam_block_size", "out of range 2..254 for ip_range 192.168.100.0/24"),
    ({"nv_ipam_block_size": "16"}, "nv_ipam_block_size", "not a whole number"),
    ({"ipam": "whereabouts", "nv_ipam_block_size": 16}, "nv_ipam_block_size", "ipam is whereabouts"),
]


@pytest.mark.parametrize("changes, field, words", BAD, ids=["%s-%d" % (b[1], i) for i, b in enumerate(BAD)])
def test_bad_input_names_field_and_fix(changes, field, words):
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(params(**changes))
    # Every option is checked: a case that is wrong in two ways (sriov with rdma_hca_max and without a NIC count)
    # reports both, each on its own (``parts``).
    [error] = [e for e in getattr(err.value, "parts", [err.value]) if e.field == field]
    assert error.msg.startswith(field + ": ")
    assert words in error.msg
    assert ". Fix: " in error.msg and not error.msg.endswith("Fix: ")


def test_every_mistake_is_reported_not_only_the_first():
    """Independent options are all checked; one that needs a wrong one (the gateway, the range) is left out."""
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(params(mode="ipoib", ip_range="192.168.100.0/33", ip_gateway="10.9.9.9",
                                                         selectors={"vendors": ["zz"]}, network_name="UPPER"))
    assert [e.field for e in err.value.parts] == ["selectors.vendors", "ip_range", "network_name"]
    assert err.value.msg.startswith("selectors.vendors, ip_range, network_name: 3 NicClusterPolicy options are wrong: ")


def test_bad_cases_cover_every_required_kind():
    fields = {b[1] for b in BAD}
    assert {"mode", "network_operator_version", "selectors", "selectors.vendors", "selectors.device_ids",
            "selectors.link_type", "rdma_hca_max", "resource_name", "ipoib_master", "ip_range", "ip_gateway",
            "ipam", "network_name", "network_namespace", "ofed_driver", "nics_per_pod", "node_type"} <= fields


def test_unknown_version_lists_the_known_ones():
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(params(network_operator_version="v25.10.0"))
    for version in nic_cluster_policy.COMPONENT_IMAGES:
        assert version in err.value.msg
