# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU quota per team: Kueue flavors, ClusterQueues and LocalQueues, plus Volcano or KAI queues.

Private to the collection: not a public API. Pure: standard library only.
Validates the scheduling role's small inventory spec (``scheduling_flavors``,
``gpu_platform_teams``, ``scheduling_cohort``, ``scheduling_local_queue_name``) and renders the
objects that put it on a cluster, in apply order. Every bad input is a ParamError naming the
role variable (``gpu_platform_teams[1].quota.h100``), what is wrong, and the fix. The flavors are validated in
``domain.scheduling.flavors``, the teams in ``domain.scheduling.teams``.

Facts this follows (sources in brackets; nothing copied):

- Kueue v0.19 serves v1beta1 (deprecated) and v1beta2 (storage) for ResourceFlavor,
  ClusterQueue and LocalQueue [kueue v0.19.2 config/components/crd/bases]. In v1beta2 the
  ClusterQueue's cohort field is ``spec.cohortName`` (v1beta1 called it ``spec.cohort``);
  ``queueingStrategy`` defaults to BestEffortFIFO; ``namespaceSelector`` null selects no
  namespace and ``{}`` selects every namespace, so a team's queue names its namespaces.
- The order of flavors in a resource group is the order Kueue tries them: we keep the order of
  ``scheduling_flavors``.
- Kueue's preemption default ``reclaimWithinCohort: Never`` lets a borrower keep lent GPUs until
  its jobs end; a team in a cohort here gets ``Any``, so its nominal quota really is its own.
- Volcano Queue ``scheduling.volcano.sh/v1beta1`` (cluster-scoped): ``capability`` is a hard
  cap per resource (resources it does not name are not capped), ``reclaimable`` lets other
  queues reclaim what it uses above its share. Volcano creates the queues ``default`` and
  ``root`` itself [volcano v1.15.1 CRD; Volcano docs on queues and hierarchical queues]. Pods
  name their queue with the annotation ``scheduling.volcano.sh/queue-name`` (Volcano Jobs with
  ``spec.queue``).
