# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The checks of what the smoke tests print and report: nvidia-smi's table, a gang's start times, the nodes'
allocatable resources.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Checks return ``{"passed", "reason", "evidence"}``; ``evidence`` is the list of log lines (or
facts) that decided. The objects that print them are built in ``domain.smoke.objects``; the NCCL run's log is
checked in ``domain.smoke.nccl_check``.

Facts this follows (sources in brackets; nothing copied):

- nvidia-smi's table starts with ``NVIDIA-SMI <ver>  Driver Version: <ver>  CUDA Version: <ver>``
  and has one row per GPU: index, name, persistence mode On/Off, then the PCI bus id; on a
  driver/library mismatch it prints only ``Failed to initialize NVML: Driver/library version
  mismatch`` [local_gpu_cluster/gpu_operator.py NVIDIA_SMI; roles/gpu_operator/tasks/smoke.yml].
"""

from __future__ import annotations

import datetime
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke.objects import (
    FIELDS, GANG_MARKER, GPU_RESOURCE, _positive_int, positive_number)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# -- log patterns ---------------------------------------------------------------------------------

SMI_HEADER = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)"
                        r"(?:\s+CUDA Version:\s*(?P<cuda>[^\s|]+))?")
SMI_GPU_ROW = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s+\|\s+"
                         r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s")
RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
                     r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$")


# -- log checks -----------------------------------------------------------------------------------

def _lines(log):
    """The log as a list of lines without trailing blanks; accepts text, bytes, a list of lines or None."""
    if log is None:
        return []
    if isinstance(log, bytes):
        log = log.decode("utf-8", "replace")
    if isinstance(log, (list, tuple)):
        lines = [str(v) for v in log]
    else:
        lines = str(log).splitlines()
    return [v.rstrip() for v in lines]


def _first_line(lines):
    return next((v.strip() for v in lines if v.strip()), "")


def check_result(passed, reason, evidence):
    return {"passed": bool(passed), "reason": reason, "evidence": [e for e in evidence if e]}


def check_nvidia_smi(log):
    """Passes when the log has nvidia-smi's header (with Driver Version) and at least one GPU row."""
    lines = _lines(log)
    header = row_lines = None
    rows = []
    for line in lines:
        if header is None:
            match = SMI_HEADER.search(line)
            if match:
                header = (line.strip(" |").strip(), match)
                continue
        row = SMI_GPU_ROW.match(line.strip())
        if row:
            rows.append(row)
            row_lines = row_lines or line.strip()
    first = _first_line(lines)
    if header and rows:
        names = sorted({r.group("name") for r in rows})
        match = header[1]
        cuda = ", CUDA %s" % match.group("cuda") if match.group("cuda") else ""
        return check_result(True, "nvidia-smi saw %d GPU(s) (%s), driver %s%s"
                            % (len(rows), ", ".join(names), match.group("driver"), cuda), [header[0], row_lines])
    if not first:
        return check_result(False, "the log is empty: nvidia-smi printed nothing (the container may not have started)", [])
    if header:
        return check_result(False, "nvidia-smi printed its header (driver %s) but no GPU row: the pod got no GPU; "
                            "first line of the log: %r" % (header[1].group("driver"), first), [header[0]])
    return check_result(False, "nvidia-smi did not print its GPU table; first line of the log: %r" % first, [first])


