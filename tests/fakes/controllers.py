"""Simulated controllers for the fake API server (pluggable, driven by store events).

A controller subclasses ``Controller``: it names the (group, kind) pairs it ``watches`` and
implements ``handle(event)``. The server calls it synchronously after each write (outside
the store lock; writes it makes are dispatched by the same loop), and it may schedule
work on the server's clock with ``self.clock.call_later``. Controllers must be idempotent:
the store drops writes that change nothing, which is what ends the event chains.

Default controllers (``default_controllers()``):

* ``DeploymentController``: a ReplicaSet per pod template (owned by the Deployment, named
  ``<deployment>-<pod-template-hash>``; older ones scaled to 0) and a full ready status, at
  once. A pod template labelled ``fake.gpu-platform.io/never-ready: "true"`` never becomes
  available (Available=False, Progressing reason ReplicaSetUpdated).
* ``DaemonSetController``: desired/current/ready/available/updated = number of Nodes whose
  labels match the pod template's ``nodeSelector`` (affinity and taints are ignored);
  recomputed when Nodes change. The never-ready label keeps numberReady at 0.
* ``StatefulSetController``: replicas ready (or not, with the label), revisions equal.
* ``JobController``: one Pod at a time from the template; a Succeeded pod completes the Job
  (conditions SuccessCriteriaMet and Complete), a Failed one is retried until
  ``backoffLimit`` is exceeded, then the Job fails (FailureTarget and Failed). No backoff
  delay.
* ``PodController``: a Pod's phase comes from annotation ``fake.gpu-platform.io/phase``
  (Pending, Running, Succeeded or Failed; default Succeeded for Pods owned by a Job,
  Running otherwise), reached after ``fake.gpu-platform.io/phase-delay`` seconds on the
  clock (default 0). Pending stays Pending: a pod that hangs.

Helpers for later test layers: ``StatusSetter`` (sets a custom resource's status from a
function, optionally after a delay) and ``MigManager`` (answers ``nvidia.com/mig.config``
label changes on Nodes with ``nvidia.com/mig.config.state`` pending, then success/failed).

Deployments, DaemonSets and StatefulSets get no Pods; only Jobs do.
"""

import datetime
import hashlib
import json

from .clock import rfc3339
from .patches import merge_patch
from .selectors import LabelSelector

NEVER_READY = "fake.gpu-platform.io/never-ready"
PHASE = "fake.gpu-platform.io/phase"
PHASE_DELAY = "fake.gpu-platform.io/phase-delay"
LOG = "fake.gpu-platform.io/log"
_PHASES = ("Pending", "Running", "Succeeded", "Failed")


class Controller:
    """Base class: ``watches`` is a set of (group, kind); ``handle(event)`` reacts."""

    watches = frozenset()

    def attach(self, server):
        self.server = server
        self.store = server.store
        self.clock = server.clock

    def wants(self, event):
        return (event.group, event.kind) in self.watches

    def handle(self, event):
        raise NotImplementedError


# ---------------------------------------------------------------- helpers

def owner_reference(obj):
    """A controller ownerReference pointing at ``obj``."""
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
            "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def controlled_by(obj, owner_uid):
    return any(ref.get("uid") == owner_uid and ref.get("controller")
               for ref in obj["metadata"].get("ownerReferences") or [])


def template_hash(template):
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def never_ready(template):
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(NEVER_READY) == "true"


def conditions(old_status, wanted, now):
    """Conditions from (type, status, reason, message), keeping the times of unchanged ones."""
    previous = {c.get("type"): c for c in (old_status or {}).get("conditions") or []}
    result = []
    for kind, status, reason, message in wanted:
        old = previous.get(kind, {})
        same = (old.get("status"), old.get("reason")) == (status, reason)
        result.append({"type": kind, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": old.get("lastTransitionTime") if same else now,
                       "lastUpdateTime": old.get("lastUpdateTime") if same else now})
    return result


def set_status(store, obj, status):
    """Replace ``obj``'s status (the store ignores the write if nothing changes)."""
    meta = obj["metadata"]
    rtype = store.resource(obj["apiVersion"], obj["kind"])

    def _change(current):
        current["status"] = status
        return current
    return store.modify(obj["apiVersion"], obj["kind"], meta["name"], _change,
                        meta.get("namespace"), "status" if rtype.has_status else None)


def _template(obj):
    return (obj.get("spec") or {}).get("template") or {}


def _replicas(obj):
    return (obj.get("spec") or {}).get("replicas", 1)


# ---------------------------------------------------------------- workloads

