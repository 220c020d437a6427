"""Helpers for the fidelity tests: real client binaries and running them."""

import json
import os
import subprocess
import time

import pytest

from .paths import FIXTURE_CHARTS_DIR as CHARTS, TOOLS_BIN as TOOLS

DEMO_CHART = CHARTS / "demo-operator"


def binary(name):
    """Absolute path of tools/bin/<name>; skips the test if it is missing."""
    path = TOOLS / name
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is missing (make tools installs it)")
    return str(path)


def run(args, check=True, timeout=60):
    """Run a command with the current environment; returns CompletedProcess (text)."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def run_json(args):
    return json.loads(run(args).stdout)


def wait_until(predicate, timeout=10.0, what="the condition", interval=0.05):
    """Poll ``predicate`` until it returns something true (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s" % what)
