"""Tests of the NicClusterPolicy domain's pod wiring: pod resources and the example pod of each mode."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_render, nic_cluster_policy_validate, node_types)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.nic_policy_helpers import params


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
    request = nic_cluster_policy_validate.build_request(params(mode=mode, **extra))
    assert nic_cluster_policy_render.pod_resources(request) == expected


@pytest.mark.parametrize("mode, extra, gpus", [
    ("rdma_shared", {}, 1),
    ("sriov", {"node_type": "nd-h100-v5"}, 8),
    ("ipoib", {"ipoib_master": "ibs1f0"}, 2),
])
def test_example_pod(mode, extra, gpus):
    request = nic_cluster_policy_validate.build_request(params(mode=mode, network_namespace="team-a", **extra))
    pod = nic_cluster_policy_render.example_pod(request, gpus=gpus)
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["metadata"]["namespace"] == "team-a"
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    container = pod["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    expected = {"nvidia.com/gpu": gpus}
    expected.update(nic_cluster_policy_render.pod_resources(request))
    assert container["resources"]["limits"] == expected
    rdma = {"rdma_shared": {"rdma/shared_ib": 1}, "sriov": {"rdma/ib": 8}, "ipoib": {"rdma/shared_ib": 1}}[mode]
    assert {k: v for k, v in container["resources"]["limits"].items() if k.startswith("rdma/")} == rdma
    image, tag = container["image"].rsplit(":", 1)
    assert image == "nvcr.io/nvidia/doca/doca" and tag == "3.0.0-full-rt-host"


def test_removing_sriov_objects_needs_no_nic_count():
    """state absent only deletes: no node type and no count is fine, but nothing for pods comes out of it."""
    request = nic_cluster_policy_validate.build_request(params(mode="sriov", state="absent"))
    assert request.nics_per_pod is None
    assert [o["kind"] for o in nic_cluster_policy_render.render(
        request)] == ["NicClusterPolicy", "IPPool", "HostDeviceNetwork"]
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_render.pod_resources(request)
    assert err.value.field == "nics_per_pod" and "Fix: give nics_per_pod or node_type" in err.value.msg
    with pytest.raises(ParamError):
        nic_cluster_policy_validate.build_request(params(mode="sriov", state="present"))
    # a given count is still checked when removing
    with pytest.raises(ParamError) as bad:
        nic_cluster_policy_validate.build_request(params(mode="sriov", state="absent", nics_per_pod=0))
    assert bad.value.field == "nics_per_pod"


def test_the_node_type_table_gives_sriov_its_nic_count():
    """Each known node type's NIC count is what an SR-IOV pod claims, by short name and by VM size."""
    for name, facts in node_types.NODE_TYPES.items():
        for value in (name,) + facts["vm_sizes"]:
            request = nic_cluster_policy_validate.build_request(params(mode="sriov", node_type=value))
            assert request.node_type == name
            assert nic_cluster_policy_render.pod_resources(request) == {"rdma/ib": facts["nics"]}


@pytest.mark.parametrize("gpus", [0, -1, True, "1", 1.5])
def test_example_pod_bad_gpus(gpus):
    request = nic_cluster_policy_validate.build_request(params())
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_render.example_pod(request, gpus=gpus)
    assert err.value.field == "gpus" and "Fix:" in err.value.msg


def test_docs_example_pods_match_the_code():
    """docs/network.md shows the example pod of each mode exactly as example_pod renders it."""
    import os
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "network.md"), encoding="utf-8") as handle:
        text = handle.read()
    base = {"network_operator_version": "26.4.0", "ip_range": "192.168.100.0/24",
            "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}
    for mode, extra in (("rdma_shared", {}), ("sriov", {"node_type": "nd-h100-v5"}),
                        ("ipoib", {"ipoib_master": "ibs1f0"})):
        section = text.split("### %s\n\n```yaml\n" % mode, 1)[1].split("```", 1)[0]
        pod = nic_cluster_policy_render.example_pod(
            nic_cluster_policy_validate.build_request(dict(base, mode=mode, **extra)))
        assert yaml.safe_load(section) == pod, mode
