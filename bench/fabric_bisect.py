"""Benchmark: the fabric search (domain/fabric/plan.py) on simulated nodes, against testing every pair.

For N GPU nodes (powers of two up to 1,024 and a few odd counts) and one bad node at several positions, it drives
the search round by round (a test fails when it holds the bad node) and prints the rounds and tests it took (median,
max over the positions), the bound 2*ceil(log2 N)+2 on rounds, the rounds every pair takes (N-1, or N when N is
odd, a node in one test at a time), the exhaustive N(N-1)/2 pairs and the ratio of tests to them; then the same
with no bad node and with two. Pure simulation: it times nothing and asserts nothing.

    python bench/fabric_bisect.py
    python bench/fabric_bisect.py --nodes 8 232 1024 --positions 16
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build" / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.fabric import plan  # noqa: E402

NODES = (2, 3, 4, 5, 8, 16, 17, 32, 64, 128, 232, 256, 512, 1000, 1024)


def search(count, bad):
    nodes = ["gpu-%04d" % i for i in range(count)]
    bad = {nodes[i] for i in bad}
    state = plan.start(nodes)
    while not plan.done(state):
        state = plan.record(state, [{"pair": p, "result": "fail" if bad & set(p) else "pass"}
                                    for p in plan.next_round(state)])
    report = plan.report(state)
    return report, set(report["bad_nodes"]) == bad


def positions(count, many):
    """``many`` positions spread over the nodes, first and last included."""
    return sorted({round(i * (count - 1) / max(1, many - 1)) for i in range(many)})


def row(count, cases):
    runs = [search(count, bad) for bad in cases]
    rounds, tests = [r["rounds"] for r, _found in runs], [r["tests"] for r, _found in runs]
    pairs = count * (count - 1) // 2
    return "| %s | %d | %g / %d | %d | %s | %g / %d | %s | %s | %d/%d |" % (
        "{:,}".format(count), len(cases), statistics.median(rounds), max(rounds), 2 * math.ceil(math.log2(count)) + 2,
        "{:,}".format(count - 1 if count % 2 == 0 else count), statistics.median(tests), max(tests), "{:,}".format(pairs),
        "%.4f" % (max(tests) / pairs) if pairs else "-", sum(ok for _report, ok in runs), len(runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=NODES)
    parser.add_argument("--positions", type=int, default=8, help="bad-node positions per N (default 8)")
    args = parser.parse_args()
    head = ("| N | runs | rounds median / max | round bound | exhaustive rounds | tests median / max | "
            "exhaustive pairs | max tests / pairs | named exactly |\n|---|---|---|---|---|---|---|---|---|")
    print("One bad node at %d positions (first and last included)\n\n%s" % (args.positions, head))
    for count in args.nodes:
        print(row(count, [[p] for p in positions(count, args.positions)]))
    print("\nNo bad node\n\n" + head)
    for count in args.nodes:
        print(row(count, [[]]))
    print("\nTwo bad nodes (first and middle, middle and last)\n\n" + head)
    for count in [n for n in args.nodes if n >= 4]:
        print(row(count, [[0, count // 2], [count // 2, count - 1]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
