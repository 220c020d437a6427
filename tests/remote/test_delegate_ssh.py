"""A cluster-facing module delegated to a host reached over SSH runs there, with that host's kubeconfig.

The user's case (issue 33): the kubeconfig lives on a bastion, and a role's task is delegated to it. The bastion is
a container reached over real SSH (tests/remote/ssh_host.py); its kubeconfig for the session's local control plane
sits at a path that does not exist on the controller. ``manifests`` delegated to it applies a ConfigMap through it;
the same task run on the controller (local connection) fails on that path, naming the controller's host, and
creates nothing. Skipped, saying what is missing, without root, podman or the ssh client.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from local_gpu_cluster.testing import kubectl
from tests.remote import ssh_host

ROOT = Path(__file__).resolve().parents[2]
REMOTE_KUBECONFIG = "/srv/bastion/kube/config"

pytestmark = pytest.mark.slow


@pytest.fixture(name="bastion")
def bastion_fixture(local_cluster, tmp_path):
    why = ssh_host.missing()
    if why:
        pytest.skip(why)
    assert not os.path.exists(REMOTE_KUBECONFIG), "the controller has %s: the proof needs a path only the SSH " \
        "host has" % REMOTE_KUBECONFIG
    with ssh_host.ssh_host(tmp_path, {local_cluster.kubeconfig: REMOTE_KUBECONFIG}) as host_vars:
        yield host_vars


def playbook(tmp_path, host_vars, tasks):
    """Run ``tasks`` on ``api`` (local connection) with ``bastion`` in the inventory; (results by task, stdout)."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {
        "api": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "bastion": host_vars}}}))
    play = tmp_path / "play.json"
    play.write_text(json.dumps([{"hosts": "api", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG"):
        env.pop(name, None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           str(play), "-vvv"], env=env, capture_output=True, text=True, check=False, timeout=600)
    start = proc.stdout.find("{\n")
    try:
        data = json.loads(proc.stdout[start:])
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
    return [task["hosts"]["api"] for task in data["plays"][0]["tasks"]], proc.stdout


def configmap_task(name, **extra):
    return dict({"gpu_platform.cluster.manifests": {
        "kubeconfig": REMOTE_KUBECONFIG,
        "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                     "data": {"applied-by": "bastion"}}]}}, **extra)


def test_manifests_delegated_to_an_ssh_host_applies_through_it_with_its_kubeconfig(local_cluster, bastion, tmp_path):
    name = "remote-%s" % uuid.uuid4().hex[:8]
    other = name + "-controller"
    results, stdout = playbook(tmp_path, bastion, [
        configmap_task(name, delegate_to="bastion"),
        configmap_task(name, delegate_to="bastion"),
        configmap_task(other, ignore_errors=True),
    ])
    applied, again, on_controller = results
    try:
        assert applied.get("failed") is not True, applied
        assert applied["changed"] is True and applied["objects"] == ["configmap-default-%s" % name], applied
        assert again["changed"] is False, "a second run through the SSH host changed something: %s" % again
        assert "gpu_platform.cluster.manifests runs as a module on bastion: its connection is ssh, not local" in stdout
        assert "AnsiballZ_manifests" in stdout and ssh_host.PYTHON in stdout, "no module was started over SSH"
        found = json.loads(kubectl(local_cluster, "get", "configmap", name, "-n", "default", "-o", "json").stdout)
        assert found["data"] == {"applied-by": "bastion"}

        # the same task without delegate_to: the controller process, where that path does not exist
        assert on_controller["failed"] is True
        assert on_controller["msg"].startswith(
            "could not load the kubeconfig (********): no such file on %s, where the task runs. Fix: "
            % socket.gethostname()), on_controller["msg"]
        assert socket.gethostname() != "bastion"
        assert kubectl(local_cluster, "get", "configmap", other, "-n", "default", check=False).returncode != 0
    finally:
        kubectl(local_cluster, "delete", "configmap", name, "-n", "default", "--ignore-not-found", check=False)
