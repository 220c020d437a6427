# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Tolerations and taints: the inventory's tolerations validated, which taint a toleration tolerates, and the
preflight's verdict on the nodes' taints (a GPU pool whose taints nothing of the platform tolerates, a cluster where
no controller could run), before anything is written.

Private to the collection: not a public API. Pure: standard library only.

Two lists come from the inventory (roles/gpu_platform defaults, one source each):

- ``gpu_platform_gpu_tolerations``: the GPU pools' own taints (AKS recommends ``sku=gpu:NoSchedule`` on GPU pools),
  added to ``nvidia.com/gpu``'s (``GPU_TOLERATION``, the one the GPU Operator's chart gives its operands) on every
  pod the platform runs on GPU nodes: the operators' operands, NFD's worker, the RDMA operands, the DRA kubelet plugin,
  the smoke and NCCL pods.
- ``gpu_platform_controller_tolerations``: for the controllers (the operators, Kueue, KAI, Volcano), e.g. AKS's
  ``CriticalAddonsOnly=true:NoSchedule`` on a dedicated system pool.

Kubernetes' rule (core/v1 Toleration): a toleration with an effect matches only that effect; ``Exists`` matches every
value of its key, and every taint when it has no key; ``Equal`` (the default operator) matches key and value.
Only NoSchedule and NoExecute keep a pod off a node (PreferNoSchedule is a preference).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
EXAMPLE = "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}"

# The GPU Operator chart's daemonsets.tolerations and NFD worker's (values.yaml of every pinned release): the taint
# key a GPU node commonly carries (DGX/HGX clusters taint nvidia.com/gpu).
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GPU_FIELD = "gpu_platform_gpu_tolerations"
CONTROLLER_FIELD = "gpu_platform_controller_tolerations"
CONTROLLER_SELECTOR_FIELD = "gpu_platform_controller_node_selector"
KEEP_OFF_FIELD = "gpu_platform_keep_off_taints"


def toleration(field, raw):
    """One toleration, checked as the API server's validation would; returns it without empty fields."""
    if not isinstance(raw, dict):
        raise ParamError(field, "%r is not a toleration (a dictionary)" % (raw,),
                         "give key, operator and effect, e.g. %s" % EXAMPLE)
    unknown = sorted(str(k) for k in raw if k not in TOLERATION_KEYS)
    if unknown:
        raise ParamError(field, "unknown key(s) %s" % ", ".join(unknown),
                         "use only %s (check the spelling), e.g. %s" % (", ".join(TOLERATION_KEYS), EXAMPLE))
    key, value, effect, operator = raw.get("key"), raw.get("value"), raw.get("effect"), raw.get("operator")
    out = {}
    if key is not None and key != "":
        if not isinstance(key, str):
            raise ParamError(field + ".key", "%r is not a taint key" % (key,), "quote it, e.g. nvidia.com/gpu")
        validate.label_key(field + ".key", key)
        out["key"] = key
    if operator is not None:
        if operator not in TOLERATION_OPERATORS:
            raise ParamError(field + ".operator", "%r is not a toleration operator" % (operator,),
                             "use Equal or Exists")
        out["operator"] = operator
    if "key" not in out and operator != "Exists":
        raise ParamError(field, "has no key, so it must use operator Exists (tolerate every taint)",
                         "give the taint key, or set operator: Exists")
    if value is not None and value != "":
        if operator == "Exists":
            raise ParamError(field + ".value", "operator Exists matches any value, so a value is not allowed",
                             "remove value, or use operator: Equal")
        if not isinstance(value, str) or len(value) > 63 or not validate.LABEL_VALUE.match(value):
            raise ParamError(field + ".value", "%r is not a valid taint value (at most 63 letters, digits, '-', "
                             "'_' and '.', starting and ending with a letter or digit)" % (value,),
                             "give the taint's value, e.g. gpu")
        out["value"] = value
    if effect is not None and effect != "":
        if effect not in TAINT_EFFECTS:
            raise ParamError(field + ".effect", "%r is not a taint effect" % (effect,),
                             "use one of %s, or omit it to match every effect" % ", ".join(TAINT_EFFECTS))
        out["effect"] = effect
    seconds = raw.get("tolerationSeconds")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise ParamError(field + ".tolerationSeconds", "%r is not a whole number of seconds" % (seconds,),
                             "give seconds, e.g. 300")
        if out.get("effect") != "NoExecute":
            raise ParamError(field + ".tolerationSeconds", "applies only to effect NoExecute",
                             "remove tolerationSeconds, or set effect: NoExecute")
        out["tolerationSeconds"] = seconds
    return out


