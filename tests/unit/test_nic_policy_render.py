"""Table-driven tests of the NicClusterPolicy domain's rendering: every valid combination, images,
RDMA shared and SR-IOV configs, IPoIB, IPAM, versions and defaults."""
import copy
import itertools
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, nic_cluster_policy_render, nic_cluster_policy_validate as
    nic_policy_validate)
from tests.unit.nic_policy_helpers import params


def valid_params():
    """Every valid mode x ofed x ipam x link type x version combination (plus gateway variants)."""
    for version, mode, ofed, ipam, link in itertools.product(
            sorted(nic_cluster_policy.COMPONENT_IMAGES), nic_cluster_policy.MODES, (True, False), nic_cluster_policy.IPAMS,
            nic_cluster_policy.LINK_TYPES):
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
    objects = nic_cluster_policy_render.render(request)
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
    again = nic_cluster_policy_render.render(nic_policy_validate.build_request(copy.deepcopy(p)))
    assert json.dumps(again, sort_keys=True) == json.dumps(objects, sort_keys=True)


@pytest.mark.parametrize("p", VALID, ids=[ids(p) for p in VALID])
def test_images_come_from_the_table_of_the_version(p):
    request = nic_policy_validate.build_request(p)
    table = nic_cluster_policy.COMPONENT_IMAGES[request.network_operator_version]
    spec = nic_cluster_policy_render.render(request)[0]["spec"]
    parts = dict(spec.get("secondaryNetwork", {}))
    parts.update({k: v for k, v in spec.items() if k not in ("secondaryNetwork", "nodeAffinity")})
    for name, part in parts.items():
        assert {k: part[k] for k in ("repository", "image", "version")} == table[name], name
        if name != "ofedDriver":
            assert part["version"] == "network-operator-v" + request.network_operator_version


def test_image_table_pins_each_release():
    assert set(nic_cluster_policy.COMPONENT_IMAGES) >= {"26.1.2", "26.4.0", "26.4.1"}
    assert nic_cluster_policy.COMPONENT_IMAGES["26.1.2"]["ofedDriver"]["version"] == "doca3.3.0-26.01-1.0.0.0-0"
    assert nic_cluster_policy.COMPONENT_IMAGES["26.4.1"]["ofedDriver"] == {
        "repository": "nvcr.io/nvidia/mellanox", "image": "doca-driver", "version": "doca3.4.1-26.04-1.1.0.0-1"}
    assert nic_cluster_policy.COMPONENT_IMAGES["26.4.0"]["ofedDriver"]["version"] == "doca3.4.0-26.04-0.8.6.0-0"
    for version, table in nic_cluster_policy.COMPONENT_IMAGES.items():
        assert "ipamPlugin" not in table  # whereabouts is not shipped by 26.1.2 or 26.4.x
        for name, image in table.items():
            assert image["version"] and "latest" not in image["version"], (version, name)


def test_rdma_shared_config():
    request = nic_policy_validate.build_request(params(rdma_hca_max=100, selectors={
        "vendors": ["15B3"], "device_ids": ["101b"], "interfaces": ["ibs1f0", "ibs2f0"], "link_type": "infiniband"}))
    config = json.loads(nic_cluster_policy_render.render(request)[0]["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config == {"configList": [{
        "resourceName": "shared_ib", "resourcePrefix": "rdma", "rdmaHcaMax": 100,
        "selectors": {"vendors": ["15b3"], "deviceIDs": ["101b"], "ifNames": ["ibs1f0", "ibs2f0"],
                      "linkTypes": ["infiniband"]}}]}
    assert request.master == "ibs1f0"


def test_rdma_shared_config_defaults():
    request = nic_policy_validate.build_request(params(selectors={"interfaces": ["ibs1f0"]}))
    config = json.loads(nic_cluster_policy_render.rdma_shared_config(request))
    entry = config["configList"][0]
    assert entry["rdmaHcaMax"] == 63 and entry["resourceName"] == "shared_ib"
    assert entry["selectors"]["vendors"] == ["15b3"]
    assert nic_cluster_policy_render.rdma_shared_config(request) == json.dumps(config, sort_keys=True)  # sorted keys


