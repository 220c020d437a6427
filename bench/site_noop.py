"""Benchmark: a no-op site.yml at 10, 100 and 1,000 GPU nodes, next to the Ansible floor.

For each size it starts the fake Kubernetes API server on loopback holding that many GPU nodes (half in a
time-sliced pool, half in a MIG pool; simulated GPU Operator, Network Operator, device plugin, MIG manager and
smoke pods), a loopback chart repository with the platform's fixture charts, and runs ``site.yml`` in direct
mode twice with every layer on (network RDMA, GPU Operator, sharing, DRA, Volcano + Kueue, monitoring).
For the second run, which must be a no-op, it prints: wall time, changed count, API requests by verb (discovery,
gets, lists, watches, writes), helm processes, the same inventory's Ansible floor (one play over every host
with the same facts settings and no tasks), and what as many trivial tasks (a constant set_fact each) as the no-op
ran and skipped cost Ansible alone: the part of the no-op that only fewer tasks can remove. Smoke tests are off by
default: they create and remove their pods on every run by design (``--smoke`` turns them on). ``--render`` adds the offline ``make demo`` no-op.

A benchmark, not a test: it asserts nothing about time. It stops if the second run is not a no-op, because then
the numbers would not mean what the table says.

    python bench/site_noop.py                       # 10, 100 and 1,000 nodes, 3 no-op runs each
    python bench/site_noop.py --nodes 10 --runs 1 --render
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# pylint: disable=wrong-import-position
from local_gpu_cluster.apiserver import FakeApiServer  # noqa: E402
from local_gpu_cluster.chart_repo import ChartRepoServer  # noqa: E402
from local_gpu_cluster.charts import FIXTURE_CHARTS_DIR, TOOLS_BIN, ChartCache, helm_env, pinned_charts  # noqa: E402
from local_gpu_cluster.clock import FakeClock  # noqa: E402
from local_gpu_cluster.controllers import MigManager, default_controllers  # noqa: E402
from local_gpu_cluster.crds import DEFAULT_CRD_DIR  # noqa: E402
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR  # noqa: E402
from local_gpu_cluster.gpu_operator import NVIDIA_SMI, SimulatedDevicePlugin, SimulatedGpuOperator, gpu_node  # noqa: E402
from local_gpu_cluster.nccl_logs import NCCL_IB_LOG  # noqa: E402
from local_gpu_cluster.network_operator import SimulatedNetworkOperator  # noqa: E402
from local_gpu_cluster.smoke import Outcome, SimulatedVolcanoJobs, SmokePods, gang_marker  # noqa: E402
# pylint: enable=wrong-import-position

CHARTS = pinned_charts()
PLAYBOOK = ROOT / "site.yml"
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
DISCOVERY = re.compile(r"^/(api|apis|openapi/v[23]|version)(/[^/]+(/v[^/]+)?)?/?$")


def cluster(nodes, charts):
    """The fake API server with *nodes* GPU nodes and the platform's simulated operators; and the chart repository."""
    outcomes = {"cuda": Outcome("Succeeded", NVIDIA_SMI), "dra": Outcome("Succeeded", NVIDIA_SMI),
                "gang": Outcome("Running", gang_marker(0)), "nccl/launcher": Outcome("Succeeded", NCCL_IB_LOG),
                "nccl/worker": Outcome("Running", "")}
    controllers = [SimulatedGpuOperator(), SimulatedNetworkOperator(ready_after=0), SimulatedDevicePlugin(),
                   MigManager(delay=0), SimulatedVolcanoJobs(), SmokePods(outcomes)]
    api = FakeApiServer(clock=FakeClock(), require_namespaces=True, git_version="v1.34.1",
                        crd_dirs=[DEFAULT_CRD_DIR, FIXTURE_CRDS_DIR],
                        controllers=controllers + default_controllers()).start()
    for index in range(nodes):
        node = gpu_node("gpu-node-%d" % (index + 1))
        pool = "inference" if index % 2 == 0 else "training"
        node["metadata"]["labels"].update({"nodepool": pool, "nvidia.com/mig.capable": "true"})
        if index == 2:
            node["metadata"]["labels"]["nodepool"] = "dra"
        api.store.create(node)
    repo = ChartRepoServer(charts).start()
    return api, repo


