# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU quota per team: Kueue flavors, ClusterQueues and LocalQueues, plus Volcano or KAI queues.

Private to the collection: not a public API. Pure: standard library only.
Validates the scheduling role's small inventory spec (``scheduling_flavors``,
``scheduling_teams``, ``scheduling_cohort``, ``scheduling_local_queue_name``) and renders the
objects that put it on a cluster, in apply order. Every bad input is a ParamError naming the
role variable (``scheduling_teams[1].quota.h100``), what is wrong, and the fix.

Facts this follows (sources in brackets; nothing copied):

- Kueue v0.19 serves v1beta1 (deprecated) and v1beta2 (storage) for ResourceFlavor,
  ClusterQueue and LocalQueue [kueue v0.19.2 config/components/crd/bases]. In v1beta2 the
  ClusterQueue's cohort field is ``spec.cohortName`` (v1beta1 called it ``spec.cohort``);
  ``queueingStrategy`` defaults to BestEffortFIFO; ``namespaceSelector`` null selects no
  namespace and ``{}`` selects every namespace, so a team's queue names its namespaces.
- ``borrowingLimit`` and ``lendingLimit`` must be null when ``cohortName`` is empty (a CEL rule
  for borrowingLimit in the CRD, the webhook for both), and ``lendingLimit`` must not exceed
  ``nominalQuota`` [kueue pkg/webhooks clusterqueue_webhook.go]. Each flavor of a resource group
  lists exactly the group's covered resources (CEL); at most 64 flavors per group.
- ResourceFlavor ``spec.tolerations``: at most 8; operator Equal or Exists; no key needs
  Exists; Exists carries no value; tolerationSeconds only with effect NoExecute (CEL rules of
  the CRD, which the schema tests cannot check, so they are checked here).
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

import dataclasses
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FLAVORS_FIELD = "scheduling_flavors"
TEAMS_FIELD = "scheduling_teams"
COHORT_FIELD = "scheduling_cohort"
LOCAL_QUEUE_FIELD = "scheduling_local_queue_name"
SCHEDULER_FIELD = "scheduling_scheduler"

VOLCANO = "volcano"
KAI = "kai"
NONE = "none"
SCHEDULERS = (VOLCANO, KAI, NONE)

SPEC_KEYS = {"flavors": FLAVORS_FIELD, "teams": TEAMS_FIELD, "cohort": COHORT_FIELD,
             "local_queue_name": LOCAL_QUEUE_FIELD}
FLAVOR_KEYS = ("name", "gpu_product", "node_labels", "tolerations")
TEAM_KEYS = ("name", "namespaces", "quota", "borrowing_limit", "lending_limit", "cohort")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

KUEUE_API = "kueue.x-k8s.io/v1beta2"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
KAI_API = "scheduling.run.ai/v2"

GPU_RESOURCE = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}

DEFAULT_LOCAL_QUEUE = "gpu"
QUEUEING_STRATEGY = "BestEffortFIFO"
COHORT_RECLAIM = "Any"
VOLCANO_BUILTIN_QUEUES = ("default", "root")
KAI_PARENT_QUEUE = "gpu-teams"
KAI_UNLIMITED = -1
MAX_TOLERATIONS = 8  # ResourceFlavor spec.tolerations maxItems
MAX_FLAVORS_PER_QUEUE = 64  # ClusterQueue resourceGroups[].flavors maxItems

WHOLE_NUMBER = re.compile(r"^[+-]?[0-9]+$")
GPU_FIX = "give a whole number such as 8"


@dataclasses.dataclass(frozen=True)
class Flavor:
    """One validated GPU flavor: a set of nodes with one GPU product."""

    name: str
    gpu_product: str
    node_labels: dict
    tolerations: tuple = ()
    field: str = dataclasses.field(default=FLAVORS_FIELD + "[0]", compare=False)

    @property
    def selector(self):
        """The nodeLabels of the ResourceFlavor (the product label first, then the extra labels by key)."""
        out = {PRODUCT_LABEL: self.gpu_product}
        out.update(sorted(self.node_labels.items()))
        return out


@dataclasses.dataclass(frozen=True)
class Team:
    """One validated team; quota, borrowing and lending map flavor names to GPUs, in flavor order."""

    name: str
    namespaces: tuple
    quota: dict
    borrowing_limit: dict
    lending_limit: dict
    cohort: str | None
    field: str = dataclasses.field(default=TEAMS_FIELD + "[0]", compare=False)

    @property
    def total(self):
        return sum(self.quota.values())


# ---------------------------------------------------------------- small validators