def test_sriov_config():
    request = nic_policy_validate.build_request(params(mode="sriov", node_type="nd-h100-v5", selectors={
        "vendors": ["15b3"], "device_ids": ["101e"], "interfaces": ["ibs1f0"], "link_type": "infiniband"}))
    config = json.loads(nic_cluster_policy_render.render(request)[0]["spec"]["sriovDevicePlugin"]["config"])
    assert config == {"resourceList": [{
        "resourceName": "ib", "resourcePrefix": "rdma",
        "selectors": {"vendors": ["15b3"], "devices": ["101e"], "pfNames": ["ibs1f0"], "linkTypes": ["infiniband"],
                      "isRdma": True}}]}
    network = nic_cluster_policy_render.render(request)[-1]
    assert network["kind"] == "HostDeviceNetwork" and network["spec"]["resourceName"] == "rdma/ib"


def test_custom_resource_name():
    request = nic_policy_validate.build_request(params(resource_name="hca_shared_a"))
    assert request.resource == "rdma/hca_shared_a"
    assert nic_cluster_policy_render.pod_resources(request) == {"rdma/hca_shared_a": 1}


def test_ipoib_mode_keeps_the_rdma_shared_device_plugin_beside_the_ipoib_cni():
    """As the AKS guide's IPoIB policy: the shared device plugin (rdma/shared_ib, rdmaHcaMax 63) and the IPoIB CNI."""
    request = nic_policy_validate.build_request(params(mode="ipoib", ipoib_master="ibs1f0", selectors=None))
    objects = nic_cluster_policy_render.render(request)
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
    assert nic_cluster_policy_render.pod_resources(request) == {"rdma/shared_ib": 1}


def test_ipoib_mode_takes_rdma_hca_max_and_a_resource_name():
    request = nic_policy_validate.build_request(params(mode="ipoib", ipoib_master="ibs1f0", rdma_hca_max=16,
                                                       resource_name="ipoib_rdma"))
    entry = json.loads(nic_cluster_policy_render.render_policy(request)[
                       "spec"]["rdmaSharedDevicePlugin"]["config"])["configList"][0]
    assert entry["rdmaHcaMax"] == 16 and entry["resourceName"] == "ipoib_rdma"
    assert entry["selectors"]["ifNames"] == ["ibs1f0"]
    pod = nic_cluster_policy_render.example_pod(request)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1, "rdma/ipoib_rdma": 1}
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}


def test_ethernet_rdma_shared_is_macvlan_on_first_interface():
    request = nic_policy_validate.build_request(params(selectors={"interfaces": ["ens1f0np0", "ens2f0np0"],
                                                                  "link_type": "ether"}))
    network = nic_cluster_policy_render.render(request)[-1]
    assert network["kind"] == "MacvlanNetwork"
    assert network["spec"]["master"] == "ens1f0np0" and network["spec"]["mode"] == "bridge"
    assert "ipoib" not in nic_cluster_policy_render.render(request)[0]["spec"]["secondaryNetwork"]


def test_explicit_ipoib_master_wins_over_interfaces():
    request = nic_policy_validate.build_request(params(ipoib_master="ib0"))
    assert request.master == "ib0"


def test_nv_ipam_pool_and_network_ipam():
    request = nic_policy_validate.build_request(params(ip_gateway="192.168.100.1", operator_namespace="net-op",
                                                       network_name="ib-net", network_namespace="team-a"))
    policy, pool, network = nic_cluster_policy_render.render(request)
    assert policy["spec"]["nvIpam"]["enableWebhook"] is False
    assert pool["apiVersion"] == "nv-ipam.nvidia.com/v1alpha1"
    assert pool["metadata"] == {"name": "ib-net", "namespace": "net-op",
                                "labels": {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}}
    assert pool["spec"] == {"subnet": "192.168.100.0/24", "perNodeBlockSize": 16, "gateway": "192.168.100.1"}
    assert json.loads(network["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": "ib-net"}
    assert network["spec"]["networkNamespace"] == "team-a" and network["metadata"]["name"] == "ib-net"


def test_nv_ipam_pool_name_and_block_size():
    request = nic_policy_validate.build_request(params(nv_ipam_pool="pool-a", nv_ipam_block_size=64))
    pool = nic_cluster_policy_render.render(request)[1]
    assert pool["metadata"]["name"] == "pool-a" and pool["spec"]["perNodeBlockSize"] == 64
    small = nic_policy_validate.build_request(params(ip_range="192.168.100.0/28"))
    assert small.nv_ipam_block_size == 14  # the whole /28 minus network and broadcast


def test_whereabouts_ipam_and_warning():
    request = nic_policy_validate.build_request(params(ipam="whereabouts", ip_gateway="192.168.100.1"))
    objects = nic_cluster_policy_render.render(request)
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
    assert nic_policy_validate.build_request(params(network_operator_version=given)
                                             ).network_operator_version == expected


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
