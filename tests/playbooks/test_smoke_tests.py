"""The smoke tests in site.yml and in playbooks/smoke.yml: real ansible-playbook against the fake GPU cluster,
whose smoke pods succeed, fail, hang or start apart as each test asks (local_gpu_cluster/smoke.py)."""
from __future__ import annotations

import pytest

from local_gpu_cluster.smoke import Outcome, SmokePods, gang_marker
from tests.playbooks.conftest import ROOT
from tests.playbooks.test_site_direct import NETWORK, POOLS

pytestmark = pytest.mark.slow

SMOKE_PLAYBOOK = str(ROOT / "playbooks" / "smoke.yml")
NCCL = {"smoke_tests_nccl_image": "registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9", "smoke_tests_nccl_min_busbw_gbps": 100.0}
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\n"


def summary_line(result):
    return next(line for line in result.result("What was written and which versions are pinned")["msg"]
                if line.startswith("Smoke test"))


def smoke_left(api):
    return [o["metadata"]["name"] for kind in (("v1", "Pod"), ("batch.volcano.sh/v1alpha1", "Job"))
            for o in api.store.list(kind[0], kind[1], "gpu-platform-smoke")]


def test_each_layer_proves_itself_and_the_summary_has_one_line_per_layer(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_node_pools=POOLS, gpu_platform_gpudirect_rdma=True, **NETWORK, **NCCL)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    assert summary_line(result) == ("Smoke tests passed for gpu_operator, gpu_sharing, scheduling and "
                                    "network_operator.")
    ran = [r["smoke"] for task, res in result.tasks() if task.endswith("Run each test")
           for r in res.get("results", []) if r.get("smoke")]
    runs = {(r["layer"], r["object"]): r for r in ran}
    allocatable = [line for r in ran if r["check"] == "allocatable" for line in r["evidence"]]
    assert allocatable == ["gpu-node-1: nvidia.com/gpu 32 as expected",  # 8 GPUs x 4 replicas
                           "gpu-node-2: nvidia.com/gpu 56 as expected"]  # 8 A100-80GB x 7 x 1g.10gb (single)
    mig = runs[("gpu_sharing", "pod-gpu-platform-smoke-gpu-platform-smoke-cuda-training")]
    assert mig["passed"]
    nccl = runs[("network_operator", "job-gpu-platform-smoke-gpu-platform-smoke-nccl")]
    assert "175.888" in nccl["reason"] and any("GDRDMA" in line for line in nccl["evidence"])
    # Each test's pods and jobs are gone; the namespace stays, privileged for nccl-tests' IPC_LOCK.
    assert smoke_left(api) == []
    labels = api.store.get("v1", "Namespace", "gpu-platform-smoke")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_a_failed_layer_stops_site_before_the_next_layer(direct_site):
    runner, api, repo = direct_site(smoke={"gang": Outcome("Running", gang_marker(120))})
    result = runner.run(gpu_platform_monitoring_enabled=True)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert msg.startswith("scheduling: FAIL - job-gpu-platform-smoke-gpu-platform-smoke-gang - ")
    assert "started 120 s apart" in msg and "gpu-platform-smoke-gang-member-0 started 2025-01-01T00:00:00" in msg
    names = [task for task, dummy in result.tasks()]
    assert not any("monitoring" in name.lower() for name in names[names.index(
        next(n for n in names if n.endswith("Stop when a test could not run, or at the first layer whose test failed"))):]), "nothing ran after it"
    assert smoke_left(api) == []


def test_smoke_playbook_runs_every_test_then_judges(direct_site):
    runner, api, repo = direct_site()
    assert runner.run().failed == 0
    pods = next(c for c in api.controllers if isinstance(c, SmokePods))
    pods.outcomes["cuda"] = Outcome("Failed", MISMATCH)
    pods.outcomes["gang"] = Outcome("Pending", unschedulable="0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    api.clear_log()
    result = runner.run(playbook=SMOKE_PLAYBOOK)
    assert result.failed == 1
    lines = result.result("One line per layer")["msg"]
    assert lines[0].startswith("gpu_operator: FAIL - pod-gpu-platform-smoke-gpu-platform-smoke-cuda - ")
    assert "Driver/library version mismatch" in lines[0]
    assert lines[1] == "dra_driver: SKIPPED - the DRA driver is not enabled (gpu_platform_dra_enabled)"
    assert lines[2].startswith("scheduling: FAIL - job-gpu-platform-smoke-gpu-platform-smoke-gang - 0 of 2 gang pods "
                               "started within 10s"), "the gang ran although nvidia-smi had failed"
    assert "Insufficient nvidia.com/gpu" in lines[2]
    assert lines[3].startswith("network_operator: SKIPPED - RDMA is off (gpu_platform_network_mode is none)")
    assert result.failure_messages()[-1].startswith("Smoke tests failed: gpu_operator: FAIL")
    assert smoke_left(api) == []
    # The layers were not touched: only the smoke namespace's objects were written.
    assert [w["path"] for w in api.writes() if "/gpu-platform-smoke" not in w["path"]] == []


def test_smoke_settings_are_checked_before_any_write(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(smoke_tests_image="nvcr.io/nvidia/cuda:latest")
    assert result.failed == 1
    assert any("smoke_tests_image: 'nvcr.io/nvidia/cuda:latest' uses the tag latest" in m and "Fix: " in m
               for m in result.failure_messages()), result.failure_messages()
    assert api.writes() == []


def test_a_test_that_could_not_run_stops_the_run_even_where_failures_are_judged_at_the_end(direct_site):
    # playbooks/smoke.yml runs every test before it judges (smoke_tests_stop_on_failure: false); a test the API
    # server refused to create is not a verdict but an error, and it stops the run where it happened.
    runner, api, repo = direct_site()
    api.inject("PATCH", r"/namespaces/gpu-platform-smoke/pods/gpu-platform-smoke-cuda$", {"status": 403})
    result = runner.run(playbook=SMOKE_PLAYBOOK)
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert msg.startswith("Smoke tests could not run: gpu_operator "), msg
    assert "403" in msg or "orbidden" in msg, msg
    assert smoke_left(api) == []
