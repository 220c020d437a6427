"""gpu_driver_upgrade on the fake cluster, with a simulated GPU Operator and its driver upgrade controller."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import gpu_driver_upgrade as workflow
from ansible_collections.gpu_platform.cluster.plugins.modules import gpu_driver_upgrade
from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import default_controllers
from local_gpu_cluster.driver_upgrade import STATE, SimulatedDriverUpgrade
from local_gpu_cluster.gpu_operator import SimulatedGpuOperator, driver_pod, gpu_node
from tests.modules.harness import run_module

NS = "gpu-operator"
DS = "nvidia-driver-daemonset"
OLD, NEW = "595.91.07", "595.100.05"
# The states one node goes through with drain off (drain-required skipped), in order.
PATH = ["upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
        "pod-restart-required", "validation-required", "uncordon-required", "upgrade-done"]


def policy(**over):
    out = {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%",
           "waitForCompletion": {"timeoutSeconds": 0}, "podDeletion": {"force": False, "timeoutSeconds": 300},
           "drain": {"enable": False, "timeoutSeconds": 300}}
    out.update(over)
    return out


def operator_deployment():
    """The GPU Operator's Deployment, which the simulated operator keys its operands on."""
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "gpu-operator", "namespace": NS, "labels": {"app": "gpu-operator"}},
            "spec": {"selector": {"matchLabels": {"app": "gpu-operator"}},
                     "template": {"metadata": {"labels": {"app": "gpu-operator"}},
                                  "spec": {"containers": [{"name": "op", "image": "op:v26.7.0"}]}}}}


@pytest.fixture
def cluster(fake_api_factory):
    """make(count, step, upgrader=True|False, **controller options) -> (api, kube, upgrader)."""
    def make(count=3, step=10.0, upgrader=True, upgrade_policy=None, **options):
        controller = SimulatedDriverUpgrade(step=step, **options) if upgrader else None
        api = fake_api_factory(clock=FakeClock(), controllers=[SimulatedGpuOperator()]
                               + ([controller] if controller else []) + default_controllers())
        for i in range(count):
            api.store.create(gpu_node("gpu-%02d" % i))
        api.store.create(operator_deployment())
        api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                          "spec": {"driver": {"enabled": True, "version": OLD,
                                              "upgradePolicy": upgrade_policy or policy()}}})
        kube = KubeClient(kubeconfig=api.kubeconfig)
        api.clear_log()
        return api, kube, controller
    return make


def set_version(api, version):
    api.store.patch("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"spec": {"driver": {"version": version}}})


def states(api):
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(STATE, "") for n in api.store.list("v1", "Node")}


def follow(api, kube, **params):
    base = {"wait_timeout": "2h", "stuck_timeout": "10m", "poll_interval": 5}
    base.update(params)
    return workflow.run(base, lambda: kube, clock=api.clock)


def writes(api):
    return [r for r in api.request_log if r["method"] not in ("GET",)]


@pytest.mark.parametrize("parallel, drain", [(1, False), (2, True), (0, False)])
def test_follows_every_node_to_done_within_the_policy(cluster, parallel, drain):
    upgrade_policy = policy(maxParallelUpgrades=parallel, drain={"enable": drain})
    api, kube, upgrader = cluster(count=3, upgrade_policy=upgrade_policy)
    assert set(states(api).values()) == {"upgrade-done"}, "a fresh install leaves every node done"
    set_version(api, NEW)
    result = follow(api, kube, expected_driver_version=NEW)
    assert result["done"] and result["changed"] is False and result["failed_nodes"] == []
    assert set(states(api).values()) == {"upgrade-done"}
    assert 1 <= upgrader.max_in_progress <= (parallel or 3)
    if parallel == 0:
        assert upgrader.max_in_progress == 3, "no limit: every node at once"
    path = PATH[:4] + (["drain-required"] if drain else []) + PATH[4:]
    for name in ("gpu-00", "gpu-01", "gpu-02"):
        seen = [t["to"] for t in result["transitions"] if t["node"] == name]
        assert seen == path[path.index(seen[0]):], (name, seen)  # in order, from wherever the first read saw it
        assert seen[-1] == "upgrade-done"
    ats = [t["at"] for t in result["transitions"]]
    assert ats == sorted(ats) and ats[-1] <= result["elapsed"]
    assert [d["current"] for d in result["daemonsets"]] == [True]
    assert result["daemonsets"][0]["updated"] == result["daemonsets"][0]["desired"] == 3
    assert result["daemonsets"][0]["update_strategy"] == "OnDelete"
    assert {n["driver_version"] for n in result["nodes"]} == {NEW}
    assert all(n["pod_current"] and not n["cordoned"] for n in result["nodes"])
    assert writes(api) == [], "read only: no write reached the cluster"


