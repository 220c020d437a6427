"""host_driver and peermem refuse bad inputs before any change (run for real on this machine, where the
refusal comes before the first task that could change anything)."""
from __future__ import annotations

import os

import pytest

from tests.playbooks.localhost import run_on_localhost


def run_role(tmp_path, role, role_vars, *args):
    play = [{"name": "role", "hosts": "localhost", "gather_facts": False, "connection": "local",
             "roles": [{"role": "gpu_platform.cluster." + role, "vars": role_vars}]}]
    data = run_on_localhost(tmp_path, play, *args)
    stats = data["stats"]["localhost"]
    messages = [res.get("msg", "") for playdata in data["plays"] for task in playdata["tasks"]
                for res in task["hosts"].values() if res.get("failed")]
    return stats, " ".join(str(m) for m in messages)


SUSE = {"family": "Suse", "distribution": "SLES", "major": "15", "version": "15.6", "architecture": "x86_64",
        "kernel": "6.4.0-150600.23.25-default"}


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("role_vars, words", [
    ({"gpu_platform_driver_branch": "535.247.01"}, "gpu_platform_driver_branch: '535.247.01' is not a driver branch number"),
    ({"gpu_platform_driver_branch": "abc"}, "gpu_platform_driver_branch: 'abc' is not a driver branch number"),
    ({"host_driver_source": "runfile"}, "host_driver_source"),
    ({"host_driver_kernel_modules": "nouveau"}, "host_driver_kernel_modules"),
    # The OS facts the role plans from, replaced by an unsupported one.
    ({"_host_driver_os": SUSE}, "the host's operating system: SLES 15 (Suse family) is not supported"),
    ({"host_driver_kernel_modules": "open", "gpu_platform_driver_branch": "470", "host_driver_source": "vendor"},
     "open kernel modules start with branch 515"),
])
def test_host_driver_refuses_before_any_change(tmp_path, role_vars, words, check):
    stats, messages = run_role(tmp_path, "host_driver", role_vars, *(["--check"] if check else []))
    assert stats["failures"] == 1 and stats["changed"] == 0
    assert words in messages, messages
    assert "Fix:" in messages or "choices" in messages or "must be one of" in messages


@pytest.mark.parametrize("role_vars, words", [
    ({"peermem_path": "kernel"}, "peermem_path"),
    ({"peermem_path": "operator", "peermem_gpu_operator_values": {"driver": {"enabled": True}}},
     "peermem_path is operator but the GPU Operator values do not enable driver.rdma"),
    ({"peermem_path": "daemonset", "peermem_loader_image": "docker.io/library/busybox:latest",
      "peermem_render_to": "/nonexistent-never-written"}, "peermem_loader_image: 'docker.io/library/busybox:latest' uses the tag latest"),
    ({"peermem_path": "daemonset", "peermem_node_selector": {"nvidia.com/gpu.present": True},
      "peermem_render_to": "/nonexistent-never-written"}, "peermem_node_selector.nvidia.com/gpu.present"),
])
def test_peermem_refuses_before_any_change(tmp_path, role_vars, words):
    stats, messages = run_role(tmp_path, "peermem", role_vars)
    assert stats["failures"] == 1 and stats["changed"] == 0
    assert words in messages, messages
    assert not os.path.exists("/nonexistent-never-written")
