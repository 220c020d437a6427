"""The host preflight without SSH on the local control plane (issue 34): in direct mode with no host in gpu_hosts and
``gpu_platform_host_probe: true``, site.yml reads each GPU node through a read-only probe Job whose pod the probe
agent plays from the node's declared host (local_gpu_cluster/node_agent_probe.py), on the ``host-drift`` fleet. A node declaring a containerd drop-in
at a higher version than its root config stops the run before any write with the same line the SSH path gives for
the same files (the node, the check's id and the fix), and the probe's namespace is gone afterwards."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime

import pytest

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_hosts import host_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import probe
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import host_probe
from local_gpu_cluster.audit import describe
from local_gpu_cluster.fleet import TOOLKIT_DROP_IN, declared_hardware
from local_gpu_cluster.charts import helm_env
from local_gpu_cluster.node_agent_probe import PROBE
from local_gpu_cluster.testing import ROOT, RUN_USER, fleet_cluster, kubectl
from tests.modules import test_gpu_host_checks as trees
from tests.playbooks.conftest import PlayResult, site_env

pytestmark = pytest.mark.slow
INVENTORY = ROOT / "inventories" / "cluster"
IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
# The only writes a run refused by the host preflight may make: the probe's own namespace, Jobs and pods, which it
# creates and removes by design.
PROBE_WRITES = [("namespaces", probe.NAMESPACE), ("jobs", probe.NAMESPACE), ("pods", probe.NAMESPACE)]


def _nodes(cluster):
    return json.loads(kubectl(cluster, "get", "nodes", "-o", "json").stdout)["items"]


def _left(cluster):
    """What the probe left on the cluster: its namespace, and any of its Jobs and pods."""
    namespace = kubectl(cluster, "get", "namespace", probe.NAMESPACE, "--ignore-not-found", "-o", "name").stdout.split()
    return namespace + ["%s/%s" % (o["kind"], o["metadata"]["name"]) for o in json.loads(kubectl(
        cluster, "get", "jobs,pods", "-A", "-l", PROBE, "-o", "json").stdout)["items"]]


@pytest.fixture(scope="module")
def drift_cluster():
    """A fresh cluster of the ``host-drift`` profile (3 GPU nodes: two training hosts, clean, and one inference host
    with the toolkit's drop-in above its root config's version), for this module."""
    yield from fleet_cluster(ROOT / "build" / "test-cluster-host-drift", "host-drift", 3)


def _gpu_nodes(cluster):
    """(drifted, clean): the GPU nodes whose declared host has the drop-in, and the others."""
    declared = {n["metadata"]["name"]: declared_hardware(n) or {} for n in _nodes(cluster)}
    gpu = sorted(name for name, hardware in declared.items() if hardware.get("gpus"))
    return [n for n in gpu if declared[n].get("host")], [n for n in gpu if not declared[n].get("host")]


def _site(cluster, tmp_path, *args):
    env = dict(site_env(helm_env(tmp_path / "helm-env")), CLUSTER_DIR=str(cluster.dir))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(INVENTORY),
               str(ROOT / "site.yml"), *args]
    started = time.monotonic()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(ROOT), check=False, timeout=1200)
    return PlayResult(proc), time.monotonic() - started


def test_the_probe_job_gives_the_ssh_finding_writes_nothing_and_leaves_nothing(drift_cluster, tmp_path):
    drifted, clean = _gpu_nodes(drift_cluster)
    assert len(drifted) == 1 and len(clean) == 2
    drifted_node = drifted[0]
    mark = drift_cluster.audit.mark()
    result, elapsed = _site(drift_cluster, tmp_path, "-e", "gpu_platform_host_probe=true",
                            "-e", "gpu_platform_kubeconfig=" + drift_cluster.kubeconfig_for(RUN_USER))
    assert result.failed == 1
    task = next(t["task"] for play in result.data["plays"] for t in play["tasks"]
                if t["task"]["name"].endswith("through read-only probe Jobs (the host preflight without SSH)"))
    started, ended = (datetime.fromisoformat(task["duration"][key].replace("Z", "+00:00")) for key in ("start", "end"))
    print("site.yml to the host preflight's stop: %.1f s, of which the probe task %.1f s"
          % (elapsed, (ended - started).total_seconds()))
    messages = result.failure_messages()
    assert len(messages) == 1, messages
    # the same files read over SSH (gpu_host_facts on a host laid out as files) give the same line
    root = trees.clean_tree(tmp_path / "host")
    for path, text in TOOLKIT_DROP_IN["files"].items():
        trees.write(root / path.lstrip("/"), text)
    over_ssh = host_checks([trees.read(root, drifted_node)], trees.EVERYTHING)
    line = next(entry for entry in over_ssh["lines"] if "[containerd-dropin-version]" in entry)
    assert line.startswith(drifted_node + ": [containerd-dropin-version] ") and "Fix: " in line
    assert line in messages[0], messages[0]
    assert [entry for entry in messages[0].splitlines()[1:] if not entry.startswith(drifted_node + ":")] == [], \
        "only the drifted node has a blocking finding: %s" % messages[0]
    # nothing written but the probe's own objects, judged by the API server's audit log; the probe's writes are
    # there, under the run's credential (the run used it), and what it made is gone
    written = drift_cluster.audit.writes(mark, user=RUN_USER, allow=PROBE_WRITES)
    assert written == [], "the refused run wrote:\n" + describe(written)
    probe_writes = {(r.verb, r.resource) for r in drift_cluster.audit.writes(mark, user=RUN_USER)}
    assert {resource for verb, resource in probe_writes} >= {"namespaces", "jobs"}, probe_writes
    assert ("delete", "namespaces") in probe_writes, probe_writes
    assert _left(drift_cluster) == []


def test_the_probe_on_clean_nodes_its_runtime(drift_cluster):
    """The clean GPU nodes probed, none blocked; the namespace gone; the time printed (docs/preflight.md)."""
    dummy, clean = _gpu_nodes(drift_cluster)
    kube = KubeClient(kubeconfig=drift_cluster.kubeconfig)
    started = time.monotonic()
    result = host_probe.run({"image": IMAGE, "nodes": clean, "namespace": probe.NAMESPACE, "timeout": 120},
                            lambda: kube)
    elapsed = time.monotonic() - started
    print("host probe of %d nodes: %.1f s" % (len(result["nodes"]), elapsed))
    assert result["nodes"] == clean and len(result["gpu_host_checks"]) == 2 and result["removed"]
    assert {c["node_name"] for c in result["gpu_host_checks"]} == set(result["nodes"])
    assert all(c["gpus"] for c in result["gpu_host_checks"])
    verdict = host_checks(result["gpu_host_checks"], dict(trees.EVERYTHING, mig=False))
    assert verdict["blocking"] == [], verdict["lines"]
    assert kube.get("v1", "Namespace", probe.NAMESPACE) is None
