"""The cluster-facing modules run in the controller process (their action plugins), as ansible-playbook runs them,
when the task's connection is local; on the task's target, as a module, otherwise.

Each test runs real ansible-playbook on localhost. What the action plugin must keep from the module: the same
options (validation and its messages, defaults, environment fallbacks), check and diff mode from the task, the same
result, no_log values hidden; what it must drop: the module upload and its interpreter. Where the work runs
(plugins/plugin_utils/placement.py): the delegated host's connection decides, and a local connection with another
Python runs the module in that Python. tests/remote/ proves the module runs through an SSH host.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.modules.harness import run_module

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_MODULES = ("gpu_driver_mode", "gpu_driver_upgrade", "helm_pinned_release", "manifests", "mig_profile",
                   "nic_cluster_policy", "node_labels", "node_maintenance", "smoke_test", "gitops_bundle")
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "demo"},
             "data": {"mode": "time-slicing"}}


def play(tmp_path, tasks, *args, env=None, home=None, hosts="localhost", inventory="localhost,"):
    """Run ``tasks`` in one play on ``hosts``; returns (per-task host results, ansible-playbook's stdout)."""
    path = tmp_path / "play.json"
    path.write_text(json.dumps([{"name": "controller", "hosts": hosts, "gather_facts": False, "tasks": tasks}]))
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
                       ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json", **(env or {}))
    if home:
        environment["HOME"] = str(home)  # no ~/.kube/config of the machine's
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_API_KEY", "K8S_AUTH_HOST"):
        if name not in (env or {}):
            environment.pop(name, None)
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
               *(("-c", "local", "-e", "ansible_python_interpreter=" + sys.executable) if inventory == "localhost," else ()),
               str(path), *args]
    proc = subprocess.run(command, env=environment, capture_output=True, text=True, check=False, timeout=300)
    start = proc.stdout.find("{")
    try:
        data = json.loads(proc.stdout[start:])
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
    return [task["hosts"][hosts] for task in data["plays"][0]["tasks"]], proc.stdout


def render_task(folder, **extra):
    return dict({"gpu_platform.cluster.manifests": {"render_to": str(folder), "objects": [CONFIGMAP]}}, **extra)


@pytest.mark.parametrize("name", CLUSTER_MODULES)
def test_every_cluster_facing_module_has_an_action_plugin_naming_it(name):
    from importlib import import_module  # pylint: disable=import-outside-toplevel
    action = import_module("ansible_collections.gpu_platform.cluster.plugins.action." + name)
    module = import_module("ansible_collections.gpu_platform.cluster.plugins.modules." + name)
    assert action.ActionModule.MODULE is module
    assert callable(module.call) and module.ARGUMENT_SPEC


def test_the_host_facts_module_stays_a_module_on_the_gpu_host():
    assert not (ROOT / "plugins" / "action" / "gpu_host_facts.py").exists(), "it reads the GPU host's /proc and /sys"


def test_no_module_is_uploaded_or_started(tmp_path):
    results, stdout = play(tmp_path, [render_task(tmp_path / "out")], "-vvv")
    assert results[0]["changed"] is True
    assert (tmp_path / "out" / "configmap-demo-settings.yaml").exists()
    assert "AnsiballZ_manifests" not in stdout, "the module was packed and started as a process"


def test_the_same_result_as_the_module_and_a_second_run_changes_nothing(tmp_path):
    failed, module_result = run_module("manifests", {"render_to": str(tmp_path / "module"), "objects": [CONFIGMAP]})
    assert not failed
    results = play(tmp_path, [render_task(tmp_path / "controller"), render_task(tmp_path / "controller")])[0]
    first, second = results
    for key in ("changed", "objects"):
        assert first[key] == module_result[key]
    assert first["rendered"]["files"] == module_result["rendered"]["files"] == ["configmap-demo-settings.yaml"]
    assert (tmp_path / "module" / "configmap-demo-settings.yaml").read_text() == \
        (tmp_path / "controller" / "configmap-demo-settings.yaml").read_text()
    assert second["changed"] is False and second["rendered"]["changed_files"] == []


def test_check_mode_and_diff_mode_come_from_the_task(tmp_path):
    results = play(tmp_path, [render_task(tmp_path / "out", check_mode=True, diff=True)])[0]
    assert results[0]["changed"] is True, "check mode reports what would change"
    assert not (tmp_path / "out" / "configmap-demo-settings.yaml").exists(), "check mode wrote a file"
    after = "".join(d["after"] for d in results[0]["diff"])
    assert "mode: time-slicing" in after


@pytest.mark.parametrize("args, message", [
    ({"objects": [], "bogus": 1}, r"^Unsupported parameters for \(.*\) module: bogus\. Supported parameters include: "),
    ({}, r"^missing required arguments: objects$"),
    ({"objects": [], "state": "gone"}, r"^value of state must be one of: present, absent, got: gone$"),
    ({"objects": [], "api_connect_timeout": "soon"}, r"argument 'api_connect_timeout' is of type .* and we were unable to convert to int"),
])
def test_bad_options_are_refused_with_the_modules_own_words(tmp_path, args, message):
    failed, module_result = run_module("manifests", dict(args))
    results = play(tmp_path, [{"gpu_platform.cluster.manifests": args, "ignore_errors": True}])[0]
    assert failed and results[0]["failed"] is True
    assert re.search(message, results[0]["msg"]), results[0]["msg"]
    assert re.search(message, module_result["msg"]), module_result["msg"]
    if "bogus" in args:
        assert results[0]["msg"].startswith("Unsupported parameters for (gpu_platform.cluster.manifests) module")


