"""Helpers of the cluster module tests (test_modules_cluster_*.py): a module run with the cluster's kubeconfig,
its success, and polling until a condition holds."""
import time

from tests.modules.harness import run_module

CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def run(cluster, name, params, check_mode=False, diff=False):
    """The module with this cluster's kubeconfig (never the KUBECONFIG variable); returns (failed, result)."""
    return run_module(name, dict(params, kubeconfig=cluster.kubeconfig), check_mode=check_mode, diff=diff)


def ok(outcome):
    failed, result = outcome
    assert not failed, result.get("msg")
    return result


def wait_until(fetch, done, timeout=30.0, interval=0.5):
    """Poll until ``done(fetch())``; returns the last value (the caller asserts on it)."""
    deadline = time.monotonic() + timeout
    value = fetch()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(interval)
        value = fetch()
    return value
