"""Part of local_gpu_cluster/controllers.py: the simulated Job controller (one Pod at a time, retries up to
``backoffLimit``) and Pod controller (phases from annotations, on the clock)."""
import datetime
import json

from .clock import rfc3339
from .controller_base import (
    Controller, PHASE, PHASE_DELAY, _PHASES, _template, conditions, controlled_by, owner_reference,
    set_status)


# ---------------------------------------------------------------- jobs and pods

class JobController(Controller):
    """One Pod at a time per Job; the Job completes or fails with its Pods."""

    watches = frozenset({("batch", "Job"), ("", "Pod")})

    def handle(self, event):
        if event.type == "DELETED":
            return
        if event.kind == "Pod":
            owner = next((ref for ref in event.obj["metadata"].get("ownerReferences") or []
                          if ref.get("kind") == "Job" and ref.get("controller")), None)
            if owner is None:
                return
            job = self.store.get("batch/v1", "Job", owner["name"], event.namespace)
        else:
            job = self.store.get("batch/v1", "Job", event.name, event.namespace)
        if job is not None:
            self._sync(job)

    def _sync(self, job):
        if _finished(job) or (job.get("spec") or {}).get("suspend"):
            return
        pods = [p for p in self.store.list("v1", "Pod", job["metadata"]["namespace"])
                if controlled_by(p, job["metadata"]["uid"])]
        phases = [p.get("status", {}).get("phase", "Pending") for p in pods]
        failed = phases.count("Failed")
        if failed > job["spec"].get("backoffLimit", 6):
            self._finish(job, pods, "Failed")
        elif "Succeeded" in phases:
            self._finish(job, pods, "Succeeded")
        else:
            self._run(job, pods, phases, failed)

    def _run(self, job, pods, phases, failed):
        """Keep one pod active (replacing failed ones) and report it."""
        active = [p for p, phase in zip(pods, phases) if phase in ("Pending", "Running")]
        if not active:
            active = [self.store.create(self._pod(job))]
        running = sum(1 for p in active if p.get("status", {}).get("phase") == "Running")
        status = {**(job.get("status") or {}), "active": len(active), "ready": running,
                  "startTime": (job.get("status") or {}).get("startTime")
                  or rfc3339(self.clock.now())}
        if failed:
            status["failed"] = failed
        set_status(self.store, job, status)

    @staticmethod
    def _pod(job):
        template = json.loads(json.dumps(_template(job)))
        meta = template.get("metadata") or {}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": f"{job['metadata']['name']}-",
                             "namespace": job["metadata"]["namespace"],
                             "labels": meta.get("labels") or {},
                             "annotations": meta.get("annotations") or {},
                             "ownerReferences": [owner_reference(job)]},
                "spec": template.get("spec") or {}}

    def _finish(self, job, pods, phase):
        now = rfc3339(self.clock.now())
        status = {"startTime": (job.get("status") or {}).get("startTime") or now,
                  "active": 0, "ready": 0}
        failed = sum(1 for p in pods if p.get("status", {}).get("phase") == "Failed")
        if failed:
            status["failed"] = failed
        if phase == "Succeeded":
            status.update(succeeded=1, completionTime=now)
            wanted = [("SuccessCriteriaMet", "True", "CompletionsReached",
                       "Reached expected number of succeeded pods"),
                      ("Complete", "True", "CompletionsReached",
                       "Reached expected number of succeeded pods")]
        else:
            wanted = [("FailureTarget", "True", "BackoffLimitExceeded",
                       "Job has reached the specified backoff limit"),
                      ("Failed", "True", "BackoffLimitExceeded",
                       "Job has reached the specified backoff limit")]
        status["conditions"] = conditions(job.get("status"), wanted, now)
        set_status(self.store, job, status)


def _finished(job):
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _pod_status(pod, phase, now):
    containers = (pod.get("spec") or {}).get("containers") or []
    ready = phase == "Running"
    states = {"Pending": {"waiting": {"reason": "ContainerCreating"}},
              "Running": {"running": {"startedAt": now}},
              "Succeeded": {"terminated": {"exitCode": 0, "reason": "Completed"}},
              "Failed": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    ready_reason = {"Succeeded": "PodCompleted", "Failed": "PodFailed"}.get(phase,
                                                                            "ContainersNotReady")
    wanted = [("PodScheduled", "True", "", ""), ("Initialized", "True", "", ""),
              ("ContainersReady", "True" if ready else "False", "" if ready else ready_reason,
               ""), ("Ready", "True" if ready else "False", "" if ready else ready_reason, "")]
    status = {"phase": phase, "conditions": conditions(pod.get("status"), wanted, now),
              "containerStatuses": [{"name": c.get("name"), "image": c.get("image"),
                                     "imageID": "", "ready": ready, "started": ready,
                                     "restartCount": 0, "state": states[phase]}
                                    for c in containers],
              "hostIP": "10.0.0.1", "podIP": "10.244.0.10", "qosClass": "BestEffort"}
    for condition in status["conditions"]:
        condition.pop("lastUpdateTime", None)
    if phase != "Pending":
        status["startTime"] = (pod.get("status") or {}).get("startTime") or now
    return status


class PodController(Controller):
    """Pod phases from annotations (see module docstring)."""

    watches = frozenset({("", "Pod")})

    def __init__(self):
        self._scheduled = set()
        self._delay_over = set()

    def handle(self, event):
        if event.type != "DELETED":
            self._sync(event.namespace, event.name)

    def _sync(self, namespace, name):
        pod = self.store.get("v1", "Pod", name, namespace)
        if pod is None:
            return
        phase, wait = self._target(pod)
        if wait > 0 and pod["metadata"]["uid"] not in self._delay_over:
            self._schedule(pod, wait)
            phase = "Pending"
        status = pod.get("status") or {}
        if status.get("phase") != phase or "conditions" not in status:
            set_status(self.store, pod, _pod_status(pod, phase, rfc3339(self.clock.now())))

    def _target(self, pod):
        """(phase wanted, seconds still to wait before reaching it)."""
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        owned_by_job = any(ref.get("kind") == "Job" for ref in meta.get("ownerReferences") or [])
        phase = annotations.get(PHASE) or ("Succeeded" if owned_by_job else "Running")
        if phase not in _PHASES:
            phase = "Pending"
        created = datetime.datetime.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
        created = created.replace(tzinfo=datetime.timezone.utc)
        elapsed = (self.clock.now() - created).total_seconds()
        return phase, float(annotations.get(PHASE_DELAY, 0)) - elapsed

    def _schedule(self, pod, wait):
        meta = pod["metadata"]
        if meta["uid"] in self._scheduled:
            return
        self._scheduled.add(meta["uid"])

        def fire():
            self._delay_over.add(meta["uid"])
            self._sync(meta["namespace"], meta["name"])
        self.clock.call_later(wait, fire)
