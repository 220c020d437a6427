# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One fabric test of two nodes, judged: per-NIC ib_write_bw and the two-node NCCL Ring busbw against the floors.

Private to the collection: not a public API. Pure: standard library only, no I/O.

``judge`` takes the pair, what the test measured (``{"error": "", "ib_write_bw": {node: {nic: Gb/s}}, "busbw_gbps":
GB/s}``) and each node's floors (``thresholds.floors``). The pair fails when a NIC of either side is under its floor,
when a side has fewer NICs measured than its node type has, or when the busbw is under the lower of the two sides'
floors. A test that could not run (an error, or a measurement missing) is an error, not a failure. The result is
what ``plan.record`` takes.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.fabric.thresholds import bandwidth
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

PASS, FAIL, ERROR = "pass", "fail", "error"


def _gbps(field, value):
    return bandwidth(field, value, example="391.2")


def judge(pair, measured, floors_by_node):
    """``{pair, result, nics: {node: {nic: {gbps, floor, ok}}}, busbw: {gbps, floor, ok}, reasons}``."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or pair[0] == pair[1]:
        raise ParamError("pair", "%r is not two different nodes" % (pair,), "give [node_a, node_b]")
    pair = [str(pair[0]), str(pair[1])]
    measured = measured or {}
    out = {"pair": pair, "result": PASS, "nics": {}, "busbw": {}, "reasons": []}
    if measured.get("error"):
        out.update(result=ERROR, reasons=["the test could not run: %s" % measured["error"]])
        return out
    missing = [node for node in pair if node not in floors_by_node]
    if missing:
        raise ParamError("floors_by_node", "has no floors for %s" % ", ".join(missing),
                         "give thresholds.floors(<its node type>) for every node of the pair")
    ib = measured.get("ib_write_bw") or {}
    unmeasured = [node for node in pair if not ib.get(node)]
    if unmeasured or measured.get("busbw_gbps") is None:
        what = ["ib_write_bw on %s" % n for n in unmeasured] + (
            ["the NCCL busbw"] if measured.get("busbw_gbps") is None else [])
        out.update(result=ERROR, reasons=["no measurement of %s: the test did not finish" % ", ".join(what)])
        return out
    for node in pair:
        floor = floors_by_node[node]["ib_write_bw_gbps"]
        nics = {}
        for nic in sorted(ib[node]):
            gbps = _gbps("ib_write_bw.%s.%s" % (node, nic), ib[node][nic])
            nics[nic] = {"gbps": gbps, "floor": floor, "ok": gbps >= floor}
            if gbps < floor:
                out["reasons"].append("%s %s: ib_write_bw %g Gb/s under the %s floor %g Gb/s" % (
                    node, nic, gbps, floors_by_node[node]["link"], floor))
        out["nics"][node] = nics
        expected = floors_by_node[node].get("nics") or 0
        if len(nics) < expected:
            out["reasons"].append("%s: %d NIC(s) measured, a %s has %d" % (
                node, len(nics), floors_by_node[node]["node_type"], expected))
    busbw = _gbps("busbw_gbps", measured["busbw_gbps"])
    floor = min(floors_by_node[node]["busbw_gbps"] for node in pair)
    out["busbw"] = {"gbps": busbw, "floor": floor, "ok": busbw >= floor}
    if busbw < floor:
        out["reasons"].append("NCCL all_reduce (Ring) busbw %g GB/s under the floor %g GB/s" % (busbw, floor))
    if out["reasons"]:
        out["result"] = FAIL
    return out
