"""playbooks/upgrade.yml for real (ansible-playbook, helm 3) on the fake GPU cluster, with a simulated driver
upgrade controller moving the nodes through the GPU Operator's upgrade states.

The controller steps on the fake clock; a ticker thread moves that clock while a playbook runs (the module
polls on wall time), so nodes progress without any real wait of note.
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.chart_repo import ChartRepoServer
from local_gpu_cluster.controllers import Controller
from local_gpu_cluster.driver_upgrade import STATE, SimulatedDriverUpgrade
from tests.playbooks.conftest import NETWORK_OPERATOR_CHART, ROOT

pytestmark = pytest.mark.slow

UPGRADE = str(ROOT / "playbooks" / "upgrade.yml")
SITE = str(ROOT / "site.yml")
NEW = "595.100.05"
NETWORK = {"gpu_platform_network_mode": "rdma_shared",
           "network_operator_selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}
POOLS = [{"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4}]
FOLLOW = "Until every GPU node is upgrade-done (stops naming a failed or stuck node)"


class EventOrder(Controller):
    """The order of what the test compares: nodes reaching upgrade-done, and smoke pods being created."""

    watches = frozenset({("", "Node"), ("", "Pod")})

    def __init__(self):
        self.events = []

    def handle(self, event):
        meta = event.obj["metadata"]
        if event.kind == "Node":
            before = ((event.old or {}).get("metadata", {}).get("labels") or {}).get(STATE)
            after = (meta.get("labels") or {}).get(STATE)
            if after == "upgrade-done" and before != after:
                self.events.append(("done", event.name))
        elif event.type == "ADDED" and meta["name"].startswith("gpu-platform-smoke-"):
            self.events.append(("smoke", "%s/%s" % (meta.get("namespace"), meta["name"])))


@contextlib.contextmanager
def ticking(clock, step=5.0, gate=None):
    """Move the fake clock while a playbook runs (the simulated controllers act on it); with ``gate``, only
    once ``gate()`` is true."""
    stop = threading.Event()

    def run():
        while not stop.is_set():
            if gate is None or gate():
                clock.advance(step)
            time.sleep(0.05)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@pytest.fixture
def upgrade_site(direct_site, chart_cache, gpu_operator_chart, network_operator_chart, scheduling_charts):
    """(runner, api, upgrader, order): the site installed at the default pair's GPU Operator (v26.7.0) with the older
    Network Operator patch 26.4.0 (set directly: no fact for that GPUDirect RDMA pair, so the install acknowledges it),
    ready to upgrade to 26.4.1, the default release pair's (docs/versions.md, "Release pairs")."""
    repos = []

    def make(**upgrader_options):
        runner, api, repo = direct_site()
        older = chart_cache.get(NETWORK_OPERATOR_CHART, version="26.4.0")
        both = ChartRepoServer([gpu_operator_chart, older, network_operator_chart, *scheduling_charts]).start()
        repos.append(both)
        runner.write_vars(**{k: both.url for k, v in runner.group_vars.items() if v == repo.url})
        upgrader = api.add_controller(SimulatedDriverUpgrade(step=5.0, **upgrader_options))
        order = api.add_controller(EventOrder())
        with ticking(api.clock):
            site = runner.run(playbook=SITE, network_operator_chart_version="26.4.0", gpu_platform_accept_unverified=True,
                              gpu_platform_node_pools=POOLS,
                              gpu_platform_upgrade_poll_interval=1, gpu_platform_upgrade_timeout="3m", **NETWORK)
        assert site.failed == 0, site.failure_messages() or site.debug_text()
        assert {n["metadata"]["labels"].get(STATE) for n in api.store.list("v1", "Node")} == {"upgrade-done"}
        api.clear_log()
        order.events.clear()
        return runner, api, upgrader, order

    yield make
    for repo in repos:
        repo.stop()


def releases(api, name, namespace):
    return sorted((int(s["metadata"]["labels"]["version"]), s["metadata"]["labels"]["status"])
                  for s in api.store.list("v1", "Secret", namespace, label_selector="owner=helm,name=" + name))


def following(api):
    """True once gpu_driver_upgrade has read the driver DaemonSets (the operator's upgrade then moves on: the
    module sees the states change, as it would on a real cluster where an upgrade takes minutes per node)."""
    return any(r["method"] == "GET" and r["path"] == "/apis/apps/v1/namespaces/gpu-operator/daemonsets"
               and r["query"].get("labelSelector") for r in list(api.request_log))


def run_upgrade(runner, api, *args, **over):
    with ticking(api.clock, step=1.0, gate=lambda: following(api)):
        return runner.run(*args, playbook=UPGRADE, **over)


