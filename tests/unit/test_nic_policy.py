"""Table-driven tests of the NicClusterPolicy domain: validation, rendering, pod wiring and readiness."""
import copy
import itertools
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    nic_policy, nic_policy_render, nic_policy_validate, node_types)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

BASE = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ofed_driver": True, "ipam": "nv-ipam",
        "ip_range": "192.168.100.0/24", "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}}


def params(**changes):
    out = copy.deepcopy(BASE)
    out.update(changes)
    return out


def valid_params():
    """Every valid mode x ofed x ipam x link type x version combination (plus gateway variants)."""
    for version, mode, ofed, ipam, link in itertools.product(
            sorted(nic_policy.COMPONENT_IMAGES), nic_policy.MODES, (True, False), nic_policy.IPAMS,
            nic_policy.LINK_TYPES):
        if mode == "ipoib" and link == "ether":
            continue
        p = {"mode": mode, "network_operator_version": version, "ofed_driver": ofed, "ipam": ipam,
             "ip_range": "10.10.0.0/16", "ip_gateway": "10.10.0.1" if ofed else "",
             "selectors": {"vendors": ["15b3"], "device_ids": ["101B", "1021"], "link_type": link}}
        if mode == "ipoib":
            p["ipoib_master"] = "ibs1f0"
        elif mode == "rdma_shared":
            p["selectors"]["interfaces"] = ["ibs1f0" if link == "infiniband" else "ens1f0np0", "ibs2f0"]
        else:
            p["node_type"] = "nd-h100-v5" if ofed else "Standard_ND96asr_v4"
        yield p
    # rdma_shared on InfiniBand without interfaces: the master comes from ipoib_master
    yield {"mode": "rdma_shared", "network_operator_version": "v26.4.1", "ipam": "nv-ipam", "ip_range": "fd00:10::/64",
           "selectors": {"vendors": ["15b3"]}, "ipoib_master": "ib0"}


def ids(p):
    return "-".join(str(p.get(k)) for k in ("network_operator_version", "mode", "ofed_driver", "ipam")) + \
        "-" + str(p["selectors"].get("link_type", "infiniband"))


VALID = list(valid_params())


@pytest.mark.parametrize("p", VALID, ids=[ids(p) for p in VALID])
def test_valid_combinations_render(p):
    request = nic_policy_validate.build_request(p)
    objects = nic_policy_render.render(request)
    kinds = [o["kind"] for o in objects]
    expected = ["NicClusterPolicy"] + (["IPPool"] if request.ipam == "nv-ipam" else []) + [request.network_kind]
    assert kinds == expected
    policy = objects[0]
    assert policy["apiVersion"] == "mellanox.com/v1alpha1"
    assert policy["metadata"]["name"] == "nic-cluster-policy" and "namespace" not in policy["metadata"]
    spec = policy["spec"]
    assert ("ofedDriver" in spec) is request.ofed_driver
    assert ("rdmaSharedDevicePlugin" in spec) is (request.mode in ("rdma_shared", "ipoib"))
    assert ("sriovDevicePlugin" in spec) is (request.mode == "sriov")
    assert ("nvIpam" in spec) is (request.ipam == "nv-ipam")
    assert set(spec["secondaryNetwork"]) == {"multus", "cniPlugins"} | (
        {"ipoib"} if request.network_kind == "IPoIBNetwork" else set())
    # deterministic: the same input renders the same objects, byte for byte
    again = nic_policy_render.render(nic_policy_validate.build_request(copy.deepcopy(p)))
    assert json.dumps(again, sort_keys=True) == json.dumps(objects, sort_keys=True)


@pytest.mark.parametrize("p", VALID, ids=[ids(p) for p in VALID])
def test_images_come_from_the_table_of_the_version(p):
    request = nic_policy_validate.build_request(p)
    table = nic_policy.COMPONENT_IMAGES[request.network_operator_version]
    spec = nic_policy_render.render(request)[0]["spec"]
    parts = dict(spec.get("secondaryNetwork", {}))
    parts.update({k: v for k, v in spec.items() if k not in ("secondaryNetwork", "nodeAffinity")})
    for name, part in parts.items():
        assert {k: part[k] for k in ("repository", "image", "version")} == table[name], name
        if name != "ofedDriver":
            assert part["version"] == "network-operator-v" + request.network_operator_version