def _unknown_keys(field, raw, known, example):
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ParamError(field, "unknown key(s) %s" % ", ".join(unknown),
                         "use only %s (check the spelling), e.g. %s" % (", ".join(known), example))


def _gpus(field, value):
    """A number of GPUs: a whole number >= 0 (a quoted one, as Jinja renders it, is accepted)."""
    if isinstance(value, bool):
        raise ParamError(field, "%r is not a number of GPUs (true/false)" % (value,), GPU_FIX)
    if isinstance(value, str) and WHOLE_NUMBER.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, float):
        raise ParamError(field, "%r is not a whole number of GPUs (pods ask for whole %s devices)"
                         % (value, GPU_RESOURCE), GPU_FIX)
    if not isinstance(value, int):
        raise ParamError(field, "%r is not a number of GPUs" % (value,), GPU_FIX)
    if value < 0:
        raise ParamError(field, "%d is negative" % value, "give 0 or more GPUs, e.g. 8")
    return value


def _name(field, value, example):
    """A DNS-1123 label, with an example that fits the field (validate.dns_label's is a namespace)."""
    try:
        return validate.dns_label(field, value)
    except ParamError as err:
        problem = err.msg[len(field) + 2:].split(". Fix: ", 1)[0]
        raise ParamError(field, problem, "use lower-case letters, digits and '-', e.g. %s" % example) from None


def _cohort(field, value):
    if value is None:
        return None
    if value == "":
        raise ParamError(field, "is an empty string", "omit it, or name the cohort, e.g. gpu-shared")
    return _name(field, value, "gpu-shared")


def _label_value(field, value, what, example):
    if not isinstance(value, str) or not value:
        raise ParamError(field, "is empty" if value in (None, "") else "%r is not a string" % (value,),
                         "give %s, e.g. %s" % (what, example))
    if len(value) > 63 or not validate.LABEL_VALUE.match(value):
        raise ParamError(field, "%r is not a valid label value (at most 63 letters, digits, '-', '_' and '.', "
                         "starting and ending with a letter or digit)" % (value,),
                         "give %s, e.g. %s" % (what, example))
    return value


def _scheduler(value):
    if value not in SCHEDULERS:
        raise ParamError(SCHEDULER_FIELD, "%r is not a scheduler this role installs" % (value,),
                         "use one of %s (none: Kueue quota only, with the default scheduler)" % ", ".join(SCHEDULERS))
    return value


# ---------------------------------------------------------------- flavors

def _toleration(field, raw):
    if not isinstance(raw, dict):
        raise ParamError(field, "%r is not a toleration (a dictionary)" % (raw,),
                         "give key, operator and effect, e.g. {key: nvidia.com/gpu, operator: Exists, "
                         "effect: NoSchedule}")
    _unknown_keys(field, raw, TOLERATION_KEYS, "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}")
    key, value, effect = raw.get("key"), raw.get("value"), raw.get("effect")
    operator = raw.get("operator")
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
        out["value"] = _label_value(field + ".value", value, "the taint value", "present")
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


def _tolerations(field, value):
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ParamError(field, "must be a list of tolerations", "give a list, e.g. [{key: nvidia.com/gpu, "
                         "operator: Exists, effect: NoSchedule}]")
    if len(value) > MAX_TOLERATIONS:
        raise ParamError(field, "has %d tolerations; a Kueue ResourceFlavor takes at most %d"
                         % (len(value), MAX_TOLERATIONS), "merge them, e.g. one toleration per taint key")
    return tuple(_toleration("%s[%d]" % (field, index), raw) for index, raw in enumerate(value))


def _flavor(raw, index):
    prefix = "%s[%d]" % (FLAVORS_FIELD, index)
    if not isinstance(raw, dict):
        raise ParamError(prefix, "%r is not a flavor (a dictionary)" % (raw,),
                         "give name and gpu_product, e.g. {name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}")
    _unknown_keys(prefix, raw, FLAVOR_KEYS, "{name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}")
    name = _name(prefix + ".name", raw.get("name"), "h100")
    product = _label_value(prefix + ".gpu_product", raw.get("gpu_product"),
                           "the node label value of %s that GPU Feature Discovery sets" % PRODUCT_LABEL,
                           "NVIDIA-H100-80GB-HBM3")
    node_labels = validate.labels(prefix + ".node_labels", raw.get("node_labels"))
    if PRODUCT_LABEL in node_labels:
        raise ParamError(prefix + ".node_labels", "sets %s, which gpu_product already sets" % PRODUCT_LABEL,
                         "remove it from node_labels and give the product as gpu_product")
    tolerations = _tolerations(prefix + ".tolerations", raw.get("tolerations"))
    return Flavor(name=name, gpu_product=product, node_labels=dict(sorted(node_labels.items())),
                  tolerations=tolerations, field=prefix)


