# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The pods of one smoke test on the cluster: find them, wait for them, say why one is held, read its log, and
delete the test's objects. Used by ``workflows.smoke_test``.

Private to the collection: not a public API. A pod that never leaves Pending ends the wait at the time-out (on
an injectable clock), not in a hang; ``pod_state`` says why the scheduler or kubelet held it.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import flux_argocd as gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import objects as smoke_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ToolError

FINISHED = ("Succeeded", "Failed")
STARTED = ("Running", "Succeeded", "Failed")
GONE_TIMEOUT = 120  # seconds to wait for a previous run's pods to go before starting again


def _selector(check, task=None):
    out = "%s=%s" % (smoke_objects.SMOKE_LABEL, check)
    return out + (",%s=%s" % (smoke_objects.TASK_LABEL, task) if task else "")


# -- pods -----------------------------------------------------------------------------------------

def pod_state(pod):
    """``name: Phase`` with the reason a pod is held (unschedulable, image pull, ...), for messages."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    why = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            why.append("%s: %s" % (condition.get("reason") or "not scheduled", condition.get("message") or ""))
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            detail = state.get(key) or {}
            if detail.get("reason") and (key == "waiting" or phase == "Failed"):
                why.append("%s %s%s" % (container.get("name"), detail.get("reason"),
                                        " (%s)" % detail["message"] if detail.get("message") else ""))
    text = "%s: %s" % (meta.get("name"), phase)
    return text + (" - " + "; ".join(w.strip() for w in why) if why else "")


def _base_name(objects):
    """The test's own name: its Pod's or Job's (Volcano names pods ``<job>-<task>-<index>``, KAI members
    ``<group>-<index>``)."""
    return next(o for o in objects if o["kind"] in ("Pod", "Job", "PodGroup", "Service"))["metadata"]["name"]


def _pods(kube, params, objects, task=None):
    """This test's pods: the check's label, and a name that is the test's or starts with it (another test of
    the same check, such as another pool's nvidia-smi pod, is left alone)."""
    base = _base_name(objects)
    pods = kube.list("v1", "Pod", params["namespace"], label_selector=_selector(params["check"], task))
    return sorted((p for p in pods if p["metadata"]["name"] == base or p["metadata"]["name"].startswith(base + "-")),
                  key=lambda p: p["metadata"]["name"])


def _phase(pod):
    return (pod.get("status") or {}).get("phase") or "Pending"


def _wait_pods(fetch, count, phases, timeout, clock, interval):
    """Wait until ``count`` pods are there and all are in ``phases``; returns (pods, timed_out)."""
    def ready(pods):
        return len(pods) >= count and all(_phase(p) in phases for p in pods)
    try:
        return wait_for(fetch, ready, timeout, clock, interval), False
    except WaitTimeout as exc:
        return exc.details.get("last") or [], True


def _held(pods, count, timeout, what):
    states = [pod_state(p) for p in pods if _phase(p) not in STARTED] or [pod_state(p) for p in pods]
    missing = count - len(pods)
    detail = "; ".join(states)
    if missing > 0:
        detail = ("%d of %d pods not created yet" % (missing, count)) + ("; " + detail if detail else "")
    return "%s did not finish within %ss: %s" % (what, timeout, detail or "no pod was created"), states


def _log(kube, pod):
    return kube.log(pod["metadata"]["name"], pod["metadata"]["namespace"]) or ""


# -- objects on and off the cluster ---------------------------------------------------------------

def remove(kube, params, objects, wait=False, clock=None, interval=2.0):
    """Delete the test's objects (reverse order) and any pod of it left; returns what was deleted."""
    removed = []
    for obj in reversed(objects):
        meta = obj["metadata"]
        if kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")):
            removed.append(gitops.file_name(obj)[:-len(".yaml")])
    namespace = params["namespace"]
    for pod in _pods(kube, params, objects):
        if kube.delete("v1", "Pod", pod["metadata"]["name"], namespace):
            removed.append("pod-%s-%s" % (namespace, pod["metadata"]["name"]))
    if wait:
        try:
            wait_for(lambda: _pods(kube, params, objects), lambda pods: not pods, min(GONE_TIMEOUT, params["timeout"]),
                     clock, interval, describe=lambda pods: "pods of an earlier smoke run are still terminating: %s"
                     % ", ".join(p["metadata"]["name"] for p in pods))
        except WaitTimeout as exc:
            raise ToolError(exc.msg + ". Fix: delete them (kubectl delete pod -n %s %s) and run again"
                            % (namespace, " ".join(p["metadata"]["name"] for p in exc.details.get("last") or [])))
    return sorted(set(removed))
