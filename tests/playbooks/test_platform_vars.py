"""Every play checks the platform's flat (survey-friendly) variables first: a bad value stops the run
before anything is read or written, naming the variable; survey strings for booleans are accepted."""
from __future__ import annotations

import pytest
import yaml

from tests.playbooks.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("over, words", [
    ({"gpu_platform_driver_mode": "hosts"}, "gpu_platform_driver_mode must be one of: host, operator, auto"),
    ({"network_operator_mode": "rdma"}, "network_operator_mode must be one of"),
    ({"gpu_platform_smoke_tests_enabled": "perhaps"}, "gpu_platform_smoke_tests_enabled"),
    ({"smoke_tests_layers": ["gpu_operator", "monitoring"]}, "smoke_tests_layers"),
])
def test_a_bad_platform_variable_stops_the_first_play(render_site, over, words):
    runner, out = render_site
    result = runner.run(**over)
    assert result.failed == 1
    msg = result.failure_messages()[0]
    assert words in msg, msg
    tasks = [name for name, res in result.tasks()]
    assert tasks[0].endswith("Check the platform's variables (survey and extra vars)"), tasks[:3]
    assert not out.exists(), "nothing was written"


def test_survey_strings_for_booleans_pass(render_site):
    runner, out = render_site
    result = runner.run(gpu_platform_monitoring_enabled="false", gpu_platform_scheduling_enabled="true",
                        network_operator_mode="none")
    assert result.failed == 0, result.failure_messages()


def test_every_play_starts_with_the_check():
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            if "ansible.builtin.import_playbook" in play:
                continue
            first = (play.get("pre_tasks") or play.get("tasks"))[0]
            assert first.get("ansible.builtin.import_tasks") == "tasks/platform_vars.yml", (path.name, play["name"])


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
