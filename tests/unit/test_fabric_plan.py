"""The fabric search (domain/fabric/plan.py) driven round by round against simulated nodes: one bad node at every
position within 2*ceil(log2 N)+2 rounds and fewer tests than the exhaustive N(N-1)/2 pairs, several bad nodes, all
bad, errors, too few nodes, and the state as JSON between rounds."""
import json
import math

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.fabric import plan
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def names(count):
    return ["gpu-%03d" % i for i in range(count)]


def search(nodes, bad=(), erring=()):
    """Runs the search: a test fails when it holds a bad node, errors (once per node) when it holds an erring one."""
    bad, erred = set(bad), set()
    state = plan.start(nodes)
    while not plan.done(state):
        pairs = plan.next_round(state)
        flat = [n for pair in pairs for n in pair]
        assert len(flat) == len(set(flat)), "a node twice in round %d: %s" % (state["rounds"] + 1, pairs)
        results = []
        for pair in pairs:
            flaky = (set(pair) & set(erring)) - erred
            erred |= flaky
            result = "error" if flaky else "fail" if set(pair) & bad else "pass"
            results.append({"pair": list(reversed(pair)), "result": result})
        state = json.loads(json.dumps(plan.record(state, results)))
    return plan.report(state)


def bound(count):
    return 2 * math.ceil(math.log2(count)) + 2


@pytest.mark.parametrize("count", [4, 5, 8, 16, 17, 64, 232])
def test_one_bad_node_anywhere_is_named_exactly_within_the_bounds(count):
    nodes = names(count)
    for position in range(count):
        report = search(nodes, bad=[nodes[position]])
        assert report["bad_nodes"] == [nodes[position]] and report["suspects"] == [], position
        assert report["rounds"] <= bound(count), (position, report["rounds"])
        assert report["tests"] < count * (count - 1) // 2 == report["exhaustive_tests"], (position, report["tests"])
        assert report["done"] and report["verdicts"][nodes[position]]["verdict"] == "bad"
        assert sum(v["verdict"] == "passed" for v in report["verdicts"].values()) == count - 1


def test_three_nodes_need_every_pair_to_confirm_one():
    """A bad node is confirmed by two known-good partners; with three nodes that takes all three pairs."""
    nodes = names(3)
    for node in nodes:
        report = search(nodes, bad=[node])
        assert report["bad_nodes"] == [node] and report["tests"] == 3 and report["rounds"] <= bound(3)


def test_two_nodes_cannot_tell_which_one_is_bad():
    report = search(names(2), bad=["gpu-001"])
    assert report["bad_nodes"] == [] and report["suspects"] == names(2) and report["tests"] == 1
    assert "unconfirmed" in report["notes"][0]
    assert {v["verdict"] for v in report["verdicts"].values()} == {"suspect"}


