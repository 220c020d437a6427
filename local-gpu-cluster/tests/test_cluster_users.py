"""A cluster fixture's cluster is stopped once no later test of the session uses it (local_gpu_cluster.testing)."""
from pathlib import Path

import pytest

from local_gpu_cluster import testing


class _Item:
    def __init__(self, name, fixtures, cluster=None, real=False):
        self.name, self.fixturenames, self.real = name, fixtures, real
        self.funcargs = {f: cluster for f in fixtures if cluster is not None}

    def get_closest_marker(self, name):
        return object() if (name == "real_cluster" and self.real) else None


@pytest.fixture
def downs(monkeypatch):
    calls = []
    monkeypatch.setattr(testing, "cluster_command", lambda *args, env: calls.append((args, env["CLUSTER_DIR"])))
    return calls


def test_each_cluster_stops_after_the_last_test_that_uses_it(downs):
    aks, bare = testing.LocalCluster(Path("/c/aks")), testing.LocalCluster(Path("/c/bare"))
    session = testing.LocalCluster(Path("/c/session"))
    items = [_Item("a1", ["aks_cluster"], aks), _Item("a2", ["aks_cluster", "tmp_path"], aks),
             _Item("s1", ["local_cluster"], session), _Item("b1", ["baremetal_cluster"], bare),
             _Item("real", ["cluster"], real=True), _Item("unit", ["tmp_path"])]
    users = testing._ClusterUsers()
    users.items = items
    testing.CLUSTER_FIXTURES.update({"aks_cluster", "baremetal_cluster"})
    try:
        stopped = []
        for item in items:
            users.record(item)
            stopped.append(users.stop_unused(item))
    finally:
        testing.CLUSTER_FIXTURES.difference_update({"aks_cluster", "baremetal_cluster"})
    # aks after its second test, not its first; the session's cluster only after the [real] test that asks for it
    # at run time; nothing stopped twice
    assert stopped == [[], [("aks_cluster", "/c/aks")], [], [("baremetal_cluster", "/c/bare")],
                       [("local_cluster", "/c/session")], []]
    assert downs == [(("down",), "/c/aks"), (("down",), "/c/bare"), (("down",), "/c/session")]


def test_an_item_outside_the_recorded_order_stops_nothing(downs):
    """Under xdist no order is recorded: nothing is stopped early there."""
    users = testing._ClusterUsers()
    item = _Item("a1", ["local_cluster"], testing.LocalCluster(Path("/c/session")))
    users.record(item)
    assert users.stop_unused(item) == [] and downs == []