class DeploymentController(Controller):
    """ReplicaSets and ready status for Deployments (see module docstring)."""

    watches = frozenset({("apps", "Deployment")})

    def handle(self, event):
        if event.type == "DELETED":
            return
        deployment = self.store.get("apps/v1", "Deployment", event.name, event.namespace)
        if deployment is None:
            return
        replicaset = self._sync_replicasets(deployment)
        self._set_deployment_status(deployment, replicaset)

    def _sync_replicasets(self, deployment):
        meta = deployment["metadata"]
        template = _template(deployment)
        pod_hash = template_hash(template)
        name = f"{meta['name']}-{pod_hash}"
        owned = [rs for rs in self.store.list("apps/v1", "ReplicaSet", meta["namespace"])
                 if controlled_by(rs, meta["uid"])]
        for old in owned:
            if old["metadata"]["name"] != name and _replicas(old) != 0:
                self._write(old, {**old["spec"], "replicas": 0}, {"replicas": 0})
        wanted = self._replicaset(deployment, name, pod_hash)
        current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
        if current is None:
            return self.store.create(wanted)
        return self._write(current, wanted["spec"], wanted["status"])

    def _write(self, replicaset, spec, status):
        generation = replicaset["metadata"]["generation"]
        if replicaset["spec"] != spec:
            generation += 1
        replicaset.update(spec=spec, status={**status, "observedGeneration": generation})
        return self.store.update(replicaset)

    @staticmethod
    def _replicaset(deployment, name, pod_hash):
        template = json.loads(json.dumps(_template(deployment)))
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pod_hash
        selector = json.loads(json.dumps(deployment["spec"].get("selector") or {}))
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
        replicas = _replicas(deployment)
        ready = 0 if never_ready(template) else replicas
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": deployment["metadata"]["namespace"],
                             "labels": template["metadata"]["labels"],
                             "ownerReferences": [owner_reference(deployment)]},
                "spec": {"replicas": replicas, "selector": selector, "template": template},
                "status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
                           "readyReplicas": ready, "availableReplicas": ready,
                           "observedGeneration": 1}}

    def _set_deployment_status(self, deployment, replicaset):
        replicas = _replicas(deployment)
        ready = replicaset["status"]["readyReplicas"]
        rs_name = replicaset["metadata"]["name"]
        if ready >= replicas:
            wanted = [("Available", "True", "MinimumReplicasAvailable",
                       "Deployment has minimum availability."),
                      ("Progressing", "True", "NewReplicaSetAvailable",
                       f'ReplicaSet "{rs_name}" has successfully progressed.')]
        else:
            wanted = [("Available", "False", "MinimumReplicasUnavailable",
                       "Deployment does not have minimum availability."),
                      ("Progressing", "True", "ReplicaSetUpdated",
                       f'ReplicaSet "{rs_name}" is progressing.')]
        status = {"observedGeneration": deployment["metadata"]["generation"],
                  "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": ready,
                  "availableReplicas": ready,
                  "conditions": conditions(deployment.get("status"), wanted,
                                           rfc3339(self.clock.now()))}
        if replicas > ready:
            status["unavailableReplicas"] = replicas - ready
        set_status(self.store, deployment, status)


