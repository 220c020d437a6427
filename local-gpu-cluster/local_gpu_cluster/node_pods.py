"""Nodes, pods bound to them, their controllers and PodDisruptionBudgets, for drain tests.

The fake has no scheduler or kubelet: a pod is "on" a node because its ``spec.nodeName`` says
so (what ``kubectl drain`` and ``node_maintenance`` list by). Controllers (ReplicaSet,
DaemonSet, ...) are created as objects so that pods can carry a real controller reference.
"""

from .controllers import PHASE

MIRROR = "kubernetes.io/config.mirror"


def node(name, unschedulable=None, labels=None):
    spec = {} if unschedulable is None else {"unschedulable": unschedulable}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def _template(labels):
    return {"metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1.0"}]}}


def controller(store, kind, name, namespace="default"):
    """Create a ReplicaSet, DaemonSet, StatefulSet or Job named ``name`` and return it."""
    labels = {"app": name}
    spec = {"selector": {"matchLabels": labels}, "template": _template(labels)}
    if kind in ("ReplicaSet", "StatefulSet"):
        spec["replicas"] = 1
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind == "Job":
        spec = {"template": dict(_template({}), spec={"restartPolicy": "Never",
                                                      "containers": [{"name": "c", "image": "x:1"}]})}
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return store.create({"apiVersion": api_version, "kind": kind,
                         "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def pod(store, name, node_name, namespace="default", owner=None, labels=None, emptydir=False,
        finalizers=None, mirror=False, phase=None):
    """Create a pod bound to ``node_name``; ``owner`` (an object) becomes its controller."""
    meta = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner is not None:
        meta["labels"].update((owner["spec"].get("selector") or {}).get("matchLabels") or {})
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
    annotations = {}
    if mirror:
        annotations[MIRROR] = "0123456789abcdef"
    if phase:
        annotations[PHASE] = phase
    if annotations:
        meta["annotations"] = annotations
    if finalizers:
        meta["finalizers"] = list(finalizers)
    spec = {"nodeName": node_name, "containers": [{"name": "c", "image": "registry.example/app:1.0"}]}
    if emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return store.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def pdb(store, name, match_labels, namespace="default", min_available=None, max_unavailable=None):
    """Create a policy/v1 PodDisruptionBudget."""
    spec = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def release_finalizers(store, name, namespace="default"):
    """Remove a pod's finalizers (a terminating pod then goes away)."""
    def change(obj):
        obj["metadata"]["finalizers"] = []
    store.modify("v1", "Pod", name, change, namespace)


def pods_on(store, node_name):
    return sorted("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                  for p in store.list("v1", "Pod", field_selector="spec.nodeName=" + node_name))