def _utc(field, value):
    """An aware datetime from a datetime, epoch seconds or an RFC 3339 string."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(value, bool):
        raise ParamError(field, "%r is not a time" % (value,), "give RFC 3339 times such as 2026-01-02T03:04:05Z")
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
    match = RFC3339.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ParamError(field, "%r is not a time" % (value,), "give RFC 3339 times such as 2026-01-02T03:04:05Z")
    year, month, day, hour, minute, second = (int(v) for v in match.group(1, 2, 3, 4, 5, 6))
    micro = int((match.group(7) or "0")[:6].ljust(6, "0"))
    offset = datetime.timedelta(0)
    if match.group(9):
        offset = datetime.timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        offset = -offset if match.group(9) == "-" else offset
    return datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=datetime.timezone(offset))


def start_time_from_log(log):
    """The time a gang member printed (``gpu-platform-smoke started <time> on <node>``), or None."""
    for line in _lines(log):
        if GANG_MARKER in line:
            words = line.split(GANG_MARKER, 1)[1].split()
            return words[0] if words else None
    return None


def check_gang(start_times, window_seconds, replicas=None):
    """All-or-nothing: every pod started (``replicas`` of them when given) and all within ``window_seconds``.

    ``start_times`` maps pod name -> start time (RFC 3339 string, epoch seconds or datetime; None
    when the pod never started), or is a list of such times.
    """
    window = positive_number(FIELDS["window"], window_seconds, example="60")
    field = "start_times"
    if isinstance(start_times, dict):
        items = sorted(start_times.items())
    elif isinstance(start_times, (list, tuple)):
        items = [("pod #%d" % i, v) for i, v in enumerate(start_times)]
    else:
        raise ParamError(field, "must map pod names to start times (or list them)",
                         "give {pod: '2026-01-02T03:04:05Z', ...}")
    expected = len(items) if replicas is None else _positive_int(FIELDS["replicas"], replicas, minimum=1)
    started = [(n, _utc(field, v)) for n, v in items if v not in (None, "")]
    missing = [n for n, v in items if v in (None, "")]
    missing += ["pod #%d (no record)" % i for i in range(len(items), expected)]
    evidence = ["%s started %s" % (n, t.isoformat()) for n, t in sorted(started, key=lambda p: p[1])]
    evidence += ["%s did not start" % n for n in missing]
    if expected == 0:
        return check_result(False, "no gang pods were found, so nothing was checked", [])
    if not started:
        return check_result(False, "none of the %d gang pods started: not enough free GPUs for the whole gang, or the "
                            "scheduler or its queue is missing" % expected, evidence)
    if len(started) < expected:
        return check_result(False, "only %d of %d gang pods started (not started: %s): the scheduler placed part of "
                            "the gang, which gang scheduling must never do" % (len(started), expected, ", ".join(missing)),
                            evidence)
    if len(started) > expected:
        return check_result(False, "%d pods started but the gang has %d" % (len(started), expected), evidence)
    first = min(started, key=lambda p: p[1])
    last = max(started, key=lambda p: p[1])
    spread = (last[1] - first[1]).total_seconds()
    if spread > window:
        return check_result(False, "the gang's pods started %g s apart (%s first, %s last), more than the %g s window: "
                            "they were not scheduled together" % (spread, first[0], last[0], window),
                            [evidence[0], evidence[-1]])
    return check_result(True, "all %d gang pods started within %g s of each other (window %g s)"
                        % (expected, spread, window), evidence)


def allocatable_count(value):
    """An allocatable count (int or integer string such as "8"), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _allocatable_by_node(actual):
    if isinstance(actual, dict):
        return {str(k): (v or {}) for k, v in actual.items()}
    if isinstance(actual, (list, tuple)):
        out = {}
        for node in actual:
            meta = (node or {}).get("metadata") or {}
            out[meta.get("name")] = ((node or {}).get("status") or {}).get("allocatable") or {}
        return out
    raise ParamError("allocatable", "must map node names to allocatable resources, or be a list of Node objects",
                     "pass the nodes as kubernetes.core.k8s_info returns them")


def check_allocatable(expected, actual):
    """Per node and resource: the expected count against what the node advertises (``status.allocatable``).

    ``expected`` maps node -> {resource: count}; ``actual`` maps node -> allocatable, or is a list
    of Node objects.
    """
    if not isinstance(expected, dict) or not all(isinstance(v, dict) for v in expected.values()):
        raise ParamError("expected_allocatable", "must map node names to {resource: count}",
                         "e.g. {gpu-node-1: {nvidia.com/gpu: 32}}")
    have = _allocatable_by_node(actual)
    matched, differ = [], []
    for node in sorted(expected):
        for resource in sorted(expected[node]):
            want = expected[node][resource]
            if isinstance(want, bool) or not isinstance(want, int) or want < 0:
                raise ParamError("expected_allocatable", "%s %s: %r is not a count" % (node, resource, want),
                                 "give whole numbers such as 8")
            if node not in have:
                differ.append("%s: %s expected %d, but the node was not found" % (node, resource, want))
                continue
            raw = have[node].get(resource)
            got = allocatable_count(raw)
            if got == want:
                matched.append("%s: %s %d as expected" % (node, resource, want))
            elif raw is None:
                differ.append("%s: %s expected %d, not advertised" % (node, resource, want))
            else:
                differ.append("%s: %s expected %d, advertises %s" % (node, resource, want, raw))
    total = len(matched) + len(differ)
    if total == 0:
        return check_result(False, "no expected allocatable resources were given, so nothing was checked", [])
    if differ:
        return check_result(False, "%d of %d node resources differ from what was expected: %s"
                            % (len(differ), total, "; ".join(differ)), differ)
    return check_result(True, "all %d node resources match: %s" % (total, "; ".join(matched)), matched)


def nccl_fits(nodes, gpus_per_node, node_objects):
    """Refuse an NCCL test the cluster cannot hold: fewer schedulable nodes with ``gpus_per_node`` allocatable GPUs
    than ``nodes``. ``node_objects`` are the cluster's Nodes (as the API returns them)."""
    fitting = sorted(name for name, allocatable in _allocatable_by_node(node_objects).items()
                     if (allocatable_count(allocatable.get(GPU_RESOURCE)) or 0) >= gpus_per_node)
    if len(fitting) < nodes:
        raise ParamError(FIELDS["nodes"], "is %d, but %d node(s) have %d allocatable GPUs (%s)" % (
            nodes, len(fitting), gpus_per_node, ", ".join(fitting[:5]) + (" ..." if len(fitting) > 5 else "")
            if fitting else "none"),
            "give at most %d nodes, or fewer GPUs per node (%s)" % (len(fitting), FIELDS["gpus_per_node"]))
    return fitting