def validate_flavors(flavors):
    """``scheduling_flavors`` as a list of Flavor, or ParamError naming the first bad field."""
    if flavors is None:
        return []
    if not isinstance(flavors, list):
        raise ParamError(FLAVORS_FIELD, "must be a list of flavors, not %s" % type(flavors).__name__,
                         "give a list, e.g. [{name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}]")
    out = [_flavor(raw, index) for index, raw in enumerate(flavors)]
    names, selectors = {}, {}
    for index, flavor in enumerate(out):
        if flavor.name in names:
            raise ParamError(flavor.field + ".name", "%r is also the name of %s[%d]" % (
                flavor.name, FLAVORS_FIELD, names[flavor.name]), "give each flavor its own name")
        names[flavor.name] = index
        selector = tuple(flavor.selector.items())
        if selector in selectors:
            raise ParamError(flavor.field, "selects the same nodes as %s[%d] (%s)" % (
                FLAVORS_FIELD, selectors[selector], _selector_text(flavor.selector)),
                "give the flavors different node_labels (e.g. the node pool), or merge them into one")
        selectors[selector] = index
    return out


# ---------------------------------------------------------------- teams

def _namespaces(field, value):
    if value is None or value == []:
        raise ParamError(field, "is required and empty: a team without namespaces can submit no job",
                         "list the team's namespaces, e.g. [ml-research]")
    if not isinstance(value, list):
        raise ParamError(field, "must be a list of namespace names, not %s" % type(value).__name__,
                         "give a list, e.g. [%s]" % (value if isinstance(value, str) else "ml-research"))
    seen = {}
    for index, namespace in enumerate(value):
        here = "%s[%d]" % (field, index)
        _name(here, namespace, "ml-research")
        if namespace in seen:
            raise ParamError(here, "%r is listed twice (also at %s[%d])" % (namespace, field, seen[namespace]),
                             "list each namespace once")
        seen[namespace] = index
    return tuple(value)


