"""node_maintenance on the fake cluster: cordon, drain through the Eviction API, uncordon; and the adapter's evict."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import EvictionRefused, KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ToolError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import node_maintenance as workflow
from local_gpu_cluster import node_pods
from local_gpu_cluster.clock import FakeClock
from tests.modules.harness import run_module


class World:
    """A fake cluster with node gpu-1 (web x2, a DaemonSet pod, a mirror pod, a finished pod) and gpu-2."""

    def __init__(self, api):
        self.api, self.store = api, api.store
        self.kube = KubeClient(kubeconfig=api.kubeconfig)
        for name in ("gpu-1", "gpu-2"):
            self.store.create(node_pods.node(name))
        self.web = node_pods.controller(self.store, "ReplicaSet", "web", "team-a")
        for i in range(2):
            node_pods.pod(self.store, "web-%d" % i, "gpu-1", "team-a", owner=self.web)
        node_pods.pod(self.store, "device-plugin", "gpu-1", "gpu-operator",
                      owner=node_pods.controller(self.store, "DaemonSet", "device-plugin", "gpu-operator"))
        node_pods.pod(self.store, "kube-proxy-gpu-1", "gpu-1", "kube-system", mirror=True)
        node_pods.pod(self.store, "import", "gpu-1", "team-a", phase="Succeeded",
                      owner=node_pods.controller(self.store, "Job", "import", "team-a"))
        node_pods.pod(self.store, "other", "gpu-2", "team-a", owner=self.web)
        api.clear_log()

    def run(self, check_mode=False, clock=None, **params):
        params.setdefault("name", "gpu-1")
        return workflow.run(params, lambda: self.kube, check_mode=check_mode, clock=clock or self.api.clock,
                            interval=5.0)

    def module(self, check_mode=False, diff=False, **params):
        params = dict({"name": "gpu-1", "kubeconfig": self.api.kubeconfig}, **params)
        return run_module("node_maintenance", params, check_mode=check_mode, diff=diff)

    def unschedulable(self, name="gpu-1"):
        return bool(self.store.get("v1", "Node", name)["spec"].get("unschedulable"))

    def on(self, name="gpu-1"):
        return node_pods.pods_on(self.store, name)


@pytest.fixture
def world(fake_api_factory):
    return World(fake_api_factory(clock=FakeClock(), require_namespaces=False))


LEFT = ["gpu-operator/device-plugin", "kube-system/kube-proxy-gpu-1", "team-a/import"]


def test_drain_cordons_evicts_through_the_api_and_skips_with_reasons(world):
    failed, result = world.module(state="drained")
    assert not failed, result
    assert result["changed"] and result["node"] == "gpu-1" and result["cordoned"] is True
    assert result["evicted"] == ["team-a/web-0", "team-a/web-1"]
    assert world.unschedulable() and world.on() == LEFT and world.on("gpu-2") == ["team-a/other"]
    reasons = {s["pod"]: s["reason"] for s in result["not_evicted"]}
    assert reasons == {"gpu-operator/device-plugin": "DaemonSet-managed (DaemonSet device-plugin)",
                       "kube-system/kube-proxy-gpu-1": "mirror pod of a static pod (the kubelet owns it; the API "
                                                       "cannot evict it)",
                       "team-a/import": "already finished (Succeeded)"}
    writes = [(w["method"], w["path"]) for w in world.api.writes()]
    assert writes == [("PATCH", "/api/v1/nodes/gpu-1"),
                      ("POST", "/api/v1/namespaces/team-a/pods/web-0/eviction"),
                      ("POST", "/api/v1/namespaces/team-a/pods/web-1/eviction")], "cordon first, no plain deletes"
    world.api.clear_log()
    failed, again = world.module(state="drained")
    assert not failed and again["changed"] is False and again["evicted"] == []
    assert world.api.writes() == []


def test_check_mode_reports_the_plan_and_writes_nothing(world):
    failed, result = world.module(state="drained", check_mode=True, diff=True)
    assert not failed, result
    assert result["changed"] and result["evicted"] == ["team-a/web-0", "team-a/web-1"]
    plan = result["plan"]
    assert plan["cordon"] is True and plan["evict"] == ["team-a/web-0", "team-a/web-1"]
    assert plan["refused_by_budget_now"] == []
    assert world.api.writes() == [] and not world.unschedulable()
    assert world.on() == sorted(LEFT + ["team-a/web-0", "team-a/web-1"])
    dry_runs = [r for r in world.api.request_log if r["method"] in ("PATCH", "POST")]
    assert len(dry_runs) == 3 and all(r["query"].get("dryRun") == "All" for r in dry_runs), "server-side dry-run"
    diff = result["diff"][0]
    assert diff["before"] == {"unschedulable": False, "pods": sorted(LEFT + ["team-a/web-0", "team-a/web-1"])}
    assert diff["after"] == {"unschedulable": True, "pods": LEFT}


def test_check_mode_names_the_budget_that_refuses_now(world):
    node_pods.pdb(world.store, "web-pdb", {"app": "web"}, "team-a", max_unavailable=0)
    result = world.run(state="drained", check_mode=True)
    refused = result["plan"]["refused_by_budget_now"]
    assert [r["pod"] for r in refused] == ["team-a/web-0", "team-a/web-1"]
    assert "The disruption budget web-pdb needs 3 healthy pods and has 3 currently" in refused[0]["reason"]
    assert world.api.writes() == []


def test_cordon_then_uncordon_with_diff_and_idempotence(world):
    failed, result = world.module(state="cordoned", diff=True)
    assert not failed and result["changed"] and result["cordoned"] is True and result["evicted"] == []
    assert result["diff"][0]["before"]["unschedulable"] is False and result["diff"][0]["after"]["unschedulable"]
    assert world.unschedulable() and len(world.on()) == 5, "cordon evicts nothing"
    assert world.module(state="cordoned")[1]["changed"] is False
    failed, result = world.module(state="uncordoned", diff=True)
    assert not failed and result["changed"] and result["cordoned"] is False
    assert "unschedulable" not in world.store.get("v1", "Node", "gpu-1")["spec"], "the field is removed"
    world.api.clear_log()
    failed, again = world.module(state="uncordoned")
    assert not failed and again["changed"] is False and world.api.writes() == []


def test_uncordon_in_check_mode_writes_nothing(world):
    world.store.patch("v1", "Node", "gpu-1", {"spec": {"unschedulable": True}})
    world.api.clear_log()
    failed, result = world.module(state="uncordoned", check_mode=True)
    assert not failed and result["changed"] and world.unschedulable() and world.api.writes() == []


@pytest.mark.parametrize("pod_kwargs, words, allow", [
    ({"emptydir": True, "owner": "web"}, "delete_emptydir_data: pods with emptyDir volumes would lose that data: "
                                         "team-a/scratch. Fix: set delete_emptydir_data: true", "delete_emptydir_data"),
    ({}, "force: pods that no controller manages would not be recreated: team-a/scratch. Fix: set force: true",
     "force"),
])
def test_emptydir_and_unmanaged_pods_are_refused_before_any_write(world, pod_kwargs, words, allow):
    owner = world.web if pod_kwargs.pop("owner", None) else None
    node_pods.pod(world.store, "scratch", "gpu-1", "team-a", owner=owner, **pod_kwargs)
    world.api.clear_log()
    failed, result = world.module(state="drained")
    assert failed and words in result["msg"], result["msg"]
    assert "refused before any change (the node was not cordoned)" in result["msg"]
    assert result["plan"]["blocking"][0]["option"] == allow
    assert world.api.writes() == [] and not world.unschedulable(), "the node stays schedulable"
    failed, result = world.module(state="drained", **{allow: True})
    assert not failed and "team-a/scratch" in result["evicted"] and world.on() == LEFT


def test_pod_selector_evicts_only_matching_pods(world):
    node_pods.pod(world.store, "trainer", "gpu-1", "team-a", labels={"gpu-platform.io/workload": "training"},
                  owner=node_pods.controller(world.store, "StatefulSet", "trainer", "team-a"))
    failed, result = world.module(state="drained", pod_selector="gpu-platform.io/workload=training")
    assert not failed and result["evicted"] == ["team-a/trainer"]
    skipped = {s["pod"]: s["reason"] for s in result["not_evicted"]}
    assert skipped["team-a/web-0"] == "does not match pod_selector gpu-platform.io/workload=training"
    assert "team-a/web-0" in world.on() and "team-a/trainer" not in world.on()


def test_a_budget_refusal_is_retried_until_the_budget_allows_it(world):
    node_pods.pdb(world.store, "web-pdb", {"app": "web"}, "team-a", max_unavailable=0)
    clock = world.api.clock
    clock.call_later(30, lambda: world.store.patch("policy/v1", "PodDisruptionBudget", "web-pdb",
                                                   {"spec": {"maxUnavailable": 3}}, "team-a"))
    started = clock.time()
    result = world.run(state="drained", wait_timeout="2m")
    assert result["evicted"] == ["team-a/web-0", "team-a/web-1"] and world.on() == LEFT
    assert 30 <= clock.time() - started <= 40, "retried on the clock until the budget changed, then went on"
    posts = [w for w in world.api.request_log if w["method"] == "POST"]
    assert [p["code"] for p in posts].count(429) >= 2 and [p["code"] for p in posts][-2:] == [201, 201]


def test_a_budget_that_never_allows_times_out_naming_pod_and_budget(world):
    node_pods.pdb(world.store, "web-pdb", {"app": "web"}, "team-a", min_available=3)
    with pytest.raises(GpuPlatformError) as err:
        world.run(state="drained", wait_timeout="60s")
    msg = err.value.msg
    assert msg.startswith("drain of node gpu-1 timed out after 60s evicting pods; still on the node: ")
    assert ("team-a/web-0 (eviction refused: Cannot evict pod as it would violate the pod's disruption budget. "
            "The disruption budget web-pdb needs 3 healthy pods and has 3 currently)") in msg
    assert "The node stays cordoned" in msg and "Fix:" in msg
    assert err.value.details["remaining"] == ["team-a/web-0", "team-a/web-1"]
    assert world.unschedulable() and "team-a/web-0" in world.on()


def test_pods_that_never_go_away_time_out_naming_them(world):
    node_pods.pod(world.store, "held", "gpu-1", "team-a", owner=world.web, finalizers=["example.com/hold"])
    failed, result = world.module(state="drained", wait_timeout="1s")
    assert failed
    assert "timed out after 1s waiting for evicted pods to be gone" in result["msg"]
    assert "team-a/held (terminating since " in result["msg"] and "finalizers: example.com/hold" in result["msg"]
    assert result["remaining"] == ["team-a/held"]


def test_an_already_terminating_pod_is_waited_for_not_evicted_again(world):
    node_pods.pod(world.store, "held", "gpu-1", "team-a", owner=world.web, finalizers=["example.com/hold"])
    world.store.delete("v1", "Pod", "held", "team-a")
    world.store.patch("v1", "Node", "gpu-1", {"spec": {"unschedulable": True}})
    for i in range(2):
        world.store.delete("v1", "Pod", "web-%d" % i, "team-a")
    world.api.clock.call_later(20, lambda: node_pods.release_finalizers(world.store, "held", "team-a"))
    world.api.clear_log()
    result = world.run(state="drained")
    assert result["changed"] is False and result["plan"]["terminating"] == ["team-a/held"]
    assert world.api.writes() == [] and "team-a/held" not in world.on()


def test_a_missing_node_is_an_error_naming_it(world):
    failed, result = world.module(name="gpu-9", state="drained")
    assert failed and result["msg"].startswith("name: node gpu-9 does not exist. Fix:")
    assert world.api.writes() == []


@pytest.mark.parametrize("params, start", [
    ({"name": "GPU_1"}, "name: 'GPU_1' is not a valid node name"),
    ({"pod_selector": "app in ()"}, "pod_selector: 'app in ()' lists no values"),
    ({"wait_timeout": "soon"}, "wait_timeout: 'soon' is not a duration"),
])
def test_bad_input_through_the_module(world, params, start):
    failed, result = world.module(**params)
    assert failed and result["msg"].startswith(start) and "Fix:" in result["msg"]
    assert world.api.request_log == [], "refused before the cluster is contacted"


def test_every_example_works_on_the_fake_cluster(world):
    from ansible_collections.gpu_platform.cluster.plugins.modules import node_maintenance
    for name in ("gpu-node-01", "gpu-node-02"):
        world.store.create(node_pods.node(name))
    node_pods.pod(world.store, "job", "gpu-node-01", "team-a", labels={"gpu-platform.io/workload": "training"},
                  owner=world.web, emptydir=True)
    examples = [t["gpu_platform.cluster.node_maintenance"] for t in yaml.safe_load(node_maintenance.EXAMPLES)]
    assert len(examples) == 4
    for args in examples:
        failed, result = world.module(**args)
        assert not failed, (args, result)
    assert not world.unschedulable("gpu-node-01") and world.unschedulable("gpu-node-02")
    assert world.on("gpu-node-01") == []


# -- the adapter ---------------------------------------------------------------------------------

def test_adapter_evict(world):
    kube = world.kube
    assert kube.evict("web-0", "team-a", dry_run=True) is True and "team-a/web-0" in world.on()
    assert kube.evict("web-0", "team-a") is True and "team-a/web-0" not in world.on()
    assert kube.evict("web-0", "team-a") is False, "already gone"
    node_pods.pdb(world.store, "web-pdb", {"app": "web"}, "team-a", max_unavailable=0)
    with pytest.raises(EvictionRefused) as err:
        kube.evict("web-1", "team-a")
    assert err.value.details["status"] == 429 and "web-pdb" in err.value.msg
    node_pods.pdb(world.store, "web-pdb-2", {"app": "web"}, "team-a", max_unavailable=1)
    with pytest.raises(ToolError) as err:
        kube.evict("web-1", "team-a")
    assert not isinstance(err.value, EvictionRefused)
    assert err.value.msg.startswith("evict pod team-a/web-1 failed: 500 This pod has more than one")


def test_adapter_patch_merge_removes_a_field_with_none(world):
    kube = world.kube
    kube.patch_merge("v1", "Node", "gpu-1", {"spec": {"unschedulable": True}}, dry_run=True)
    assert not world.unschedulable()
    assert kube.patch_merge("v1", "Node", "gpu-1", {"spec": {"unschedulable": True}})["spec"]["unschedulable"]
    kube.patch_merge("v1", "Node", "gpu-1", {"spec": {"unschedulable": None}})
    assert "unschedulable" not in world.store.get("v1", "Node", "gpu-1")["spec"]
