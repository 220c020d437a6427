"""The host preflight as playbooks/driver_mode.yml runs it (roles/gpu_platform/tasks/host_checks.yml): gpu_host_facts
reads a crafted host tree, the role's task judges it, and the run stops with every blocking finding in one message,
prints the warnings, honours gpu_platform_host_checks_skip, and says so when there is nothing to check."""
from __future__ import annotations

import pytest
import yaml

from tests.unit.host_trees import clean_tree, drop_in_higher, nvidia_drm
from tests.playbooks.localhost import ROOT, run_on_localhost

pytestmark = pytest.mark.slow


def play(root=None, **extra_vars):
    tasks = [{"name": "The contract", "ansible.builtin.import_role": {
        "name": "gpu_platform.cluster.gpu_platform", "tasks_from": "variables"}}]
    if root is not None:
        tasks += [
            {"name": "This machine is the GPU host",
             "ansible.builtin.add_host": {"name": "localhost", "groups": "gpu_hosts"}},
            {"name": "Read it", "gpu_platform.cluster.gpu_host_facts": {
                "root": str(root), "node_name": "gpu-node-01", "checks": True}},
        ]
    tasks.append({"name": "The host preflight", "ansible.builtin.include_role": {
        "name": "gpu_platform.cluster.gpu_platform", "tasks_from": "host_checks"}})
    return [{"name": "host preflight", "hosts": "localhost", "gather_facts": False, "connection": "local",
             "vars": dict({"gpu_platform_node_pools": [{"name": "mig", "sharing": "mig", "mig_profile": "all-1g.10gb",
                                                        "node_selector": {"pool": "mig"}}]}, **extra_vars),
             "tasks": tasks}]


def results(data):
    return [(task["task"]["name"], task["hosts"]["localhost"]) for task in data["plays"][0]["tasks"]]


def test_every_blocking_finding_in_one_message_then_the_skip_list(tmp_path):
    root = clean_tree(tmp_path / "host")
    drop_in_higher(root)
    nvidia_drm(root)
    data = run_on_localhost(tmp_path, play(root))
    failed = [res for name, res in results(data) if res.get("failed")]
    assert len(failed) == 1 and data["stats"]["localhost"]["failures"] == 1
    msg = failed[0]["msg"]
    assert msg.splitlines()[0].startswith("2 blocking finding(s) on the GPU hosts, before anything was written")
    assert "gpu-node-01: [containerd-dropin-version]" in msg and "gpu-node-01: [mig-blocked-by-nvidia-drm]" in msg
    data = run_on_localhost(tmp_path, play(root, gpu_platform_host_checks_skip=[
        "containerd-dropin-version", "mig-blocked-by-nvidia-drm"]))
    assert data["stats"]["localhost"]["failures"] == 0
    said = next(res["msg"] for name, res in results(data) if name.endswith("What the host preflight checked"))
    assert said[0] == ("Host preflight: gpu-node-01 checked; 0 blocking, 0 warning(s), skipped: "
                       "containerd-dropin-version, mig-blocked-by-nvidia-drm")


@pytest.mark.parametrize("extra, words", [
    ({}, "Host preflight skipped: no host in the gpu_hosts group (gpu_platform_host_probe: true reads the GPU "
         "nodes through probe Jobs)"),
    ({"gpu_platform_render_to": "/nonexistent-never-written"},
     "Host preflight skipped: render mode (nothing is read from the GPU hosts)"),
])
def test_nothing_to_check_says_so(tmp_path, extra, words):
    data = run_on_localhost(tmp_path, play(**extra))
    assert data["stats"]["localhost"]["failures"] == 0
    said = next(res["msg"] for name, res in results(data) if name.endswith("What the host preflight checked"))
    assert said == words


def test_driver_mode_yml_reads_the_hosts_and_judges_them_before_the_decision():
    plays = yaml.safe_load((ROOT / "playbooks" / "driver_mode.yml").read_text())
    read = plays[0]["tasks"][1]["gpu_platform.cluster.gpu_host_facts"]
    assert plays[0]["hosts"] == "gpu_hosts" and read["checks"] == "{{ gpu_platform_render_dir | length == 0 }}"
    names = [t.get("ansible.builtin.include_role", {}).get("tasks_from") for t in plays[1]["tasks"]]
    assert names.index("host_checks") < names.index("driver_mode")
