"""The lane's time record: each command filed under its kind, and what no command took left to the test's Python."""
import subprocess
import sys

from local_gpu_cluster import lane_times


def test_each_command_is_filed_under_its_kind():
    assert lane_times.kind_of([sys.executable, "-m", "local_gpu_cluster", "up", "--gitops"]) == "cluster up"
    assert lane_times.kind_of([sys.executable, "-m", "local_gpu_cluster", "down"]) == "cluster down"
    assert lane_times.kind_of([sys.executable, "-m", "local_gpu_cluster", "status"]) == "other command"
    assert lane_times.kind_of(["/venv/bin/ansible-playbook", "site.yml"]) == "playbook"
    assert lane_times.kind_of(["/venv/bin/ansible-runner", "run", "x"]) == "playbook"
    assert lane_times.kind_of(["/tools/bin/helm3", "list"]) == "helm"
    assert lane_times.kind_of("kubectl get nodes") == "kubectl"
    assert lane_times.kind_of(["git", "push"]) == "other command"
    assert lane_times.kind_of([]) == "other command"


def test_a_command_s_time_goes_to_its_module_and_the_rest_to_python():
    record = lane_times.LaneTimes()
    record.install()
    try:
        record.module = "tests/cluster/test_x.py"
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3)"], check=True)
    finally:
        record.uninstall()
    assert subprocess.run is not None and getattr(subprocess.run, "__name__", "") == "run"  # restored
    record.wall["tests/cluster/test_x.py"] = 1.0
    record.tests["tests/cluster/test_x.py"] = 1
    report = record.report()
    kinds = report["modules"]["tests/cluster/test_x.py"]["kinds"]
    assert kinds["other command"] >= 0.3
    assert abs(kinds["other command"] + kinds["python (waits, checks)"] - 1.0) < 0.06
    assert report["tests"] == 1 and report["kinds"]["other command"] >= 0.3
