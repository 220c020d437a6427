"""The rendered NicClusterPolicy matches the AKS RDMA/InfiniBand guide's policy where it matters on a real pool.

The reference is the guide's repository, Azure/aks-rdma-infiniband: its NicClusterPolicy is a kustomize base
(configs/nicclusterpolicy/base/nic.yaml) plus one overlay per mode (sriov-device-plugin, rdma-shared-device-plugin,
and ipoib, which builds on rdma-shared-device-plugin and patches in the IPoIB CNI), and its test scenarios show what
the pods request. REFERENCE below states, as data, the fields of those files that matter, each with the file and
the commit it was read at (facts only, nothing copied). Each test renders our policy and asserts it carries every
one of them; component versions are not compared (the guide pins its own Network Operator release, we pin ours).
Every rendered policy is also checked against the v26.4.1 CRD.
"""
from __future__ import annotations

import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_render, nic_cluster_policy_validate)
from tests.schema import crdschema

REPOSITORY = "Azure/aks-rdma-infiniband"
MELLANOX = "nvcr.io/nvidia/mellanox"

REFERENCE = {
    "node_affinity": {
        "file": "configs/nicclusterpolicy/base/nic.yaml", "commit": "20f3999fb075081d5be21751107cb0742ed99ed8",
        "field": "spec.nodeAffinity",
        # only the nodes NFD labels with a Mellanox (PCI vendor 15b3) NIC
        "value": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}]}]}},
    },
    "ofed_driver": {
        "file": "configs/nicclusterpolicy/base/nic.yaml", "commit": "20f3999fb075081d5be21751107cb0742ed99ed8",
        "field": "spec.ofedDriver (repository, image)",
        "value": {"repository": MELLANOX, "image": "doca-driver"},
    },
    "upgrade_policy": {
        "file": "configs/nicclusterpolicy/base/nic.yaml", "commit": "20f3999fb075081d5be21751107cb0742ed99ed8",
        "field": "spec.ofedDriver.upgradePolicy",
        "value": {"autoUpgrade": True, "maxParallelUpgrades": 1,
                  "drain": {"enable": True, "force": True, "timeoutSeconds": 300, "deleteEmptyDir": True}},
    },
    "sriov_device_plugin": {
        "file": "configs/nicclusterpolicy/sriov-device-plugin/sriov.yaml",
        "commit": "20f3999fb075081d5be21751107cb0742ed99ed8",
        "field": "spec.sriovDevicePlugin (repository, image; config resourceList[0])",
        "image": {"repository": MELLANOX, "image": "sriov-network-device-plugin"},
        "value": {"resourcePrefix": "rdma", "resourceName": "ib",
                  "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"], "isRdma": True}},
    },
    "rdma_shared_device_plugin": {
        "file": "configs/nicclusterpolicy/rdma-shared-device-plugin/rdma.yaml",
        "commit": "20f3999fb075081d5be21751107cb0742ed99ed8",
        "field": "spec.rdmaSharedDevicePlugin (repository, image; config configList[0])",
        "image": {"repository": MELLANOX, "image": "k8s-rdma-shared-dev-plugin"},
        "value": {"resourceName": "shared_ib", "rdmaHcaMax": 63,
                  "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}},
    },
    "ipoib_keeps_the_shared_device_plugin": {
        "file": "configs/nicclusterpolicy/ipoib/kustomization.yaml",
        "commit": "005f96ca02e65bf6a6f2c359f9587b19ad04bdd6",
        "field": "resources (the IPoIB policy is the RDMA shared device plugin policy, patched)",
        "value": "../rdma-shared-device-plugin",
    },
    "ipoib_cni": {
        "file": "configs/nicclusterpolicy/ipoib/ipoib.yaml", "commit": "3e4e0e0765ae5ee79487c46a3e268a282b5fad27",
        "field": "spec.secondaryNetwork (repository, image of each part)",
        "value": {"cniPlugins": {"repository": MELLANOX, "image": "plugins"},
                  "multus": {"repository": MELLANOX, "image": "multus-cni"},
                  "ipoib": {"repository": MELLANOX, "image": "ipoib-cni"}},
    },
    "ipoib_network": {
        "file": "configs/nicclusterpolicy/ipoib/ipoib-network.yaml",
        "commit": "7b19a880fd6a08501dca3c3a71138faa16abcc57",
        "field": "IPoIBNetwork aks-infiniband (spec.networkNamespace, spec.master)",
        "value": {"name": "aks-infiniband", "networkNamespace": "default", "master": "ibP257p0s0"},
    },
    "ipoib_pods": {
        "file": "tests/scenarios/k8s/ipoib/base/ipoib.yaml", "commit": "866a67245bd85bc27eb4f312f8dd88b74a1b761b",
        "field": "spec.template.metadata.annotations (the pods join the IPoIBNetwork)",
        "value": {"k8s.v1.cni.cncf.io/networks": "aks-infiniband"},
    },
    "sriov_pods": {
        "file": "tests/scenarios/k8s/sriov/gpu/eight/eight.yaml",
        "commit": "d838696adc61517cd3f8f4d76b589076630603a9",
        "field": "resources.limits of the runner (8 GPUs, one VF on each of the node's 8 NICs)",
        "value": {"nvidia.com/gpu": 8, "rdma/ib": 8},
    },
}

