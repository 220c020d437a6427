# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The scheduling role's teams (``gpu_platform_teams``, ``scheduling_cohort``) validated into Team objects, and
the most GPUs each team can hold with borrowing (``gpu_ceilings``).

Private to the collection: not a public API. Pure: standard library only.
Every bad input is a ParamError naming the role variable (``gpu_platform_teams[1].quota.h100``), what is wrong,
and the fix. A team's quota names flavors of ``domain.scheduling.flavors``.

Facts this follows (sources in brackets; nothing copied):

- ``borrowingLimit`` and ``lendingLimit`` must be null when ``cohortName`` is empty (a CEL rule
  for borrowingLimit in the CRD, the webhook for both), and ``lendingLimit`` must not exceed
  ``nominalQuota`` [kueue pkg/webhooks clusterqueue_webhook.go]. Each flavor of a resource group
  lists exactly the group's covered resources (CEL); at most 64 flavors per group.
"""

from __future__ import annotations

import dataclasses
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling.flavors import (
    FLAVORS_FIELD, GPU_RESOURCE, _name, _unknown_keys)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

TEAMS_FIELD = "gpu_platform_teams"
COHORT_FIELD = "scheduling_cohort"
TEAM_KEYS = ("name", "namespaces", "quota", "borrowing_limit", "lending_limit", "cohort")
MAX_FLAVORS_PER_QUEUE = 64  # ClusterQueue resourceGroups[].flavors maxItems

WHOLE_NUMBER = re.compile(r"^[+-]?[0-9]+$")
GPU_FIX = "give a whole number such as 8"


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


def _cohort(field, value):
    if value is None:
        return None
    if value == "":
        raise ParamError(field, "is an empty string", "omit it, or name the cohort, e.g. gpu-shared")
    return _name(field, value, "gpu-shared")


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
    """``gpu_platform_teams`` as a list of Team (``flavors``: validated Flavor list; ``cohort``: the global one)."""
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
