# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The fabric search: which GPU nodes are bad, found with two-node tests, round by round.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Every test takes two nodes (per-NIC ib_write_bw and a two-node NCCL Ring all_reduce, judged by ``verdict.judge``), and
a node is in at most one test per round. The search, after NVIDIA's adaptive fault isolation (research section 5.1):

1. Screening: every node in disjoint pairs at once; an odd node out waits for a known-good partner.
2. Bisection: a failed pair is split, each half (one node) tested with a known-good node.
3. Confirmation: a node is bad once it failed with two different known-good nodes; a node that passes any test is
   good, which clears a transient failure. The screening failure counts when the partner proves good.

With no known-good node (every test failed), suspects are re-paired among themselves for at most BLIND_ROUNDS rounds;
if none passes, they are reported as unconfirmed. A test that could not run is an error, not a failure: its nodes are
tested again, at most MAX_ERRORS times each. The state is plain JSON (it goes through Ansible facts between rounds):
``start`` -> (``next_round`` -> run the pairs -> ``record``)* until ``done`` -> ``report``.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

PASS, FAIL, ERROR = "pass", "fail", "error"
CONFIRMATIONS = 2
MAX_ERRORS = 2
BLIND_ROUNDS = 2
FIELD = "fabric_nodes"


def start(nodes):
    """The search's first state for ``nodes`` (GPU node names, in the order to pair them)."""
    if not isinstance(nodes, (list, tuple)):
        raise ParamError(FIELD, "%r is not a list" % (nodes,), "give the GPU nodes' names as a list")
    seen = set()
    for index, node in enumerate(nodes):
        if not isinstance(node, str) or not node.strip():
            raise ParamError("%s[%d]" % (FIELD, index), "%r is not a node name" % (node,), "give a non-empty name")
        if node in seen:
            raise ParamError("%s[%d]" % (FIELD, index), "%s is named twice" % node, "name each node once")
        seen.add(node)
    return {"version": 1, "nodes": list(nodes), "rounds": 0, "tests": []}


def _know(state):
    nodes = state["nodes"]
    good, first_pass = set(), None
    fails = {n: [] for n in nodes}
    errors = dict.fromkeys(nodes, 0)
    partners = {n: set() for n in nodes}
    for test in state["tests"]:
        a, b = test["pair"]
        if test["result"] == PASS:
            good.update((a, b))
            first_pass = test["round"] if first_pass is None else min(first_pass, test["round"])
        elif test["result"] == FAIL:
            fails[a].append(b)
            fails[b].append(a)
        else:
            errors[a] += 1
            errors[b] += 1
        if test["result"] != ERROR:
            partners[a].add(b)
            partners[b].add(a)
    witnesses = {n: sorted(set(p for p in fails[n] if p in good), key=nodes.index)
                 for n in nodes if fails[n] and n not in good}
    bad = {n for n, w in witnesses.items() if len(w) >= CONFIRMATIONS}
    suspects = {n for n in nodes if n not in good and n not in bad and fails[n]}
    blind = sum(1 for r in range(2, state["rounds"] + 1) if first_pass is None or first_pass >= r)
    return {"good": good, "bad": bad, "suspects": suspects, "fails": fails, "errors": errors, "partners": partners,
            "witnesses": witnesses, "blind": blind}


def _pair_up(candidates, busy, partners, pairs):
    """Pairs ``candidates`` in order, each with the next free one it was not tested with."""
    free = [n for n in candidates if n not in busy]
    while free:
        node = free.pop(0)
        at = next((i for i, m in enumerate(free) if m not in partners[node]), None)
        if at is not None:
            mate = free.pop(at)
            pairs.append([node, mate])
            busy.update((node, mate))


def next_round(state):
    """The next round's pairs, disjoint (no node twice), each ``[node, partner]``; [] when the search is done."""
    nodes, k = state["nodes"], _know(state)
    if len(nodes) < 2:
        return []
    settled = k["good"] | k["bad"]
    open_ = [n for n in nodes if n not in settled and k["errors"][n] < MAX_ERRORS]
    suspects = [n for n in open_ if n in k["suspects"]]
    untested = [n for n in open_ if n not in k["suspects"]]
    good = [n for n in nodes if n in k["good"]]
    pairs, busy = [], set()
    if good:
        for node in suspects + untested:
            mate = next((g for g in good if g not in busy and g not in k["partners"][node]), None)
            if mate is not None:
                pairs.append([node, mate])
                busy.update((node, mate))
        _pair_up([n for n in untested if n not in busy], busy, k["partners"], pairs)
        return pairs
    _pair_up(untested, busy, k["partners"], pairs)
    if state["rounds"] >= 1 and k["blind"] < BLIND_ROUNDS:
        _pair_up([n for n in suspects + untested if n not in busy], busy, k["partners"], pairs)
    return pairs


def done(state):
    return not next_round(state)


