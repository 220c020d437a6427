"""Benchmark: MIG layout rollout on a simulated cluster, mig_profile against two common approaches.

N nodes (default 1,000) behind the fake API server; a simulated MIG manager takes t simulated
seconds (default 60) per node. For max_unavailable k in {1, 8, 64} it runs mig_profile's rollout
(workflows/mig_profile.py, on the injected clock) and prints: makespan in simulated time against
the ideal ceil(N/k)*t, API requests (reads vs writes), the most nodes ever reconfiguring at once,
and the CPU time of the rollout's own thread. Then the same cluster with the two approaches seen
in other tools: label one node and sleep a fixed time (no state check), and label every node at
once without waiting. A benchmark, not a test: it prints numbers and asserts nothing about time.

    make bench                      # includes this one
    python bench/mig_rollout.py --nodes 200 --reconfigure 60
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "build" / "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient  # noqa: E402
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import mig_profile  # noqa: E402
from local_gpu_cluster.apiserver import FakeApiServer  # noqa: E402
from local_gpu_cluster.clock import FakeClock  # noqa: E402
from local_gpu_cluster.controllers import Controller, MigManager  # noqa: E402
from local_gpu_cluster.gpu_operator import gpu_node  # noqa: E402

STATE, CONFIG = "nvidia.com/mig.config.state", "nvidia.com/mig.config"
PROFILE = "all-1g.10gb"


class Concurrency(Controller):
    """The most nodes ever reconfiguring (state pending) at the same time."""

    watches = frozenset({("", "Node")})

    def __init__(self):
        self.pending = set()
        self.most = 0

    def handle(self, event):
        if (event.obj["metadata"].get("labels") or {}).get(STATE) == "pending":
            self.pending.add(event.name)
        else:
            self.pending.discard(event.name)
        self.most = max(self.most, len(self.pending))


def cluster(nodes, reconfigure, tmp):
    watcher = Concurrency()
    server = FakeApiServer(crd_dirs=[], clock=FakeClock(),
                           controllers=[MigManager(delay=reconfigure), watcher]).start()
    for i in range(nodes):
        node = gpu_node("gpu-%04d" % i)
        node["metadata"]["labels"].update({"nvidia.com/mig.capable": "true", "nodepool": "training"})
        server.store.create(node)
    server.kubeconfig = str(server.write_kubeconfig(Path(tmp) / ("kubeconfig-%d" % id(server))))
    server.clear_log()
    return server, watcher, KubeClient(kubeconfig=server.kubeconfig)


def counts(server):
    reads = sum(1 for r in server.request_log if r["method"] == "GET")
    writes = sum(1 for r in server.request_log if r["method"] in ("PATCH", "PUT", "POST", "DELETE"))
    return reads, writes


def finished(server):
    return sum(1 for n in server.store.list("v1", "Node") if n["metadata"]["labels"].get(STATE) == "success")


def run_mig_profile(args, k, tmp):
    server, watcher, kube = cluster(args.nodes, args.reconfigure, tmp)
    try:
        start, cpu = server.clock.time(), time.thread_time()
        mig_profile.run({"node_selector": "nodepool=training", "profile": PROFILE, "max_unavailable": k,
                         "wait_timeout": str(int(args.reconfigure * 10))}, lambda: kube, clock=server.clock,
                        interval=args.interval)
        cpu = time.thread_time() - cpu
        return ("mig_profile k=%d" % k, server.clock.time() - start, math.ceil(args.nodes / k) * args.reconfigure,
                counts(server), watcher.most, cpu, finished(server))
    finally:
        server.stop()


def run_label_and_sleep(args, tmp):
    server, watcher, kube = cluster(args.nodes, args.reconfigure, tmp)
    try:
        start, cpu = server.clock.time(), time.thread_time()
        for node in kube.list("v1", "Node", label_selector="nodepool=training"):
            kube.patch_labels("v1", "Node", node["metadata"]["name"], {CONFIG: PROFILE})
            server.clock.sleep(args.fixed_sleep)
        cpu = time.thread_time() - cpu
        return ("label one, sleep %gs" % args.fixed_sleep, server.clock.time() - start, args.nodes * args.reconfigure,
                counts(server), watcher.most, cpu, finished(server))
    finally:
        server.stop()


def run_label_all(args, tmp):
    server, watcher, kube = cluster(args.nodes, args.reconfigure, tmp)
    try:
        start, cpu = server.clock.time(), time.thread_time()
        for node in kube.list("v1", "Node", label_selector="nodepool=training"):
            kube.patch_labels("v1", "Node", node["metadata"]["name"], {CONFIG: PROFILE})
        cpu = time.thread_time() - cpu
        ended = server.clock.time() - start  # the tool returns at once; the pool is still reconfiguring
        server.clock.advance(args.reconfigure)
        return ("label all, no wait", ended, args.reconfigure, counts(server), watcher.most, cpu, finished(server))
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--reconfigure", type=float, default=60.0, help="simulated seconds per node (t)")
    parser.add_argument("--interval", type=float, default=15.0, help="mig_profile's poll interval")
    parser.add_argument("--fixed-sleep", type=float, default=30.0, help="the fixed sleep of the label-and-sleep approach")
    parser.add_argument("--k", type=int, nargs="*", default=[1, 8, 64])
    args = parser.parse_args()
    import tempfile  # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory(prefix="bench-mig-") as tmp:
        rows = [run_mig_profile(args, k, tmp) for k in args.k]
        rows.append(run_label_and_sleep(args, tmp))
        rows.append(run_label_all(args, tmp))
    print("MIG rollout of %s on %d simulated nodes, t = %gs per node (simulated time)" % (PROFILE, args.nodes,
                                                                                          args.reconfigure))
    print("%-24s %14s %12s %8s %8s %8s %14s %10s %12s" % ("approach", "makespan s", "ideal s", "ratio", "reads",
                                                          "writes", "max reconfig.", "CPU s", "nodes done"))
    for name, makespan, ideal, (reads, writes), most, cpu, done in rows:
        ratio = makespan / ideal if ideal else 0
        print("%-24s %14.0f %12.0f %8.2f %8d %8d %14d %10.2f %12d"
              % (name, makespan, ideal, ratio, reads, writes, most, cpu, done))
    print("label-and-sleep never reads the state: with a fixed sleep shorter than t it has up to ceil(t/sleep) nodes "
          "down at once and cannot see a failure; label-all returns before any node is done and takes the whole pool "
          "down at once.")


if __name__ == "__main__":
    main()
