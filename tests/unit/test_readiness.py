"""Which Flux health check expressions the bundle gives which kinds (pure): only kinds whose readiness is a status
field, one entry per kind, and the expressions mean what the CRDs' states mean."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import readiness
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NIC = ("mellanox.com/v1alpha1", "NicClusterPolicy")
POLICY = ("nvidia.com/v1", "ClusterPolicy")


@pytest.mark.parametrize("kinds, expected", [
    ([], []),
    ([("v1", "Namespace"), ("helm.toolkit.fluxcd.io/v2", "HelmRelease"), ("kueue.x-k8s.io/v1beta2", "ClusterQueue")], []),
    # The secondary networks report status.state too, but are not waited for (docs/gitops.md).
    ([("mellanox.com/v1alpha1", "IPoIBNetwork"), ("nv-ipam.nvidia.com/v1alpha1", "IPPool")], []),
    ([NIC], ["NicClusterPolicy"]),
    ([POLICY, NIC, NIC, POLICY], ["NicClusterPolicy", "ClusterPolicy"]),  # once per kind, ordered by group
    # Flux matches on the group and kind: another version of the group gets the same rule, with the served one.
    ([("mellanox.com/v1beta1", "NicClusterPolicy")], ["NicClusterPolicy"]),
    # The same kind name in another group is another kind.
    ([("example.com/v1", "ClusterPolicy"), ["nvidia.com/v1", "NVIDIADriver"]], []),
])
def test_only_kinds_that_report_readiness_in_their_status_get_expressions(kinds, expected):
    out = readiness.health_check_exprs(kinds)
    assert [e["kind"] for e in out] == expected
    for entry in out:
        assert set(entry) == {"apiVersion", "kind", "current", "failed"}
    assert [e["apiVersion"] for e in out] == [{"NicClusterPolicy": NIC[0], "ClusterPolicy": POLICY[0]}[k]
                                              for k in expected]


def test_the_expressions_read_status_state_as_the_crds_define_it():
    """current: the one ready state; failed: the states the operator does not leave by itself (the CRD enums in
    shared/upstream: NicClusterPolicy ready/notReady/ignore/error, ClusterPolicy ready/notReady/ignored)."""
    nic, = readiness.health_check_exprs([NIC])
    policy, = readiness.health_check_exprs([POLICY])
    assert nic["current"] == policy["current"] == "status.state == 'ready'"
    assert nic["failed"] == "status.state in ['error', 'ignore']"
    assert policy["failed"] == "status.state == 'ignored'"
    for entry in (nic, policy):
        assert "notReady" not in entry["current"] + entry["failed"], "notReady is in progress, neither ready nor failed"


@pytest.mark.parametrize("kinds", [[("", "Namespace")], [("v1", "")], [("v1", None)], [(None, "Namespace")],
                                   [("v1",)], ["v1/Namespace"], [("v1", "Namespace", "x")], [{"kind": "Namespace"}]])
def test_a_bad_kind_is_refused(kinds):
    with pytest.raises(ParamError) as err:
        readiness.health_check_exprs(kinds)
    assert err.value.field == "objects"


def test_group_kind():
    assert readiness.group_kind("v1", "Namespace") == ("", "Namespace")
    assert readiness.group_kind("mellanox.com/v1alpha1", "NicClusterPolicy") == ("mellanox.com", "NicClusterPolicy")