def _flavor_map(field, value, flavor_names):
    """A {flavor: GPUs} mapping (quota, borrowing_limit or lending_limit), in flavor order."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParamError(field, "must map flavor names to GPUs, not %s" % type(value).__name__,
                         "give flavor: GPUs pairs, e.g. {%s: 8}" % (flavor_names[0] if flavor_names else "h100"))
    got = {}
    for key, raw in value.items():
        here = "%s.%s" % (field, key)
        if key not in flavor_names:
            raise ParamError(here, "names no flavor in %s (it has: %s)" % (
                FLAVORS_FIELD, ", ".join(flavor_names) or "none"),
                "use one of those names, or add a flavor %r to %s" % (str(key), FLAVORS_FIELD))
        got[key] = _gpus(here, raw)
    return {name: got[name] for name in flavor_names if name in got}


def _team(raw, index, flavor_names, global_cohort):
    prefix = "%s[%d]" % (TEAMS_FIELD, index)
    example = "{name: research, namespaces: [ml-research], quota: {h100: 8}}"
    if not isinstance(raw, dict):
        raise ParamError(prefix, "%r is not a team (a dictionary)" % (raw,), "give name, namespaces and quota, "
                         "e.g. %s" % example)
    _unknown_keys(prefix, raw, TEAM_KEYS, example)
    name = _name(prefix + ".name", raw.get("name"), "research")
    namespaces = _namespaces(prefix + ".namespaces", raw.get("namespaces"))
    quota = _flavor_map(prefix + ".quota", raw.get("quota"), flavor_names)
    if not quota:
        raise ParamError(prefix + ".quota", "gives the team quota in no flavor",
                         "give GPUs per flavor, e.g. {%s: 8}" % (flavor_names[0] if flavor_names else "h100"))
    cohort = _cohort(prefix + ".cohort", raw.get("cohort"))
    cohort = global_cohort if cohort is None else cohort
    limits = {}
    for key, verb, crd_field in (("borrowing_limit", "borrow from", "borrowingLimit"),
                                 ("lending_limit", "lend to", "lendingLimit")):
        field = "%s.%s" % (prefix, key)
        limits[key] = _flavor_map(field, raw.get(key), flavor_names)
        if limits[key] and cohort is None:
            raise ParamError(field, "is set but the team is in no cohort, so there is no team to %s "
                             "(Kueue refuses %s without spec.cohortName)" % (verb, crd_field),
                             "set %s (or this team's cohort), or remove %s" % (COHORT_FIELD, key))
        for flavor in limits[key]:
            if flavor not in quota:
                raise ParamError("%s.%s" % (field, flavor), "the team has no quota in flavor %r" % flavor,
                                 "add %s.quota.%s (0 to only borrow), or remove this limit" % (prefix, flavor))
    for flavor, lend in limits["lending_limit"].items():
        if lend > quota[flavor]:
            raise ParamError("%s.lending_limit.%s" % (prefix, flavor), "%d is more than the team's quota of %d "
                             "in that flavor (it can lend only what it has)" % (lend, quota[flavor]),
                             "give at most %d" % quota[flavor])
    if len(quota) > MAX_FLAVORS_PER_QUEUE:
        raise ParamError(prefix + ".quota", "names %d flavors; a ClusterQueue resource group takes at most %d"
                         % (len(quota), MAX_FLAVORS_PER_QUEUE), "split the team, or merge flavors")
    return Team(name=name, namespaces=namespaces, quota=quota, borrowing_limit=limits["borrowing_limit"],
                lending_limit=limits["lending_limit"], cohort=cohort, field=prefix)


def validate_teams(teams, flavors, cohort=None):
    """``scheduling_teams`` as a list of Team (``flavors``: validated Flavor list; ``cohort``: the global one)."""
    if teams is None:
        return []
    if not isinstance(teams, list):
        raise ParamError(TEAMS_FIELD, "must be a list of teams, not %s" % type(teams).__name__,
                         "give a list, e.g. [{name: research, namespaces: [ml-research], quota: {h100: 8}}]")
    flavor_names = [f.name for f in flavors]
    out = [_team(raw, index, flavor_names, cohort) for index, raw in enumerate(teams)]
    names, owners = {}, {}
    for index, team in enumerate(out):
        if team.name in names:
            raise ParamError(team.field + ".name", "%r is also the name of %s[%d]" % (
                team.name, TEAMS_FIELD, names[team.name]),
                "give each team its own name (it names the team's ClusterQueue)")
        names[team.name] = index
        for position, namespace in enumerate(team.namespaces):
            if namespace in owners:
                other = owners[namespace]
                raise ParamError("%s.namespaces[%d]" % (team.field, position), "%r is also a namespace of team %s "
                                 "(%s[%d]); a namespace's LocalQueue points at one ClusterQueue" % (
                                     namespace, out[other].name, TEAMS_FIELD, other),
                                 "give each namespace to one team")
            owners[namespace] = index
    ceilings = gpu_ceilings(out)
    for team in out:
        if ceilings[team.name] == 0:
            raise ParamError(team.field + ".quota", "gives the team quota in no flavor (0 GPUs everywhere) and "
                             "nothing it could borrow%s" % ("" if team.cohort else ", as it is in no cohort"),
                             "give it GPUs in at least one flavor, e.g. {%s: 8}%s" % (
                                 next(iter(team.quota)), "" if team.cohort else ", or set %s" % COHORT_FIELD))
    return out


def gpu_ceilings(teams):
    """The most GPUs each team can hold at once: its quota plus what it can borrow in its cohort.

    Per flavor: the other members' lendable GPUs (their lending_limit, else their whole quota),
    capped by the team's borrowing_limit. This is what Kueue can admit for the team, so the
    scheduler queue behind Kueue must not cap it lower.
    """
    out = {}
    for team in teams:
        total = 0
        for flavor, nominal in team.quota.items():
            borrowable = 0
            if team.cohort is not None:
                borrowable = sum(other.lending_limit.get(flavor, other.quota[flavor]) for other in teams
                                 if other is not team and other.cohort == team.cohort and flavor in other.quota)
                if flavor in team.borrowing_limit:
                    borrowable = min(borrowable, team.borrowing_limit[flavor])
            total += nominal + borrowable
        out[team.name] = total
    return out


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


def cluster_queue(team):
    flavors = []
    for name, nominal in team.quota.items():
        resource = {"name": GPU_RESOURCE, "nominalQuota": nominal}
        if name in team.borrowing_limit:
            resource["borrowingLimit"] = team.borrowing_limit[name]
        if name in team.lending_limit:
            resource["lendingLimit"] = team.lending_limit[name]
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
            "spec": {"capability": {GPU_RESOURCE: ceiling}, "reclaimable": True}}


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

def _selector_text(selector):
    return ", ".join("%s=%s" % item for item in selector.items())


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