class DaemonSetController(Controller):
    """DaemonSet status from the Nodes matching the pod template's nodeSelector.

    The fake makes no DaemonSet pods; where a simulation made some (the GPU Operator's driver pods), an
    ``OnDelete`` DaemonSet counts as updated only its pods labelled with its current ``pod-template-generation``.
    """

    watches = frozenset({("apps", "DaemonSet"), ("", "Node"), ("", "Pod")})

    def handle(self, event):
        if event.kind == "Pod":
            for ref in event.obj["metadata"].get("ownerReferences") or []:
                daemonset = self.store.get("apps/v1", "DaemonSet", ref["name"], event.namespace) \
                    if ref.get("kind") == "DaemonSet" else None
                if daemonset is not None:
                    self._sync(daemonset)
        elif event.kind == "Node":
            for daemonset in self.store.list("apps/v1", "DaemonSet"):
                self._sync(daemonset)
        elif event.type != "DELETED":
            daemonset = self.store.get("apps/v1", "DaemonSet", event.name, event.namespace)
            if daemonset is not None:
                self._sync(daemonset)

    def _sync(self, daemonset):
        template = _template(daemonset)
        selector = LabelSelector.from_spec(
            {"matchLabels": (template.get("spec") or {}).get("nodeSelector") or {}})
        desired = sum(1 for node in self.store.list("v1", "Node")
                      if selector.matches(node["metadata"].get("labels")))
        ready = 0 if never_ready(template) else desired
        updated = desired
        if ((daemonset.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete":
            meta = daemonset["metadata"]
            pods = [p for p in self.store.list("v1", "Pod", meta.get("namespace")) if controlled_by(p, meta["uid"])]
            if pods:
                generation = str(meta["generation"])
                updated = min(desired, sum(1 for p in pods if (p["metadata"].get("labels") or {}).get(
                    "pod-template-generation") == generation))
        status = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                  "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                  "updatedNumberScheduled": updated,
                  "observedGeneration": daemonset["metadata"]["generation"]}
        if desired > ready:
            status["numberUnavailable"] = desired - ready
        set_status(self.store, daemonset, status)


class StatefulSetController(Controller):
    """StatefulSet status: all replicas ready and updated (unless never-ready)."""

    watches = frozenset({("apps", "StatefulSet")})

    def handle(self, event):
        if event.type == "DELETED":
            return
        statefulset = self.store.get("apps/v1", "StatefulSet", event.name, event.namespace)
        if statefulset is None:
            return
        replicas = _replicas(statefulset)
        ready = 0 if never_ready(_template(statefulset)) else replicas
        revision = f"{event.name}-{template_hash(_template(statefulset))}"
        set_status(self.store, statefulset, {
            "observedGeneration": statefulset["metadata"]["generation"], "replicas": replicas,
            "readyReplicas": ready, "availableReplicas": ready, "currentReplicas": replicas,
            "updatedReplicas": replicas, "currentRevision": revision,
            "updateRevision": revision, "collisionCount": 0})


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


# ---------------------------------------------------------------- helpers for later layers

class StatusSetter(Controller):
    """Merge ``status_fn(obj)`` into the status of every ``api_version``/``kind`` object.

    ``status_fn`` returns a dict (JSON-merged into ``status``) or None (no change). With
    ``delay`` > 0 the status is set that many clock seconds after each create or spec change.
    """

    def __init__(self, api_version, kind, status_fn, delay=0.0):
        group = api_version.rpartition("/")[0]
        self.watches = frozenset({(group, kind)})
        self.api_version, self.kind = api_version, kind
        self.status_fn, self.delay = status_fn, delay
        self._scheduled = set()

    def handle(self, event):
        if event.type == "DELETED":
            return
        meta = event.obj["metadata"]
        key = (meta["uid"], meta.get("generation"))
        if self.delay <= 0:
            self._apply(meta["name"], meta.get("namespace"))
        elif key not in self._scheduled:
            self._scheduled.add(key)
            self.clock.call_later(self.delay,
                                  lambda: self._apply(meta["name"], meta.get("namespace")))

    def _apply(self, name, namespace):
        obj = self.store.get(self.api_version, self.kind, name, namespace)
        if obj is None:
            return
        status = self.status_fn(obj)
        if status is not None:
            set_status(self.store, obj, merge_patch(obj.get("status") or {}, status))


class MigManager(Controller):
    """Simulated NVIDIA mig-manager: reacts to the ``nvidia.com/mig.config`` Node label.

    When the label's value changes, the Node gets ``nvidia.com/mig.config.state=pending``,
    then after ``delay`` clock seconds ``success`` (or ``failed`` for names in
    ``fail_nodes``). ``on_success(store, node)`` may change the Node further (capacity...).
    """

    CONFIG = "nvidia.com/mig.config"
    STATE = "nvidia.com/mig.config.state"
    watches = frozenset({("", "Node")})

    def __init__(self, delay=0.0, fail_nodes=(), on_success=None):
        self.delay = delay
        self.fail_nodes = set(fail_nodes)
        self.on_success = on_success
        self._handled = {}

    def handle(self, event):
        name = event.name
        if event.type == "DELETED":
            self._handled.pop(name, None)
            return
        config = (event.obj["metadata"].get("labels") or {}).get(self.CONFIG)
        if config is None:
            self._handled.pop(name, None)  # a removed label: adding it again is a change again
            return
        if self._handled.get(name) == config:
            return
        self._handled[name] = config
        self.store.set_labels("v1", "Node", name, {self.STATE: "pending"})
        if self.delay > 0:
            self.clock.call_later(self.delay, lambda: self._finish(name, config))
        else:
            self._finish(name, config)

    def _finish(self, name, config):
        node = self.store.get("v1", "Node", name)
        if node is None or (node["metadata"].get("labels") or {}).get(self.CONFIG) != config:
            return
        state = "failed" if name in self.fail_nodes else "success"
        if state == "success" and self.on_success:
            self.on_success(self.store, node)
        self.store.set_labels("v1", "Node", name, {self.STATE: state})


def default_controllers():
    """Fresh instances of the default controllers."""
    return [DeploymentController(), DaemonSetController(), StatefulSetController(),
            JobController(), PodController()]
