"""Every play checks the platform contract first (roles/gpu_platform): a bad value stops the run before anything
is read or written, naming the variable; survey strings for booleans are accepted; a layer variable renamed into the
contract is refused, naming its new name."""
from __future__ import annotations

import pytest
import yaml

from tests.playbooks.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("over, words", [
    ({"gpu_platform_driver_mode": "hosts"}, "gpu_platform_driver_mode must be one of: host, operator, auto"),
    ({"gpu_platform_network_mode": "rdma"}, "gpu_platform_network_mode must be one of"),
    ({"gpu_platform_gpudirect_path": "dma-buf"}, "gpu_platform_gpudirect_path must be one of: auto, dmabuf, peermem"),
    ({"gpu_platform_smoke_tests_enabled": "perhaps"}, "gpu_platform_smoke_tests_enabled"),
    ({"gpu_platform_teams": "ml"}, "gpu_platform_teams"),
    # not a key of gpu_platform_release_pairs: refused by the contract's check, before the chart versions that read
    # the pair are evaluated anywhere
    ({"gpu_platform_release_pair": "aks"}, "gpu_platform_release_pair: 'aks' is not a release pair (the pairs: aicr, "
                                           "aks-guide, nvidia-matrix). Fix: set gpu_platform_release_pair to one of"),
])
def test_a_bad_platform_variable_stops_the_first_play(render_site, over, words):
    runner, out = render_site
    result = runner.run(**over)
    assert result.failed == 1
    msg = result.failure_messages()[0]
    assert words in msg, msg
    tasks = [name for name, res in result.tasks()]
    assert "gpu_platform" in tasks[0] and "Validating arguments against arg spec 'check'" in tasks[0], tasks[:3]
    assert not out.exists(), "nothing was written"


def test_a_renamed_layer_variable_names_its_new_name(render_site):
    """An inventory written for 0.1.0 (network_operator_mode, gpu_sharing_pools) fails in the first play, naming
    both old variables and their contract names, before anything is written."""
    runner, out = render_site
    result = runner.run(network_operator_mode="sriov", gpu_sharing_pools=[])
    assert result.failed == 1
    msg = result.failure_messages()[0]
    assert "network_operator_mode: was renamed to gpu_platform_network_mode" in msg, msg
    assert "gpu_sharing_pools: was renamed to gpu_platform_node_pools" in msg, msg
    assert "Traceback" not in msg
    assert not out.exists(), "nothing was written"


PREFLIGHT_LINES = "The release pair in use, who validated it, what the data could not check, and what was acknowledged (read it)"


def test_preflight_prints_the_release_pair_in_use(render_site):
    """The first play names the pair and who validated it; a chart version set directly is named instead."""
    runner, out = render_site
    preflight = str(ROOT / "playbooks" / "preflight.yml")
    result = runner.run(playbook=preflight, gpu_platform_release_pair="aks-guide", gpu_platform_network_mode="sriov",
                        gpu_platform_kubernetes_version="1.35",
                        gpu_platform_node_os="Ubuntu 24.04", gpu_platform_container_runtime="containerd 2.0.5")
    assert result.failed == 0, result.failure_messages()
    lines = result.result(PREFLIGHT_LINES)["msg"]
    assert lines[0].startswith("release pair aks-guide (gpu_platform_release_pair): GPU Operator v26.3.3 with Network "
                               "Operator 26.4.0; GPUDirect RDMA a cloud provider's guide"), lines
    result = runner.run(playbook=preflight, gpu_platform_release_pair="aicr", gpu_operator_chart_version="v26.3.3",
                        gpu_platform_network_mode="none", gpu_platform_gpudirect_rdma=False)
    assert result.failed == 0, result.failure_messages()
    lines = result.result(PREFLIGHT_LINES)["msg"]
    assert lines[0].startswith("release pair: none, the versions were set directly (gpu_operator_chart_version "
                               "v26.3.3), so gpu_platform_release_pair aicr"), lines
    assert not out.exists(), "preflight writes nothing"


def test_survey_strings_for_booleans_pass(render_site):
    runner, out = render_site
    result = runner.run(gpu_platform_monitoring_enabled="false", gpu_platform_scheduling_enabled="true",
                        gpu_platform_network_mode="none")
    assert result.failed == 0, result.failure_messages()


CONTRACT = "gpu_platform.cluster.gpu_platform"


def depends_on(role):
    """The roles a collection role (FQCN) lists as its dependencies."""
    meta = ROOT / "roles" / role.rsplit(".", 1)[-1] / "meta" / "main.yml"
    return [d.get("role") for d in (yaml.safe_load(meta.read_text()) or {}).get("dependencies") or []] if meta.exists() else []


