"""Simulated workloads for the smoke tests: a Volcano job controller and pods that succeed, fail or hang.

``SimulatedVolcanoJobs`` does the part of vc-controller-manager the smoke tests rely on: for each
``batch.volcano.sh/v1alpha1`` Job it creates ``<job>-<task>-<index>`` pods from the task templates
(owned by the Job, so deleting the Job deletes them), labelled ``volcano.sh/job-name`` and
``volcano.sh/task-spec`` as Volcano labels them. No gang logic: ``SmokePods`` decides what each pod does.

``SmokePods(outcomes)`` gives every pod labelled ``gpu-platform.io/smoke`` a phase and a log, by the
key ``<check>`` or ``<check>/<task>`` (the task label wins): an ``Outcome``. ``log`` may be a function
``(pod, index, now) -> str`` (index: the pod's position among the pods of its key, in creation order).
An outcome with ``unschedulable`` set stays Pending with ``PodScheduled=False`` and that message, as a
real scheduler leaves a pod it cannot place. Pods without an outcome stay Pending (a hang).
"""

import datetime

from .clock import rfc3339
from .controllers import PHASE, Controller, owner_reference

SMOKE_LABEL = "gpu-platform.io/smoke"
TASK_LABEL = "gpu-platform.io/smoke-task"
VOLCANO_JOB_NAME = "volcano.sh/job-name"
VOLCANO_TASK = "volcano.sh/task-spec"


class Outcome:
    """What a simulated smoke pod does: ends in ``phase`` having printed ``log``."""

    def __init__(self, phase="Succeeded", log="", unschedulable=None):
        self.phase, self.log, self.unschedulable = phase, log, unschedulable


def gang_marker(offset_seconds=0.0):
    """A gang member's log: the marker with the clock's time plus ``offset_seconds`` x the pod's index."""
    def log(pod, index, now):
        moment = now + datetime.timedelta(seconds=offset_seconds * index)
        return "gpu-platform-smoke started %s on gpu-node-%d\n" % (rfc3339(moment), index)
    return log


class SimulatedVolcanoJobs(Controller):
    """Pods for Volcano Jobs' tasks (see module docstring)."""

    watches = frozenset({("batch.volcano.sh", "Job")})

    def __init__(self):
        self.created = []

    def handle(self, event):
        if event.type != "ADDED":
            return
        job = event.obj
        meta = job["metadata"]
        for task in (job.get("spec") or {}).get("tasks") or []:
            template = task.get("template") or {}
            for index in range(task.get("replicas", 1)):
                labels = dict((template.get("metadata") or {}).get("labels") or {})
                labels.update({VOLCANO_JOB_NAME: meta["name"], VOLCANO_TASK: task["name"]})
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "%s-%s-%d" % (meta["name"], task["name"], index),
                                    "namespace": meta["namespace"], "labels": labels,
                                    "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                                    "ownerReferences": [owner_reference(job)]},
                       "spec": dict(template.get("spec") or {}, schedulerName=job["spec"].get("schedulerName"))}
                self.store.create(pod)
                self.created.append(pod["metadata"]["name"])


class SmokePods(Controller):
    """Phases and logs for smoke pods (see module docstring)."""

    watches = frozenset({("", "Pod")})

    def __init__(self, outcomes):
        self.outcomes = dict(outcomes)
        self.seen = {}

    def handle(self, event):
        if event.type != "ADDED":
            return
        pod = event.obj
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        check = labels.get(SMOKE_LABEL)
        if check is None:
            return
        key = "%s/%s" % (check, labels[TASK_LABEL]) if TASK_LABEL in labels else check
        outcome = self.outcomes.get(key) or self.outcomes.get(check)
        index = self.seen.get(key, 0)
        self.seen[key] = index + 1
        if outcome is None:
            self.store.patch("v1", "Pod", meta["name"], {"metadata": {"annotations": {PHASE: "Pending"}}},
                             meta["namespace"])
            return
        log = outcome.log(pod, index, self.clock.now()) if callable(outcome.log) else outcome.log
        self.server.set_pod_log(meta["namespace"], meta["name"], log)
        self.store.patch("v1", "Pod", meta["name"], {"metadata": {"annotations": {PHASE: outcome.phase}}},
                         meta["namespace"])
        if outcome.unschedulable:
            now = rfc3339(self.clock.now())
            self.store.patch_status("v1", "Pod", meta["name"], {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                "message": outcome.unschedulable, "lastTransitionTime": now}]},
                meta["namespace"])
