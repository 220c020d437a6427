"""Part of local_gpu_cluster/controllers.py: the ``Controller`` base class, the annotations and labels the simulated
controllers read, and their helpers (owner references, conditions, status writes)."""
import hashlib
import json
import time

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


def pod_ready(pod):
    """Whether the pod's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


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


KWOK_CUSTOM = "kwok.x-k8s.io/status"  # KWOK leaves the status of a pod annotated "custom" to us (its flag)


def _take_status(store, pod):
    """Annotate a pod KWOK plays so that KWOK leaves its status to us."""
    meta = pod["metadata"]
    store.patch("v1", "Pod", meta["name"], {"metadata": {"annotations": {KWOK_CUSTOM: "custom"}}}, meta["namespace"])


def set_pod_ready(store, pod, reason):
    """A pod played by KWOK made Ready (``reason`` None) or not (``reason``: (waiting reason or "Running", message)),
    written only when it differs; the pod is first annotated so that KWOK leaves its status to us."""
    ready = reason is None
    status = pod.get("status") or {}
    current = pod_ready(pod)
    annotated = (pod["metadata"].get("annotations") or {}).get(KWOK_CUSTOM) == "custom"
    said = [((c.get("state") or {}).get("waiting") or {}).get("message") for c in status.get("containerStatuses") or []]
    if current == ready and (ready or (annotated and (reason[0] == "Running" or reason[1] in said))):
        return
    meta = pod["metadata"]
    if not annotated:
        _take_status(store, pod)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    value = "True" if ready else "False"
    readiness = ("Ready", "ContainersReady")
    conditions = [dict(c) for c in status.get("conditions") or [] if c.get("type") not in readiness]
    conditions += [{"type": kind, "status": value, "lastTransitionTime": now} for kind in readiness]
    containers = []
    for container in status.get("containerStatuses") or []:
        entry = dict(container, ready=ready)
        if ready or reason[0] == "Running":  # running, not Ready
            entry["state"] = {"running": {"startedAt": status.get("startTime") or now}}
        else:
            entry["state"] = {"waiting": {"reason": reason[0], "message": reason[1]}}
        containers.append(entry)
    new_status = dict(status, conditions=conditions, containerStatuses=containers)
    store.patch_status("v1", "Pod", meta["name"], new_status, meta["namespace"])


def set_pod_finished(store, pod, exit_code, message=""):
    """A pod whose container ran to its end (a Job's): Succeeded on exit code 0, else Failed, as its kubelet reports
    it. The pod is first annotated so that KWOK leaves its status to us (it is, once its process started)."""
    meta, status = pod["metadata"], pod.get("status") or {}
    if (meta.get("annotations") or {}).get(KWOK_CUSTOM) != "custom":
        _take_status(store, pod)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                  "startedAt": status.get("startTime") or now, "finishedAt": now}
    if message:
        terminated["message"] = message
    containers = [dict(c, ready=False, started=False, state={"terminated": terminated})
                  for c in status.get("containerStatuses") or []]
    readiness = ("Ready", "ContainersReady")
    conditions = [dict(c) for c in status.get("conditions") or [] if c.get("type") not in readiness]
    conditions += [{"type": kind, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
                   for kind in readiness]
    store.patch_status("v1", "Pod", meta["name"], dict(status, phase="Succeeded" if exit_code == 0 else "Failed",
                                                       conditions=conditions, containerStatuses=containers),
                       meta["namespace"])


def finish_deletion(store, event):
    """KWOK leaves a pod whose status we own (``kwok.x-k8s.io/status=custom``) alone, its deletion too: confirm it, as
    the node's kubelet would once the containers stopped."""
    meta = event.obj["metadata"]
    if event.type != "DELETED" and meta.get("deletionTimestamp") and \
            (meta.get("annotations") or {}).get(KWOK_CUSTOM) == "custom":
        try:
            store.delete("v1", "Pod", meta["name"], meta["namespace"], grace_period=0)
        except Exception:  # noqa: BLE001 - gone meanwhile
            pass