def inventory(directory, group_vars):
    """An inventory with the k8s_api host (local connection) and the given group variables."""
    path = Path(directory) / "inventory"
    (path / "group_vars" / "all").mkdir(parents=True)
    (path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"k8s_api": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    (path / "group_vars" / "all" / "bench.yml").write_text(yaml.safe_dump(group_vars))
    return path


def direct_vars(api, repo, smoke):
    """The local inventory's platform choices, pointed at the fake cluster and the loopback repository."""
    local = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "platform.yml").read_text())
    local = {key: value for key, value in local.items() if not key.startswith("gpu_platform_render")}
    # Read from the cluster in direct mode; the fake serves the ServiceMonitor CRD but not PrometheusRule's,
    # so the monitoring layer finds out what is there (auto) as it would on a real cluster.
    for key in ("dra_driver_kubernetes_version", "monitoring_prometheus_operator"):
        local.pop(key, None)
    local.update({
        "gpu_platform_kubeconfig": api.kubeconfig,
        "gpu_platform_smoke_tests_enabled": smoke,
        "gpu_operator_chart_repo_url": repo.url, "network_operator_chart_repo_url": repo.url,
        "scheduling_volcano_chart_repo_url": repo.url, "scheduling_kueue_chart_ref": "kueue",
        "scheduling_kueue_chart_repo_url": repo.url, "dra_driver_chart_ref": "dra-driver-nvidia-gpu",
        "dra_driver_chart_repo_url": repo.url,
        "scheduling_wait_timeout": 60, "dra_driver_wait_timeout": 60, "network_operator_wait_timeout": 60,
        "gpu_operator_wait_timeout": 60, "gpu_operator_wait_interval": 1, "gpu_operator_smoke_timeout": 30,
        "smoke_tests_timeout": 30, "smoke_tests_nccl_timeout": 30,
        # The first (converging) run rolls the MIG layout out over half the nodes; one node at a time (the
        # role's safe default) would take an hour at 1,000 nodes. The no-op run rolls nothing either way.
        "gpu_sharing_max_unavailable": 50,
    })
    return local


def floor_play(directory, tasks=0):
    """The empty play over the inventory; with ``tasks``, that many of the cheapest real task (a constant set_fact),
    what Ansible alone costs for as many tasks as the no-op runs."""
    path = Path(directory) / ("floor-%d.yml" % tasks)
    trivial = [{"name": "trivial %d" % n, "ansible.builtin.set_fact": {"bench_trivial": n}} for n in range(tasks)]
    path.write_text(yaml.safe_dump([{"name": "floor", "hosts": "k8s_api[0]" if tasks else "all",
                                     "gather_facts": False, "tasks": trivial}]))
    return path