- KAI Queue ``scheduling.run.ai/v2`` (cluster-scoped, the only served version at v0.13.0):
  ``spec.resources.{gpu,cpu,memory}.{quota,limit,overQuotaWeight}`` are plain numbers (GPUs,
  millicores, megabytes), not Kubernetes quantities; ``-1`` means unlimited. Unset fields are
  0, and a limit of 0 is a hard cap of zero, so cpu and memory are set to -1 explicitly
  [KAI-Scheduler pkg/apis/scheduling/v2 queue types; docs/queues; default-queues.yaml]. Before
  the n-level hierarchy (KAI-Scheduler#858, fixing #621) workloads could only use a queue that
  has a parent, so the team queues sit under one parent queue. Pods name the queue with the
  label ``kai.scheduler/queue``.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling.flavors import (
    FLAVORS_FIELD, GPU_RESOURCE, _name, _selector_text, validate_flavors)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling.teams import (
    COHORT_FIELD, TEAMS_FIELD, _cohort, gpu_ceilings, validate_teams)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

LOCAL_QUEUE_FIELD = "scheduling_local_queue_name"
SCHEDULER_FIELD = "gpu_platform_scheduler"

VOLCANO = "volcano"
KAI = "kai"
NONE = "none"
SCHEDULERS = (VOLCANO, KAI, NONE)

SPEC_KEYS = {"flavors": FLAVORS_FIELD, "teams": TEAMS_FIELD, "cohort": COHORT_FIELD,
             "local_queue_name": LOCAL_QUEUE_FIELD}

KUEUE_API = "kueue.x-k8s.io/v1beta2"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
KAI_API = "scheduling.run.ai/v2"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"

DEFAULT_LOCAL_QUEUE = "gpu"
QUEUEING_STRATEGY = "BestEffortFIFO"
COHORT_RECLAIM = "Any"
VOLCANO_BUILTIN_QUEUES = ("default", "root")
KAI_PARENT_QUEUE = "gpu-teams"
KAI_UNLIMITED = -1


def _scheduler(value):
    if value not in SCHEDULERS:
        raise ParamError(SCHEDULER_FIELD, "%r is not a scheduler this role installs" % (value,),
                         "use one of %s (none: Kueue quota only, with the default scheduler)" % ", ".join(SCHEDULERS))
    return value


def _check_scheduler_names(teams, scheduler):
    for team in teams:
        if scheduler == VOLCANO and team.name in VOLCANO_BUILTIN_QUEUES:
            raise ParamError(team.field + ".name", "%r is a queue Volcano creates and uses itself" % team.name,
                             "rename the team, e.g. to %s-team" % team.name)
        if scheduler == KAI and team.name == KAI_PARENT_QUEUE:
            raise ParamError(team.field + ".name", "%r is the name of the parent KAI queue of all teams" % team.name,
                             "rename the team")


# ---------------------------------------------------------------- objects

def _meta(name, namespace=None):
    out = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["labels"] = dict(MANAGED_BY)
    return out


def resource_flavor(flavor):
    spec = {"nodeLabels": flavor.selector}
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": _meta(flavor.name), "spec": spec}


def quantity(count):
    """A GPU count as Kubernetes serializes a resource.Quantity: a string. Kueue's controller writes its
    ClusterQueues back in that form (when it adds its finalizer), so a number here would differ from the live
    object on every later run."""
    return str(count)


def cluster_queue(team):
    flavors = []
    for name, nominal in team.quota.items():
        resource = {"name": GPU_RESOURCE, "nominalQuota": quantity(nominal)}
        if name in team.borrowing_limit:
            resource["borrowingLimit"] = quantity(team.borrowing_limit[name])
        if name in team.lending_limit:
            resource["lendingLimit"] = quantity(team.lending_limit[name])
        flavors.append({"name": name, "resources": [resource]})
    spec = {
        "namespaceSelector": {"matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(team.namespaces)}]},
        "queueingStrategy": QUEUEING_STRATEGY,
        "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": flavors}],
    }
    if team.cohort is not None:
        spec["cohortName"] = team.cohort
        spec["preemption"] = {"reclaimWithinCohort": COHORT_RECLAIM}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": _meta(team.name), "spec": spec}


def local_queue(name, namespace, team):
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": _meta(name, namespace),
            "spec": {"clusterQueue": team.name}}


def volcano_queue(team, ceiling):
    return {"apiVersion": VOLCANO_API, "kind": "Queue", "metadata": _meta(team.name),
            "spec": {"capability": {GPU_RESOURCE: quantity(ceiling)}, "reclaimable": True}}


def _kai_resources(gpu_quota, gpu_limit):
    unlimited = {"quota": KAI_UNLIMITED, "limit": KAI_UNLIMITED, "overQuotaWeight": 1}
    return {"gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": 1},
            "cpu": dict(unlimited), "memory": dict(unlimited)}


def kai_queues(teams, ceilings):
    """The parent KAI queue, then one leaf queue per team (GPU quota = Kueue quota, limit = the ceiling)."""
    out = [{"apiVersion": KAI_API, "kind": "Queue", "metadata": _meta(KAI_PARENT_QUEUE),
            "spec": {"resources": _kai_resources(sum(t.total for t in teams), KAI_UNLIMITED)}}]
    for team in teams:
        out.append({"apiVersion": KAI_API, "kind": "Queue", "metadata": _meta(team.name),
                    "spec": {"parentQueue": KAI_PARENT_QUEUE,
                             "resources": _kai_resources(team.total, ceilings[team.name])}})
    return out


# ---------------------------------------------------------------- summary

def _per_flavor(mapping):
    return ", ".join("%s %d" % item for item in mapping.items())


