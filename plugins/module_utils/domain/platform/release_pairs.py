# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GPU Operator and Network Operator release pairs (roles/gpu_platform: ``gpu_platform_release_pair`` names one of
``gpu_platform_release_pairs``): the choice checked, and which pair the chart versions in use are.

Private to the collection: not a public API. Pure: standard library only, no I/O.

The pairs, their names and the default choice are the argument specs' (roles/gpu_platform/meta/argument_specs.yml) and
the role's defaults; who validated each pair is the version matrix's (versions.py). The two operators' chart versions
default to the chosen pair's; a version set directly leaves the pairs, and preflight says so, naming the variable.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELD = "gpu_platform_release_pair"
PAIRS_FIELD = "gpu_platform_release_pairs"
OPERATORS = ("gpu_operator", "network_operator")
# The role variables that install each operator's chart version (their defaults read the chosen pair).
CHART_FIELDS = {"gpu_operator": "gpu_operator_chart_version", "network_operator": "network_operator_chart_version"}
RDMA_PAIR = " x ".join(versions.LABELS[d] for d in ("gpu_operator", "network_operator", "rdma"))
EXAMPLE = "{aicr: {gpu_operator: v26.7.0, network_operator: 26.4.1}}"


def check_pairs(pairs):
    """``gpu_platform_release_pairs`` checked: a non-empty map of names to ``{gpu_operator, network_operator}``, each
    an exact chart version. Returns it; ParamError names the pair (``gpu_platform_release_pairs.aicr.gpu_operator``)."""
    if not isinstance(pairs, dict) or not pairs:
        raise ParamError(PAIRS_FIELD, "%r is not a map of pair names to their two chart versions" % (pairs,),
                         "leave it unset (the collection's pairs, docs/versions.md), or give e.g. %s" % EXAMPLE)
    for name in sorted(pairs, key=str):
        pair = pairs[name]
        where = "%s.%s" % (PAIRS_FIELD, name)
        if not isinstance(pair, dict) or sorted(pair) != sorted(OPERATORS):
            raise ParamError(where, "%r is not {gpu_operator, network_operator}" % (pair,),
                             "give both chart versions and nothing else, e.g. %s" % EXAMPLE)
        for key in OPERATORS:
            value = pair[key]
            if not isinstance(value, str) or not version_parse.is_exact_version(value):
                raise ParamError("%s.%s" % (where, key), "%r is not an exact chart version" % (value,),
                                 "give the release's version as its chart has it, such as %s"
                                 % ("v26.7.0" if key == "gpu_operator" else "26.4.1"))
    return pairs


def check_choice(name, pairs):
    """``gpu_platform_release_pair`` checked against the pairs: returns the name; a name that is not a pair is one
    ParamError naming the variable, the pairs and the fix."""
    pairs = check_pairs(pairs)
    if not isinstance(name, str) or name not in pairs:
        choices = ", ".join(sorted(pairs, key=str))
        raise ParamError(FIELD, "%r is not a release pair (the pairs: %s)" % (name, choices),
                         "set %s to one of %s (docs/versions.md, \"Release pairs\"), or leave it unset for the "
                         "default; to install other versions, set %s and %s instead"
                         % (FIELD, choices, CHART_FIELDS["gpu_operator"], CHART_FIELDS["network_operator"]))
    return name


def in_use(name, pairs, chart_versions):
    """Which pair the chart versions in use are.

    ``chart_versions``: {gpu_operator, network_operator}, the versions installed (the Network Operator's empty when
    the network layer is off: then only the GPU Operator's is compared). Returns {pair: the chosen pair's name, or
    None when a version was set directly; set_directly: the variables whose version is not the pair's; same_as: the
    name of another pair with exactly these versions, or None}.
    """
    check_choice(name, pairs)
    given = {k: str(chart_versions.get(k) or "") for k in OPERATORS}
    compared = [k for k in OPERATORS if given[k]]
    differ = [CHART_FIELDS[k] for k in compared if not version_parse.same_chart_version(given[k], pairs[name][k])]
    same = [other for other in sorted(pairs, key=str) if other != name and compared
            and all(version_parse.same_chart_version(given[k], pairs[other][k]) for k in compared)]
    return {"pair": None if differ else name, "set_directly": differ, "same_as": same[0] if differ and same else None}


def _level(verdict):
    """Who validated the pair: the GPUDirect RDMA pair's fact when RDMA is in use, else the combination's level."""
    for pair, level, who, rule in verdict.validation:
        if pair == RDMA_PAIR:
            return "GPUDirect RDMA %s%s" % (versions.level_words(level, who), " [%s]" % rule if rule else "")
    if verdict.status == versions.KNOWN_GOOD and verdict.level != versions.UNVERIFIED:
        return "no GPUDirect RDMA: each release on its own, validated by " + versions.VALIDATION_LEVELS[verdict.level]
    return "no GPUDirect RDMA: each release on its own, %s" % (
        "unverified outside this project" if verdict.status == versions.KNOWN_GOOD else "unverified")


def summary(name, pairs, chart_versions):
    """The release in a few words, for a refusal's first line: ``release pair aicr`` or ``versions set directly
    (gpu_operator_chart_version)``."""
    found = in_use(name, pairs, chart_versions)
    if found["pair"]:
        return "release pair " + found["pair"]
    return "versions set directly (%s)" % ", ".join(found["set_directly"])


def line(name, pairs, chart_versions, verdict):
    """Preflight's line on the release in use: the pair (or the variables that were set directly instead) and who
    validated it (the version matrix's ``verdict`` on the combination in use)."""
    found = in_use(name, pairs, chart_versions)
    pair = pairs[name]
    network_on = bool(chart_versions.get("network_operator"))
    if found["pair"]:
        what = "GPU Operator %s with Network Operator %s" % (pair["gpu_operator"], pair["network_operator"])
        if not network_on:
            what = "GPU Operator %s (its Network Operator %s is not installed: the network layer is off)" % (
                pair["gpu_operator"], pair["network_operator"])
        return "release pair %s (%s): %s; %s" % (name, FIELD, what, _level(verdict))
    given = ", ".join("%s %s" % (CHART_FIELDS[k], chart_versions[k]) for k in OPERATORS if chart_versions.get(k))
    text = ("release pair: none, the versions were set directly (%s), so %s %s (GPU Operator %s with Network "
            "Operator %s) does not apply" % (given, FIELD, name, pair["gpu_operator"], pair["network_operator"]))
    if found["same_as"]:
        text += "; they are pair %s's: set %s: %s instead" % (found["same_as"], FIELD, found["same_as"])
    return "%s; %s" % (text, _level(verdict))