def test_a_changed_daemonset_whose_nodes_still_say_done_is_not_done(cluster):
    """No upgrade controller runs: the template changed, the labels still say upgrade-done from last time."""
    api, kube, dummy = cluster(count=2, upgrader=False)
    for name in ("gpu-00", "gpu-01"):
        api.store.set_labels("v1", "Node", name, {STATE: "upgrade-done"})
    set_version(api, NEW)
    ds = api.store.get("apps/v1", "DaemonSet", DS, NS)
    assert ds["status"]["updatedNumberScheduled"] == 0 and ds["metadata"]["generation"] == 2
    once = follow(api, kube, wait=False)
    assert once["done"] is False and once["pending"] == ["gpu-00", "gpu-01"]
    assert once["daemonsets"][0]["not_current"] == "0 of 2 pods run the current template"
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, wait_timeout="5m", stuck_timeout="1h")
    msg = err.value.msg
    assert "did not finish within 300s" in msg
    assert "gpu-00 upgrade-done" in msg and "gpu-01 upgrade-done" in msg
    assert "DaemonSet gpu-operator/nvidia-driver-daemonset: 0 of 2 pods run the current template" in msg


def test_a_failed_node_stops_at_once_naming_it_and_the_fix(cluster):
    api, kube, upgrader = cluster(count=3, fail_nodes={"gpu-01": "validation-required"})
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube)
    msg = err.value.msg
    assert "GPU driver upgrade failed on gpu-01 (driver pod gpu-operator/nvidia-driver-daemonset-gpu-01)" in msg
    assert "nvidia.com/gpu-driver-upgrade-state=upgrade-failed" in msg
    assert "kubectl -n gpu-operator logs POD --all-containers" in msg
    assert "kubectl label node gpu-01 nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite" in msg
    assert err.value.details["failed_nodes"] == ["gpu-01"]
    assert states(api)["gpu-02"] == "upgrade-required", "with one slot, the next node never started"
    assert api.store.get("v1", "Node", "gpu-01")["spec"]["unschedulable"] is True
    assert {"node": "gpu-01", "from": "validation-required", "to": "upgrade-failed"} in [
        {k: t[k] for k in ("node", "from", "to")} for t in err.value.details["transitions"]]


def test_a_stuck_node_is_named_with_its_state_how_long_and_what_it_waits_for(cluster):
    api, kube, upgrader = cluster(count=2, upgrade_policy=policy(drain={"enable": True}),
                                  stuck_nodes={"gpu-00": "drain-required"})
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, stuck_timeout="3m")
    msg = err.value.msg
    assert "stuck (no state change within stuck_timeout 180s)" in msg
    assert "gpu-00 has been in drain-required for 180s" in msg
    assert "PodDisruptionBudget" in msg
    assert "gpu-01" not in msg.split("Fix:")[0], "gpu-01 is waiting for a slot, not stuck"
    assert err.value.details["stuck"] == [{"node": "gpu-00", "state": "drain-required", "seconds": 180.0}]


def test_wait_for_jobs_stuck_points_at_the_pod_selector(cluster):
    api, kube, upgrader = cluster(count=1, stuck_nodes={"gpu-00": "wait-for-jobs-required"})
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, stuck_timeout="2m")
    assert "gpu-00 has been in wait-for-jobs-required for 120s" in err.value.msg
    assert "waitForCompletion.podSelector" in err.value.msg


def test_the_overall_timeout_names_every_node_not_done_with_its_state(cluster):
    api, kube, upgrader = cluster(count=3, step=100.0)
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, wait_timeout="250s", stuck_timeout="1h")
    msg = err.value.msg
    assert "did not finish within 250s" in msg
    assert "gpu-00 wait-for-jobs-required" in msg
    assert "gpu-01 upgrade-required" in msg and "gpu-02 upgrade-required" in msg
    assert "0 of 3 pods run the current template" in msg


