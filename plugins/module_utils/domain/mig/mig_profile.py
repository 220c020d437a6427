# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Planning a MIG layout rollout through the GPU Operator's MIG manager (pure).

Private to the collection: not a public API. Standard library only.
The MIG manager reconfigures a node when its ``nvidia.com/mig.config`` label changes and reports
``nvidia.com/mig.config.state`` (pending -> success | failed). While it works, the operator sets the
node's ``nvidia.com/gpu.deploy.*`` labels to ``paused-for-mig-change``; a node left like that after a
failure or a time-out is stuck (gpu-operator#2833).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

CONFIG = "nvidia.com/mig.config"
STATE = "nvidia.com/mig.config.state"
CAPABLE = "nvidia.com/mig.capable"
PRODUCT = "nvidia.com/gpu.product"
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
PAUSED = "paused-for-mig-change"


def labels_of(node):
    return (node.get("metadata") or {}).get("labels") or {}


def paused_labels(node):
    """The node's nvidia.com/gpu.deploy.* labels left at paused-for-mig-change."""
    return sorted(k for k, v in labels_of(node).items() if k.startswith(DEPLOY_PREFIX) and v == PAUSED)


@dataclass
class NodePlan:
    name: str
    product: str | None
    before: str | None
    state: str | None
    action: str  # keep | change | retrigger
    paused: list = field(default_factory=list)

    def as_dict(self):
        return {"name": self.name, "product": self.product, "before": self.before, "state": self.state,
                "action": self.action, "paused_labels": self.paused}


def plan_nodes(nodes, profile, retrigger_stuck=False):
    """Which nodes to leave, change or re-trigger. Nodes at the profile with state success are kept."""
    plans = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        labels = labels_of(node)
        before, state = labels.get(CONFIG), labels.get(STATE)
        paused = paused_labels(node)
        if before == profile and state == "success" and not paused:
            action = "keep"
        elif before == profile and (state in ("pending", "failed") or paused):
            action = "retrigger" if retrigger_stuck else "stuck"
        else:
            action = "change"
        plans.append(NodePlan(node["metadata"]["name"], labels.get(PRODUCT), before, state, action, paused))
    return plans


def stuck_message(plans):
    stuck = [p for p in plans if p.action == "stuck"]
    parts = ["%s (state %s%s)" % (p.name, p.state or "unset", ", " + ", ".join(p.paused) if p.paused else "")
             for p in stuck]
    return ("nodes already labelled for this profile but stuck: %s. Fix: find why the MIG manager did not finish "
            "(kubectl -n gpu-operator logs -l app=nvidia-mig-manager), then re-run with retrigger_stuck: true"
            % "; ".join(parts))


def batches(plans, max_unavailable):
    """Nodes to write, in batches of at most ``max_unavailable`` (in name order)."""
    if not isinstance(max_unavailable, int) or isinstance(max_unavailable, bool) or max_unavailable < 1:
        raise ParamError("max_unavailable", "%r is not a positive whole number" % (max_unavailable,),
                         "give how many nodes may reconfigure at once, e.g. 1")
    todo = [p for p in plans if p.action in ("change", "retrigger")]
    return [todo[i:i + max_unavailable] for i in range(0, len(todo), max_unavailable)]


def batch_outcome(nodes, profile):
    """(done, failed names, pending names) for the nodes of one batch as read now."""
    failed, pending = [], []
    for node in nodes:
        labels = labels_of(node)
        state = labels.get(STATE) if labels.get(CONFIG) == profile else None
        if state == "failed":
            failed.append(node["metadata"]["name"])
        elif state != "success":
            pending.append(node["metadata"]["name"])
    return not failed and not pending, sorted(failed), sorted(pending)


def describe_batch(nodes):
    out = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        labels = labels_of(node)
        paused = paused_labels(node)
        out.append("%s: state %s%s" % (node["metadata"]["name"], labels.get(STATE, "unset"),
                                       (", " + ", ".join(paused)) if paused else ""))
    return "; ".join(out)
