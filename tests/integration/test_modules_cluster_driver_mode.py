"""gpu_driver_mode, run in-process against a cluster: the read-only decision for nodes no node matches.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers.gpu_driver_mode import DRIVER_POD_SELECTORS
from tests.integration.conftest import TEST_LABEL
from tests.integration.modules_cluster_helpers import ok, run


# ---------------------------------------------------------------------------------------------- gpu_driver_mode

def host_facts(node, **facts):
    out = {"node_name": node, "gpu_present": True, "driver_loaded": False, "driver_version": "",
           "driver_packages": {}, "toolkit_packages": {}, "nvidia_smi": ""}
    out.update(facts)
    return out


def gpu_operator_driver_evidence(cluster):
    """What gpu_driver_mode reads cluster-wide besides the selected nodes: driver pods, ClusterPolicy, NVIDIADriver."""
    found = []
    for selector in DRIVER_POD_SELECTORS:
        found += ["pod %s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                  for p in cluster.list("v1", "Pod", label_selector=selector)]
    for api_version, kind in (("nvidia.com/v1", "ClusterPolicy"), ("nvidia.com/v1alpha1", "NVIDIADriver")):
        if cluster.serves(api_version, kind):
            found += ["%s %s" % (kind, name) for name in cluster.names(api_version, kind)]
    return found


@pytest.fixture
def driver_mode(cluster):
    """gpu_driver_mode against nodes selected by a label no node has, on a cluster without the operator's driver.
    A user's cluster that runs it skips; the fake and the session's own control plane must not have it (there it is
    what an earlier test left behind, which fails)."""
    evidence = gpu_operator_driver_evidence(cluster)
    if evidence and cluster.real and not cluster.own:
        pytest.skip("this cluster runs the GPU Operator's driver (%s), which gpu_driver_mode reads, so its decision "
                    "differs from the fake's; use a cluster without the GPU Operator" % ", ".join(evidence[:3]))
    assert evidence == [], "the GPU Operator's driver on the %s cluster (left by an earlier test?): %s" % (
        "session's own" if cluster.own else cluster.kind, ", ".join(evidence))
    selector = "%s=%s" % (TEST_LABEL, cluster.namespace)

    def decide(check_mode=False, **params):
        return run(cluster, "gpu_driver_mode", dict(params, node_selector=selector), check_mode=check_mode)
    return decide


def test_gpu_driver_mode_auto_with_no_gpu_node_picks_the_operator(driver_mode):
    for check_mode in (False, True):
        result = ok(driver_mode(check_mode=check_mode, mode="auto", rdma=True))
        assert result["changed"] is False and result["cluster_read"] is True
        assert result["mode"] == "operator" and result["owner"] == "operator" and result["peermem"] == "operator"
        assert result["reason"].startswith("auto: no GPU node seen yet")
        assert result["gpu_operator_values"]["driver"]["enabled"] is True
        assert result["gpu_operator_values"]["driver"]["rdma"]["enabled"] is True
        assert result["nodes"] == []


def test_gpu_driver_mode_host_facts_of_a_node_not_in_the_cluster(driver_mode, cluster):
    node = cluster.namespace + "-gpu-0"
    hosts = [host_facts(node, driver_loaded=True, driver_version="580.95.05")]
    result = ok(driver_mode(mode="auto", hosts=hosts))
    assert result["mode"] == "host" and result["owner"] == "host" and result["peermem"] == "host"
    assert result["gpu_operator_values"]["driver"] == {"enabled": False, "nvidiaDriverCRD": {"enabled": False}}
    (entry,) = result["nodes"]
    assert entry["name"] == node and entry["managed"] is True and entry["in_cluster"] is False


def test_gpu_driver_mode_operator_with_a_host_driver_is_refused_naming_the_node(driver_mode, cluster):
    node = cluster.namespace + "-gpu-0"
    hosts = [host_facts(node, driver_packages={"nvidia-driver-580-server": "580.95.05-0ubuntu1"})]
    failed, result = driver_mode(mode="operator", hosts=hosts)
    assert failed and node in result["msg"]
    assert "already have a host driver" in result["msg"]
    assert [n["name"] for n in result["nodes"]] == [node]