def test_image_table_pins_each_release():
    assert set(nic_policy.COMPONENT_IMAGES) >= {"26.4.0", "26.4.1"}
    assert nic_policy.COMPONENT_IMAGES["26.4.1"]["ofedDriver"] == {
        "repository": "nvcr.io/nvidia/mellanox", "image": "doca-driver", "version": "doca3.4.1-26.04-1.1.0.0-1"}
    assert nic_policy.COMPONENT_IMAGES["26.4.0"]["ofedDriver"]["version"] == "doca3.4.0-26.04-0.8.6.0-0"
    for version, table in nic_policy.COMPONENT_IMAGES.items():
        assert "ipamPlugin" not in table  # whereabouts is not shipped by 26.4.x
        for name, image in table.items():
            assert image["version"] and "latest" not in image["version"], (version, name)


def test_rdma_shared_config():
    request = nic_policy_validate.build_request(params(rdma_hca_max=100, selectors={
        "vendors": ["15B3"], "device_ids": ["101b"], "interfaces": ["ibs1f0", "ibs2f0"], "link_type": "infiniband"}))
    config = json.loads(nic_policy_render.render(request)[0]["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config == {"configList": [{
        "resourceName": "shared_ib", "resourcePrefix": "rdma", "rdmaHcaMax": 100,
        "selectors": {"vendors": ["15b3"], "deviceIDs": ["101b"], "ifNames": ["ibs1f0", "ibs2f0"],
                      "linkTypes": ["infiniband"]}}]}
    assert request.master == "ibs1f0"


def test_rdma_shared_config_defaults():
    request = nic_policy_validate.build_request(params(selectors={"interfaces": ["ibs1f0"]}))
    config = json.loads(nic_policy_render.rdma_shared_config(request))
    entry = config["configList"][0]
    assert entry["rdmaHcaMax"] == 63 and entry["resourceName"] == "shared_ib"
    assert entry["selectors"]["vendors"] == ["15b3"]
    assert nic_policy_render.rdma_shared_config(request) == json.dumps(config, sort_keys=True)  # sorted keys


def test_sriov_config():
    request = nic_policy_validate.build_request(params(mode="sriov", node_type="nd-h100-v5", selectors={
        "vendors": ["15b3"], "device_ids": ["101e"], "interfaces": ["ibs1f0"], "link_type": "infiniband"}))
    config = json.loads(nic_policy_render.render(request)[0]["spec"]["sriovDevicePlugin"]["config"])
    assert config == {"resourceList": [{
        "resourceName": "ib", "resourcePrefix": "rdma",
        "selectors": {"vendors": ["15b3"], "devices": ["101e"], "pfNames": ["ibs1f0"], "linkTypes": ["infiniband"],
                      "isRdma": True}}]}
    network = nic_policy_render.render(request)[-1]
    assert network["kind"] == "HostDeviceNetwork" and network["spec"]["resourceName"] == "rdma/ib"


def test_custom_resource_name():
    request = nic_policy_validate.build_request(params(resource_name="hca_shared_a"))
    assert request.resource == "rdma/hca_shared_a"
    assert nic_policy_render.pod_resources(request) == {"rdma/hca_shared_a": 1}