def test_upgrade_in_order_follows_every_node_then_is_a_no_op_and_refuses_a_broken_combination(upgrade_site):
    runner, api, upgrader, order = upgrade_site()
    result = run_upgrade(runner, api, network_operator_chart_version="26.4.1", gpu_platform_accept_unverified=True,
                         gpu_platform_driver_version=NEW,
                         gpu_operator_driver_upgrade_policy={"maxParallelUpgrades": 1, "maxUnavailable": "100%"},
                         gpu_platform_upgrade_stuck_timeout="60s")
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    assert result.changed > 0

    # The Network Operator's release is upgraded before the GPU Operator's.
    assert releases(api, "network-operator", "nvidia-network-operator") == [(1, "superseded"), (2, "deployed")]
    assert releases(api, "gpu-operator", "gpu-operator") == [(1, "superseded"), (2, "deployed")]
    paths = [w["path"] for w in api.writes()]
    network_release = next(i for i, p in enumerate(paths) if p.startswith("/api/v1/namespaces/nvidia-network-operator/secrets"))
    gpu_release = next(i for i, p in enumerate(paths) if p.startswith("/api/v1/namespaces/gpu-operator/secrets"))
    assert network_release < gpu_release, "the Network Operator goes on before the GPU Operator"

    # The policy reached the ClusterPolicy; the operator (simulated) honoured it.
    policy = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]
    assert policy["version"] == NEW
    assert policy["upgradePolicy"]["maxParallelUpgrades"] == 1 and policy["upgradePolicy"]["maxUnavailable"] == "100%"
    assert upgrader.max_in_progress == 1, "maxParallelUpgrades 1: one node at a time"
    assert upgrader.restarted == ["gpu-node-1", "gpu-node-2"]

    # Followed to the end: every node upgrade-done on the new driver, the DaemonSet at its template, uncordoned.
    follow = result.result(FOLLOW)
    assert follow["done"] is True and follow["changed"] is False
    assert {n["name"]: (n["state"], n["driver_version"], n["pod_current"]) for n in follow["nodes"]} == {
        "gpu-node-1": ("upgrade-done", NEW, True), "gpu-node-2": ("upgrade-done", NEW, True)}
    assert follow["daemonsets"][0]["current"] and follow["daemonsets"][0]["updated"] == 2
    assert any(t["to"] == "upgrade-done" for t in follow["transitions"]), follow["transitions"]
    for node in api.store.list("v1", "Node"):
        assert not node["spec"].get("unschedulable"), node["metadata"]["name"]
    # ... and before the GPU sharing layer ran: both nodes were done before its first smoke pod.
    done = [i for i, (kind, dummy) in enumerate(order.events) if kind == "done"]
    sharing = [i for i, (kind, name) in enumerate(order.events) if kind == "smoke" and not name.startswith("gpu-operator/")]
    assert len(done) == 2 and sharing and max(done) < min(sharing), order.events
    names = [name for name, dummy in result.tasks()]
    assert names.index(FOLLOW) < names.index("Prove the layer (allocatable per pool, nvidia-smi on each pool's resource)")

    # A second run with the same pins changes nothing.
    api.clear_log()
    again = run_upgrade(runner, api)
    assert again.failed == 0, again.failure_messages()
    assert again.changed == 0, again.changed_tasks()
    assert again.result(FOLLOW)["done"] is True and again.result(FOLLOW)["transitions"] == []
    assert upgrader.restarted == ["gpu-node-1", "gpu-node-2"], "no node upgraded again"

    # A known-broken new combination (the DRA layer needs driver >= 580) stops in preflight: nothing written.
    api.clear_log()
    before = (releases(api, "gpu-operator", "gpu-operator"), releases(api, "network-operator", "nvidia-network-operator"))
    broken = run_upgrade(runner, api, gpu_platform_driver_version="575.57.08", gpu_platform_dra_enabled=True)
    assert broken.failed == 1
    msg = " ".join(broken.failure_messages())
    assert "dra-driver-below-580" in msg and "575.57.08" in msg, msg
    assert api.writes() == [], "refused before any write"
    assert (releases(api, "gpu-operator", "gpu-operator"),
            releases(api, "network-operator", "nvidia-network-operator")) == before
    assert api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]["version"] == NEW
    assert FOLLOW not in [n for n, d in broken.tasks()]

    # So is a bad driver upgrade policy (checks.yml), naming the field path.
    api.clear_log()
    bad = run_upgrade(runner, api, gpu_platform_dra_enabled=False, gpu_platform_driver_version=NEW,
                      gpu_operator_driver_upgrade_policy={"drain": {"enable": True, "timeoutSeconds": -30}})
    assert bad.failed == 1
    assert any("gpu_operator_driver_upgrade_policy.drain.timeoutSeconds: -30 is negative" in m
               for m in bad.failure_messages()), bad.failure_messages()
    assert api.writes() == []