@pytest.mark.parametrize("count", [4, 5, 8, 17, 64])
def test_two_bad_nodes_anywhere_are_both_named(count):
    nodes = names(count)
    for first in range(count):
        for second in range(first + 1, count, max(1, count // 8)):
            report = search(nodes, bad=[nodes[first], nodes[second]])
            assert report["bad_nodes"] == [nodes[first], nodes[second]], (first, second, report["suspects"])


@pytest.mark.parametrize("count", [2, 3, 8, 232])
def test_a_healthy_fabric_names_no_node_in_one_round(count):
    report = search(names(count))
    assert report["bad_nodes"] == [] and report["suspects"] == []
    assert {v["verdict"] for v in report["verdicts"].values()} == {"passed"}
    assert report["rounds"] == (1 if count % 2 == 0 else 2) and report["tests"] == (count + 1) // 2


def test_all_bad_nodes_are_unconfirmed_suspects():
    nodes = names(8)
    report = search(nodes, bad=nodes)
    assert report["bad_nodes"] == [] and report["suspects"] == nodes
    assert report["rounds"] == 1 + plan.BLIND_ROUNDS and report["tests"] < 28
    assert "no node passed a test" in report["notes"][0]
    assert "no known-good node could confirm" in report["verdicts"]["gpu-000"]["why"]


@pytest.mark.parametrize("count", [0, 1])
def test_too_few_nodes_are_untested_never_passed(count):
    state = plan.start(names(count))
    assert plan.done(state) and plan.next_round(state) == []
    report = plan.report(state)
    assert report["nodes"] == count and report["tests"] == 0 and report["bad_nodes"] == []
    assert "no fabric test is possible" in report["notes"][0]
    assert all(v["verdict"] == "untested" and "needs two GPU nodes" in v["why"] for v in report["verdicts"].values())


def test_a_test_that_could_not_run_is_not_a_failure():
    nodes = names(8)
    report = search(nodes, erring=["gpu-002"])
    assert report["bad_nodes"] == [] and report["suspects"] == []
    assert report["verdicts"]["gpu-002"]["verdict"] == "passed"
    report = search(nodes, bad=["gpu-005"], erring=["gpu-004"])
    assert report["bad_nodes"] == ["gpu-005"]


def test_a_node_whose_test_never_runs_is_an_error():
    nodes = names(4)
    state = plan.start(nodes)
    while not plan.done(state):
        pairs = plan.next_round(state)
        state = plan.record(state, [{"pair": p, "result": "error" if "gpu-003" in p else "pass"} for p in pairs])
    report = plan.report(state)
    assert report["verdicts"]["gpu-003"]["verdict"] == "error" and report["bad_nodes"] == []
    assert [report["verdicts"][n]["verdict"] for n in nodes[:3]] == ["passed"] * 3


def test_the_odd_node_out_waits_for_a_known_good_partner():
    state = plan.start(names(5))
    assert plan.next_round(state) == [["gpu-000", "gpu-001"], ["gpu-002", "gpu-003"]]
    state = plan.record(state, [{"pair": p, "result": "pass"} for p in plan.next_round(state)])
    assert plan.next_round(state) == [["gpu-004", "gpu-000"]]


def test_per_nic_bandwidths_reach_the_report():
    state = plan.start(["a", "b"])
    nics = {"a": {"mlx5_0": {"gbps": 391.0, "floor": 380.0, "ok": True}},
            "b": {"mlx5_0": {"gbps": 120.0, "floor": 380.0, "ok": False}}}
    state = plan.record(state, [{"pair": ["a", "b"], "result": "fail", "nics": nics}])
    report = plan.report(state)
    assert report["verdicts"]["b"]["nics"] == {"mlx5_0": {"gbps": 120.0, "floor": 380.0, "ok": False}}


@pytest.mark.parametrize("nodes, match", [
    ("gpu-0", "fabric_nodes: 'gpu-0' is not a list"),
    (["a", ""], r"fabric_nodes\[1\]: '' is not a node name"),
    (["a", "b", "a"], r"fabric_nodes\[2\]: a is named twice"),
])
def test_bad_nodes_are_refused(nodes, match):
    with pytest.raises(ParamError, match=match):
        plan.start(nodes)


@pytest.mark.parametrize("results, match", [
    ([{"pair": ["a", "b"], "result": "pass"}], r"results: has no result for c-d"),
    ([{"pair": ["a", "c"], "result": "pass"}], r"results\[0\].pair: \['a', 'c'\] is not a pair of this round"),
    ([{"pair": ["a", "b"], "result": "ok"}, {"pair": ["c", "d"], "result": "pass"}],
     r"results\[0\].result: 'ok' is not a result. Fix: use pass, fail or error"),
    ([{"pair": ["a", "b"], "result": "pass"}, {"pair": ["b", "a"], "result": "pass"}], "a-b has two results"),
    ("pass", "results: 'pass' is not a list"),
    ([{"pair": ["a", "b"], "result": "pass", "nics": {"a": {"mlx5_0": 390}}}, {"pair": ["c", "d"], "result": "pass"}],
     r"results\[0\].nics: is not \{node: \{nic: \{gbps, floor, ok\}\}\}"),
])
def test_bad_results_are_refused(results, match):
    with pytest.raises(ParamError, match=match):
        plan.record(plan.start(["a", "b", "c", "d"]), results)


def test_a_finished_search_takes_no_results():
    with pytest.raises(ParamError, match="the search is done"):
        plan.record(plan.start(["a"]), [])