def test_check_mode_reports_states_without_waiting(cluster):
    api, kube, upgrader = cluster(count=2)
    set_version(api, NEW)
    api.clock.advance(25)  # two steps of the first node
    before = api.clock.time()
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig}, check_mode=True)
    assert not failed, result
    assert api.clock.time() == before, "no wait"
    assert result["changed"] is False and result["done"] is False
    assert {n["name"]: n["state"] for n in result["nodes"]} == {
        "gpu-00": "wait-for-jobs-required", "gpu-01": "upgrade-required"}
    assert result["nodes"][0]["cordoned"] is True and result["nodes"][1]["cordoned"] is False
    assert result["pending"] == ["gpu-00", "gpu-01"] and result["transitions"] == []
    assert writes(api) == []


def test_auto_upgrade_false_says_the_operator_will_not_upgrade_and_fails_on_outdated_nodes(cluster):
    api, kube, upgrader = cluster(count=2, upgrade_policy=policy(autoUpgrade=False))
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube)
    msg = err.value.msg
    assert "autoUpgrade is false" in msg and "will not upgrade the driver on nodes by itself" in msg
    assert "gpu-00, gpu-01 still run an older driver pod" in msg
    assert "gpu_operator_driver_upgrade_policy.autoUpgrade: true" in msg
    report = follow(api, kube, report_only=True)
    assert report["done"] is False and report["auto_upgrade"] is False
    assert any("by itself" in w for w in report["warnings"])
    # Nodes upgraded by hand (new pods): done, though no state label says so.
    for name in ("gpu-00", "gpu-01"):
        api.store.delete("v1", "Pod", "%s-%s" % (DS, name), NS)
        api.store.create(driver_pod(api.store.get("apps/v1", "DaemonSet", DS, NS), name))
    assert follow(api, kube)["done"] is True


def test_expected_version_other_than_the_template_fails_at_once(cluster):
    api, kube, upgrader = cluster(count=1, step=1000.0)
    set_version(api, NEW)
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, expected_driver_version="595.120.01")
    assert "expected_driver_version is 595.120.01 but the driver DaemonSet's template runs %s" % NEW in err.value.msg
    assert api.clock.time() - FakeClock().time() < 1, "failed without waiting"


def test_expected_version_is_read_from_gfd_labels_without_a_versioned_image(cluster):
    api, kube, upgrader = cluster(count=1)
    api.store.patch("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"spec": {"driver": {"version": None}}})
    # The template has no version tag now: the pod is replaced by the simulated upgrade.
    api.clock.advance(200)
    api.store.set_labels("v1", "Node", "gpu-00", {"nvidia.com/cuda.driver.major": "595",
                                                  "nvidia.com/cuda.driver.minor": "91",
                                                  "nvidia.com/cuda.driver.rev": "07"})
    result = follow(api, kube, expected_driver_version=OLD)
    assert result["done"] and result["nodes"][0]["gfd_version"] == OLD and result["nodes"][0]["pod_version"] == ""


def test_skipped_nodes_are_reported_not_waited_for(cluster):
    api, kube, upgrader = cluster(count=2)
    api.store.set_labels("v1", "Node", "gpu-01", {"nvidia.com/gpu-driver-upgrade.skip": "true"})
    set_version(api, NEW)
    result = follow(api, kube)
    assert result["done"]
    skipped = next(n for n in result["nodes"] if n["name"] == "gpu-01")
    assert skipped["skipped"] and skipped["pod_current"] is False


@pytest.mark.parametrize("params, field, words", [
    ({"wait_timeout": "soon"}, "wait_timeout", "is not a duration"),
    ({"stuck_timeout": "0"}, "stuck_timeout", "greater than zero"),
    ({"poll_interval": 0}, "poll_interval", "1 or more"),
    ({"expected_driver_version": "595"}, "expected_driver_version", "is not a full driver version"),
    ({"expected_driver_version": "latest"}, "expected_driver_version", "is not a full driver version"),
    ({"node_selector": "nodepool in (a"}, "node_selector", "is not a label selector"),
    ({"driver_selector": ""}, "driver_selector", "is empty"),
    ({"driver_selector": "=nvidia"}, "driver_selector", "is not a label selector"),
    ({"operator_namespace": "GPU_Operator"}, "operator_namespace", "is not a valid name"),
    ({"nodes": ["Bad_Node"]}, "nodes", "is not a node name"),
])
def test_bad_inputs_name_the_option_and_touch_nothing(cluster, params, field, words):
    api, kube, upgrader = cluster(count=1)
    failed, result = run_module("gpu_driver_upgrade", dict(params, kubeconfig=api.kubeconfig))
    assert failed, result
    assert result["msg"].startswith(field + ": "), result["msg"]
    assert words in result["msg"] and "Fix: " in result["msg"]
    assert api.request_log == [], "no request reached the cluster"


def test_nodes_and_node_selector_together_are_refused(cluster):
    api, kube, upgrader = cluster(count=1)
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig, "nodes": ["gpu-00"],
                                                       "node_selector": "a=b"})
    assert failed and "mutually exclusive" in result["msg"]