def record(state, results):
    """The state after the round ``next_round(state)`` gave, with ``results``: one per pair, each ``{pair, result:
    pass|fail|error}`` plus, as ``verdict.judge`` gives them, ``nics``, ``busbw`` and ``reasons``."""
    expected = next_round(state)
    if not expected:
        raise ParamError("results", "the search is done: no round is waiting for results", "call report(state)")
    wanted = {frozenset(p): p for p in expected}
    if not isinstance(results, (list, tuple)):
        raise ParamError("results", "%r is not a list" % (results,), "give one result per pair of the round")
    got = {}
    for index, item in enumerate(results):
        field = "results[%d]" % index
        pair = item.get("pair") if isinstance(item, dict) else None
        key = frozenset(pair) if isinstance(pair, (list, tuple)) and len(pair) == 2 else None
        if key not in wanted:
            raise ParamError(field + ".pair", "%r is not a pair of this round" % (pair,),
                             "give the pairs next_round returned: %s" % ", ".join("-".join(p) for p in expected))
        if key in got:
            raise ParamError(field + ".pair", "%s has two results" % "-".join(wanted[key]), "give one result per pair")
        if item.get("result") not in (PASS, FAIL, ERROR):
            raise ParamError(field + ".result", "%r is not a result" % (item.get("result"),), "use pass, fail or error")
        nics = item.get("nics") or {}
        if not isinstance(nics, dict) or not all(isinstance(v, dict) and all(isinstance(m, dict) for m in v.values())
                                                 for v in nics.values()):
            raise ParamError(field + ".nics", "is not {node: {nic: {gbps, floor, ok}}}", "give verdict.judge's nics")
        got[key] = item
    missing = [wanted[key] for key in wanted if key not in got]
    if missing:
        raise ParamError("results", "has no result for %s" % ", ".join("-".join(p) for p in missing),
                         "give one result per pair of the round (error when a test could not run)")
    number = state["rounds"] + 1
    tests = list(state["tests"]) + [
        {"round": number, "pair": list(pair), "result": got[frozenset(pair)]["result"],
         "nics": got[frozenset(pair)].get("nics") or {}, "busbw": got[frozenset(pair)].get("busbw") or {},
         "reasons": list(got[frozenset(pair)].get("reasons") or [])} for pair in expected]
    return dict(state, rounds=number, tests=tests)


def _per_node(state):
    """Each node's test count and lowest bandwidth per NIC over its tests."""
    counts, lowest = dict.fromkeys(state["nodes"], 0), {n: {} for n in state["nodes"]}
    for test in state["tests"]:
        for node in test["pair"]:
            counts[node] += 1
            for nic, seen in sorted(((test.get("nics") or {}).get(node) or {}).items()):
                if nic not in lowest[node] or seen.get("gbps", 0) < lowest[node][nic].get("gbps", 0):
                    lowest[node][nic] = dict(seen)
    return counts, lowest


def _verdict(state, k, node):
    count = len(state["nodes"])
    if count < 2:
        return "untested", "a fabric test needs two GPU nodes and %d was given: nothing was tested" % count
    if node in k["good"]:
        return "passed", "passed a two-node test"
    if node in k["bad"]:
        return "bad", "failed with the known-good nodes %s" % ", ".join(k["witnesses"][node])
    if node in k["suspects"]:
        why = "failed with %s; not confirmed" % ", ".join(sorted(set(k["fails"][node]), key=state["nodes"].index))
        if not done(state):
            return "suspect", why + " yet"
        if not k["good"]:
            return "suspect", why + ": no node passed a test, so no known-good node could confirm it"
        return "suspect", why + ": no known-good node was left to test it with"
    if k["errors"][node]:
        return "error", "its test could not run (%d time(s)): not tested" % k["errors"][node]
    return "untested", "no partner could be found for it: not tested"


def report(state):
    """``{nodes (how many), node_names, bad_nodes, suspects, rounds, tests, exhaustive_tests, done, verdicts: {node:
    {verdict, why, tests, nics: {nic: {gbps, floor, ok}}}}, notes}``. bad_nodes are confirmed; suspects are not."""
    nodes, k = state["nodes"], _know(state)
    verdicts, (counts, lowest) = {}, _per_node(state)
    for node in nodes:
        verdict, why = _verdict(state, k, node)
        verdicts[node] = {"verdict": verdict, "why": why, "nics": lowest[node], "tests": counts[node]}
    notes = []
    if len(nodes) < 2:
        notes.append("no fabric test is possible with %d GPU node(s)" % len(nodes))
    suspects = [n for n in nodes if verdicts[n]["verdict"] == "suspect"]
    if suspects and not k["good"]:
        notes.append("no node passed a test: the suspects are unconfirmed (a fault shared by all of them, such as "
                     "the switch or the fabric manager, looks like this)")
    return {"nodes": len(nodes), "node_names": list(nodes), "bad_nodes": [n for n in nodes if n in k["bad"]],
            "suspects": suspects, "rounds": state["rounds"], "tests": len(state["tests"]),
            "exhaustive_tests": len(nodes) * (len(nodes) - 1) // 2, "done": done(state), "verdicts": verdicts,
            "notes": notes}
