"""Tests of the smoke_tests domain's per-layer summary and its refusals of bad inputs to the objects."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    plan as smoke, checks as smoke_checks, nccl as smoke_nccl, nccl_check as smoke_nccl_check, objects as
    smoke_objects)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from local_gpu_cluster.nccl_logs import NCCL_IB_LOG, NCCL_SOCKET_LOG
from tests.unit.smoke_helpers import CUDA_IMAGE, NCCL_IMAGE, NS, gang_pods, result


def test_summary_one_line_per_layer_in_order():
    nccl = smoke_nccl_check.check_nccl(NCCL_SOCKET_LOG, 20)
    results = [
        result("gpu_operator", "cuda"),
        result("gpu_sharing", "allocatable"),
        result("gpu_sharing", "mig", skipped="no MIG pool"),
        result("dra", "dra", skipped="the DRA driver is not installed"),
        dict(nccl, layer="network_operator", check="nccl", object="gpu-platform-smoke-nccl-launcher-0"),
        result("gpu_operator", "cuda-mig"),
    ]
    out = smoke.summary(results)
    assert out["passed"] is False
    assert out["lines"] == [
        "gpu_operator: PASS",
        "gpu_sharing: PASS",
        "dra: SKIPPED - the DRA driver is not installed",
        "network_operator: FAIL - gpu-platform-smoke-nccl-launcher-0 - " + nccl["reason"] + " - "
        + nccl["evidence"][0],
    ]


def test_summary_all_passing_passes():
    out = smoke.summary([result("gpu_operator", "cuda"), result("scheduler", "gang")])
    assert out == {"lines": ["gpu_operator: PASS", "scheduler: PASS"], "passed": True}


def test_summary_names_further_failures_and_tolerates_text_evidence():
    out = smoke.summary([
        result("gpu_operator", "cuda", passed=False, reason="no table", evidence="Failed to initialize NVML\nmore"),
        result("gpu_operator", "cuda-mig", passed=False, reason="no table"),
    ])
    assert out["lines"] == ["gpu_operator: FAIL - gpu-platform-smoke-cuda - no table - Failed to initialize NVML "
                            "(also failed: cuda-mig)"]
    assert out["passed"] is False


def test_summary_without_evidence_says_so():
    line = smoke.summary([result("scheduler", "gang", passed=False, reason="none started")])["lines"][0]
    assert line == "scheduler: FAIL - gpu-platform-smoke-gang - none started - (no log line)"


@pytest.mark.parametrize("results", [[], [result("dra", "dra", skipped="not installed")]])
def test_summary_with_nothing_verified_does_not_pass(results):
    assert smoke.summary(results)["passed"] is False


# ---------------------------------------------------------------- bad inputs

def cuda(**kw):
    args = {"namespace": NS, "image": CUDA_IMAGE}
    args.update(kw)
    return smoke_objects.cuda_pod(**args)


def dra(**kw):
    args = {"namespace": NS, "image": CUDA_IMAGE}
    args.update(kw)
    return smoke_objects.dra_claim_pod(**args)


def gang(**kw):
    args = {"scheduler": "volcano", "namespace": NS, "image": CUDA_IMAGE}
    args.update(kw)
    return smoke_objects.gang_job(**args)


def nccl(**kw):
    args = {"namespace": NS, "image": NCCL_IMAGE}
    args.update(kw)
    return smoke_nccl.nccl_job(**args)


BAD = [
    # (call, field, words in the problem)
    (lambda: cuda(image="nvcr.io/nvidia/cuda"), "smoke_tests_image", "has no tag or digest"),
    (lambda: cuda(image="nvcr.io/nvidia/cuda:latest"), "smoke_tests_image", "uses the tag latest"),
    (lambda: dra(image="cuda:latest"), "smoke_tests_image", "uses the tag latest"),
    (lambda: gang(image="Nvcr.io/NVIDIA/cuda:12.8"), "smoke_tests_image", "is not an image reference"),
    (lambda: cuda(image="nvcr.io/nvidia/cuda:"), "smoke_tests_image", "is not an image reference"),
    (lambda: cuda(image="nvcr.io/nvidia/cuda@sha256:abc"), "smoke_tests_image", "is not an image reference"),
    (lambda: cuda(image=""), "smoke_tests_image", "is empty"),
    (lambda: cuda(image=None), "smoke_tests_image", "is empty"),
    (lambda: nccl(image="nccl-tests"), "smoke_tests_nccl_image", "has no tag or digest"),
    (lambda: nccl(image="ghcr.io/x/nccl-tests:latest"), "smoke_tests_nccl_image", "uses the tag latest"),
    (lambda: cuda(namespace="GPU-Smoke"), "smoke_tests_namespace", "is not a valid name"),
    (lambda: gang(namespace=""), "smoke_tests_namespace", "is empty"),
    (lambda: nccl(namespace="a" * 64), "smoke_tests_namespace", "is not a valid name"),
    (lambda: dra(namespace="gpu_smoke"), "smoke_tests_namespace", "is not a valid name"),
    (lambda: gang(scheduler="kueue"), "smoke_tests_scheduler", "'kueue' is not a supported gang scheduler"),
    (lambda: gang(scheduler="Volcano"), "smoke_tests_scheduler", "use one of: volcano, kai"),
    (lambda: gang(scheduler=None), "smoke_tests_scheduler", "is not a supported gang scheduler"),
    (lambda: gang(replicas=1), "smoke_tests_gang_replicas", "must be at least 2"),
    (lambda: gang(replicas=True), "smoke_tests_gang_replicas", "is not a whole number"),
    (lambda: gang(queue="Team A"), "smoke_tests_queue", "is not a queue name"),
    (lambda: gang(scheduler="kai", queue="q" * 64), "smoke_tests_queue", "is not a queue name"),
    (lambda: nccl(nodes=1), "smoke_tests_nccl_nodes", "is 1, it must be at least 2"),
    (lambda: nccl(nodes="2"), "smoke_tests_nccl_nodes", "is not a whole number"),
    (lambda: nccl(gpus_per_node=0), "smoke_tests_nccl_gpus_per_node", "must be at least 1"),
    (lambda: nccl(rdma_resource={"shared_ib": 1}), "smoke_tests_nccl_rdma_resource", "is not an extended resource"),
    (lambda: nccl(rdma_resource={"rdma/shared_ib": 0}), "smoke_tests_nccl_rdma_resource", "not a whole number"),
    (lambda: nccl(rdma_resource={"nvidia.com/gpu": 1}), "smoke_tests_nccl_rdma_resource", "must not contain"),
    (lambda: nccl(rdma_resource="rdma/shared_ib"), "smoke_tests_nccl_rdma_resource", "must be a dictionary"),
    (lambda: nccl(network="RDMA_net"), "smoke_tests_nccl_network", "is not [<namespace>/]<name>[@<interface>]"),
    (lambda: nccl(network="a,,b"), "smoke_tests_nccl_network", "has an empty attachment name"),
    (lambda: nccl(network={"name": "rdma-net"}), "smoke_tests_nccl_network", "is not a network attachment name"),
    (lambda: cuda(resources={}), "smoke_tests_cuda_resources", "must be a dictionary"),
    (lambda: cuda(resources={"nvidia.com/gpu": 1.5}), "smoke_tests_cuda_resources", "not a whole number"),
    (lambda: dra(device_class="GPU"), "smoke_tests_dra_device_class", "is not a DeviceClass name"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, 0), "smoke_tests_nccl_min_busbw_gbps", "must be greater than 0"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, -5), "smoke_tests_nccl_min_busbw_gbps", "must be greater than 0"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, "fast"), "smoke_tests_nccl_min_busbw_gbps", "'fast' is not a number"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, True), "smoke_tests_nccl_min_busbw_gbps", "True is not a number"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, None), "smoke_tests_nccl_min_busbw_gbps", "None is not a number"),
    (lambda: smoke_nccl_check.check_nccl(NCCL_IB_LOG, float("nan")), "smoke_tests_nccl_min_busbw_gbps", "not a finite number"),
    (lambda: smoke_checks.check_gang(gang_pods("x", None), 30), "start_times", "'x' is not a time"),
    (lambda: smoke_checks.check_gang("2026-03-03T09:14:27Z", 30), "start_times", "must map pod names to start times"),
    (lambda: smoke_checks.check_gang(gang_pods(None), 0), "smoke_tests_gang_window_seconds", "must be greater than 0"),
    (lambda: smoke_checks.check_allocatable({"gpu-a": {"nvidia.com/gpu": "8"}}, {}), "expected_allocatable",
     "is not a count"),
    (lambda: smoke_checks.check_allocatable({"gpu-a": 8}, {}), "expected_allocatable", "must map node names"),
    (lambda: smoke_checks.check_allocatable({"gpu-a": {"nvidia.com/gpu": 8}}, "gpu-a"), "allocatable",
     "must map node names to allocatable resources"),
    (lambda: smoke.summary([{"check": "cuda", "passed": True}]), "results", "item 0 has no layer"),
    (lambda: smoke.summary("gpu_operator: PASS"), "results", "must be a list"),
]


@pytest.mark.parametrize("call, field, words", BAD, ids=["%s-%d" % (b[1], i) for i, b in enumerate(BAD)])
def test_bad_input_names_the_field_and_the_fix(call, field, words):
    with pytest.raises(ParamError) as info:
        call()
    err = info.value
    assert err.field == field
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    assert ". Fix: " in str(err) and not str(err).endswith("Fix: ")