def test_a_workflow_error_names_the_field(tmp_path):
    args = {"render_to": str(tmp_path / "out"), "objects": [{"kind": "ConfigMap", "metadata": {"name": "x"}}]}
    results = play(tmp_path, [{"gpu_platform.cluster.manifests": args, "ignore_errors": True}])[0]
    assert results[0]["msg"] == "objects[0].apiVersion: is missing. Fix: give the object's apiVersion"
    assert results[0]["field"] == "objects[0].apiVersion" and "Traceback" not in results[0].get("exception", "")


def test_no_log_options_never_reach_the_result(tmp_path):
    token = "tok-6f1d2c9e-never-shown"
    results, stdout = play(tmp_path, [render_task(tmp_path / "out", **{"gpu_platform.cluster.manifests": {
        "render_to": str(tmp_path / "out"), "objects": [CONFIGMAP], "api_key": token}})], "-vvv")
    assert results[0]["invocation"]["module_args"]["api_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
    assert token not in stdout


@pytest.mark.parametrize("where", ["controller", "task", "nowhere"])
def test_the_k8s_auth_fallbacks_are_read_from_the_controller_and_the_tasks_environment(tmp_path, where):
    missing = str(tmp_path / "no-such-kubeconfig")
    task = {"gpu_platform.cluster.node_labels": {"nodes": [{"selector": "pool=a", "labels": {"x": "y"}}]},
            "ignore_errors": True}
    env = None
    if where == "task":
        task["environment"] = {"K8S_AUTH_KUBECONFIG": missing}
    elif where == "controller":
        env = {"K8S_AUTH_KUBECONFIG": missing}
    results = play(tmp_path, [task], env=env, home=tmp_path)[0]
    assert results[0]["failed"] is True
    if where == "nowhere":
        assert results[0]["msg"].startswith("could not load the kubeconfig (default)"), results[0]["msg"]
        return
    # the kubeconfig option is no_log (it may be a dict with tokens), so its value shows masked: the fallback
    # reached it (without it the message says "(default)")
    assert results[0]["msg"].startswith("could not load the kubeconfig (********)"), results[0]["msg"]


def another_python(tmp_path):
    """A venv of its own (another sys.prefix) that sees this Python's libraries: a module started there works."""
    folder = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "controller.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    return str(folder / "bin" / "python")


def inventory(tmp_path, hosts):
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"all": {"hosts": hosts}}))
    return path


def test_a_local_connection_with_another_python_runs_the_module_in_that_python(tmp_path):
    python = another_python(tmp_path)
    hosts = inventory(tmp_path, {"api": {"ansible_connection": "local", "ansible_python_interpreter": python}})
    task = render_task(tmp_path / "out", register="applied")
    results, stdout = play(tmp_path, [task, render_task(tmp_path / "check", check_mode=True, diff=True)], "-vvv",
                           hosts="api", inventory=hosts)
    assert "AnsiballZ_manifests" in stdout and python in stdout, "the module did not run in the host's Python"
    assert "gpu_platform.cluster.manifests runs as a module on api: its ansible_python_interpreter is" in stdout
    assert results[0]["changed"] is True and results[0]["rendered"]["files"] == ["configmap-demo-settings.yaml"]
    assert (tmp_path / "out" / "configmap-demo-settings.yaml").exists()
    assert results[1]["changed"] is True and not (tmp_path / "check").exists(), "check mode reached the module"
    assert "mode: time-slicing" in "".join(d["after"] for d in results[1]["diff"])


def test_delegating_to_a_local_host_runs_in_the_controller_process_whatever_the_plays_host(tmp_path):
    """The play's host is reached over SSH (nothing listens there); the task's connection is the delegated host's."""
    hosts = inventory(tmp_path, {
        "gpu-a": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9},
        "api": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}})
    results, stdout = play(tmp_path, [render_task(tmp_path / "out", delegate_to="api")], "-vvv",
                           hosts="gpu-a", inventory=hosts)
    assert results[0]["changed"] is True and (tmp_path / "out" / "configmap-demo-settings.yaml").exists()
    assert "AnsiballZ_manifests" not in stdout
    assert "gpu_platform.cluster.manifests runs in the controller process: its connection is local" in stdout


def test_delegating_to_a_host_reached_over_ssh_runs_the_module_there(tmp_path):
    """Nothing listens on the SSH host's port: the task is unreachable instead of quietly run on the controller."""
    hosts = inventory(tmp_path, {
        "bastion": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 9,
                    "ansible_ssh_common_args": "-o ConnectTimeout=5"},
        "api": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}})
    results, stdout = play(tmp_path, [render_task(tmp_path / "out", delegate_to="bastion", ignore_unreachable=True)],
                           "-vvv", hosts="api", inventory=hosts)
    assert results[0]["unreachable"] is True, results[0]
    assert not (tmp_path / "out").exists(), "the work ran on the controller"
    assert "gpu_platform.cluster.manifests runs as a module on bastion: its connection is ssh, not local" in stdout
