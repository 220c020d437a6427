"""The simulated controllers and the test clock, through the store's Python API and HTTP."""

import json
import urllib.request

import pytest

from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import Controller, MigManager, StatusSetter

CONTAINERS = [{"name": "c", "image": "img:1"}]


def _workload(kind, name, template_labels=None, node_selector=None, replicas=None):
    labels = {"app": name, **(template_labels or {})}
    spec = {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": CONTAINERS,
                                  **({"nodeSelector": node_selector} if node_selector else {})}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _node(name, labels=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                                                             "labels": labels or {}}}


def _job(name, annotations=None, backoff_limit=None):
    spec = {"template": {"metadata": {"annotations": annotations or {}},
                         "spec": {"restartPolicy": "Never", "containers": CONTAINERS}}}
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _conditions(obj):
    return {c["type"]: c["status"] for c in obj["status"].get("conditions", [])}


def test_fake_clock_runs_due_timers_in_order():
    clock = FakeClock()
    fired = []
    clock.call_later(5, lambda: fired.append(("b", clock.time())))
    clock.call_later(2, lambda: fired.append(("a", clock.time())))
    cancelled = clock.call_later(3, lambda: fired.append("never"))
    cancelled.cancel()
    start = clock.time()
    clock.advance(4)
    assert fired == [("a", start + 2)]
    clock.sleep(1)
    assert fired[-1] == ("b", start + 5) and clock.time() == start + 5
    assert clock.pending() == 0


def test_deployment_rollout_and_never_ready(fake_api):
    store = fake_api.store
    store.create(_workload("Deployment", "web", replicas=2))
    first = store.list("apps/v1", "ReplicaSet", "default")
    assert len(first) == 1 and first[0]["status"]["readyReplicas"] == 2
    deployment = store.get("apps/v1", "Deployment", "web", "default")
    assert deployment["status"]["observedGeneration"] == deployment["metadata"]["generation"]
    assert _conditions(deployment) == {"Available": "True", "Progressing": "True"}

    store.patch("apps/v1", "Deployment", "web", {"spec": {"template": {"metadata": {
        "labels": {"fake.gpu-platform.io/never-ready": "true"}}}}}, "default")
    replicasets = {rs["metadata"]["name"]: rs for rs in
                   store.list("apps/v1", "ReplicaSet", "default")}
    assert len(replicasets) == 2
    assert replicasets[first[0]["metadata"]["name"]]["spec"]["replicas"] == 0
    deployment = store.get("apps/v1", "Deployment", "web", "default")
    assert deployment["status"]["availableReplicas"] == 0
    assert deployment["status"]["unavailableReplicas"] == 2
    assert _conditions(deployment) == {"Available": "False", "Progressing": "True"}


def test_daemonset_follows_matching_nodes(fake_api):
    store = fake_api.store
    store.create(_node("n1", {"gpu": "true"}))
    store.create(_node("n2"))
    store.create(_workload("DaemonSet", "plugin", node_selector={"gpu": "true"}))
    store.create(_workload("DaemonSet", "stuck", {"fake.gpu-platform.io/never-ready": "true"}))

    def status(name):
        return store.get("apps/v1", "DaemonSet", name, "default")["status"]
    assert status("plugin")["desiredNumberScheduled"] == 1
    store.set_labels("v1", "Node", "n2", {"gpu": "true"})
    assert status("plugin")["numberReady"] == 2 and status("plugin")["numberAvailable"] == 2
    assert status("stuck")["desiredNumberScheduled"] == 2 and status("stuck")["numberReady"] == 0


def test_statefulset_ready(fake_api):
    fake_api.store.create(_workload("StatefulSet", "db", replicas=3))
    status = fake_api.store.get("apps/v1", "StatefulSet", "db", "default")["status"]
    assert status["readyReplicas"] == 3 and status["currentRevision"] == status["updateRevision"]


def test_job_completes(fake_api):
    fake_api.store.create(_job("ok"))
    job = fake_api.store.get("batch/v1", "Job", "ok", "default")
    assert job["status"]["succeeded"] == 1 and _conditions(job)["Complete"] == "True"
    pods = fake_api.store.list("v1", "Pod", "default", label_selector="job-name=ok")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"]