def test_a_failed_node_stops_the_run_then_a_retried_node_that_sticks_is_named(upgrade_site):
    runner, api, upgrader, order = upgrade_site(fail_nodes={"gpu-node-2": "validation-required"})
    failed = run_upgrade(runner, api, gpu_platform_driver_version=NEW, network_operator_chart_version="26.4.1",
                         gpu_platform_accept_unverified=True,
                         gpu_platform_upgrade_stuck_timeout="60s")
    assert failed.failed == 1
    msg = failed.failure_messages()[-1]
    assert "GPU driver upgrade failed on gpu-node-2" in msg and "upgrade-failed" in msg, msg
    assert "kubectl label node gpu-node-2 nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite" in msg
    names = [name for name, dummy in failed.tasks()]
    assert names[-1].endswith(FOLLOW), "the run stopped at the follow, before the GPU sharing layer"
    assert [kind for kind, dummy in order.events if kind == "smoke" and not dummy.startswith("gpu-operator/")] == []
    node = api.store.get("v1", "Node", "gpu-node-2")
    assert node["metadata"]["labels"][STATE] == "upgrade-failed" and node["spec"]["unschedulable"] is True

    # The fix the message names: retry the node. This time it sticks waiting for jobs.
    upgrader.fail_nodes.clear()
    upgrader.stuck_nodes["gpu-node-2"] = "wait-for-jobs-required"
    api.store.set_labels("v1", "Node", "gpu-node-2", {STATE: "upgrade-required"})
    stuck = run_upgrade(runner, api, gpu_platform_driver_version=NEW, network_operator_chart_version="26.4.1",
                        gpu_platform_accept_unverified=True,
                        gpu_platform_upgrade_stuck_timeout="4s")
    assert stuck.failed == 1
    msg = stuck.failure_messages()[-1]
    assert "gpu-node-2 has been in wait-for-jobs-required for" in msg, msg
    assert "waitForCompletion.podSelector" in msg and "gpu-node-1" not in msg.split("Fix:")[0]
    assert stuck.changed == 0, stuck.changed_tasks()


# -- host mode: what can be checked here (the hosts are not GPU hosts) ------------------------------------------
# The batch itself (drain, host_driver, uncordon on real GPU hosts) is not run anywhere in make test: why, and what
# proves its parts instead, is in docs/testing.md ("Skips"). There is no skipped placeholder for it.


def host_play():
    plays = yaml.safe_load(Path(UPGRADE).read_text())
    return next(p for p in plays if p.get("hosts") == "gpu_hosts")


def test_host_mode_drains_upgrades_and_uncordons_in_that_order_in_batches():
    play = host_play()
    assert play["serial"] == "{{ gpu_platform_upgrade_serial }}" and play["max_fail_percentage"] == 0
    outer = next(t for t in play["tasks"] if "block" in t)
    assert outer["when"] == "_driver.mode == 'host' and _driver.owner == 'host'"
    plan, decide = outer["block"][0], outer["block"][1]
    assert plan["ansible.builtin.include_role"] == {"name": "gpu_platform.cluster.host_driver", "tasks_from": "preflight"}
    assert "host_driver_upgrade_needed(_host_driver_plan)" in decide["ansible.builtin.set_fact"]["_upgrade_host"]
    inner = next(t for t in outer["block"] if "block" in t)
    assert inner["when"] == "_upgrade_host.needed | bool", "a host already at the branch is not drained"
    steps = [(next(k for k in t if k.startswith(("gpu_platform.", "ansible.builtin."))), t) for t in inner["block"]]
    kinds = [(k, t[k].get("state") if k.endswith("node_maintenance") else t[k].get("name")) for k, t in steps]
    assert kinds == [("gpu_platform.cluster.node_maintenance", "drained"),
                     ("ansible.builtin.include_role", "gpu_platform.cluster.host_driver"),
                     ("ansible.builtin.include_role", "gpu_platform.cluster.peermem"),
                     ("gpu_platform.cluster.node_maintenance", "uncordoned")]
    for key, task in steps:
        if key.endswith("node_maintenance"):
            assert task["delegate_to"] == "{{ _api_host }}" and task[key]["name"] == "{{ _node }}"
