"""Exhaustive table tests of the driver_mode domain: every combination of per-node and cluster evidence,
checked against the oracle in driver_mode_oracle.py."""
import itertools

import pytest
from tests.unit.driver_mode_oracle import CLUSTERS, OUTER, SINGLE, SMALL, oracle, run_table


def outer_id(p):
    mode, cloud, (rdma, mofed) = p
    return "%s-cloud_%s-rdma%s-mofed%s" % (mode, cloud, rdma, mofed)


# ---------------------------------------------------------------- the exhaustive tables


@pytest.mark.parametrize("outer", OUTER, ids=[outer_id(p) for p in OUTER])
def test_single_node_every_combination(outer):
    mode, cloud, (rdma, mofed) = outer
    cases = ((mode, [("gpu-node-1", e)], policy, drivers, cloud, rdma, mofed)
             for e in SINGLE for policy, drivers in CLUSTERS)
    count, failures = run_table(cases)
    assert count == 56 * len(CLUSTERS) == 56 * 14
    assert not failures, "%d of %d cases disagree with the oracle:\n%s" % (
        len(failures), count, "\n".join(failures[:8]))


@pytest.mark.parametrize("outer", OUTER, ids=[outer_id(p) for p in OUTER])
def test_two_nodes_every_mix(outer):
    mode, cloud, (rdma, mofed) = outer
    cases = ((mode, [("gpu-b", b), ("gpu-a", a)], policy, drivers, cloud, rdma, mofed)
             for a, b in itertools.product(SMALL, SMALL) for policy, drivers in CLUSTERS)
    count, failures = run_table(cases)
    assert count == len(SMALL) ** 2 * len(CLUSTERS)
    assert not failures, "%d of %d cases disagree with the oracle:\n%s" % (
        len(failures), count, "\n".join(failures[:8]))


# Zero nodes with cloud_driver=present are the subject of the xfail tests below.
NO_NODES = [p for p in OUTER if p[1] != "present"]


@pytest.mark.parametrize("outer", NO_NODES, ids=[outer_id(p) for p in NO_NODES])
def test_no_nodes_yet(outer):
    mode, cloud, (rdma, mofed) = outer
    count, failures = run_table((mode, [], policy, drivers, cloud, rdma, mofed) for policy, drivers in CLUSTERS)
    assert count == len(CLUSTERS)
    assert not failures, "\n".join(failures)


def test_the_tables_cover_every_outcome():
    """The oracle reaches every refusal and every (mode, owner, peermem) over the tables above."""
    outcomes = set()
    for mode, cloud, (rdma, mofed) in OUTER:
        for e in SINGLE:
            for policy, drivers in CLUSTERS:
                got = oracle(mode, [("n", e)], policy, drivers, cloud, rdma, mofed)
                outcomes.add(got[1] if got[0] == "refuse" else (got[1]["mode"], got[1]["owner"], got[1]["peermem"]))
        for a, b in itertools.product(SMALL, SMALL):
            got = oracle(mode, [("a", a), ("b", b)], None, [], cloud, rdma, mofed)
            outcomes.add(got[1] if got[0] == "refuse" else (got[1]["mode"], got[1]["owner"], got[1]["peermem"]))
    assert outcomes == {"both", "mixed", "host_in_operator", "operator_in_host", "unmanaged",
                        ("operator", "operator", "operator"), ("host", "host", "host"),
                        ("host", "host", "daemonset"), ("host", "cloud", "daemonset")}