def test_job_fails_after_backoff_limit(fake_api):
    fake_api.store.create(_job("bad", {"fake.gpu-platform.io/phase": "Failed"}, backoff_limit=2))
    job = fake_api.store.get("batch/v1", "Job", "bad", "default")
    assert job["status"]["failed"] == 3 and _conditions(job)["Failed"] == "True"
    assert len(fake_api.store.list("v1", "Pod", "default", label_selector="job-name=bad")) == 3


def test_pod_phase_after_delay_and_hanging_pod(fake_api):
    store = fake_api.store
    for name, annotations in (("slow", {"fake.gpu-platform.io/phase": "Succeeded",
                                        "fake.gpu-platform.io/phase-delay": "30"}),
                              ("hang", {"fake.gpu-platform.io/phase": "Pending"})):
        store.create({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": name, "namespace": "default",
                                   "annotations": annotations},
                      "spec": {"containers": CONTAINERS}})

    def phase(name):
        return store.get("v1", "Pod", name, "default")["status"]["phase"]
    assert phase("slow") == "Pending"
    fake_api.clock.advance(29)
    assert phase("slow") == "Pending"
    fake_api.clock.advance(1)
    assert phase("slow") == "Succeeded" and phase("hang") == "Pending"


def test_status_setter_with_delay(fake_api):
    setter = StatusSetter("nvidia.com/v1", "ClusterPolicy",
                          lambda obj: {"state": "ready"}, delay=10)
    fake_api.add_controller(setter)
    fake_api.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                           "metadata": {"name": "cp"}, "spec": {}})
    assert "status" not in fake_api.store.get("nvidia.com/v1", "ClusterPolicy", "cp")
    fake_api.clock.advance(10)
    policy = fake_api.store.get("nvidia.com/v1", "ClusterPolicy", "cp")
    assert policy["status"] == {"state": "ready"}


def test_mig_manager_pending_then_success_or_failure(fake_api):
    mig = fake_api.add_controller(MigManager(delay=5, fail_nodes={"bad"}))
    store = fake_api.store
    store.create(_node("good"))
    store.create(_node("bad"))
    for name in ("good", "bad"):
        store.set_labels("v1", "Node", name, {MigManager.CONFIG: "all-1g.10gb"})

    def state(name):
        return store.get("v1", "Node", name)["metadata"]["labels"].get(MigManager.STATE)
    assert (state("good"), state("bad")) == ("pending", "pending")
    fake_api.clock.advance(5)
    assert (state("good"), state("bad")) == ("success", "failed")
    store.set_labels("v1", "Node", "good", {MigManager.CONFIG: "all-disabled"})
    fake_api.clock.advance(2)
    store.set_labels("v1", "Node", "good", {MigManager.CONFIG: "all-balanced"})
    fake_api.clock.advance(3)  # the first change's timer fires but is superseded
    assert state("good") == "pending"
    fake_api.clock.advance(2)
    assert state("good") == "success"
    mig.fail_nodes.add("good")
    store.set_labels("v1", "Node", "good", {MigManager.CONFIG: "all-2g.20gb"})
    fake_api.clock.advance(5)
    assert state("good") == "failed"


def test_controller_errors_are_recorded(fake_api):
    class Broken(Controller):
        watches = frozenset({("", "ConfigMap")})

        def handle(self, event):
            raise RuntimeError("boom")
    fake_api.add_controller(Broken())
    fake_api.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "x", "namespace": "default"}})
    assert len(fake_api.controller_errors) == 1 and "boom" in fake_api.controller_errors[0]
    fake_api.controller_errors.clear()


def _get_json(server, path):
    with urllib.request.urlopen(server.url + path) as response:
        return json.load(response)


@pytest.mark.parametrize("git_version, served, not_served", [
    ("v1.33.4", "resource.k8s.io/v1beta2", "resource.k8s.io/v1"),
    ("v1.34.1", "resource.k8s.io/v1", None),
])
def test_git_version_and_dra_discovery(fake_api_factory, git_version, served, not_served):
    server = fake_api_factory(crd_dirs=[], git_version=git_version)
    assert _get_json(server, "/version")["gitVersion"] == git_version
    versions = {v["groupVersion"] for g in _get_json(server, "/apis")["groups"]
                for v in g["versions"]}
    assert served in versions
    assert not_served is None or not_served not in versions
    server.git_version = "v1.35.0"
    assert _get_json(server, "/version")["minor"] == "35"
    with pytest.raises(ValueError):
        server.git_version = "1.35"