def test_ipoib_mode_keeps_the_rdma_shared_device_plugin_beside_the_ipoib_cni():
    """As the AKS guide's IPoIB policy: the shared device plugin (rdma/shared_ib, rdmaHcaMax 63) and the IPoIB CNI."""
    request = nic_policy_validate.build_request(params(mode="ipoib", ipoib_master="ibs1f0", selectors=None))
    objects = nic_policy_render.render(request)
    spec = objects[0]["spec"]
    assert "sriovDevicePlugin" not in spec
    assert spec["rdmaSharedDevicePlugin"]["image"] == "k8s-rdma-shared-dev-plugin"
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    assert config == {"configList": [{"resourceName": "shared_ib", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
                                      "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]}
    assert spec["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    network = objects[-1]
    assert network["kind"] == "IPoIBNetwork"
    assert network["spec"]["master"] == "ibs1f0" and network["spec"]["networkNamespace"] == "default"
    assert request.rdma_hca_max == 63 and request.resource == "rdma/shared_ib"
    assert nic_policy_render.pod_resources(request) == {"rdma/shared_ib": 1}


def test_ipoib_mode_takes_rdma_hca_max_and_a_resource_name():
    request = nic_policy_validate.build_request(params(mode="ipoib", ipoib_master="ibs1f0", rdma_hca_max=16,
                                                       resource_name="ipoib_rdma"))
    entry = json.loads(nic_policy_render.render_policy(request)["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"][0]
    assert entry["rdmaHcaMax"] == 16 and entry["resourceName"] == "ipoib_rdma"
    assert entry["selectors"]["ifNames"] == ["ibs1f0"]
    pod = nic_policy_render.example_pod(request)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1, "rdma/ipoib_rdma": 1}
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}


def test_ethernet_rdma_shared_is_macvlan_on_first_interface():
    request = nic_policy_validate.build_request(params(selectors={"interfaces": ["ens1f0np0", "ens2f0np0"],
                                                                  "link_type": "ether"}))
    network = nic_policy_render.render(request)[-1]
    assert network["kind"] == "MacvlanNetwork"
    assert network["spec"]["master"] == "ens1f0np0" and network["spec"]["mode"] == "bridge"
    assert "ipoib" not in nic_policy_render.render(request)[0]["spec"]["secondaryNetwork"]


def test_explicit_ipoib_master_wins_over_interfaces():
    request = nic_policy_validate.build_request(params(ipoib_master="ib0"))
    assert request.master == "ib0"


def test_nv_ipam_pool_and_network_ipam():
    request = nic_policy_validate.build_request(params(ip_gateway="192.168.100.1", operator_namespace="net-op",
                                                       network_name="ib-net", network_namespace="team-a"))
    policy, pool, network = nic_policy_render.render(request)
    assert policy["spec"]["nvIpam"]["enableWebhook"] is False
    assert pool["apiVersion"] == "nv-ipam.nvidia.com/v1alpha1"
    assert pool["metadata"] == {"name": "ib-net", "namespace": "net-op",
                                "labels": {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}}
    assert pool["spec"] == {"subnet": "192.168.100.0/24", "perNodeBlockSize": 16, "gateway": "192.168.100.1"}
    assert json.loads(network["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": "ib-net"}
    assert network["spec"]["networkNamespace"] == "team-a" and network["metadata"]["name"] == "ib-net"


def test_nv_ipam_pool_name_and_block_size():
    request = nic_policy_validate.build_request(params(nv_ipam_pool="pool-a", nv_ipam_block_size=64))
    pool = nic_policy_render.render(request)[1]
    assert pool["metadata"]["name"] == "pool-a" and pool["spec"]["perNodeBlockSize"] == 64
    small = nic_policy_validate.build_request(params(ip_range="192.168.100.0/28"))
    assert small.nv_ipam_block_size == 14  # the whole /28 minus network and broadcast


def test_whereabouts_ipam_and_warning():
    request = nic_policy_validate.build_request(params(ipam="whereabouts", ip_gateway="192.168.100.1"))
    objects = nic_policy_render.render(request)
    assert [o["kind"] for o in objects] == ["NicClusterPolicy", "IPoIBNetwork"]
    assert "ipamPlugin" not in objects[0]["spec"]["secondaryNetwork"]
    assert "nvIpam" not in objects[0]["spec"]
    assert json.loads(objects[-1]["spec"]["ipam"]) == {
        "type": "whereabouts", "range": "192.168.100.0/24", "gateway": "192.168.100.1",
        "exclude": ["192.168.100.1/32"]}
    assert len(request.warnings) == 1 and "whereabouts" in request.warnings[0]
    assert nic_policy_validate.build_request(params()).warnings == ()


@pytest.mark.parametrize("given, expected", [("26.4.1", "26.4.1"), ("v26.4.1", "26.4.1"), ("26.4.0", "26.4.0"),
                                             (" v26.4.0 ", "26.4.0")])
def test_version_normalised(given, expected):
    assert nic_policy_validate.build_request(params(network_operator_version=given)).network_operator_version == expected


def test_role_defaults_are_accepted_in_every_mode():
    """The role passes its defaults (rdma_hca_max 63, empty strings) whatever the mode."""
    role = {"network_operator_version": "26.4.1", "ofed_driver": True, "ipam": "nv-ipam",
            "ip_range": "192.168.100.0/24", "ip_gateway": "", "rdma_hca_max": 63, "resource_name": "",
            "network_name": "rdma-net", "network_namespace": "default", "ipoib_master": "",
            "selectors": {"vendors": ["15b3"], "link_type": "infiniband"}, "kubeconfig": None, "wait": True}
    sriov = nic_policy_validate.build_request(dict(role, mode="sriov", node_type="nd-h100-v5"))
    assert sriov.rdma_hca_max is None and sriov.resource == "rdma/ib" and sriov.nics_per_pod == 8
    ipoib = nic_policy_validate.build_request(dict(role, mode="ipoib", ipoib_master="ibs1f0", node_type=""))
    assert ipoib.rdma_hca_max == 63 and ipoib.resource == "rdma/shared_ib" and ipoib.nics_per_pod == 1
    shared = nic_policy_validate.build_request(dict(role, mode="rdma_shared", ipoib_master="ibs1f0"))
    assert shared.rdma_hca_max == 63 and shared.resource == "rdma/shared_ib"


def test_unset_selector_keys_take_the_defaults():
    """The module's argument spec fills unset suboptions with None: vendors 15b3, link type infiniband."""
    request = nic_policy_validate.build_request(params(mode="sriov", nics_per_pod=8, selectors={
        "vendors": None, "device_ids": None, "interfaces": None, "link_type": None}))
    assert request.vendors == ("15b3",) and request.link_type == "infiniband"
    assert request.device_ids == () and request.interfaces == ()
    assert nic_policy_validate.build_request(params(mode="sriov", nics_per_pod=8, selectors=None)).vendors == ("15b3",)


BAD = [
    # (changes, field, words)
    ({"mode": "hostdev"}, "mode", "'hostdev' is not one of sriov, rdma_shared, ipoib"),
    ({"mode": None}, "mode", "is not one of"),
    ({"network_operator_version": "25.10.0"}, "network_operator_version", "known: 26.4.0, 26.4.1"),
    ({"network_operator_version": "26.4"}, "network_operator_version", "known: 26.4.0, 26.4.1"),
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
        nic_policy_validate.build_request(params(**changes))
    assert err.value.field == field
    assert err.value.msg.startswith(field + ": ")
    assert words in err.value.msg
    assert ". Fix: " in err.value.msg and not err.value.msg.endswith("Fix: ")


def test_bad_cases_cover_every_required_kind():
    fields = {b[1] for b in BAD}
    assert {"mode", "network_operator_version", "selectors", "selectors.vendors", "selectors.device_ids",
            "selectors.link_type", "rdma_hca_max", "resource_name", "ipoib_master", "ip_range", "ip_gateway",
            "ipam", "network_name", "network_namespace", "ofed_driver", "nics_per_pod", "node_type"} <= fields


def test_unknown_version_lists_the_known_ones():
    with pytest.raises(ParamError) as err:
        nic_policy_validate.build_request(params(network_operator_version="v25.10.0"))
    for version in nic_policy.COMPONENT_IMAGES:
        assert version in err.value.msg


@pytest.mark.parametrize("mode, extra, expected", [
    ("rdma_shared", {}, {"rdma/shared_ib": 1}),
    ("rdma_shared", {"node_type": "nd-h100-v5", "nics_per_pod": ""}, {"rdma/shared_ib": 1}),
    ("sriov", {"node_type": "nd-h100-v5"}, {"rdma/ib": 8}),
    ("sriov", {"node_type": "standard_nd96isr_h100_v5"}, {"rdma/ib": 8}),
    ("sriov", {"node_type": "nd-h100-v5", "nics_per_pod": 4}, {"rdma/ib": 4}),
    ("sriov", {"nics_per_pod": "2"}, {"rdma/ib": 2}),
    ("sriov", {"nics_per_pod": 16}, {"rdma/ib": 16}),
    ("sriov", {"node_type": "nd-h100-v5", "resource_name": "ib_a"}, {"rdma/ib_a": 8}),
    ("ipoib", {"ipoib_master": "ibs1f0"}, {"rdma/shared_ib": 1}),
    ("ipoib", {"ipoib_master": "ibs1f0", "nics_per_pod": 1}, {"rdma/shared_ib": 1}),
])
def test_pod_resources(mode, extra, expected):
    request = nic_policy_validate.build_request(params(mode=mode, **extra))
    assert nic_policy_render.pod_resources(request) == expected


@pytest.mark.parametrize("mode, extra, gpus", [
    ("rdma_shared", {}, 1),
    ("sriov", {"node_type": "nd-h100-v5"}, 8),
    ("ipoib", {"ipoib_master": "ibs1f0"}, 2),
])
def test_example_pod(mode, extra, gpus):
    request = nic_policy_validate.build_request(params(mode=mode, network_namespace="team-a", **extra))
    pod = nic_policy_render.example_pod(request, gpus=gpus)
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    expected = {"nvidia.com/gpu": gpus}
    expected.update(nic_policy_render.pod_resources(request))
    assert container["resources"]["limits"] == expected
    rdma = {"rdma_shared": {"rdma/shared_ib": 1}, "sriov": {"rdma/ib": 8}, "ipoib": {"rdma/shared_ib": 1}}[mode]
    assert {k: v for k, v in container["resources"]["limits"].items() if k.startswith("rdma/")} == rdma
    image, tag = container["image"].rsplit(":", 1)
    assert image == "nvcr.io/nvidia/doca/doca" and tag == "3.0.0-full-rt-host"


def test_removing_sriov_objects_needs_no_nic_count():
    """state absent only deletes: no node type and no count is fine, but nothing for pods comes out of it."""
    request = nic_policy_validate.build_request(params(mode="sriov", state="absent"))
    assert request.nics_per_pod is None
    assert [o["kind"] for o in nic_policy_render.render(request)] == ["NicClusterPolicy", "IPPool", "HostDeviceNetwork"]
    with pytest.raises(ParamError) as err:
        nic_policy_render.pod_resources(request)
    assert err.value.field == "nics_per_pod" and "Fix: give nics_per_pod or node_type" in err.value.msg
    with pytest.raises(ParamError):
        nic_policy_validate.build_request(params(mode="sriov", state="present"))
    # a given count is still checked when removing
    with pytest.raises(ParamError) as bad:
        nic_policy_validate.build_request(params(mode="sriov", state="absent", nics_per_pod=0))
    assert bad.value.field == "nics_per_pod"


def test_the_node_type_table_gives_sriov_its_nic_count():
    """Each known node type's NIC count is what an SR-IOV pod claims, by short name and by VM size."""
    for name, facts in node_types.NODE_TYPES.items():
        for value in (name,) + facts["vm_sizes"]:
            request = nic_policy_validate.build_request(params(mode="sriov", node_type=value))
            assert request.node_type == name
            assert nic_policy_render.pod_resources(request) == {"rdma/ib": facts["nics"]}


@pytest.mark.parametrize("gpus", [0, -1, True, "1", 1.5])
def test_example_pod_bad_gpus(gpus):
    request = nic_policy_validate.build_request(params())
    with pytest.raises(ParamError) as err:
        nic_policy_render.example_pod(request, gpus=gpus)
    assert err.value.field == "gpus" and "Fix:" in err.value.msg


NOT_READY = {
    "metadata": {"name": "nic-cluster-policy"},
    "status": {"state": "notReady", "appliedStates": [
        {"name": "state-multus-cni", "state": "ready"},
        {"name": "state-OFED", "state": "notReady", "message": "waiting for pod"},
        {"name": "state-ib-kubernetes", "state": "ignore"},
        {"name": "state-nv-ipam-cni", "state": "error", "message": "image pull failed"},
    ]},
}


def test_component_states():
    assert nic_policy.component_states(NOT_READY) == {
        "state-multus-cni": "ready", "state-OFED": "notReady", "state-ib-kubernetes": "ignore",
        "state-nv-ipam-cni": "error"}
    assert nic_policy.component_states({}) == {}
    assert nic_policy.component_states(None) == {}
    assert nic_policy.component_states({"status": {"state": "ready"}}) == {}


def test_policy_ready():
    assert nic_policy.policy_ready({"status": {"state": "ready"}}) is True
    assert nic_policy.policy_ready(NOT_READY) is False
    assert nic_policy.policy_ready({}) is False
    assert nic_policy.policy_ready(None) is False


def test_describe_states():
    assert nic_policy.describe_states(NOT_READY) == (
        "state notReady: state-OFED=notReady (waiting for pod), state-multus-cni=ready, "
        "state-nv-ipam-cni=error (image pull failed)")
    assert nic_policy.describe_states({}) == "state unknown (no status yet)"
    assert nic_policy.describe_states({"status": {"state": "error", "reason": "bad spec"}}) == \
        "state error (bad spec)"


def test_docs_example_pods_match_the_code():
    """docs/network.md shows the example pod of each mode exactly as example_pod renders it."""
    import os
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "network.md"), encoding="utf-8") as handle:
        text = handle.read()
    base = {"network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
            "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}
    for mode, extra in (("rdma_shared", {}), ("sriov", {"node_type": "nd-h100-v5"}),
                        ("ipoib", {"ipoib_master": "ibs1f0"})):
        section = text.split("### %s\n\n```yaml\n" % mode, 1)[1].split("```", 1)[0]
        pod = nic_policy_render.example_pod(nic_policy_validate.build_request(dict(base, mode=mode, **extra)))
        assert yaml.safe_load(section) == pod, mode


BASE_POLICY = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
               "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}}


def test_the_policy_runs_on_mellanox_nic_nodes_by_default():
    spec = nic_policy_render.render_policy(nic_policy_validate.build_request(BASE_POLICY))["spec"]
    [term] = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In",
                                          "values": ["true"]}]}
    mine = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nodepool", "operator": "In", "values": ["training"]}]}]}}
    spec = nic_policy_render.render_policy(nic_policy_validate.build_request(dict(BASE_POLICY, node_affinity=mine)))["spec"]
    assert spec["nodeAffinity"] == mine
    assert "nodeAffinity" not in nic_policy_render.render_policy(nic_policy_validate.build_request(
        dict(BASE_POLICY, node_affinity={})))["spec"], "{} means every node"


@pytest.mark.parametrize("value, field", [
    ("nodepool=training", "node_affinity"), ({"nodeSelector": {}}, "node_affinity"),
    ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
     "node_affinity.requiredDuringSchedulingIgnoredDuringExecution"),
])
def test_a_bad_node_affinity_is_refused(value, field):
    with pytest.raises(ParamError) as err:
        nic_policy_validate.build_request(dict(BASE_POLICY, node_affinity=value))
    assert err.value.field == field