def tolerations(field, value, max_items=None, limit_note=""):
    """A list of tolerations (None: none), each checked; ``max_items`` where the target API caps the list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParamError(field, "must be a list of tolerations", "give a list, e.g. [%s]" % EXAMPLE)
    if max_items is not None and len(value) > max_items:
        raise ParamError(field, "has %d tolerations; %s takes at most %d" % (len(value), limit_note, max_items),
                         "merge them, e.g. one toleration per taint key")
    return [toleration("%s[%d]" % (field, index), raw) for index, raw in enumerate(value)]


def tolerates(item, taint):
    """True when toleration ``item`` tolerates ``taint`` ({key, value, effect})."""
    if item.get("effect") and item.get("effect") != taint.get("effect"):
        return False
    if item.get("operator") == "Exists":
        return item.get("key") in (None, "", taint.get("key"))
    return item.get("key") == taint.get("key") and (item.get("value") or "") == (taint.get("value") or "")


def blocking(taints, items):
    """The taints of ``taints`` that keep a pod with tolerations ``items`` off the node (NoSchedule, NoExecute)."""
    return [t for t in taints or [] if t.get("effect") in BLOCKING_EFFECTS
            and not any(tolerates(item, t) for item in items or [])]


def merged(base, extra):
    """``base`` then each of ``extra`` not already in it (a chart's list replaced by helm keeps its own entries)."""
    out = [dict(item) for item in base]
    for item in extra or []:
        if item not in out:
            out.append(dict(item))
    return out


def gpu_pod_tolerations(extra):
    """What every pod of the platform on GPU nodes tolerates: nvidia.com/gpu's taint and the inventory's."""
    return merged([GPU_TOLERATION], extra)


def show(taint):
    return "%s%s:%s" % (taint.get("key"), ("=" + taint["value"]) if taint.get("value") else "", taint.get("effect"))


def fix_for(taint):
    item = {"key": taint.get("key"), "operator": "Equal" if taint.get("value") else "Exists",
            "effect": taint.get("effect")}
    if taint.get("value"):
        item["value"] = taint["value"]
    return "{%s}" % ", ".join("%s: %s" % (k, item[k]) for k in ("key", "operator", "value", "effect") if k in item)


def _pool(node):
    """The pool a node belongs to, by the label its provider or the inventory gives (else the node's name)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key in ("kubernetes.azure.com/agentpool", "agentpool", "eks.amazonaws.com/nodegroup",
                "cloud.google.com/gke-nodepool", "nodepool"):
        if labels.get(key):
            return labels[key]
    return (node.get("metadata") or {}).get("name")


def _matches(node, selector):
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == str(v) for k, v in (selector or {}).items())


def check(nodes, gpu_node_names, gpu_extra, controller_extra, controller_selector, keep_off=()):
    """The preflight's lines on the nodes' taints (empty: nothing to refuse).

    ``gpu_node_names``: the nodes the platform counts as GPU nodes. Each GPU pool with a NoSchedule or NoExecute taint
    that the GPU pods' tolerations (``gpu_pod_tolerations(gpu_extra)``) do not tolerate is named with that taint and
    the toleration that fixes it. When no node outside the GPU pools matches ``controller_selector`` and takes the
    controllers (``controller_extra``), every such pool is named with the taints in the way. A taint whose key is in
    ``keep_off`` is meant to keep the platform's pods off its nodes, and is not refused."""
    gpu_items = gpu_pod_tolerations(gpu_extra) + [{"key": key, "operator": "Exists"} for key in keep_off]
    lines, pools = [], {}
    for node in sorted(nodes or [], key=lambda n: (n.get("metadata") or {}).get("name") or ""):
        if (node.get("metadata") or {}).get("name") in gpu_node_names:
            for taint in blocking((node.get("spec") or {}).get("taints"), gpu_items):
                pools.setdefault((_pool(node), show(taint)), (taint, []))[1].append(node["metadata"]["name"])
    for (pool, shown), (taint, names) in sorted(pools.items()):
        listed = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
        lines.append("%s: GPU pool %s (%s) carries the taint %s, which the platform's pods on GPU nodes do not "
                     "tolerate (its operands would show DESIRED 0 and the smoke tests stay Pending). Fix: add %s to "
                     "%s, or remove the taint (or list its key in %s when it is there to keep the platform's pods "
                     "off)" % (GPU_FIELD, pool, listed, shown, fix_for(taint), GPU_FIELD, KEEP_OFF_FIELD))
    others = [n for n in nodes or [] if (n.get("metadata") or {}).get("name") not in gpu_node_names
              and not (n.get("spec") or {}).get("unschedulable")]
    if others and not any(_matches(n, controller_selector) and not blocking((n.get("spec") or {}).get("taints"),
                                                                            controller_extra) for n in others):
        blocked = {}
        for node in others:
            why = [show(t) for t in blocking((node.get("spec") or {}).get("taints"), controller_extra)]
            if not _matches(node, controller_selector):
                why.append("not matched by %s" % CONTROLLER_SELECTOR_FIELD)
            blocked.setdefault(_pool(node), set()).update(why)
        lines.append("%s: no node outside the GPU pools can run the platform's controllers (the operators, Kueue, "
                     "KAI, Volcano): %s. Fix: add the system pool's taint to %s (e.g. {key: CriticalAddonsOnly, "
                     "operator: Exists, effect: NoSchedule}), widen %s, or add a CPU pool" % (
                         CONTROLLER_FIELD, "; ".join("pool %s: %s" % (pool, ", ".join(sorted(why)))
                                                     for pool, why in sorted(blocked.items())),
                         CONTROLLER_FIELD, CONTROLLER_SELECTOR_FIELD))
    return lines