# The guide's pool: ND-series nodes with 8 InfiniBand NICs (its IPoIB master name is from Standard_ND96asr_v4).
NODE_TYPES = ("nd-h100-v5", "Standard_ND96isr_H100_v5", "nd-a100-v4", "Standard_ND96asr_v4")
BASE = {"network_operator_version": "26.4.1", "ip_range": "192.168.0.0/16"}
MODES = {
    "sriov": {"mode": "sriov", "node_type": "nd-h100-v5"},
    "rdma_shared": {"mode": "rdma_shared", "ipoib_master": "ibP257p0s0"},
    "ipoib": {"mode": "ipoib", "ipoib_master": "ibP257p0s0", "network_name": "aks-infiniband"},
}


def rendered(mode, **changes):
    request = nic_cluster_policy_validate.build_request(dict(BASE, **dict(MODES[mode], **changes)))
    objects = nic_cluster_policy_render.render(request)
    for obj in objects:
        crdschema.validate(obj)
    return request, objects


def subset(expected, actual):
    """Every key of ``expected`` is in ``actual`` with the same value (recursively for dicts)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    return expected == actual


def test_every_reference_fact_names_its_file_and_commit():
    for name, fact in REFERENCE.items():
        assert fact["file"] and len(fact["commit"]) == 40 and int(fact["commit"], 16) >= 0, name
        assert fact["field"] and "value" in fact, name


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_policy_runs_on_the_mellanox_nic_nodes(mode):
    objects = rendered(mode)[1]
    assert objects[0]["spec"]["nodeAffinity"] == REFERENCE["node_affinity"]["value"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_doca_driver_and_its_upgrade_policy(mode):
    driver = rendered(mode)[1][0]["spec"]["ofedDriver"]
    assert subset(REFERENCE["ofed_driver"]["value"], driver)
    assert subset(REFERENCE["upgrade_policy"]["value"], driver["upgradePolicy"]), driver["upgradePolicy"]


def test_sriov_device_plugin_as_the_guide():
    spec = rendered("sriov")[1][0]["spec"]
    fact = REFERENCE["sriov_device_plugin"]
    assert subset(fact["image"], spec["sriovDevicePlugin"])
    (entry,) = json.loads(spec["sriovDevicePlugin"]["config"])["resourceList"]
    assert entry == fact["value"]
    assert "rdmaSharedDevicePlugin" not in spec


@pytest.mark.parametrize("mode", ["rdma_shared", "ipoib"])
def test_shared_device_plugin_as_the_guide(mode):
    spec = rendered(mode)[1][0]["spec"]
    fact = REFERENCE["rdma_shared_device_plugin"]
    assert subset(fact["image"], spec["rdmaSharedDevicePlugin"])
    (entry,) = json.loads(spec["rdmaSharedDevicePlugin"]["config"])["configList"]
    assert subset(fact["value"], entry), entry
    assert "sriovDevicePlugin" not in spec


def test_ipoib_keeps_the_shared_device_plugin_beside_the_ipoib_cni():
    assert REFERENCE["ipoib_keeps_the_shared_device_plugin"]["value"] == "../rdma-shared-device-plugin"
    objects = rendered("ipoib")[1]
    spec = objects[0]["spec"]
    assert "rdmaSharedDevicePlugin" in spec
    secondary = spec["secondaryNetwork"]
    for part, image in REFERENCE["ipoib_cni"]["value"].items():
        assert subset(image, secondary[part]), part
    network = objects[-1]
    fact = REFERENCE["ipoib_network"]["value"]
    assert network["kind"] == "IPoIBNetwork" and network["metadata"]["name"] == fact["name"]
    assert network["spec"]["networkNamespace"] == fact["networkNamespace"]
    assert network["spec"]["master"] == fact["master"]


def test_ipoib_pods_claim_the_rdma_resource_and_join_the_ipoib_network():
    request = rendered("ipoib")[0]
    pod = nic_cluster_policy_render.example_pod(request, gpus=8)
    assert pod["metadata"]["annotations"] == REFERENCE["ipoib_pods"]["value"]
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8, "rdma/shared_ib": 1}
    assert nic_cluster_policy_render.pod_resources(request) == {"rdma/shared_ib": 1}


@pytest.mark.parametrize("node_type", NODE_TYPES)
def test_sriov_pods_claim_every_nic_of_the_node(node_type):
    request = rendered("sriov", node_type=node_type)[0]
    pod = nic_cluster_policy_render.example_pod(request, gpus=8)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == REFERENCE["sriov_pods"]["value"]
    assert nic_cluster_policy_render.pod_resources(request) == {"rdma/ib": REFERENCE["sriov_pods"]["value"]["rdma/ib"]}
