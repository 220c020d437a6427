"""smoke_test on the fake cluster, nccl-tests: over GPUDirect RDMA and over TCP, thresholds, sizes, and runs
with and without Volcano."""
import pytest

from local_gpu_cluster.nccl_logs import NCCL_IB_LOG, NCCL_SOCKET_LOG
from local_gpu_cluster.smoke import Outcome
from tests.modules.harness import run_module
from tests.modules.smoke_test.helpers import NCCL_IMAGE, module, smoke_objects


# ---------------------------------------------------------------- nccl

NCCL_OUTCOMES = {"nccl/launcher": Outcome("Succeeded", NCCL_IB_LOG), "nccl/worker": Outcome("Running", "")}


def test_nccl_over_gdrdma_above_the_threshold_passes(cluster):
    api = cluster(NCCL_OUTCOMES)
    failed, result = module(api, check="nccl", image=NCCL_IMAGE, min_busbw_gbps=100, network="default/rdma-shared")
    assert not failed, result
    smoke = result["smoke"]
    assert smoke["layer"] == "network_operator" and smoke["passed"]
    assert "175.888" in smoke["reason"]
    assert any("GDRDMA" in line for line in smoke["evidence"])
    assert smoke_objects(api) == []


def test_nccl_below_the_threshold_fails(cluster):
    api = cluster(NCCL_OUTCOMES)
    failed, result = module(api, check="nccl", image=NCCL_IMAGE, min_busbw_gbps=200)
    assert failed and "175.888" in result["msg"] and "200" in result["msg"]


def test_nccl_over_tcp_sockets_fails_for_want_of_gdrdma(cluster):
    api = cluster({"nccl/launcher": Outcome("Succeeded", NCCL_SOCKET_LOG), "nccl/worker": Outcome("Running", "")})
    failed, result = module(api, check="nccl", image=NCCL_IMAGE, min_busbw_gbps=10)
    assert failed and "GDRDMA" in result["msg"] and "NET/Socket" in result["msg"]


@pytest.mark.parametrize("rdma_nodes, gpus, words", [(1, 8, "is 2, but 1 node(s) have 8 allocatable GPUs (rdma-0)"),
                                                     (2, 4, "is 2, but 0 node(s) have 8 allocatable GPUs (none)")])
def test_nccl_larger_than_the_cluster_is_refused_before_any_write(cluster, rdma_nodes, gpus, words):
    api = cluster(NCCL_OUTCOMES, rdma_nodes=rdma_nodes, gpus=gpus)
    failed, result = module(api, check="nccl", image=NCCL_IMAGE)
    assert failed and result["msg"].startswith("smoke_tests_nccl_nodes: " + words), result["msg"]
    assert api.writes() == []


def test_nccl_without_volcano_is_refused_with_the_fix(cluster):
    api = cluster(NCCL_OUTCOMES, crd_dirs=())
    failed, result = module(api, check="nccl", image=NCCL_IMAGE)
    assert failed and "batch.volcano.sh/v1alpha1 Job" in result["msg"]
    assert "install Volcano (gpu_platform_scheduler: volcano)" in result["msg"]
    assert api.writes() == []


@pytest.mark.parametrize("scheduler", ["kai", "none"])
def test_nccl_without_volcano_runs_bare_pods_with_a_key_made_for_the_run(cluster, scheduler):
    api = cluster(NCCL_OUTCOMES)
    failed, result = module(api, check="nccl", image=NCCL_IMAGE, scheduler=scheduler, queue="vision",
                            min_busbw_gbps=100, network="default/rdma-shared")
    assert not failed, result
    smoke = result["smoke"]
    assert smoke["passed"] and smoke["object"] == "pod-gpu-platform-smoke-gpu-platform-smoke-nccl-launcher-0"
    created = [r for r in api.request_log if r["method"] in ("POST", "PATCH") and "/secrets/" in r["path"]]
    assert created, "the run's key pair went to the cluster as a Secret"
    assert "PRIVATE KEY" not in str(result), "the private key is never in the result"
    kinds = sorted({r["path"].split("/")[-2] for r in api.writes() if r["method"] in ("POST", "PATCH")})
    assert "pods" in kinds and "services" in kinds and ("podgroups" in kinds) == (scheduler == "kai")
    assert smoke_objects(api) == [], "the Secret, the Service and the pods are removed after the run"


def test_nccl_render_under_kai_writes_no_key_and_no_file(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "nccl", "scheduler": "kai", "queue": "vision",
                                               "image": NCCL_IMAGE, "render_to": str(out)})
    assert not failed and not result["changed"] and not out.exists()
    assert "never written to a GitOps folder" in result["smoke"]["skipped_reason"]