def _summary(flavors, teams, ceilings, scheduler, queue_name):
    lines = []
    used = {name for team in teams for name in team.quota}
    for flavor in flavors:
        line = "ResourceFlavor %s: nodes with %s" % (flavor.name, _selector_text(flavor.selector))
        if flavor.tolerations:
            line += "; %d toleration(s)" % len(flavor.tolerations)
        if flavor.name not in used:
            line += "; warning: no team has quota in it"
        lines.append(line)
    for team in teams:
        line = "ClusterQueue %s: %d GPUs (%s)" % (team.name, team.total, _per_flavor(team.quota))
        if team.cohort is None:
            line += "; no cohort: never borrows or lends"
        else:
            borrow = ", ".join("%s up to %d" % (f, team.borrowing_limit[f]) if f in team.borrowing_limit
                               else "%s without limit" % f for f in team.quota)
            line += "; cohort %s: borrows %s" % (team.cohort, borrow)
            if team.lending_limit:
                line += "; lends at most %s" % _per_flavor(team.lending_limit)
            line += "; at most %d GPUs with borrowing; reclaims lent GPUs by preempting borrowers" % ceilings[team.name]
        lines.append(line)
        lines.append("LocalQueue %s in %s -> ClusterQueue %s (jobs set label %s: %s)" % (
            queue_name, ", ".join(team.namespaces), team.name, KUEUE_QUEUE_LABEL, queue_name))
    if scheduler == VOLCANO:
        for team in teams:
            lines.append("Volcano Queue %s: capability %d %s, reclaimable (pods set schedulerName volcano and "
                         "annotation %s: %s)" % (team.name, ceilings[team.name], GPU_RESOURCE,
                                                 VOLCANO_QUEUE_ANNOTATION, team.name))
    elif scheduler == KAI:
        lines.append("KAI Queue %s: parent of the team queues, GPU quota %d" % (
            KAI_PARENT_QUEUE, sum(t.total for t in teams)))
        for team in teams:
            lines.append("KAI Queue %s: GPU quota %d, limit %d (pods set schedulerName kai-scheduler and label %s: %s)"
                         % (team.name, team.total, ceilings[team.name], KAI_QUEUE_LABEL, team.name))
    else:
        lines.append("scheduler none: Kueue quota only, pods use the default scheduler")
    return lines


# ---------------------------------------------------------------- entry point

def plan(spec, scheduler):
    """The scheduling objects for ``spec`` (keys flavors, teams, cohort, local_queue_name) and ``scheduler``.

    Returns ``{"objects": [...], "summary": [...], "resources": {team: {flavor: GPUs}}}``; the
    objects in apply order: ResourceFlavors, ClusterQueues, LocalQueues, then the Volcano or
    KAI queues (none for ``none``). The input is not modified.
    """
    scheduler = _scheduler(scheduler)
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise ParamError("scheduling", "the spec must be a dictionary, not %s" % type(spec).__name__,
                         "pass flavors, teams, cohort and local_queue_name")
    for key in spec:
        if key not in SPEC_KEYS:
            raise ParamError(str(key), "is not a scheduling setting",
                             "use only %s" % ", ".join(SPEC_KEYS.values()))
    cohort = _cohort(COHORT_FIELD, spec.get("cohort"))
    queue_name = spec.get("local_queue_name")
    queue_name = _name(LOCAL_QUEUE_FIELD, DEFAULT_LOCAL_QUEUE if queue_name is None else queue_name, "team-gpus")
    flavors = validate_flavors(spec.get("flavors"))
    teams = validate_teams(spec.get("teams"), flavors, cohort)
    _check_scheduler_names(teams, scheduler)
    ceilings = gpu_ceilings(teams)

    objects = [resource_flavor(f) for f in flavors]
    objects += [cluster_queue(t) for t in teams]
    objects += [local_queue(queue_name, namespace, t) for t in teams for namespace in t.namespaces]
    if scheduler == VOLCANO:
        objects += [volcano_queue(t, ceilings[t.name]) for t in teams]
    elif scheduler == KAI and teams:
        objects += kai_queues(teams, ceilings)
    return {
        "objects": objects,
        "summary": _summary(flavors, teams, ceilings, scheduler, queue_name),
        "resources": {t.name: dict(t.quota) for t in teams},
    }
