# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Version strings: read one, compare it with a range. The collection's one version parser.

Private to the collection: not a public API. Pure: standard library only, no I/O.

``parse_version(key, value)`` reads a version of one dimension: a chart version of the GPU or Network
Operator (``v26.7.0``, ``26.4.0``, ``26.3.0-rc.1``), a Kubernetes version as clusters report it
(``v1.34.1``, ``1.34``, ``v1.34.1-eks-123``) or an NVIDIA driver version or branch (``580.95.05``, ``580``,
``R580``). Every caller that reads or compares versions uses it: the version matrix (``domain.platform.versions``), the
platform support table, the DRA floors, the Kubernetes check of the GPU Operator, the Network Operator release of
the NicClusterPolicy. The exact formats some inputs must have (a full driver version, an exact chart version) are
checked here too.

Ranges are half-open and written per dimension, clauses joined by commas:
``>=26.7.0,<26.8.0``, ``>=1.33,<1.38``, ``26.3.x`` (= ``>=26.3.0,<26.4.0``), ``==26.3.3``,
``<580``, ``*`` (any version, the dimension only has to be given).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

VERSION_KEYS = ("gpu_operator", "network_operator", "kubernetes", "driver")
LABELS = {"gpu_operator": "GPU Operator", "network_operator": "Network Operator", "kubernetes": "Kubernetes",
          "driver": "driver"}

_OPERATOR = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?)?(?:\+[0-9A-Za-z.-]+)?$")
# Kubernetes: v1.34.1, 1.34, and distribution builds such as v1.34.1-eks-123, v1.34.1+k3s1, 1.34.1-gke.100.
_KUBERNETES = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+_-]*)?$")
# Driver: a full version (580.95.05), a partial one (580.95) or a branch (580, R580).
_DRIVER = re.compile(r"^[Rr]?(\d+)(?:\.(\d+))?(?:\.(\d+))?$")
_CLAUSE = re.compile(r"^(>=|<=|==|!=|>|<)?\s*(\S+)$")
_EXAMPLES = {"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "kubernetes": "v1.34.1 or 1.34",
             "driver": "580.95.05 or the branch 580"}


@dataclass(frozen=True)
class Version:
    """A version as given: its numeric parts (1 to 3) and an optional pre-release tag.

    Fewer parts mean less precision: driver ``580`` stands for every 580.x.y release.
    """

    parts: Tuple[int, ...]
    pre: Optional[str] = None
    text: str = ""

    def __str__(self):
        return self.text or ".".join(str(p) for p in self.parts)


def _fail(key, value, what):
    raise ParamError(key, "%r is not %s" % (value, what), "give a version such as %s" % _EXAMPLES[key])


def parse_version(key, value):
    """Parse one combo value (key names the dimension, and the field in errors)."""
    if key not in VERSION_KEYS:
        raise ParamError(key, "is not a versioned key", "use one of %s" % ", ".join(VERSION_KEYS))
    if isinstance(value, bool) or value is None:
        _fail(key, value, "a version")
    if isinstance(value, float):
        raise ParamError(key, "%r is a number, not a version string (YAML reads 1.30 as 1.3)" % (value,),
                         "quote it, e.g. \"%s\"" % _EXAMPLES[key].split(" ")[0])
    text = str(value).strip()
    if key == "kubernetes":
        match = _KUBERNETES.match(text)
        if not match:
            _fail(key, value, "a Kubernetes version")
        parts = tuple(int(g) for g in match.groups() if g is not None)
        return Version(parts, None, "%d.%d" % parts[:2] + ("" if len(parts) < 3 else ".%d" % parts[2]))
    if key == "driver":
        match = _DRIVER.match(text)
        if not match:
            _fail(key, value, "an NVIDIA driver version or branch")
        return Version(tuple(int(g) for g in match.groups() if g is not None), None, text.lstrip("Rr"))
    match = _OPERATOR.match(text)
    if not match:
        _fail(key, value, "a %s chart version" % LABELS[key])
    major, minor, patch, pre = match.groups()
    parts = (int(major), int(minor)) + (() if patch is None else (int(patch),))
    return Version(parts, pre, text)


def _pre_key(pre):
    """Semantic-version precedence of a pre-release tag; no tag sorts after every tag."""
    if pre is None:
        return (1,)
    ids = []
    for ident in pre.split("."):
        ids.append((0, int(ident), "") if ident.isdigit() else (1, 0, ident))
    return (0, tuple(ids))


def _orderings(given, bound):
    """Possible signs of (given - bound): a set drawn from {-1, 0, 1}.

    ``given`` may be less precise than ``bound`` (driver 580 against 580.95.05): then every
    release it stands for is considered and more than one sign is possible.
    """
    common = min(len(given.parts), len(bound.parts))
    for mine, theirs in zip(given.parts[:common], bound.parts[:common]):
        if mine != theirs:
            return {-1 if mine < theirs else 1}
    if len(given.parts) >= len(bound.parts):
        rest = given.parts[common:]
        if any(rest):
            return {1}
        mine, theirs = _pre_key(given.pre), _pre_key(bound.pre)
        return {0} if mine == theirs else {-1 if mine < theirs else 1}
    if not any(bound.parts[common:]) and bound.pre is None:
        return {0, 1}
    return {-1, 0, 1}


_OPS = {">=": lambda s: s >= 0, "<=": lambda s: s <= 0, ">": lambda s: s > 0, "<": lambda s: s < 0,
        "==": lambda s: s == 0, "!=": lambda s: s != 0}


def parse_range(key, spec):
    """A range spec into clauses [(op, Version)]; ``*`` gives no clause (any version)."""
    clauses = []
    for raw in str(spec).split(","):
        raw = raw.strip()
        if raw == "*":
            continue
        if raw.endswith(".x"):
            line = parse_version(key, raw[:-2]).parts
            upper = line[:-1] + (line[-1] + 1,)
            clauses += [(">=", Version(line + (0,) * (3 - len(line)))),
                        ("<", Version(upper + (0,) * (3 - len(upper))))]
            continue
        match = _CLAUSE.match(raw)
        if not match:
            raise ParamError("versions.RULES", "range %r is not understood" % spec, "fix the matrix data")
        clauses.append((match.group(1) or "==", parse_version(key, match.group(2))))
    return clauses


def in_range(key, version, spec):
    """True, False, or None when the given precision cannot decide (driver 580 vs >=580.95.05)."""
    result = True
    for op, bound in parse_range(key, spec):
        outcomes = {_OPS[op](sign) for sign in _orderings(version, bound)}
        if outcomes == {False}:
            return False
        if outcomes != {True}:
            result = None
    return result


# A full driver version, as driver images are tagged and the driver_version options take it: the branch, then
# one or two more parts (595.91.07, 580.95). A branch alone (580) is a version parse_version reads, but not this.
_FULL_DRIVER = re.compile(r"^\d{3}\.\d{1,3}(\.\d{1,3})?$")
# Semantic version 2.0.0, with the optional leading "v" that many charts use (v25.3.0).
_EXACT = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)


def is_full_driver_version(text):
    """True for a full NVIDIA driver version (``595.91.07``, ``580.95``); False for a branch or anything else."""
    return bool(_FULL_DRIVER.match(text))


def is_exact_version(text):
    """True for an exact chart version (``1.2.3``, ``v26.7.0``, ``1.0.0-rc.1``); False for a range or a partial one."""
    return bool(_EXACT.match(text))


def same_chart_version(a, b):
    """Chart versions compare with the optional leading 'v' ignored (Helm does the same)."""
    return (a or "").lstrip("v") == (b or "").lstrip("v")
