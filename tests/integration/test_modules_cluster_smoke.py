"""smoke_test, run in-process against a cluster: check mode, a missing namespace, a pod that can never run,
and render mode.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
import time
from tests.integration.modules_cluster_helpers import CUDA_IMAGE, ok, run, wait_until


# An extended resource no node advertises: the smoke pod can never run, on the fake or on a real cluster.
NO_SUCH_RESOURCE = "gpu-platform.io/integration-test-none"


# ---------------------------------------------------------------------------------------------- smoke_test

def cuda_params(cluster, **over):
    params = {"check": "cuda", "image": CUDA_IMAGE, "namespace": cluster.namespace, "suffix": "it"}
    params.update(over)
    return params


def test_smoke_test_check_mode_passes_server_side_dry_run_and_creates_nothing(cluster):
    result = ok(run(cluster, "smoke_test", cuda_params(cluster), check_mode=True))
    smoke = result["smoke"]
    assert result["changed"] is False and smoke["passed"] is None
    assert "dry-run" in smoke["skipped_reason"] and smoke["object"] == "pod-%s-gpu-platform-smoke-cuda-it" % cluster.namespace
    assert cluster.names("v1", "Pod", cluster.namespace) == []


def test_smoke_test_check_mode_in_a_missing_namespace_is_skipped_with_the_reason(cluster):
    missing = cluster.namespace + "-missing"
    result = ok(run(cluster, "smoke_test", cuda_params(cluster, namespace=missing), check_mode=True))
    assert result["smoke"]["passed"] is None
    assert result["smoke"]["skipped_reason"] == "check mode: namespace %s does not exist yet" % missing
    assert cluster.get("v1", "Namespace", missing) is None


def test_smoke_test_missing_namespace_fails_outside_check_mode(cluster):
    missing = cluster.namespace + "-missing"
    failed, result = run(cluster, "smoke_test", cuda_params(cluster, namespace=missing))
    assert failed and result["msg"].startswith("namespace: %s does not exist" % missing)


def test_smoke_test_pod_that_cannot_run_fails_at_its_timeout_and_is_removed(cluster):
    """A pod asking for a resource no node has never finishes (Pending on a real cluster, Running for ever on the
    fake, which has no scheduler): the task fails after ``timeout`` naming the layer and the pod, and cleans up."""
    started = time.monotonic()
    failed, result = run(cluster, "smoke_test", cuda_params(cluster, resources={NO_SUCH_RESOURCE: 1}, timeout=4))
    assert failed and result["smoke"]["passed"] is False
    assert result["msg"].startswith("gpu_operator: FAIL - pod-%s-gpu-platform-smoke-cuda-it - the pod did not finish "
                                    "within 4s: gpu-platform-smoke-cuda-it: " % cluster.namespace), result["msg"]
    assert 4 <= time.monotonic() - started < 30
    pods = wait_until(lambda: cluster.names("v1", "Pod", cluster.namespace), lambda names: names == [])
    assert pods == [], "the smoke pod was left behind"


def test_smoke_test_render_mode_writes_a_job_and_touches_no_cluster(cluster, tmp_path):
    out = tmp_path / "bundle"
    first = ok(run(cluster, "smoke_test", cuda_params(cluster, render_to=str(out))))
    name = "job-%s-gpu-platform-smoke-cuda-it.yaml" % cluster.namespace
    assert first["changed"] is True and first["rendered"]["files"] == [name]
    assert "render mode" in first["smoke"]["skipped_reason"] and (out / name).is_file()
    second = ok(run(cluster, "smoke_test", cuda_params(cluster, render_to=str(out))))
    assert second["changed"] is False
    assert cluster.names("v1", "Pod", cluster.namespace) == []
    assert cluster.names("batch/v1", "Job", cluster.namespace) == []
