"""pytest plugin: ``local_cluster``, the real control plane of ``scripts/local_cluster`` for the test session.

Started once per session in its own directory (``build/test-cluster``, or ``GPU_PLATFORM_TEST_CLUSTER_DIR``),
so a cluster a developer runs in ``build/cluster`` is never touched, and stopped at the end of the session
(``GPU_PLATFORM_TEST_CLUSTER_KEEP=1`` leaves it running to look at). A cluster that cannot be built or started
fails the tests that need it, with the command's own message: a proof that could not run is not a pass.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "build" / "test-cluster"


@dataclass
class LocalCluster:
    dir: Path

    @property
    def kubeconfig(self) -> str:
        return str(self.dir / "kubeconfig")

    @property
    def state(self) -> dict:
        return json.loads((self.dir / "state.json").read_text())

    @property
    def chart_repo_url(self) -> str:
        return "http://127.0.0.1:%d" % self.state["ports"]["chart-repo"]

    def env(self, base=None) -> dict:
        """The environment for a command that manages this cluster (CLUSTER_DIR set)."""
        env = dict(os.environ if base is None else base)
        env["CLUSTER_DIR"] = str(self.dir)
        return env


def cluster_command(*args, env=None, timeout=1800):
    """Run ``python -m scripts.local_cluster ARGS``; returns the CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "scripts.local_cluster", *args], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def local_cluster():
    """The session's local control plane (started here, stopped at the end)."""
    cluster = LocalCluster(Path(os.environ.get("GPU_PLATFORM_TEST_CLUSTER_DIR") or DEFAULT_DIR))
    env = cluster.env()
    cluster_command("down", env=env)  # a cluster left by a session that was killed: start clean
    proc = cluster_command("up", env=env)
    if proc.returncode != 0:
        pytest.fail("the local control plane did not start (python -m scripts.local_cluster up):\n%s%s"
                    % (proc.stdout[-3000:], proc.stderr[-3000:]), pytrace=False)
    yield cluster
    if os.environ.get("GPU_PLATFORM_TEST_CLUSTER_KEEP") != "1":
        cluster_command("down", env=env)
