"""Part of tests/fakes/controllers.py: the ``Controller`` base class, the annotations and labels the simulated
controllers read, and their helpers (owner references, conditions, status writes)."""
import hashlib
import json

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
