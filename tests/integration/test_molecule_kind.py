"""molecule/kind: site.yml in direct mode on a kind cluster with fake GPU nodes.

The scenario needs a Docker engine and kind; without them it is skipped, saying why. Its playbooks still run
here, on the fake API server (local_gpu_cluster) with the scenario's own inventory: prepare.yml, converge.yml twice
(the second run 0 changed), converge.yml with --check, and verify.yml.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.chart_repo import ChartRepoServer
from local_gpu_cluster.charts import FIXTURE_CHARTS_DIR, TOOLS_BIN, pinned_charts
from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import StatusSetter, default_controllers
from local_gpu_cluster.crds import DEFAULT_CRD_DIR
from local_gpu_cluster.gpu_operator import SimulatedGpuOperator
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "molecule" / "kind"
PLAYBOOKS = ("create.yml", "prepare.yml", "converge.yml", "verify.yml", "destroy.yml")
BIN = os.path.dirname(sys.executable)
WHAT = ("molecule/kind (a kind cluster with fake GPU nodes, site.yml in direct mode, its idempotence and check "
        "mode) cannot run here. Run it with `make molecule-kind` on a machine with Docker and kind "
        "(molecule/kind/README.md)")


def _first_line(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "no output")


def _run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 1, str(err)
    return proc.returncode, proc.stderr or proc.stdout


def _why_not():
    """Empty when a Docker engine answers and kind is on the PATH; otherwise the reason, for the skip."""
    if not shutil.which("docker"):
        return "no Docker engine on this machine: docker is not on the PATH, so " + WHAT
    rc, out = _run(["docker", "info"])
    if rc != 0:
        return "no Docker engine on this machine: `docker info` failed (%s), so %s" % (_first_line(out), WHAT)
    if not shutil.which("kind"):
        return "kind is not on the PATH, so " + WHAT
    return ""


WHY_NOT = _why_not()


def _env(**extra):
    env = dict(os.environ, **extra)
    env["PATH"] = os.pathsep.join([str(TOOLS_BIN), BIN, env.get("PATH", "")])
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / "build" / "collections")
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    return env


def _molecule_config():
    return yaml.safe_load((SCENARIO / "molecule.yml").read_text())


@pytest.mark.slow
@pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "Docker and kind are here")
def test_site_on_a_kind_cluster_with_fake_gpu_nodes():
    proc = subprocess.run([os.path.join(BIN, "molecule"), "test", "-s", "kind"], cwd=str(ROOT), env=_env(),
                          capture_output=True, text=True, check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_the_scenario_is_complete_pinned_and_its_readme_gives_the_command():
    for name in ("molecule.yml", "README.md") + PLAYBOOKS:
        assert (SCENARIO / name).is_file(), name
    for path in sorted(SCENARIO.glob("*.yml")):
        assert yaml.safe_load(path.read_text()), path.name
    assert "make molecule-kind" in (SCENARIO / "README.md").read_text()
    config = _molecule_config()
    assert config["driver"]["name"] == "default"
    assert config["scenario"]["test_sequence"] == [
        "destroy", "create", "prepare", "converge", "idempotence", "check", "verify", "destroy"]
    scenario_vars = config["provisioner"]["inventory"]["group_vars"]["all"]
    image = scenario_vars["kind_node_image"]
    assert re.fullmatch(r"kindest/node:v1\.34\.\d+@sha256:[0-9a-f]{64}", image), image
    assert "latest" not in image
    create = (SCENARIO / "create.yml").read_text()
    assert '"{{ kind_node_image }}"' in create and "--image" in create and "--kubeconfig" in create
    # Fake nodes run no pods: nothing may wait for the operator's operands or a smoke test.
    assert scenario_vars["gpu_platform_driver_mode"] == "host"
    assert scenario_vars["gpu_operator_wait"] is False
    assert scenario_vars["gpu_platform_smoke_tests_enabled"] is False
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\nmolecule-kind:"):].split("\n\n")[0]
    assert "docker info" in target and "kind version" in target and "molecule test -s kind" in target


def test_the_playbooks_parse(tmp_path):
    """ansible-playbook --syntax-check on each of the scenario's playbooks (no cluster needed)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    k8s_api:\n      hosts:\n        localhost: {}\n"
                         "    gpu_hosts:\n      hosts: {}\n")
    for playbook in PLAYBOOKS:
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i", str(inventory),
                               str(SCENARIO / playbook)], env=_env(), capture_output=True, text=True, check=False)
        assert proc.returncode == 0, playbook + ": " + proc.stderr


