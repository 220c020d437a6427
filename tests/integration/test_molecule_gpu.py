"""molecule/gpu on a real GPU host, when one is given (GPU_HOST); skipped otherwise, saying why."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NO_GPU = ("no GPU host: this project has no GPU, so molecule/gpu (host_driver and peermem on a real NVIDIA host, "
          "nvidia-smi, lsmod, persistence across a reboot) cannot run here. Run it with GPU_HOST=<address> "
          "[GPU_HOST_USER=ubuntu GPU_HOST_REBOOT_ALLOWED=true] make molecule-gpu (molecule/gpu/README.md)")


@pytest.mark.skipif(not os.environ.get("GPU_HOST"), reason=NO_GPU)
def test_host_roles_on_a_real_gpu_host():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "molecule"), "test", "-s", "gpu"],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_the_scenario_is_complete_and_its_readme_gives_the_command():
    scenario = ROOT / "molecule" / "gpu"
    for name in ("molecule.yml", "converge.yml", "verify.yml", "tasks/checks.yml", "README.md"):
        assert (scenario / name).is_file(), name
    assert "GPU_HOST=10.0.0.12 GPU_HOST_USER=ubuntu GPU_HOST_REBOOT_ALLOWED=true make molecule-gpu" in \
        (scenario / "README.md").read_text()


def test_the_converge_plays_parse(tmp_path):
    """ansible-playbook --syntax-check on the scenario's playbooks (no host needed)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    gpu_hosts:\n      hosts:\n        gpu-host: {}\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    for playbook in ("converge.yml", "verify.yml"):
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--syntax-check",
                               "-i", str(inventory), str(ROOT / "molecule" / "gpu" / playbook)],
                              env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
