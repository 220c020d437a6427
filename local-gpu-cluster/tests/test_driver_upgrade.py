"""The simulated GPU Operator driver upgrade (local_gpu_cluster/driver_upgrade.py) and the driver DaemonSet re-render."""
from __future__ import annotations

import pytest

from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import default_controllers
from local_gpu_cluster.driver_upgrade import STATE, SimulatedDriverUpgrade
from local_gpu_cluster.gpu_operator import SimulatedGpuOperator, gpu_node

NS, DS = "gpu-operator", "nvidia-driver-daemonset"


@pytest.fixture
def world(fake_api_factory):
    def make(count=3, policy=None, **options):
        upgrader = SimulatedDriverUpgrade(step=10.0, **options)
        api = fake_api_factory(clock=FakeClock(), controllers=[SimulatedGpuOperator(), upgrader] + default_controllers())
        for i in range(count):
            api.store.create(gpu_node("n%d" % i))
        api.store.create({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "gpu-operator", "namespace": NS, "labels": {"app": "gpu-operator"}},
                          "spec": {"selector": {"matchLabels": {"app": "gpu-operator"}},
                                   "template": {"metadata": {"labels": {"app": "gpu-operator"}},
                                                "spec": {"containers": [{"name": "op", "image": "op:1"}]}}}})
        api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cp"},
                          "spec": {"driver": {"enabled": True, "version": "595.91.07", "upgradePolicy": dict(
                              {"autoUpgrade": True, "maxParallelUpgrades": 1, "drain": {"enable": False}},
                              **(policy or {}))}}})
        return api, upgrader
    return make


def states(api):
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(STATE) for n in api.store.list("v1", "Node")}


def change_version(api, version="595.100.05"):
    api.store.patch("nvidia.com/v1", "ClusterPolicy", "cp", {"spec": {"driver": {"version": version}}})


def test_a_new_driver_version_re_renders_the_driver_template_only(world):
    api, upgrader = world(count=2, policy={"autoUpgrade": False})
    before = {d["metadata"]["name"]: d for d in api.store.list("apps/v1", "DaemonSet", NS)}
    assert before[DS]["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert before[DS]["status"]["updatedNumberScheduled"] == 2
    change_version(api)
    after = {d["metadata"]["name"]: d for d in api.store.list("apps/v1", "DaemonSet", NS)}
    driver = after[DS]
    assert driver["metadata"]["generation"] == 2
    assert driver["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/driver:595.100.05-ubuntu24.04"
    assert driver["status"]["updatedNumberScheduled"] == 0 and driver["status"]["desiredNumberScheduled"] == 2
    assert all(after[n]["metadata"]["generation"] == before[n]["metadata"]["generation"] for n in after if n != DS)
    assert set(states(api).values()) == {None}, "autoUpgrade false: the upgrade controller does nothing"
    assert api.clock.pending() == 0


@pytest.mark.parametrize("parallel, drain", [(1, False), (2, True), (0, False)])
def test_nodes_move_through_the_states_within_max_parallel_upgrades(world, parallel, drain):
    api, upgrader = world(count=3, policy={"maxParallelUpgrades": parallel, "drain": {"enable": drain}})
    assert set(states(api).values()) == {"upgrade-done"}, "current nodes are labelled done after an install"
    change_version(api)
    assert set(states(api).values()) == {"upgrade-required"}
    api.clock.advance(10)
    cordoned = [n["metadata"]["name"] for n in api.store.list("v1", "Node") if (n.get("spec") or {}).get("unschedulable")]
    assert cordoned == [], "cordon-required is the state before the cordon"
    api.clock.advance(10)
    cordoned = [n["metadata"]["name"] for n in api.store.list("v1", "Node") if (n.get("spec") or {}).get("unschedulable")]
    assert len(cordoned) == (parallel or 3)
    api.clock.advance(400)
    assert set(states(api).values()) == {"upgrade-done"}
    assert upgrader.max_in_progress == (parallel or 3)
    assert not any((n.get("spec") or {}).get("unschedulable") for n in api.store.list("v1", "Node"))
    path = [to for t, node, before, to in upgrader.transitions if node == "n0"]
    assert path[0] == "upgrade-done", "labelled done at install"
    path = path[1:]
    assert ("drain-required" in path) is drain
    assert path[-1] == "upgrade-done" and path[0] == "upgrade-required"
    ds = api.store.get("apps/v1", "DaemonSet", DS, NS)
    assert ds["status"]["updatedNumberScheduled"] == 3
    pods = api.store.list("v1", "Pod", NS, label_selector="app=" + DS)
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
    assert sorted(upgrader.restarted) == ["n0", "n1", "n2"]
    assert api.clock.pending() == 0, "no tick left once every node is done"


def test_a_failing_node_stays_cordoned_and_keeps_its_slot(world):
    api, upgrader = world(count=2, fail_nodes={"n0": "pod-restart-required"})
    change_version(api)
    api.clock.advance(500)
    assert states(api) == {"n0": "upgrade-failed", "n1": "upgrade-required"}
    assert api.store.get("v1", "Node", "n0")["spec"]["unschedulable"] is True
    assert upgrader.restarted == []


def test_a_stuck_node_stays_in_its_state(world):
    api, upgrader = world(count=1, policy={"drain": {"enable": True}}, stuck_nodes={"n0": "drain-required"})
    change_version(api)
    api.clock.advance(1000)
    assert states(api) == {"n0": "drain-required"}
    upgrader.stuck_nodes.clear()
    api.clock.advance(100)
    assert states(api) == {"n0": "upgrade-done"}


def test_skipped_nodes_are_left_alone(world):
    api, upgrader = world(count=2)
    api.store.set_labels("v1", "Node", "n1", {"nvidia.com/gpu-driver-upgrade.skip": "true"})
    change_version(api)
    api.clock.advance(500)
    assert states(api) == {"n0": "upgrade-done", "n1": "upgrade-done"}
    assert upgrader.restarted == ["n0"]
    assert api.store.get("apps/v1", "DaemonSet", DS, NS)["status"]["updatedNumberScheduled"] == 1
