"""Run site.yml for real (ansible-playbook in a subprocess) against the fake cluster or offline."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.charts import DEMO_CHART_DIR, FIXTURE_CHARTS_DIR, TOOLS_BIN, pinned_charts
from local_gpu_cluster.chart_repo import ChartRepoServer
from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import default_controllers
from local_gpu_cluster.controllers import MigManager
from local_gpu_cluster.crds import DEFAULT_CRD_DIR
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR
from local_gpu_cluster.gpu_operator import NVIDIA_SMI, SimulatedDevicePlugin, SimulatedGpuOperator, gpu_node
from local_gpu_cluster.nccl_logs import NCCL_IB_LOG
from local_gpu_cluster.smoke import Outcome, SimulatedVolcanoJobs, SmokePods, gang_marker
from local_gpu_cluster.network_operator import SimulatedNetworkOperator

ROOT = Path(__file__).resolve().parents[2]
GPU_OPERATOR_CHART = FIXTURE_CHARTS_DIR / "gpu-operator"
NETWORK_OPERATOR_CHART = FIXTURE_CHARTS_DIR / "network-operator"
# The scheduling layer's charts, served from the loopback repository (OCI refs in production).
SCHEDULING_CHARTS = tuple(c for c in pinned_charts() if c[0] not in ("gpu-operator", "network-operator"))
PLAYBOOK = str(ROOT / "site.yml")
assert DEMO_CHART_DIR.exists()


class PlayResult:
    """The JSON callback's output of one ansible-playbook run."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        try:
            self.data = json.loads(proc.stdout)
        except ValueError:
            raise AssertionError("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout[-4000:], proc.stderr[-4000:]))
        self.stats = self.data["stats"].get("localhost", {})

    @property
    def changed(self):
        return self.stats.get("changed", 0)

    @property
    def failed(self):
        return self.stats.get("failures", 0) + self.stats.get("unreachable", 0)

    def tasks(self):
        for play in self.data["plays"]:
            for task in play["tasks"]:
                yield task["task"]["name"], task["hosts"].get("localhost", {})

    def result(self, name):
        return next(res for task, res in self.tasks() if task == name or task.endswith(" : " + name))

    def failure_messages(self):
        return [res.get("msg", "") for name, res in self.tasks() if res.get("failed") and not res.get("skipped")
                and not res.get("_ansible_ignore_errors")]

    def failure_details(self):
        """Each failed task's name and message, and a loop's failed items' own messages (for an assertion's text)."""
        out = []
        for name, res in self.tasks():
            if res.get("failed") and not res.get("skipped") and not res.get("_ansible_ignore_errors"):
                out.append("%s: %s" % (name, res.get("msg", "")))
                out += ["  item %s: %s" % (item.get("item"), item.get("msg", "")) for item in res.get("results") or []
                        if isinstance(item, dict) and item.get("failed")]
        return out

    def changed_tasks(self):
        return [name for name, res in self.tasks() if res.get("changed")]

    def debug_text(self):
        return json.dumps(self.data, indent=1)[-6000:]


class SiteRunner:
    """An inventory in tmp_path plus the environment to run site.yml with it."""

    def __init__(self, tmp_path, env, group_vars):
        self.dir = tmp_path / "inventory"
        (self.dir / "group_vars" / "all").mkdir(parents=True)
        (self.dir / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"k8s_api": {"hosts": {"localhost": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
        self.vars_file = self.dir / "group_vars" / "all" / "test.yml"
        self.group_vars = dict(group_vars)
        self.write_vars()
        self.env = env

    def write_vars(self, **over):
        self.group_vars.update(over)
        self.vars_file.write_text(yaml.safe_dump(self.group_vars))

    def run(self, *args, playbook=PLAYBOOK, **over):
        if over:
            self.write_vars(**over)
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(self.dir), playbook, *args]
        proc = subprocess.run(command, env=self.env, capture_output=True, text=True, cwd=str(ROOT), check=False,
                              timeout=600)
        return PlayResult(proc)


def site_env(helm_env):
    env = dict(helm_env)
    bindir = Path(env["HOME"]) / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    link = bindir / "helm"
    if not link.exists():
        link.symlink_to(TOOLS_BIN / "helm3")
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", ""))
    env["ANSIBLE_STDOUT_CALLBACK"] = "json"
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / "build" / "collections")
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env.pop("KUBECONFIG", None)  # the inventory's gpu_platform_kubeconfig must be what reaches the cluster
    return env


@pytest.fixture(scope="session")
def gpu_operator_chart(chart_cache):
    return chart_cache.get(GPU_OPERATOR_CHART, version=dict(pinned_charts())["gpu-operator"])


@pytest.fixture(scope="session")
def network_operator_chart(chart_cache):
    return chart_cache.get(NETWORK_OPERATOR_CHART, version=dict(pinned_charts())["network-operator"])


@pytest.fixture(scope="session")
def scheduling_charts(chart_cache):
    return [chart_cache.get(FIXTURE_CHARTS_DIR / name, version=version) for name, version in SCHEDULING_CHARTS]


@pytest.fixture
def gpu_cluster_factory(fake_api_factory, gpu_operator_chart, network_operator_chart, scheduling_charts):
    """A fake cluster with two GPU nodes, a simulated GPU Operator and CUDA pods, and a chart repository."""
    repos = []

    def make(never_ready=(), git_version="v1.34.1", cuda_log=None, network_stuck=(), smoke=None):
        outcomes = {"cuda": Outcome("Succeeded", NVIDIA_SMI if cuda_log is None else cuda_log),
                    "dra": Outcome("Succeeded", NVIDIA_SMI), "gang": Outcome("Running", gang_marker(0)),
                    "nccl/launcher": Outcome("Succeeded", NCCL_IB_LOG), "nccl/worker": Outcome("Running", "")}
        outcomes.update(smoke or {})
        extra = [SimulatedGpuOperator(never_ready=never_ready),
                 SimulatedNetworkOperator(ready_after=0, stuck=network_stuck),
                 SimulatedDevicePlugin(), MigManager(delay=0), SimulatedVolcanoJobs(), SmokePods(outcomes)]
        api = fake_api_factory(clock=FakeClock(), require_namespaces=True, git_version=git_version,
                               crd_dirs=[DEFAULT_CRD_DIR, FIXTURE_CRDS_DIR], controllers=extra + default_controllers())
        for name, pool in (("gpu-node-1", "inference"), ("gpu-node-2", "training")):
            node = gpu_node(name)
            node["metadata"]["labels"].update({"nodepool": pool, "nvidia.com/mig.capable": "true"})
            api.store.create(node)
        repo = ChartRepoServer([gpu_operator_chart, network_operator_chart, *scheduling_charts]).start()
        repos.append(repo)
        api.clear_log()
        return api, repo

    yield make
    for repo in repos:
        repo.stop()


@pytest.fixture
def direct_site(tmp_path, helm_env, gpu_cluster_factory):
    """site.yml in direct mode against a fake GPU cluster: returns (runner, api, repo) via a factory."""

    def make(**cluster_options):
        api, repo = gpu_cluster_factory(**cluster_options)
        runner = SiteRunner(tmp_path, site_env(helm_env), {
            "gpu_platform_kubeconfig": api.kubeconfig,
            "gpu_operator_chart_repo_url": repo.url,
            "network_operator_chart_repo_url": repo.url,
            "scheduling_volcano_chart_repo_url": repo.url,
            "scheduling_kueue_chart_ref": "kueue",
            "scheduling_kueue_chart_repo_url": repo.url,
            "scheduling_kai_chart_ref": "kai-scheduler",
            "scheduling_kai_chart_repo_url": repo.url,
            "scheduling_wait_timeout": 30,
            "dra_driver_chart_ref": "dra-driver-nvidia-gpu",
            "dra_driver_chart_repo_url": repo.url,
            "dra_driver_wait_timeout": 30,
            "network_operator_wait_timeout": 6,
            "gpu_operator_wait_timeout": 4,
            "gpu_operator_wait_interval": 1,
            "gpu_operator_smoke_timeout": 10,
            "smoke_tests_timeout": 10,
            "smoke_tests_nccl_timeout": 10,
            # With RDMA on, the NCCL proof is part of every run: an image and a threshold (no node type here).
            **NCCL_SETTINGS,
        })
        return runner, api, repo

    return make


# The nccl-tests image and bus-bandwidth threshold every RDMA run needs (the fake launcher's log shows 175.888 GB/s).
NCCL_SETTINGS = {"smoke_tests_nccl_image": "registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9",
                 "smoke_tests_nccl_min_busbw_gbps": 100.0}


@pytest.fixture
def render_site(tmp_path, helm_env):
    """site.yml in render mode into tmp_path/platform: returns (runner, out)."""
    out = tmp_path / "platform"
    runner = SiteRunner(tmp_path, site_env(helm_env), {"gpu_platform_render_to": str(out), **NCCL_SETTINGS})
    return runner, out


def bundle(out):
    """The bundle's manifests, parsed, by file name: those of every unit folder but smoke/ (read on its own:
    bundle(out / "smoke")), and the files at the root (the Flux Kustomizations); kustomization.yaml files are not
    manifests (see kustomizations(out))."""
    folders = [out] + [out / d for d in sorted(os.listdir(out)) if (out / d).is_dir() and d not in ("smoke", "dashboards")]
    return {name: yaml.safe_load((folder / name).read_text()) for folder in folders for name in sorted(os.listdir(folder))
            if (folder / name).is_file() and name != "kustomization.yaml"}


def kustomizations(out):
    """{folder relative to the bundle ('' for the root): its kustomization.yaml, parsed} for the root and every unit."""
    return {str(path.parent.relative_to(out)).strip("."): yaml.safe_load(path.read_text())
            for path in sorted(out.glob("**/kustomization.yaml"))}