def _stats(proc):
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))
    failed = [task["task"]["name"] + ": " + str(res.get("msg", ""))
              for play in data["plays"] for task in play["tasks"]
              for res in task["hosts"].values() if res.get("failed") and not res.get("skipped")]
    changed = [task["task"]["name"] for play in data["plays"] for task in play["tasks"]
               if any(res.get("changed") for res in task["hosts"].values())]
    return failed, changed


@pytest.mark.slow
def test_the_playbooks_on_the_fake_api_server(tmp_path, fake_api_factory, chart_cache, helm_env):
    """prepare, converge, converge again (0 changed), converge --check (no write), verify: the scenario's own
    inventory, against the fake API server with a simulated GPU Operator and the fixture charts."""
    charts = [chart_cache.get(FIXTURE_CHARTS_DIR / "gpu-operator", version=dict(pinned_charts())["gpu-operator"]),
              chart_cache.get(FIXTURE_CHARTS_DIR / "volcano", version="1.15.1"),
              chart_cache.get(FIXTURE_CHARTS_DIR / "kueue", version="0.19.2")]
    # Kueue makes a ClusterQueue Active once its flavors exist; the fake has no Kueue, so it says so at once.
    active = StatusSetter("kueue.x-k8s.io/v1beta2", "ClusterQueue",
                          lambda obj: {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]})
    api = fake_api_factory(clock=FakeClock(), git_version="v1.34.3", require_namespaces=True,
                           crd_dirs=[DEFAULT_CRD_DIR, FIXTURE_CRDS_DIR],
                           controllers=[SimulatedGpuOperator(), active] + default_controllers())
    api.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-platform-control-plane"}})
    ephemeral = tmp_path / "ephemeral"
    ephemeral.mkdir()
    api.write_kubeconfig(ephemeral / "kubeconfig")

    # The inventory molecule writes from molecule.yml, plus the loopback chart repository.
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    config = _molecule_config()["provisioner"]["inventory"]
    (inventory / "hosts.yml").write_text(yaml.safe_dump(config["hosts"]))
    scenario_vars = yaml.safe_load(yaml.safe_dump(config["group_vars"]["all"])
                                   .replace("${MOLECULE_EPHEMERAL_DIRECTORY}", str(ephemeral)))
    repo = ChartRepoServer(charts).start()
    try:
        scenario_vars.update({
            "molecule_ephemeral_directory": str(ephemeral),
            "gpu_operator_chart_repo_url": repo.url,
            "scheduling_volcano_chart_repo_url": repo.url,
            "scheduling_kueue_chart_ref": "kueue",
            "scheduling_kueue_chart_repo_url": repo.url,
            "scheduling_wait_timeout": 30})
        (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(scenario_vars))
        env = _env(**{k: v for k, v in helm_env.items() if k != "PATH"}, ANSIBLE_STDOUT_CALLBACK="json")
        env.pop("KUBECONFIG", None)  # only the scenario's kubeconfig may reach the cluster

        def play(playbook, *args):
            proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory),
                                   str(SCENARIO / playbook), *args], cwd=str(ROOT), env=env,
                                  capture_output=True, text=True, check=False, timeout=600)
            return _stats(proc)

        failed, changed = play("prepare.yml")
        assert not failed, failed
        node = api.store.get("v1", "Node", "gpu-node-1")
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] == "pre-installed"
        assert node["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]

        failed, changed = play("converge.yml")
        assert not failed, failed
        assert changed
        policy = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
        assert policy["spec"]["driver"]["enabled"] is False

        failed, changed = play("converge.yml")
        assert not failed and not changed, failed or changed

        api.clear_log()
        failed, changed = play("converge.yml", "--check")
        assert not failed and not changed, failed or changed
        assert api.writes() == []

        failed, changed = play("verify.yml")
        assert not failed, failed
    finally:
        repo.stop()