def test_the_doca_driver_upgrades_one_drained_node_at_a_time():
    driver = nic_policy_render.render_policy(nic_policy_validate.build_request(BASE_POLICY))["spec"]["ofedDriver"]
    policy = driver["upgradePolicy"]
    assert policy["autoUpgrade"] is True and policy["maxParallelUpgrades"] == 1
    assert policy["drain"]["enable"] is True and policy["drain"]["timeoutSeconds"] == 300
    changed = nic_policy_validate.build_request(dict(BASE_POLICY, driver_upgrade_policy={
        "maxParallelUpgrades": 2, "drain": {"timeoutSeconds": 600}}))
    assert changed.upgrade_policy["maxParallelUpgrades"] == 2 and changed.upgrade_policy["drain"]["timeoutSeconds"] == 600
    assert changed.upgrade_policy["drain"]["enable"] is True, "the keys left out keep the safe default"


@pytest.mark.parametrize("policy, field", [
    ({"maxUnavailable": 1}, "driver_upgrade_policy.maxUnavailable"),
    ({"drain": {"enable": "yes"}}, "driver_upgrade_policy.drain.enable"),
    ({"maxParallelUpgrades": -1}, "driver_upgrade_policy.maxParallelUpgrades"),
    ({"waitForCompletion": {"podSelector": "(("}}, "driver_upgrade_policy.waitForCompletion.podSelector"),
])
def test_a_bad_doca_upgrade_policy_is_refused_naming_the_key(policy, field):
    with pytest.raises(ParamError) as err:
        nic_policy_validate.build_request(dict(BASE_POLICY, driver_upgrade_policy=policy))
    assert err.value.field == field


def test_an_upgrade_policy_without_the_doca_driver_is_refused():
    with pytest.raises(ParamError) as err:
        nic_policy_validate.build_request(dict(BASE_POLICY, ofed_driver=False, driver_upgrade_policy={"autoUpgrade": False}))
    assert err.value.field == "driver_upgrade_policy"
