"""Benchmark: a no-op Helm release, helm_pinned_release against kubernetes.core.helm.

Both modules run through ansible-playbook, with real helm, against the fake Kubernetes API
server and a loopback chart repository, for the same already-deployed release with the same
values. For each it prints: helm processes started per run, chart-repository requests per
run, the median wall time over several runs, and the ratios. A benchmark, not a test: it
asserts nothing about time; it only checks that both runs really were no-ops.

    make bench                       # helm 3, 7 runs each
    python bench/helm_noop.py --helm tools/bin/helm4 --runs 9
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from local_gpu_cluster.apiserver import FakeApiServer  # noqa: E402  pylint: disable=wrong-import-position
from local_gpu_cluster.chart_repo import ChartRepoServer  # noqa: E402  pylint: disable=wrong-import-position
from local_gpu_cluster.charts import DEMO_CHART_DIR, ChartCache, helm_env  # noqa: E402  pylint: disable=wrong-import-position

MODULES = ("gpu_platform.cluster.helm_pinned_release", "kubernetes.core.helm")
VALUES = {"config": {"mode": "bench"}, "replicaCount": 1}


def write_shim(directory, real_helm, log):
    """A helm wrapper that records each invocation, so processes can be counted."""
    shim = Path(directory) / "helm"
    shim.write_text('#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' % (log, real_helm))
    shim.chmod(0o755)
    return str(shim)


def playbook(path, module, shim, kubeconfig, repo_url):
    task = {
        "name": "release", module: {
            "name": "demo", "release_namespace": "demo", "chart_ref": "demo-operator",
            "chart_repo_url": repo_url, "chart_version": "1.0.0", "values": VALUES,
            "binary_path": shim, "kubeconfig": kubeconfig,
        },
    }
    play = [{"name": "bench", "hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": [task]}]
    Path(path).write_text(json.dumps(play))
    return path


def run_play(play, env):
    started = time.perf_counter()
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
               "-e", "ansible_python_interpreter=" + sys.executable, play]
    proc = subprocess.run(command, env=env, capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("ansible-playbook failed:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
    stats = json.loads(proc.stdout)["stats"]["localhost"]
    return elapsed, stats["changed"]


def measure(module, args, env, tmp, api, repo, log):
    play = playbook(os.path.join(tmp, module + ".json"), module, args.shim, api.kubeconfig, repo.url)
    run_play(play, env)  # warm-up: the same no-op, not counted
    times, processes, requests = [], [], []
    for dummy in range(args.runs):
        Path(log).write_text("")
        repo.clear()
        elapsed, changed = run_play(play, env)
        if changed:
            sys.exit("%s reported a change on a no-op run; the comparison would be meaningless" % module)
        times.append(elapsed)
        processes.append(len(Path(log).read_text().splitlines()))
        requests.append(repo.count())
    commands = sorted({next((w for w in line.split() if not w.startswith("-")), "?")
                       for line in Path(log).read_text().splitlines()})
    return {"module": module, "median": statistics.median(times), "processes": statistics.median(processes),
            "requests": statistics.median(requests), "commands": commands}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--helm", default=str(ROOT / "tools" / "bin" / "helm3"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-helm-noop-") as tmp:
        env = helm_env(Path(tmp) / "env")
        env["ANSIBLE_STDOUT_CALLBACK"] = "json"
        env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / "build" / "collections")
        log = os.path.join(tmp, "helm-calls.log")
        args.shim = write_shim(tmp, os.path.abspath(args.helm), log)
        tgz = ChartCache(Path(tmp) / "charts").get(DEMO_CHART_DIR, version="1.0.0")
        with FakeApiServer() as api, ChartRepoServer([tgz]) as repo:
            api.kubeconfig = str(api.write_kubeconfig(os.path.join(tmp, "kubeconfig")))
            env["KUBECONFIG"] = api.kubeconfig
            install = playbook(os.path.join(tmp, "install.json"), MODULES[0], args.shim, api.kubeconfig, repo.url)
            run_play(install, env)
            rows = [measure(module, args, env, tmp, api, repo, log) for module in MODULES]
    helm_version = subprocess.run([args.helm, "version", "--short"], capture_output=True, text=True, check=False).stdout
    print("No-op of an installed release (%s, %d runs each, ansible-playbook wall time)" % (helm_version.strip(), args.runs))
    print("%-42s %16s %20s %12s  %s" % ("module", "helm processes", "chart-repo requests", "median s", "helm commands"))
    for row in rows:
        print("%-42s %16g %20g %12.3f  %s" % (row["module"], row["processes"], row["requests"], row["median"],
                                              " ".join(row["commands"])))
    ours, theirs = rows
    print("ratio kubernetes.core.helm / helm_pinned_release: wall time %.2fx, helm processes %s, repo requests %s" % (
        theirs["median"] / ours["median"],
        "%.1fx" % (theirs["processes"] / ours["processes"]) if ours["processes"] else "n/a",
        "%g vs %g" % (theirs["requests"], ours["requests"])))


if __name__ == "__main__":
    main()
