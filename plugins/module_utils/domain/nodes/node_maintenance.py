# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Node maintenance planning (cordon, drain, uncordon): which pods to evict, skip or refuse.

Private to the collection: not a public API. Pure: standard library only, no I/O.

The rules are those ``kubectl drain`` documents: DaemonSet pods are left (their controller would
put them back at once), mirror (static) pods are left (the API server cannot delete them), pods
that already finished are left, and two kinds of pods are refused unless an option allows them,
because evicting them loses something: pods with ``emptyDir`` volumes (the data is deleted;
``delete_emptydir_data``) and pods no controller manages (nothing recreates them; ``force``).
An optional label selector narrows the drain to matching pods, like the GPU Operator's
driver-upgrade drain ``podSelector``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

STATES = ("cordoned", "drained", "uncordoned")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
FINISHED = ("Succeeded", "Failed")
EMPTYDIR_OPTION = "delete_emptydir_data"
FORCE_OPTION = "force"
DEFAULT_TIMEOUT = "5m"


@dataclass(frozen=True)
class Options:
    """The module's options, validated."""

    name: str
    state: str
    delete_emptydir_data: bool = False
    force: bool = False
    pod_selector: str = ""
    selector: tuple = ()
    timeout: int = 300


@dataclass
class Plan:
    """What a run does to one node; ``pod`` entries are ``namespace/name``."""

    node: str
    state: str
    unschedulable: bool
    pods: list = field(default_factory=list)
    evict: list = field(default_factory=list)
    skip: list = field(default_factory=list)
    blocking: list = field(default_factory=list)
    terminating: list = field(default_factory=list)

    @property
    def cordon(self):
        return self.state in ("cordoned", "drained") and not self.unschedulable

    @property
    def uncordon(self):
        return self.state == "uncordoned" and self.unschedulable

    @property
    def changes(self):
        return self.cordon or self.uncordon or bool(self.evict)

    def as_dict(self):
        return {"node": self.node, "state": self.state, "unschedulable_before": self.unschedulable,
                "cordon": self.cordon, "uncordon": self.uncordon, "evict": list(self.evict),
                "skip": [dict(s) for s in self.skip], "blocking": [dict(b) for b in self.blocking],
                "terminating": list(self.terminating)}


# -- validation ----------------------------------------------------------------------------------

def _bool(field_name, value):
    if not isinstance(value, bool):
        raise ParamError(field_name, "%r is not a boolean" % (value,), "give true or false")
    return value


def options(params):
    """Validated Options from the module's params (unset options at their defaults)."""
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise ParamError("name", "is required and empty", "give the node's name as kubectl get nodes prints it")
    if len(name) > 253 or not validate.DNS1123_SUBDOMAIN.match(name):
        raise ParamError("name", "%r is not a valid node name (a lower-case DNS-1123 subdomain)" % name,
                         "give the node's name as kubectl get nodes prints it")
    state = params.get("state") or "drained"
    if state not in STATES:
        raise ParamError("state", "%r is not a maintenance state" % (state,), "use one of %s" % ", ".join(STATES))
    selector_text = params.get("pod_selector") or ""
    if not isinstance(selector_text, str):
        raise ParamError("pod_selector", "must be a label selector string, not %r" % (selector_text,),
                         "write it as kubectl -l takes it, e.g. app=trainer")
    return Options(
        name=name, state=state,
        delete_emptydir_data=_bool(EMPTYDIR_OPTION, params.get(EMPTYDIR_OPTION, False)),
        force=_bool(FORCE_OPTION, params.get(FORCE_OPTION, False)),
        pod_selector=selector_text.strip(), selector=validate.parse_selector("pod_selector", selector_text),
        timeout=validate.duration_seconds("wait_timeout", DEFAULT_TIMEOUT if params.get("wait_timeout") is None
                                          else params["wait_timeout"]))


# -- pods ----------------------------------------------------------------------------------------

def pod_id(pod):
    meta = pod.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace") or "default", meta.get("name"))


def controller_of(pod):
    """The ownerReference with ``controller: true``, or None."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def emptydir_volumes(pod):
    return [v.get("name") for v in (pod.get("spec") or {}).get("volumes") or [] if "emptyDir" in v]


def decide(pod, opts):
    """One pod: ("skip", reason) | ("wait", reason) | ("evict", None) | ("block", [(reason, option)])."""
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    if opts.selector and not validate.selector_matches(opts.selector, meta.get("labels")):
        return "skip", "does not match pod_selector %s" % opts.pod_selector
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return "skip", "mirror pod of a static pod (the kubelet owns it; the API cannot evict it)"
    owner = controller_of(pod)
    if owner and owner.get("kind") == "DaemonSet":
        return "skip", "DaemonSet-managed (DaemonSet %s)" % owner.get("name")
    if phase in FINISHED:
        return "skip", "already finished (%s)" % phase
    if meta.get("deletionTimestamp"):
        return "wait", "already terminating since %s" % meta["deletionTimestamp"]
    refused = []
    volumes = emptydir_volumes(pod)
    if volumes and not opts.delete_emptydir_data:
        refused.append(("uses emptyDir volumes (%s), whose data eviction deletes" % ", ".join(volumes),
                        EMPTYDIR_OPTION))
    if owner is None and not opts.force:
        refused.append(("no controller manages it, so nothing recreates it after eviction", FORCE_OPTION))
    if refused:
        return "block", refused
    return "evict", None


def plan(node, pods, opts):
    """The Plan for ``node`` (a Node object) and the pods bound to it."""
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    result = Plan(node=opts.name, state=opts.state, unschedulable=unschedulable,
                  pods=sorted(pod_id(p) for p in pods))
    if opts.state != "drained":
        return result
    for pod in sorted(pods, key=pod_id):
        action, detail = decide(pod, opts)
        if action == "skip":
            result.skip.append({"pod": pod_id(pod), "reason": detail})
        elif action == "wait":
            result.terminating.append(pod_id(pod))
        elif action == "block":
            for reason, option in detail:
                result.blocking.append({"pod": pod_id(pod), "reason": reason, "option": option})
        else:
            result.evict.append(pod_id(pod))
    return result


def refusal_message(the_plan):
    """The error for a plan with blocking pods: each option, the pods it would allow, and the fix."""
    parts = []
    groups = (
        (EMPTYDIR_OPTION, "pods with emptyDir volumes would lose that data",
         "set delete_emptydir_data: true to evict them anyway, or move that data to a persistent volume"),
        (FORCE_OPTION, "pods that no controller manages would not be recreated",
         "set force: true to evict them anyway, or run them under a Deployment, StatefulSet or Job"))
    for option, problem, fix in groups:
        pods = [b["pod"] for b in the_plan.blocking if b["option"] == option]
        if pods:
            parts.append("%s: %s: %s. Fix: %s" % (option, problem, ", ".join(pods), fix))
    return "drain of node %s refused before any change (the node was not cordoned): %s" % (
        the_plan.node, "; ".join(parts))


def describe_remaining(pods_by_id, refusals):
    """``ns/name (why)`` for each pod still on the node: a budget's refusal, terminating, or not deleted."""
    out = []
    for ident in sorted(pods_by_id):
        pod = pods_by_id[ident]
        meta = pod.get("metadata") or {}
        if ident in refusals:
            why = "eviction refused: %s" % refusals[ident]
        elif meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            why = "terminating since %s%s" % (
                meta["deletionTimestamp"], ", finalizers: %s" % ", ".join(finalizers) if finalizers else "")
        else:
            why = "not deleted yet"
        out.append("%s (%s)" % (ident, why))
    return ", ".join(out)
