# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> read the node and its pods -> plan -> cordon / evict / wait / uncordon -> result.

Private to the collection: not a public API. The pure part is domain/nodes/node_maintenance.py.
Evictions go through the Eviction API (``pods/<name>/eviction``), so PodDisruptionBudgets are
respected: a 429 is retried until the time-out. The clock is injectable (tests run on a fake one).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import EvictionRefused
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import RealClock
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_maintenance as domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError, Refusal


def read(kube, opts):
    """(node, pods bound to it); a node that does not exist is an error naming it."""
    node = kube.get("v1", "Node", opts.name)
    if node is None:
        raise ParamError("name", "node %s does not exist" % opts.name,
                         "give the name of an existing node, as kubectl get nodes prints it")
    pods = kube.list("v1", "Pod", field_selector="spec.nodeName=%s" % opts.name)
    return node, pods


def set_unschedulable(kube, name, value, dry_run=False):
    """Cordon (True) or uncordon (False: the field is removed, as kubectl uncordon leaves it)."""
    return kube.patch_merge("v1", "Node", name, {"spec": {"unschedulable": True if value else None}},
                            dry_run=dry_run)


class Drain:
    """Evict the planned pods (retrying budget refusals), then wait until they are gone."""

    def __init__(self, kube, opts, clock=None, interval=2.0):
        self.kube, self.opts, self.interval = kube, opts, interval
        self.clock = clock or RealClock()
        self.deadline = self.clock.time() + opts.timeout
        self.refusals = {}

    def _expired(self):
        return self.clock.time() >= self.deadline

    def _sleep(self):
        self.clock.sleep(max(0.0, min(self.interval, self.deadline - self.clock.time())))

    def _fail(self, remaining, doing):
        raise GpuPlatformError(
            "drain of node %s timed out after %ss %s; still on the node: %s. The node stays cordoned. Fix: let "
            "the PodDisruptionBudget allow the disruption (scale the workload up or relax the budget), remove "
            "what holds the pods (finalizers), or give a longer wait_timeout, then run again"
            % (self.opts.name, self.opts.timeout, doing, domain.describe_remaining(remaining, self.refusals)),
            node=self.opts.name, remaining=sorted(remaining), refused=dict(self.refusals))

    def _pods(self, idents, uids):
        """The pods of ``idents`` that are still there (same uid: a recreated pod is a new pod)."""
        out = {}
        for ident in idents:
            namespace, name = ident.split("/", 1)
            pod = self.kube.get("v1", "Pod", name, namespace)
            if pod is not None and (uids.get(ident) is None or pod["metadata"].get("uid") == uids[ident]):
                out[ident] = pod
        return out

    def evict(self, idents, pods_by_id):
        """Evict each pod; 429 -> retry every ``interval`` until the deadline. Returns the pods evicted."""
        pending, evicted = list(idents), []
        while pending:
            still = []
            for ident in pending:
                namespace, name = ident.split("/", 1)
                try:
                    if self.kube.evict(name, namespace):
                        evicted.append(ident)
                    self.refusals.pop(ident, None)
                except EvictionRefused as exc:
                    self.refusals[ident] = exc.msg
                    still.append(ident)
            pending = still
            if pending:
                if self._expired():
                    self._fail({i: pods_by_id[i] for i in pending}, "evicting pods")
                self._sleep()
        return evicted

    def wait_gone(self, idents, uids):
        while True:
            remaining = self._pods(idents, uids)
            if not remaining:
                return
            if self._expired():
                self._fail(remaining, "waiting for evicted pods to be gone")
            self._sleep()


def check_budgets(kube, the_plan):
    """Check mode: a server-side dry-run eviction of each planned pod; the budget refusals it meets."""
    refused = []
    for ident in the_plan.evict:
        namespace, name = ident.split("/", 1)
        try:
            kube.evict(name, namespace, dry_run=True)
        except EvictionRefused as exc:
            refused.append({"pod": ident, "reason": exc.msg})
    return refused


def _diff(the_plan, after_unschedulable, after_pods):
    name = "node %s" % the_plan.node
    return [{"before_header": name, "after_header": name,
             "before": {"unschedulable": the_plan.unschedulable, "pods": list(the_plan.pods)},
             "after": {"unschedulable": after_unschedulable, "pods": list(after_pods)}}]


def run(params, kube_factory, check_mode=False, clock=None, interval=2.0):
    opts = domain.options(validate.given(params))
    kube = kube_factory()
    node, pods = read(kube, opts)
    the_plan = domain.plan(node, pods, opts)
    if the_plan.blocking:
        raise Refusal(domain.refusal_message(the_plan), node=opts.name, plan=the_plan.as_dict())
    plan_out = the_plan.as_dict()
    evicted = list(the_plan.evict)
    if the_plan.cordon:
        set_unschedulable(kube, opts.name, True, dry_run=check_mode)
    if the_plan.uncordon:
        set_unschedulable(kube, opts.name, False, dry_run=check_mode)
    if opts.state == "drained":
        if check_mode:
            plan_out["refused_by_budget_now"] = check_budgets(kube, the_plan)
        else:
            pods_by_id = {domain.pod_id(p): p for p in pods}
            drain = Drain(kube, opts, clock, interval)
            evicted = drain.evict(the_plan.evict, pods_by_id)
            waited = the_plan.evict + the_plan.terminating
            drain.wait_gone(waited, {i: pods_by_id[i]["metadata"].get("uid") for i in waited})
    cordoned = opts.state != "uncordoned"
    left = [p for p in the_plan.pods if p not in the_plan.evict and p not in the_plan.terminating]
    result = {"changed": the_plan.changes, "node": opts.name, "cordoned": cordoned, "evicted": evicted,
              "not_evicted": [dict(s) for s in the_plan.skip], "plan": plan_out}
    if the_plan.changes:
        result["diff"] = _diff(the_plan, cordoned, left)
    return result