def run(playbook, inventory_dir, env):
    """One ansible-playbook run: (seconds, changed, failures, output)."""
    started = time.perf_counter()
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory_dir), str(playbook)], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    try:
        stats = json.loads(proc.stdout)["stats"]
    except ValueError:
        sys.exit("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
    changed = sum(host.get("changed", 0) for host in stats.values())
    failures = sum(host.get("failures", 0) + host.get("unreachable", 0) for host in stats.values())
    return elapsed, changed, failures, proc.stdout


def verbs(log):
    """API requests by verb, as the API server's audit log would count them."""
    counts = collections.Counter()
    for entry in log:
        path, method, query = entry["path"], entry["method"], entry["query"]
        if method != "GET":
            counts["write" if "All" not in str(query.get("dryRun", "")) else "dry-run"] += 1
        elif DISCOVERY.match(path):
            counts["discovery"] += 1
        elif str(query.get("watch", "")).lower() in ("1", "true"):
            counts["watch"] += 1
        else:
            counts["list" if _is_collection(path) else "get"] += 1
    return counts


def _is_collection(path):
    """/api/v1/nodes, /api/v1/namespaces/x/pods, /apis/g/v/kind: a list; one more segment (a name) is a get."""
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    return len(rest) == 1


# Actions that run on the controller alone, with no module process: Ansible's own, and the collection's modules that
# have an action plugin of the same name (plugins/action: they run in the controller process, since the inventory
# below gives k8s_api a local connection and this Python; plugins/plugin_utils/placement.py).
CONTROLLER_ONLY = {"set_fact", "debug", "assert", "fail", "validate_argument_spec", "include_role", "include_tasks",
                   "import_role", "import_tasks", "meta"} | {path.stem for path in (ROOT / "plugins" / "action").glob("*.py")}


def task_counts(output):
    """(tasks that ran, module runs, tasks skipped): each module run, a loop's item included, is a Python process of
    its own; a skipped task still costs Ansible a worker."""
    ran = modules = skipped = 0
    for play in json.loads(output)["plays"]:
        for task in play["tasks"]:
            for res in task["hosts"].values():
                if res.get("skipped"):
                    skipped += 1
                    continue
                ran += 1
                action = (res.get("action") or "").rsplit(".", 1)[-1]
                if action not in CONTROLLER_ONLY:
                    items = [item for item in res.get("results") or [] if not item.get("skipped")]
                    modules += len(items) if "results" in res else 1
    return ran, modules, skipped


def slowest_tasks(output, count):
    """The ``count`` tasks that took longest, as (seconds, action, task name), longest first."""
    from datetime import datetime  # pylint: disable=import-outside-toplevel
    out = []
    for play in json.loads(output)["plays"]:
        for task in play["tasks"]:
            span = task["task"].get("duration") or {}
            if not span.get("end"):
                continue
            seconds = (datetime.fromisoformat(span["end"].replace("Z", "+00:00"))
                       - datetime.fromisoformat(span["start"].replace("Z", "+00:00"))).total_seconds()
            actions = {res.get("action", "") for res in task["hosts"].values()}
            out.append((seconds, ",".join(sorted(a for a in actions if a)), task["task"]["name"]))
    return sorted(out, reverse=True)[:count]


def changed_tasks(output):
    data = json.loads(output)
    return ["%s (%s)" % (task["task"]["name"], host) for play in data["plays"] for task in play["tasks"]
            for host, res in task["hosts"].items() if res.get("changed")]


def helm_shim(directory, log):
    """helm on the PATH that records each process, then runs the pinned helm 3."""
    bindir = Path(directory) / "bin"
    bindir.mkdir()
    shim = bindir / "helm"
    shim.write_text('#!/bin/sh\necho "$1" >> "%s"\nexec "%s" "$@"\n' % (log, TOOLS_BIN / "helm3"))
    shim.chmod(0o755)
    return bindir


def environment(directory, bindir):
    env = helm_env(Path(directory) / "home")
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", ""))
    env.update(ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"))
    env.pop("KUBECONFIG", None)
    return env


def measure_direct(nodes, runs, smoke, charts, show_writes=False, slowest=0):
    with tempfile.TemporaryDirectory(prefix="site-noop-") as tmp:
        api, repo = cluster(nodes, charts)
        try:
            api.kubeconfig = str(api.write_kubeconfig(Path(tmp) / "kubeconfig"))
            inv = inventory(tmp, direct_vars(api, repo, smoke))
            log = Path(tmp) / "helm.log"
            env = environment(tmp, helm_shim(tmp, log))
            first, first_changed, failures, output = run(PLAYBOOK, inv, env)
            if failures:
                sys.exit("the first site.yml run failed at %d nodes:\n%s" % (nodes, output[-4000:]))
            samples = []
            for dummy in range(runs):
                log.write_text("")
                api.clear_log()
                elapsed, changed, failures, output = run(PLAYBOOK, inv, env)
                if failures or changed:
                    sys.exit("the no-op run at %d nodes was not a no-op (failures %d, changed %d): %s"
                             % (nodes, failures, changed, changed_tasks(output)[:20]))
                helm = collections.Counter(log.read_text().split())
                for seconds, action, name in slowest_tasks(output, slowest):
                    print("  %d nodes, no-op task %.2f s  %s  %s" % (nodes, seconds, action, name))
                samples.append((elapsed, verbs(api.request_log), helm, task_counts(output)))
                if show_writes:
                    for entry in api.request_log:
                        if entry["method"] != "GET":
                            print("  %d nodes, no-op write: %s %s %s -> %s" % (
                                nodes, entry["method"], entry["path"], entry["query"], entry["code"]))
            floor = statistics.median(run(floor_play(tmp), inv, env)[0] for dummy in range(runs))
            count = samples[-1][3][0] + samples[-1][3][2]
            trivial = statistics.median(run(floor_play(tmp, count), inv, env)[0] for dummy in range(runs))
        finally:
            api.stop()
            repo.stop()
    return {"nodes": nodes, "first": first, "first_changed": first_changed,
            "noop": statistics.median(s[0] for s in samples), "requests": samples[-1][1],
            "helm": samples[-1][2], "tasks": samples[-1][3], "floor": floor, "trivial": trivial}


def measure_render(runs):
    with tempfile.TemporaryDirectory(prefix="site-noop-render-") as tmp:
        bindir = helm_shim(tmp, Path(tmp) / "helm.log")
        env = environment(tmp, bindir)
        local = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "platform.yml").read_text())
        local["gpu_platform_render_to"] = str(Path(tmp) / "platform")
        inv = inventory(tmp, local)
        run(PLAYBOOK, inv, env)
        times = []
        for dummy in range(runs):
            elapsed, changed, failures, output = run(PLAYBOOK, inv, env)
            if failures or changed:
                sys.exit("the render no-op was not a no-op: %s" % changed_tasks(output)[:20])
            times.append(elapsed)
        floor = statistics.median(run(floor_play(tmp), inv, env)[0] for dummy in range(runs))
        log = Path(tmp) / "helm.log"  # written by the first helm process; render mode should start none
        helm = collections.Counter(log.read_text().split() if log.exists() else [])
    return {"noop": statistics.median(times), "floor": floor, "helm": helm}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[10, 100, 1000],
                        help="GPU node counts (none: only the --render no-op)")
    parser.add_argument("--runs", type=int, default=3, help="no-op runs per size (median)")
    parser.add_argument("--smoke", action="store_true", help="keep the smoke tests on")
    parser.add_argument("--render", action="store_true", help="also the offline render-mode (make demo) no-op")
    parser.add_argument("--show-writes", action="store_true", help="print each write request of the no-op runs")
    parser.add_argument("--slowest", type=int, default=0, metavar="N", help="print the N slowest tasks of each no-op run")
    args = parser.parse_args()
    print("site.yml direct mode, second run (no-op), median of %d; smoke tests %s" % (
        args.runs, "on" if args.smoke else "off"))
    print("| nodes | first run | no-op | floor | no-op/floor | as many trivial tasks (their /floor) | changed "
          "| tasks run + skipped (module runs) | discovery | gets | lists | watches | writes | helm processes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="site-noop-charts-") as charts_dir:
        cache = ChartCache(charts_dir)
        charts = [cache.get(FIXTURE_CHARTS_DIR / name, version=version) for name, version in CHARTS]
        for nodes in args.nodes:  # each row as soon as its size is measured (1,000 nodes takes a while)
            row = measure_direct(nodes, args.runs, args.smoke, charts, args.show_writes, args.slowest)
            req = row["requests"]
            helm = ", ".join("%s %d" % item for item in sorted(row["helm"].items())) or "0"
            print("| %d | %.1f s | %.1f s | %.1f s | %.2fx | %.1f s (%.2fx) | 0 | %d + %d (%d) | %d | %d | %d | %d | %d "
                  "| %d (%s) |" % (
                      row["nodes"], row["first"], row["noop"], row["floor"], row["noop"] / row["floor"],
                      row["trivial"], row["trivial"] / row["floor"], row["tasks"][0], row["tasks"][2],
                      row["tasks"][1], req["discovery"], req["get"], req["list"], req["watch"],
                      req["write"], sum(row["helm"].values()), helm), flush=True)
    if args.render:
        render = measure_render(args.runs)
        print("\nsite.yml render mode (make demo), second run: %.1f s, floor %.1f s, %.2fx, helm processes %d" % (
            render["noop"], render["floor"], render["noop"] / render["floor"], sum(render["helm"].values())))


if __name__ == "__main__":
    main()
