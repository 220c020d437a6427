"""The local control plane itself: built from the pinned modules, started, judged by the real API server, stopped.

These run the real binaries (local_gpu_cluster); what they prove here is what the issue's "must show"
names: /readyz with etcd, PodSecurity admission, the fake GPU fleet Ready, workloads run by the real
controllers and KWOK, a no-op second start, clear messages for a port clash and a killed component, and
nothing left running after cluster-down.
"""
from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.processes import alive
from local_gpu_cluster.helpers import wait_until
from local_gpu_cluster.testing import LocalCluster, cluster_command, kubectl

pytestmark = pytest.mark.slow


def test_readyz_lists_etcd_and_reports_the_pinned_version(local_cluster):
    readyz = kubectl(local_cluster, "get", "--raw", "/readyz?verbose").stdout
    assert "[+]etcd ok" in readyz and "readyz check passed" in readyz
    version = json.loads(kubectl(local_cluster, "get", "--raw", "/version").stdout)
    assert version["gitVersion"] == local_cluster.state["pins"]["kubernetes"]


def test_podsecurity_refuses_a_privileged_pod_in_a_restricted_namespace(local_cluster):
    kubectl(local_cluster, "create", "namespace", "psa-restricted-test")
    try:
        kubectl(local_cluster, "label", "namespace", "psa-restricted-test",
                "pod-security.kubernetes.io/enforce=restricted")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged", "namespace": "psa-restricted-test"},
               "spec": {"containers": [{"name": "c", "image": "registry.example/busybox:1.36",
                                        "securityContext": {"privileged": True}}]}}
        refused = kubectl(local_cluster, "apply", "-f", "-", stdin=json.dumps(pod), check=False)
        assert refused.returncode != 0
        assert 'violates PodSecurity "restricted:latest"' in refused.stderr and "privileged" in refused.stderr
    finally:
        kubectl(local_cluster, "delete", "namespace", "psa-restricted-test", "--wait=false")


def test_the_gpu_fleet_is_ready_declares_its_hardware_and_carries_only_what_the_agents_gave(local_cluster):
    """The default fleet starts bare: whatever NFD or GPU label and GPU or RDMA resource a node carries now (other tests
    of the session may have installed the platform) is one a node agent recorded giving it while its component ran."""
    nodes = json.loads(kubectl(local_cluster, "get", "nodes", "-o", "json").stdout)["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert local_cluster.state["profile"] == "mixed"
    declared = {n["metadata"]["name"]: json.loads(n["metadata"]["annotations"]["fake.gpu-platform.io/hardware"])
                for n in nodes}
    gpu = sorted(name for name, hw in declared.items() if hw["gpus"])
    assert len(gpu) == local_cluster.state["gpu_nodes"] == 4
    assert {declared[name]["gpus"]["product"] for name in gpu} == {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}
    assert [name for name in gpu if declared[name]["nics"]] == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    for node in nodes:
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"]), node
        meta = node["metadata"]
        given = json.loads(meta["annotations"].get("fake.gpu-platform.io/agent-effects") or "{}")
        nfd = {k for k in meta["labels"] if k.startswith("feature.node.kubernetes.io/")}
        assert nfd <= set(given.get("labels") or {}), (meta["name"], nfd - set(given.get("labels") or {}))
        resources = {k for k in node["status"]["allocatable"] if k.startswith(("nvidia.com/", "rdma/"))}
        assert resources <= set(given.get("resources") or {}), (meta["name"], resources)
    assert "nvidia.com/gpu" not in by_name["system-node-1"]["status"]["allocatable"]


def test_real_controllers_and_kwok_run_a_deployment_and_complete_a_job(local_cluster):
    ns = "workload-test"
    kubectl(local_cluster, "create", "namespace", ns)
    try:
        kubectl(local_cluster, "-n", ns, "create", "deployment", "web", "--image=registry.example/web:1.0",
                "--replicas=2")
        kubectl(local_cluster, "-n", ns, "create", "job", "once", "--image=registry.example/job:1.0")

        def read(kind, name):
            return json.loads(kubectl(local_cluster, "-n", ns, "get", kind, name, "-o", "json").stdout)

        wait_until(lambda: read("deployment", "web")["status"].get("availableReplicas") == 2,
                   timeout=60, what="the Deployment's 2 replicas")
        job = wait_until(lambda: [c for c in read("job", "once")["status"].get("conditions") or []
                                  if c["type"] == "Complete" and c["status"] == "True"],
                         timeout=60, what="the Job to complete")
        assert job
        pods = json.loads(kubectl(local_cluster, "-n", ns, "get", "pods", "-o", "json").stdout)["items"]
        assert all(p["spec"].get("nodeName") for p in pods), "the real scheduler bound every pod"
    finally:
        kubectl(local_cluster, "delete", "namespace", ns, "--wait=false")


def test_a_second_up_is_a_no_op(local_cluster):
    before = {name: rec["pid"] for name, rec in local_cluster.state["components"].items()}
    proc = cluster_command("up", env=local_cluster.env())
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stdout
    assert {name: rec["pid"] for name, rec in local_cluster.state["components"].items()} == before


def _listening(port):
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_port_clash_killed_component_and_down_leave_clear_messages_and_nothing_running(tmp_path):
    cluster = LocalCluster(tmp_path / "lifecycle")
    env = dict(cluster.env(), CLUSTER_GPU_NODES="1")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        clash = cluster_command("up", env=dict(env, CLUSTER_PORT_KUBE_APISERVER=str(taken)))
    assert clash.returncode == 1
    assert "port %d on 127.0.0.1 is already in use, so kube-apiserver cannot listen there" % taken in clash.stderr
    assert "CLUSTER_PORT_KUBE_APISERVER" in clash.stderr and "Traceback" not in clash.stderr
    assert not (cluster.dir / "state.json").exists() or not cluster.state["components"]

    up = cluster_command("up", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        records = cluster.state["components"]
        ports = cluster.state["ports"]
        os.kill(records["kube-scheduler"]["pid"], signal.SIGKILL)
        wait_until(lambda: not alive(records["kube-scheduler"]), timeout=60, what="the scheduler to die")
        for command in ("status", "up"):
            broken = cluster_command(command, env=env)
            assert broken.returncode == 1, broken.stdout
            assert "kube-scheduler (pid %d) is not running any more" % records["kube-scheduler"]["pid"] in broken.stderr
            assert "Full log: %s" % records["kube-scheduler"]["log"] in broken.stderr
            assert "make cluster-down" in broken.stderr and "Traceback" not in broken.stderr
    finally:
        down = cluster_command("down", env=env)
    assert down.returncode == 0, down.stderr
    assert [name for name, record in records.items() if alive(record)] == []
    for name, port in ports.items():
        assert not _listening(port), "%s still listens on %d" % (name, port)
    assert cluster.state["components"] == {}
    assert not (cluster.dir / "etcd").exists()


def test_the_kubeconfig_is_private_and_carries_no_path_to_the_pki(local_cluster):
    path = Path(local_cluster.kubeconfig)
    assert path.stat().st_mode & 0o077 == 0
    config = yaml.safe_load(path.read_text())
    assert config["users"][0]["user"]["client-key-data"]
    assert (local_cluster.dir / "pki" / "ca.key").stat().st_mode & 0o077 == 0