def test_missing_objects_are_clear_errors(cluster, fake_api_factory):
    api, kube, upgrader = cluster(count=1)
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig, "nodes": ["gpu-09"]})
    assert failed and result["msg"].startswith("nodes: node gpu-09 does not exist")
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig, "node_selector": "pool=none"})
    assert failed and "selects no node" in result["msg"]
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig, "operator_namespace": "other"})
    assert failed and "no driver DaemonSet (app=nvidia-driver-daemonset) in namespace other" in result["msg"]
    api.store.delete("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": api.kubeconfig})
    assert failed and "no ClusterPolicy exists" in result["msg"]
    bare = fake_api_factory(clock=FakeClock(), controllers=[], crd_dirs=[])
    failed, result = run_module("gpu_driver_upgrade", {"kubeconfig": bare.kubeconfig})
    assert failed and "does not serve nvidia.com/v1 ClusterPolicy" in result["msg"]


def test_every_example_passes_on_the_fake_cluster(cluster):
    api, kube, upgrader = cluster(count=1)
    api.store.create(gpu_node("gpu-node-1"))
    api.store.create(gpu_node("gpu-node-2"))
    api.store.delete("v1", "Node", "gpu-00")
    # The driver DaemonSet's pods follow the nodes (the simulated operator makes pods at install only).
    for name in ("gpu-node-1", "gpu-node-2"):
        api.store.create(driver_pod(api.store.get("apps/v1", "DaemonSet", DS, NS), name))
    assert set(states(api).values()) == {"upgrade-done"}
    examples = [t["gpu_platform.cluster.gpu_driver_upgrade"] for t in yaml.safe_load(gpu_driver_upgrade.EXAMPLES)]
    assert len(examples) == 3
    for args in examples:
        failed, result = run_module("gpu_driver_upgrade", dict(args, kubeconfig=api.kubeconfig))
        assert not failed and result["done"], (args, result)
        assert {n["name"] for n in result["nodes"]} == {"gpu-node-1", "gpu-node-2"}


def test_without_a_pinned_version_the_clusterpolicys_is_waited_for_until_the_operator_rolls_it(fake_api_factory):
    """Right after a chart upgrade with the chart's default driver (no expected_driver_version), the ClusterPolicy
    asks for the new driver while the operator has not yet rolled its DaemonSet: every node still reads upgrade-done
    on the old one. That is not done: the version the ClusterPolicy names is waited for, and a template that never
    moves is named after stuck_timeout."""
    operator = SimulatedGpuOperator()
    api = fake_api_factory(clock=FakeClock(), controllers=[operator] + default_controllers())
    for i in range(2):
        api.store.create(gpu_node("gpu-%02d" % i))
    api.store.create(operator_deployment())
    api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                      "spec": {"driver": {"enabled": True, "version": OLD, "upgradePolicy": policy()}}})
    api.store.set_labels("v1", "Node", "gpu-00", {STATE: "upgrade-done"})
    api.store.set_labels("v1", "Node", "gpu-01", {STATE: "upgrade-done"})
    api.remove_controller(operator)  # the operator is slow to see the change: its DaemonSet stays the old release's
    set_version(api, NEW)
    kube = KubeClient(kubeconfig=api.kubeconfig)
    assert NEW not in api.store.get("apps/v1", "DaemonSet", DS, NS)["spec"]["template"]["spec"]["containers"][0]["image"]
    once = follow(api, kube, wait=False)
    assert once["done"] is False and once["pending"] == ["gpu-00", "gpu-01"], once
    with pytest.raises(GpuPlatformError) as err:
        follow(api, kube, stuck_timeout="60s")
    assert "the ClusterPolicy asks for driver %s but the driver DaemonSet's template still runs %s after 60s" % (
        NEW, OLD) in err.value.msg
