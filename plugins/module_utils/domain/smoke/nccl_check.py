# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The NCCL smoke test's log check: did the nccl-tests run use GPUDirect RDMA over InfiniBand, finish without
wrong values, and reach the bus bandwidth threshold. The run itself is ``domain.smoke.nccl``.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Facts this follows (sources in brackets; nothing copied):

- nccl-tests prints a per-size table (size, count, type, redop, root, then time, algbw, busbw and
  #wrong out-of-place and again in-place, bandwidths in GB/s), then ``# Out of bounds values : N
  OK|FAILED`` and ``# Avg bus bandwidth    : %g`` followed by OK/FAILED only when
  NCCL_TESTS_MIN_BW is set [NVIDIA/nccl-tests src/common.cu, run(); doc/PERFORMANCE.md "NCCL
  tests report ... two bandwidths in GB/s"]. The unit is gigaBYTES per second, so
  ``smoke_tests_nccl_min_busbw_gbps`` is compared in GB/s as nccl-tests prints it.
- NCCL_DEBUG=INFO prints one line per connection, ``Channel CC/I : r[d] -> p[d] [send|receive] via
  NET/<net>/<dev>`` followed by ``/GDRDMA`` when GPUDirect RDMA is used (newer releases may add
  ``(PCI)``, ``(<proxy rank>)`` and ``/Shared``); intra-node links show ``via P2P/...`` or
  ``via SHM/...`` and a TCP fallback shows ``via NET/Socket/<dev>`` [NVIDIA/nccl
  src/transport/net.cc sendSetup/recvSetup INFO(NCCL_INIT|NCCL_NET, ...); log excerpts in
  https://github.com/NVIDIA/nccl/issues/707 ("[send] via NET/IB/2/GDRDMA") and
  https://github.com/Mellanox/nv_peer_memory/issues/56]. GPUDirect RDMA may be on for receives
  only (GDR read off), so one GDRDMA channel line is the proof, not all of them.

- NCCL's IB transport names the kernel path each HCA offers GPUDirect RDMA through: ``NET/IB : GPU Direct RDMA
  (DMABUF) enabled for HCA <n> '<dev>`` where DMA-BUF works (the open kernel modules, Linux 5.12+, Turing+) and
  ``NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA ...`` where nvidia-peermem is loaded; both where both
  are [NVIDIA/nccl src/transport/net_ib.cc ncclIbGetProperties; Mellanox/nccl-rdma-sharp-plugins#104]. Older
  releases print neither, so the path is reported only where NCCL named it.

In short: an inter-node connection over InfiniBand prints ``via NET/IB/<dev>``
(``NET/IBext...`` from the IB external plugin), over TCP ``via NET/Socket/<dev>``; ``/GDRDMA`` follows when
GPUDirect RDMA is used. The proof is one such channel line on ``NET/IB``.
"""

from __future__ import annotations

import math
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    checks as smoke_checks, objects as smoke_objects)

FIELDS = smoke_objects.FIELDS

MPI_PREFIX = re.compile(r"^\[[^\]]*\]<std(?:out|err)>:\s?")
TRANSPORT = re.compile(r"NCCL INFO\s+(?:Channel|Ring)\s+\d+(?:/\d+)?\s*:.*?\bvia\s+(?P<via>\S+)")
NET_VIA = re.compile(r"^NET/")
IB_VIA = re.compile(r"^NET/IB")  # NET/IB/<dev> and the IB plugin's NET/IBext_v<N>/<dev>
WARN = re.compile(r"NCCL WARN\b")
NO_IB = re.compile(r"NET/IB\s*:\s*No device found")
GDR_PATH = re.compile(r"NET/IB\S*\s*:\s*GPU Direct RDMA \((?P<path>DMABUF|nvidia-peermem)\) enabled")
# The path's name in the result, in the order reported (DMA-BUF first: the one NVIDIA recommends).
GDR_PATHS = (("DMABUF", "DMA-BUF"), ("nvidia-peermem", "nvidia-peermem"))
AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*(?P<value>\S+)")
OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(?P<count>\d+)")
ROW = re.compile(r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)\s+"
                 r"(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>\S+)")


# -- the log check --------------------------------------------------------------------------------

def _describe(vias, limit=6):
    shown = vias[:limit]
    more = len(vias) - len(shown)
    return ", ".join(shown) + (" and %d more" % more if more > 0 else "")


def _scan(lines):
    out = {"transports": [], "net": [], "gdr": [], "vias": [], "avg": None, "bounds": None, "no_ib": None,
           "warns": [], "rows": [], "paths": set()}
    for line in lines:
        match = TRANSPORT.search(line)
        if match:
            out["transports"].append(line.strip())
            via = match.group("via")
            if via not in out["vias"]:
                out["vias"].append(via)
            if NET_VIA.match(via):
                out["net"].append(line.strip())
                if IB_VIA.match(via) and "/GDRDMA" in via:
                    out["gdr"].append(line.strip())
            continue
        if "[GDRDMA]" in line and "NCCL" in line and "NET/IB" in line:
            out["gdr"].append(line.strip())
        found = GDR_PATH.search(line)
        if found:
            out["paths"].add(found.group("path"))
        if NO_IB.search(line) and out["no_ib"] is None:
            out["no_ib"] = line.strip()
        if WARN.search(line):
            out["warns"].append(line.strip())
        found = AVG_BUSBW.search(line)
        if found:
            out["avg"] = (found.group("value"), line.strip())
        found = OUT_OF_BOUNDS.search(line)
        if found:
            out["bounds"] = (int(found.group("count")), line.strip())
        row = ROW.match(line)
        if row:
            out["rows"].append(row)
    return out


def gdr_path(paths):
    """' through DMA-BUF' (' (nvidia-peermem loaded too)'), ' through nvidia-peermem', or '' where NCCL named none."""
    named = [word for key, word in GDR_PATHS if key in paths]
    if not named:
        return ""
    return " through %s%s" % (named[0], " (%s loaded too)" % named[1] if len(named) > 1 else "")


def check_nccl(log, min_busbw_gbps):
    """Passes only when a ``via NET/IB.../GDRDMA`` channel line is present (GPUDirect RDMA over InfiniBand, not
    NET/Socket), the run finished with no wrong values, and its ``# Avg bus bandwidth`` (GB/s) is at least
    ``min_busbw_gbps``."""
    threshold = smoke_objects.positive_number(FIELDS["min_busbw"], min_busbw_gbps)
    lines = [MPI_PREFIX.sub("", v) for v in smoke_checks._lines(log)]
    seen = _scan(lines)
    problems, evidence = [], []
    if seen["gdr"]:
        gdr_note = "GPUDirect RDMA over InfiniBand in use%s" % gdr_path(seen["paths"])
        if seen["net"]:
            gdr_note += " (GDRDMA on %d of %d NET channel lines)" % (len(seen["gdr"]), len(seen["net"]))
    else:
        if seen["vias"]:
            used = _describe(seen["vias"])
            if not seen["net"]:
                used += " (no network transport at all: were all ranks on one node?)"
        else:
            used = "no channel lines at all (NCCL_DEBUG=INFO was not in effect, or NCCL never connected)"
        problems.append("NCCL did not use GPUDirect RDMA over InfiniBand (no GDRDMA on any 'via NET/IB...' channel "
                        "line, no [GDRDMA] on a NET/IB line); it used: %s" % used)
        evidence += [(seen["net"] or seen["transports"] or [""])[0], seen["no_ib"] or ""]
    value = None
    avg = seen["avg"]
    if avg is None:
        last = smoke_checks._first_line(reversed(lines))
        problems.append("the nccl-tests run did not finish (no '# Avg bus bandwidth' line); last line of the log: %r"
                        % last)
        evidence += [seen["warns"][-1] if seen["warns"] else "", last]
    else:
        try:
            value = float(avg[0])
        except ValueError:
            value = None
        if value is None or math.isnan(value) or math.isinf(value):
            problems.append("the average bus bandwidth %r is not a number" % avg[0])
            evidence.append(avg[1])
        elif value < threshold:
            problems.append("the average bus bandwidth %g GB/s is below the threshold %g GB/s" % (value, threshold))
            evidence.append(avg[1])
    if seen["bounds"] is not None and seen["bounds"][0] > 0:
        problems.append("nccl-tests found %d wrong values (corrupted data)" % seen["bounds"][0])
        evidence.append(seen["bounds"][1])
    if problems:
        return smoke_checks.check_result(False, "; ".join(problems), evidence)
    rows = seen["rows"]
    peak = max(rows, key=lambda r: float(r.group("busbw"))) if rows else None
    peak_note = " (peak %s GB/s at %s bytes)" % (peak.group("busbw"), peak.group("size")) if peak else ""
    return smoke_checks.check_result(True, "%s; average bus bandwidth %g GB/s >= %g GB/s%s"
                                     % (gdr_note, value, threshold, peak_note), [seen["gdr"][0], avg[1]])