def test_every_layer_role_depends_on_the_contract():
    roles = sorted(d.name for d in (ROOT / "roles").iterdir() if d.is_dir() and d.name != "gpu_platform")
    assert len(roles) == 9
    for role in roles:
        assert depends_on("gpu_platform.cluster." + role) == [CONTRACT], role


def test_every_play_starts_with_the_check():
    """Every play's first task loads the contract: the contract itself, or a layer role that depends on it."""
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            if "ansible.builtin.import_playbook" in play:
                continue
            first = (play.get("pre_tasks") or play.get("tasks"))[0]
            role = (first.get("ansible.builtin.import_role") or {}).get("name", "")
            assert role == "gpu_platform.cluster.gpu_platform" or CONTRACT in depends_on(role), (path.name, play["name"])


ENTRY_PLAYBOOKS = ("preflight.yml", "uninstall.yml", "smoke.yml", "node_labels.yml")


def test_every_entry_playbook_checks_the_contract_in_its_first_task():
    """site.yml and upgrade.yml begin with preflight.yml; uninstall, smoke and node_labels are run on their own.
    Each one's first task runs the contract's check entry point: its variables' types and choices, and the
    renamed names, before anything is read or written."""
    assert yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())[0]["ansible.builtin.import_playbook"] == "preflight.yml"
    assert yaml.safe_load((ROOT / "playbooks" / "upgrade.yml").read_text())[0]["ansible.builtin.import_playbook"] == "preflight.yml"
    for name in ENTRY_PLAYBOOKS:
        play = yaml.safe_load((ROOT / "playbooks" / name).read_text())[0]
        first = (play.get("pre_tasks") or play.get("tasks"))[0]
        assert first.get("ansible.builtin.import_role") == {"name": CONTRACT, "tasks_from": "check"}, name


def test_cluster_plays_run_once_whatever_the_size_of_k8s_api():
    """Cluster work runs on one host: a k8s_api group that lists several hosts (say, every control-plane node)
    must not install, apply and wait once per host."""
    cluster_plays = 0
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            if "ansible.builtin.import_playbook" in play:
                continue
            hosts = play["hosts"]
            assert hosts in ("k8s_api[0]", "gpu_hosts"), (path.name, play["name"], hosts)
            cluster_plays += hosts == "k8s_api[0]"
    assert cluster_plays >= 15


DECIDE_TWICE = """
- name: The driver decision, made again only when its inputs changed
  hosts: k8s_api[0]
  gather_facts: false
  tasks:
    - name: The contract
      ansible.builtin.import_role:
        name: gpu_platform.cluster.gpu_platform
        tasks_from: variables
    - name: Nothing decided yet
      ansible.builtin.assert:
        that: gpu_platform_driver_decision_stale | bool
    - name: Decide
      ansible.builtin.include_role:
        name: gpu_platform.cluster.gpu_platform
        tasks_from: driver_mode
    - name: Stale after the decision from the same inputs?
      ansible.builtin.set_fact:
        stale_after_deciding: "{{ gpu_platform_driver_decision_stale | bool }}"
    - name: Another input (what a host layer's new evidence does)
      ansible.builtin.set_fact:
        gpu_platform_driver_mode: host
    - name: Stale after the change?
      ansible.builtin.set_fact:
        stale_after_change: "{{ gpu_platform_driver_decision_stale | bool }}"
    - name: Decide again
      ansible.builtin.include_role:
        name: gpu_platform.cluster.gpu_platform
        tasks_from: driver_mode
    - name: What was decided
      ansible.builtin.debug:
        msg: "{{ {'mode': gpu_platform_driver_decision.mode, 'stale': gpu_platform_driver_decision_stale | bool} }}"
"""


def test_the_driver_decision_is_stale_only_until_made_from_the_same_inputs(render_site, tmp_path):
    """gpu_platform_driver_decision_stale: the GPU Operator layer includes the decision again only when it is true
    (site.yml's no-op pays one skipped task for it), so it must turn true when an input changes."""
    runner, out = render_site
    playbook = tmp_path / "decide.yml"
    playbook.write_text(DECIDE_TWICE)
    result = runner.run(playbook=str(playbook))
    assert result.failed == 0, result.failure_messages()
    facts = {name: res.get("ansible_facts", {}) for name, res in result.tasks()}
    assert facts["Stale after the decision from the same inputs?"] == {"stale_after_deciding": False}
    assert facts["Stale after the change?"] == {"stale_after_change": True}
    assert result.result("What was decided")["msg"] == {"mode": "host", "stale": False}
