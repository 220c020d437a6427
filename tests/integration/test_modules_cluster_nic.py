"""nic_cluster_policy, run in-process against a cluster: check, apply, idempotence, a change and absent.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
import pytest

from tests.integration.conftest import NETWORK_OPERATOR_CRDS, install_crds
from tests.integration.modules_cluster_helpers import ok, run

POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
IPPOOL = ("nv-ipam.nvidia.com/v1alpha1", "IPPool")
IPOIB_NETWORK = ("mellanox.com/v1alpha1", "IPoIBNetwork")


# ---------------------------------------------------------------------------------------------- nic_cluster_policy

@pytest.fixture
def nic_params(cluster):
    """nic_cluster_policy params whose namespaced objects go into the throwaway namespace; the policy is the
    cluster singleton, so on a user's cluster it needs the opt-in, the CRDs and no policy already there (skipped
    otherwise). On the suite's own clusters (the fake, and the session's control plane, where the test installs the
    CRDs itself) a CRD not served or a policy already there (left by an earlier test) fails: a proof that could not
    run is not a pass."""
    cluster.require_cluster_scoped("the NicClusterPolicy nic-cluster-policy and an IPoIBNetwork")
    missing = [kind for api_version, kind in (POLICY[:2], IPPOOL, IPOIB_NETWORK) if not cluster.serves(api_version, kind)]
    if missing and cluster.real and cluster.own:
        install_crds(cluster, NETWORK_OPERATOR_CRDS)  # the session's own cluster: the operator's CRDs, as its chart has them
        missing = [kind for api_version, kind in (POLICY[:2], IPPOOL, IPOIB_NETWORK)
                   if not cluster.serves(api_version, kind)]
    users_cluster = cluster.real and not cluster.own  # the fake and the session's own control plane are the suite's
    if missing:
        assert users_cluster, "the %s cluster does not serve %s (the Network Operator's CRDs: %s)" % (
            cluster.kind, ", ".join(missing), ", ".join(p.name for p in NETWORK_OPERATOR_CRDS))
        pytest.skip("the cluster does not serve %s: install the NVIDIA Network Operator's CRDs" % ", ".join(missing))
    if cluster.get(*POLICY) is not None:
        assert users_cluster, "the %s cluster already has a NicClusterPolicy nic-cluster-policy (left by an earlier " \
            "test?)" % cluster.kind
        pytest.skip("the cluster already has a NicClusterPolicy nic-cluster-policy; the test would overwrite it")
    network = cluster.namespace + "-rdma"
    cluster.delete_at_teardown(*POLICY)
    cluster.delete_at_teardown(IPOIB_NETWORK[0], IPOIB_NETWORK[1], network)
    return {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
            "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]},
            "network_name": network, "network_namespace": cluster.namespace, "operator_namespace": cluster.namespace}


def test_nic_cluster_policy_check_apply_idempotence_change_and_absent(cluster, nic_params):
    ns, network = cluster.namespace, nic_params["network_name"]
    identities = ["NicClusterPolicy nic-cluster-policy", "IPPool %s/%s" % (ns, network), "IPoIBNetwork %s" % network]

    def present():
        return [cluster.get(*POLICY), cluster.get(*IPPOOL, network, ns), cluster.get(*IPOIB_NETWORK, network)]

    checked = ok(run(cluster, "nic_cluster_policy", nic_params, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["changed_objects"] == identities
    assert all(d["before"] == "" and d["after"] for d in checked["diff"])
    assert checked["pod_resources"] == {"rdma/shared_ib": 1}
    assert present() == [None, None, None], "check mode wrote"

    applied = ok(run(cluster, "nic_cluster_policy", nic_params))
    assert applied["changed"] is True and applied["changed_objects"] == identities
    policy, pool, net = present()
    assert policy["spec"]["rdmaSharedDevicePlugin"]["image"]
    assert pool["spec"]["subnet"] == "192.168.100.0/24"
    assert net["spec"]["networkNamespace"] == ns

    again = ok(run(cluster, "nic_cluster_policy", nic_params))
    assert again["changed"] is False and again["changed_objects"] == []

    changed = ok(run(cluster, "nic_cluster_policy", dict(nic_params, rdma_hca_max=16), diff=True))
    assert changed["changed_objects"] == ["NicClusterPolicy nic-cluster-policy"]
    assert changed["diff"][0]["before"] and changed["diff"][0]["before"] != changed["diff"][0]["after"]
    assert '"rdmaHcaMax": 16' in cluster.get(*POLICY)["spec"]["rdmaSharedDevicePlugin"]["config"]

    would = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent"), check_mode=True))
    assert would["changed"] is True and None not in present()
    removed = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent")))
    assert removed["changed"] is True and len(removed["removed"]) == 3
    assert present() == [None, None, None]
    gone = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent")))
    assert gone["changed"] is False
