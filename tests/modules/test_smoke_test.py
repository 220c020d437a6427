"""smoke_test on the fake cluster: simulated pods that succeed, fail and hang; Volcano and KAI gangs;
nccl-tests over GPUDirect RDMA and over TCP; allocatable checks; check mode, render mode, bad inputs."""
from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke as workflow
from tests.fakes.clock import FakeClock
from tests.fakes.controllers import default_controllers
from tests.fakes.crds import DEFAULT_CRD_DIR
from tests.fakes.gpu_operator import NVIDIA_SMI, gpu_node
from tests.fakes.nccl_logs import NCCL_IB_LOG, NCCL_SOCKET_LOG
from tests.fakes.smoke import Outcome, SimulatedVolcanoJobs, SmokePods, gang_marker
from tests.modules.harness import run_module

NS = "gpu-platform-smoke"
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9"
FIXTURE_CRDS = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "crds"
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n"


@pytest.fixture
def cluster(fake_api_factory):
    """A fake cluster with the smoke namespace, Volcano's job controller and pods told what to do."""
    def make(outcomes, crd_dirs=(DEFAULT_CRD_DIR, FIXTURE_CRDS), namespace=True, rdma_nodes=2, gpus=8):
        pods = SmokePods(outcomes)
        api = fake_api_factory(clock=FakeClock(), require_namespaces=True, crd_dirs=list(crd_dirs),
                               controllers=[SimulatedVolcanoJobs(), pods] + default_controllers())
        if namespace:
            api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for index in range(rdma_nodes):  # the nodes an nccl-tests run needs (nodes x gpus_per_node GPUs)
            api.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "rdma-%d" % index},
                              "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}}})
        api.clear_log()
        return api
    return make


def module(api, check_mode=False, diff=False, **params):
    return run_module("smoke_test", dict(params, kubeconfig=api.kubeconfig), check_mode=check_mode, diff=diff)


def workflow_run(api, check_mode=False, **params):
    """The workflow on the fake's clock, so time-outs take no real time."""
    full = dict({"namespace": NS, "timeout": 300, "cleanup": True, "replicas": 2, "window_seconds": 30,
                 "scheduler": "volcano", "queue": "default", "nodes": 2, "gpus_per_node": 8,
                 "min_busbw_gbps": 10, "device_class": "gpu.nvidia.com"}, **params)
    return workflow.run(full, lambda: KubeClient(kubeconfig=api.kubeconfig), check_mode, clock=api.clock, interval=5)


def smoke_objects(api):
    """Every object a smoke test left behind in its namespace."""
    left = []
    for api_version, kind in (("v1", "Pod"), ("batch.volcano.sh/v1alpha1", "Job"), ("v1", "Secret"), ("v1", "Service"),
                              ("resource.k8s.io/v1", "ResourceClaimTemplate"),
                              ("scheduling.run.ai/v2alpha2", "PodGroup")):
        left += ["%s/%s" % (kind, o["metadata"]["name"]) for o in api.store.list(api_version, kind, NS)]
    return left


# ---------------------------------------------------------------- cuda

def test_cuda_pod_passes_on_the_gpu_table_and_is_removed(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE)
    assert not failed, result
    smoke = result["smoke"]
    assert smoke["passed"] is True and smoke["layer"] == "gpu_operator"
    assert "NVIDIA A100-SXM4-80GB" in smoke["reason"] and "595.91.07" in smoke["reason"]
    assert any("NVIDIA-SMI 595.91.07" in line for line in smoke["evidence"])
    assert result["changed"] is False
    assert smoke["removed"] == ["pod-gpu-platform-smoke-gpu-platform-smoke-cuda"]
    assert smoke_objects(api) == []
    # The pod really ran with one GPU: the create reached the server.
    creates = [w for w in api.writes() if w["method"] in ("POST", "PATCH") and w["path"].endswith("/pods/gpu-platform-smoke-cuda")]
    assert creates


def test_a_second_run_passes_again(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    assert not module(api, check="cuda", image=CUDA_IMAGE)[0]
    failed, result = module(api, check="cuda", image=CUDA_IMAGE)
    assert not failed and result["smoke"]["passed"] and not result["changed"]


def test_a_pod_left_by_an_interrupted_run_is_replaced_not_judged(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, cleanup=False)
    assert not failed
    old_uid = api.store.get("v1", "Pod", "gpu-platform-smoke-cuda", NS)["metadata"]["uid"]
    api.set_pod_log(NS, "gpu-platform-smoke-cuda", MISMATCH)  # the old pod's log would fail the check
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, cleanup=False)
    assert not failed and result["smoke"]["passed"], result
    assert api.store.get("v1", "Pod", "gpu-platform-smoke-cuda", NS)["metadata"]["uid"] != old_uid


def test_failed_pod_fails_the_task_naming_layer_object_and_log_line(cluster):
    api = cluster({"cuda": Outcome("Failed", MISMATCH)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE)
    assert failed
    assert result["msg"].startswith("gpu_operator: FAIL - pod-gpu-platform-smoke-gpu-platform-smoke-cuda - ")
    assert "Failed" in result["msg"] and "Driver/library version mismatch" in result["msg"]
    assert result["smoke"]["passed"] is False
    assert smoke_objects(api) == [], "a failed test cleans up too"


def test_pod_that_succeeds_without_a_gpu_table_fails(cluster):
    api = cluster({"cuda": Outcome("Succeeded", "No devices were found\n")})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE)
    assert failed and "did not print its GPU table" in result["msg"] and "No devices were found" in result["msg"]


def test_pod_that_hangs_times_out_on_the_clock_and_is_removed(cluster):
    api = cluster({})  # no outcome: the pod stays Pending
    started = api.clock.time()
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="cuda", image=CUDA_IMAGE, timeout=60)
    assert 60 <= api.clock.time() - started <= 70
    assert "the pod did not finish within 60s: gpu-platform-smoke-cuda: Pending" in caught.value.msg
    assert caught.value.details["smoke"]["passed"] is False
    assert smoke_objects(api) == []


def test_unschedulable_pod_reports_the_schedulers_reason(cluster):
    api = cluster({"cuda": Outcome("Pending", unschedulable="0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")})
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="cuda", image=CUDA_IMAGE, timeout=30)
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in caught.value.msg


def test_cleanup_false_keeps_the_pod_for_debugging(cluster):
    api = cluster({"cuda": Outcome("Failed", MISMATCH)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, cleanup=False)
    assert failed and "removed" not in result["smoke"]
    assert smoke_objects(api) == ["Pod/gpu-platform-smoke-cuda"]


def test_mig_resource_pod_gets_its_own_name_and_layer(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, layer="gpu_sharing",
                            resources={"nvidia.com/mig-1g.10gb": 1})
    assert not failed, result
    assert result["smoke"]["layer"] == "gpu_sharing"
    assert result["smoke"]["object"] == "pod-gpu-platform-smoke-gpu-platform-smoke-cuda-mig-1g.10gb"


def test_pool_pod_runs_on_the_pools_nodes_and_leaves_another_pools_pod_alone(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, suffix="mig", cleanup=False,
                            node_selector={"nodepool": "mig"}, resources={"nvidia.com/gpu": 1})
    assert not failed, result
    kept = api.store.get("v1", "Pod", "gpu-platform-smoke-cuda-mig", NS)
    assert kept["spec"]["nodeSelector"] == {"nodepool": "mig"}
    failed, result = module(api, check="cuda", image=CUDA_IMAGE, suffix="shared", node_selector={"nodepool": "shared"})
    assert not failed and result["smoke"]["object"] == "pod-gpu-platform-smoke-gpu-platform-smoke-cuda-shared"
    assert result["smoke"]["removed"] == ["pod-gpu-platform-smoke-gpu-platform-smoke-cuda-shared"]
    assert api.store.get("v1", "Pod", "gpu-platform-smoke-cuda-mig", NS)["metadata"]["uid"] == kept["metadata"]["uid"]


# ---------------------------------------------------------------- dra

def test_dra_claim_pod_passes_and_removes_its_claim_template(cluster):
    api = cluster({"dra": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, check="dra", image=CUDA_IMAGE)
    assert not failed, result
    assert result["smoke"]["layer"] == "dra_driver" and result["smoke"]["passed"]
    assert "resourceclaimtemplate-gpu-platform-smoke-gpu-platform-smoke-dra" in result["smoke"]["removed"]
    assert smoke_objects(api) == []


def test_dra_on_a_cluster_without_resource_v1_is_refused_before_any_write(cluster):
    api = cluster({"dra": Outcome("Succeeded", NVIDIA_SMI)})
    api.git_version = "v1.33.4"  # resource.k8s.io/v1 arrived in 1.34
    failed, result = module(api, check="dra", image=CUDA_IMAGE)
    assert failed and "needs resource.k8s.io/v1 ResourceClaimTemplate" in result["msg"]
    assert "Fix: enable the dra_driver layer" in result["msg"]
    assert api.writes() == []


# ---------------------------------------------------------------- gang

def test_volcano_gang_passes_when_every_member_starts_together(cluster):
    api = cluster({"gang": Outcome("Running", gang_marker(0))})
    failed, result = module(api, check="gang", image=CUDA_IMAGE, replicas=3)
    assert not failed, result
    assert result["smoke"]["passed"] and "all 3 gang pods started within 0 s" in result["smoke"]["reason"]
    assert result["smoke"]["object"] == "job-gpu-platform-smoke-gpu-platform-smoke-gang"
    assert smoke_objects(api) == [], "the Volcano Job and its pods are gone"


def test_gang_members_that_start_apart_were_not_gang_scheduled(cluster):
    api = cluster({"gang": Outcome("Running", gang_marker(120))})
    failed, result = module(api, check="gang", image=CUDA_IMAGE, window_seconds=30)
    assert failed and "started 120 s apart" in result["msg"] and "not scheduled together" in result["msg"]


def test_gang_that_cannot_be_placed_times_out_naming_the_waiting_pods(cluster):
    api = cluster({"gang": Outcome("Pending", unschedulable="pod group is not ready, 2 minAvailable")})
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="gang", image=CUDA_IMAGE, timeout=45)
    msg = caught.value.msg
    assert "0 of 2 gang pods started within 45s" in msg
    assert "gpu-platform-smoke-gang-member-0: Pending - Unschedulable: pod group is not ready" in msg
    assert smoke_objects(api) == []


def test_kai_gang_is_a_pod_group_and_bare_pods(cluster):
    api = cluster({"gang": Outcome("Running", gang_marker(1))})
    failed, result = module(api, check="gang", scheduler="kai", queue="vision", image=CUDA_IMAGE)
    assert not failed, result
    assert result["smoke"]["passed"]
    assert "podgroup-gpu-platform-smoke-gpu-platform-smoke-gang" in result["smoke"]["removed"]
    assert smoke_objects(api) == []


def test_kai_gang_without_the_podgroup_crd_says_to_install_the_scheduler(cluster):
    api = cluster({"gang": Outcome("Running", gang_marker(0))}, crd_dirs=(DEFAULT_CRD_DIR,))
    failed, result = module(api, check="gang", scheduler="kai", queue="vision", image=CUDA_IMAGE)
    assert failed and "scheduling.run.ai/v2alpha2 PodGroup" in result["msg"] and "scheduling layer" in result["msg"]
    assert api.writes() == []


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


# ---------------------------------------------------------------- allocatable

def shared_node(name, gpus, advertised, pool="shared"):
    node = gpu_node(name, gpus=gpus)
    node["metadata"]["labels"].update({"nodepool": pool, "nvidia.com/gpu.count": str(gpus)})
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(advertised)
    return node


def test_allocatable_passes_when_each_gpu_gives_its_replicas(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 32))
    api.store.create(shared_node("gpu-b", 4, 16))
    api.store.create(shared_node("gpu-c", 8, 8, pool="whole"))
    api.clear_log()
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "shared"},
                            expected_per_gpu={"nvidia.com/gpu": "4"})
    assert not failed, result
    assert result["smoke"]["layer"] == "gpu_sharing" and result["smoke"]["passed"]
    assert "gpu-a: nvidia.com/gpu 32 as expected" in result["smoke"]["evidence"]
    assert "gpu-b: nvidia.com/gpu 16 as expected" in result["smoke"]["evidence"]
    assert api.writes() == []


def test_allocatable_waits_then_names_the_node_that_differs(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 8))
    started = api.clock.time()
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "shared"},
                     expected_per_gpu={"nvidia.com/gpu": 4}, timeout=20)
    assert api.clock.time() - started >= 20
    assert "after 20s" in caught.value.msg and "gpu-a: nvidia.com/gpu expected 32, advertises 8" in caught.value.msg


def test_allocatable_without_the_gpu_count_label_says_gfd_has_not_run(cluster):
    api = cluster({})
    node = shared_node("gpu-a", 8, 32)
    del node["metadata"]["labels"]["nvidia.com/gpu.count"]
    api.store.create(node)
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "shared"},
                     expected_per_gpu={"nvidia.com/gpu": 4}, timeout=10)
    assert "no nvidia.com/gpu.count label on gpu-a" in caught.value.msg


def test_allocatable_in_check_mode_reads_once_and_does_not_wait(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 8))
    started = api.clock.time()
    result = workflow_run(api, check_mode=True, check="allocatable", node_selector={"nodepool": "shared"},
                          expected_per_gpu={"nvidia.com/gpu": 4}, timeout=600)
    assert api.clock.time() == started
    assert result["smoke"]["passed"] is None
    assert "check mode: not waited for" in result["smoke"]["skipped_reason"]
    assert "expected 32, advertises 8" in result["smoke"]["skipped_reason"]


def mig_node(name, advertised, product="NVIDIA-A100-SXM4-80GB"):
    node = gpu_node(name, product=product)
    node["metadata"]["labels"]["nodepool"] = "mig"
    node["status"]["allocatable"] = dict(advertised)
    return node


@pytest.mark.parametrize("strategy, advertised", [
    ("mixed", {"nvidia.com/mig-1g.10gb": "56"}),
    ("single", {"nvidia.com/gpu": "56"}),
])
def test_allocatable_of_a_mig_layout_follows_the_board_and_strategy(cluster, strategy, advertised):
    api = cluster({})
    api.store.create(mig_node("gpu-m", advertised))
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-1g.10gb",
                            mig_strategy=strategy)
    assert not failed and result["smoke"]["passed"], result
    assert result["smoke"]["evidence"] == ["gpu-m: %s 56 as expected" % next(iter(advertised))], "8 A100-80GB x 7"


def test_allocatable_of_a_mig_layout_names_what_is_missing(cluster):
    api = cluster({})
    api.store.create(mig_node("gpu-m", {"nvidia.com/gpu": "8"}))  # MIG manager has not finished
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-1g.10gb",
                     mig_strategy="mixed", timeout=15)
    assert "gpu-m: nvidia.com/mig-1g.10gb expected 56, not advertised" in caught.value.msg


def test_allocatable_of_a_layout_the_board_lacks_is_refused(cluster):
    api = cluster({})
    api.store.create(mig_node("gpu-m", {"nvidia.com/gpu": "8"}, product="NVIDIA-A100-SXM4-40GB"))
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-3g.40gb")
    assert failed and result["msg"].startswith("mig_layout: node gpu-m (A100-40GB): ")
    assert "3g.40gb, which A100-40GB does not have" in result["msg"]
    assert "Fix: " in result["msg"]


def test_allocatable_with_exact_counts_per_node(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 56))
    failed, result = module(api, check="allocatable", expected_allocatable={"gpu-a": {"nvidia.com/gpu": 56}})
    assert not failed and result["smoke"]["passed"], result


# ---------------------------------------------------------------- check mode

def test_check_mode_dry_runs_the_objects_and_runs_nothing(cluster):
    api = cluster({"gang": Outcome("Running", gang_marker(0))})
    failed, result = module(api, check_mode=True, check="gang", image=CUDA_IMAGE)
    assert not failed, result
    assert result["smoke"]["passed"] is None and "server-side dry-run" in result["smoke"]["skipped_reason"]
    assert api.writes() == []
    dry_runs = [r for r in api.request_log if r["method"] == "PATCH" and "All" in str(r["query"].get("dryRun"))]
    assert [r["path"].rsplit("/", 1)[-1] for r in dry_runs] == ["gpu-platform-smoke-gang"]
    assert smoke_objects(api) == []


def test_check_mode_before_the_namespace_or_crd_exists_skips(cluster):
    api = cluster({}, crd_dirs=(), namespace=False)
    failed, result = module(api, check_mode=True, check="nccl", image=NCCL_IMAGE)
    assert not failed and "does not serve batch.volcano.sh/v1alpha1 Job yet" in result["smoke"]["skipped_reason"]
    failed, result = module(api, check_mode=True, check="cuda", image=CUDA_IMAGE)
    assert not failed and "namespace gpu-platform-smoke does not exist yet" in result["smoke"]["skipped_reason"]


def test_missing_namespace_is_refused_with_the_fix(cluster):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)}, namespace=False)
    failed, result = module(api, check="cuda", image=CUDA_IMAGE)
    assert failed and result["msg"].startswith("namespace: gpu-platform-smoke does not exist")
    assert api.writes() == []


# ---------------------------------------------------------------- render

def test_render_writes_pods_as_jobs_and_is_idempotent(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "dra", "image": CUDA_IMAGE, "render_to": str(out)}, diff=True)
    assert not failed and result["changed"], result
    assert result["smoke"]["skipped_reason"].startswith("render mode: written to")
    files = sorted(p.name for p in out.iterdir())
    assert files == ["job-gpu-platform-smoke-gpu-platform-smoke-dra.yaml",
                     "resourceclaimtemplate-gpu-platform-smoke-gpu-platform-smoke-dra.yaml"]
    job = yaml.safe_load((out / files[0]).read_text())
    assert job["apiVersion"] == "batch/v1" and job["spec"]["backoffLimit"] == 0
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    assert pod_spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-platform-smoke-dra"}]
    assert job["spec"]["template"]["metadata"]["labels"]["gpu-platform.io/smoke"] == "dra"
    assert all(d["after"] for d in result["diff"])
    failed, again = run_module("smoke_test", {"check": "dra", "image": CUDA_IMAGE, "render_to": str(out)})
    assert not failed and not again["changed"]


def test_render_in_check_mode_writes_nothing(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "cuda", "image": CUDA_IMAGE, "render_to": str(out)},
                                check_mode=True)
    assert not failed and result["changed"] and not out.exists()


def test_render_keeps_the_kai_gang_as_a_pod_group_with_bare_pods(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "gang", "scheduler": "kai", "queue": "vision",
                                               "image": CUDA_IMAGE, "render_to": str(out)})
    assert not failed, result
    kinds = sorted(yaml.safe_load(p.read_text())["kind"] for p in out.iterdir())
    assert kinds == ["Pod", "Pod", "PodGroup"]


def test_render_of_allocatable_writes_nothing(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "allocatable", "expected_per_gpu": {"nvidia.com/gpu": 4},
                                               "render_to": str(out)})
    assert not failed and not result["changed"] and not out.exists()
    assert result["smoke"]["skipped_reason"] == "render mode: no cluster to read"


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("params, field, words", [
    ({"check": "cuda"}, "image", "is required for the cuda check"),
    ({"check": "cuda", "image": "nvcr.io/nvidia/cuda:latest"}, "image", "latest"),
    ({"check": "cuda", "image": "nvcr.io/nvidia/cuda"}, "image", "pin"),
    ({"check": "cuda", "image": CUDA_IMAGE, "namespace": "GPU Smoke"}, "namespace", ""),
    ({"check": "cuda", "image": CUDA_IMAGE, "resources": {"nvidia.com/gpu": "one"}}, "resources", ""),
    ({"check": "dra", "image": CUDA_IMAGE, "device_class": "GPU class"}, "device_class", "DeviceClass"),
    ({"check": "gang", "image": CUDA_IMAGE, "replicas": 1}, "replicas", "at least 2"),
    ({"check": "gang", "image": CUDA_IMAGE, "window_seconds": 0}, "window_seconds", "greater than 0"),
    ({"check": "nccl", "image": NCCL_IMAGE, "nodes": 1}, "nodes", "at least 2"),
    ({"check": "nccl", "image": NCCL_IMAGE, "nodes": 100000}, "nodes", "above the most a smoke test runs (1024)"),
    ({"check": "nccl", "image": NCCL_IMAGE, "gpus_per_node": 64}, "gpus_per_node", "above the most"),
    ({"check": "gang", "image": NCCL_IMAGE, "replicas": 5000}, "replicas", "above the most"),
    ({"check": "nccl", "image": NCCL_IMAGE, "min_busbw_gbps": -1}, "min_busbw_gbps", "greater than 0"),
    ({"check": "nccl", "image": NCCL_IMAGE, "rdma_resource": {"nvidia.com/gpu": 1}}, "rdma_resource", "must not"),
    ({"check": "nccl", "image": NCCL_IMAGE, "network": "Bad Net"}, "network", ""),
    ({"check": "allocatable"}, "expected_per_gpu", "nothing to check"),
    ({"check": "allocatable", "mig_layout": "1g.10gb"}, "mig_layout", "standard layout"),
    ({"check": "allocatable", "expected_per_gpu": {"nvidia.com/gpu": "four"}}, "expected_per_gpu", "whole count"),
    ({"check": "allocatable", "expected_allocatable": {"gpu-a": {"nvidia.com/gpu": "many"}}},
     "expected_allocatable", "not a count"),
    ({"check": "cuda", "image": CUDA_IMAGE, "timeout": 0}, "timeout", "seconds"),
    ({"check": "cuda", "image": CUDA_IMAGE, "node_selector": {"nodepool": True}}, "node_selector", "not a string"),
    ({"check": "cuda", "image": CUDA_IMAGE, "suffix": "Pool A"}, "suffix", ""),
    ({"check": "allocatable", "expected_per_gpu": {"nvidia.com/gpu": 4}, "node_selector": {"bad key!": "x"}},
     "node_selector", "label"),
])
def test_bad_inputs_name_the_option_and_touch_nothing(cluster, params, field, words):
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI)})
    failed, result = module(api, **params)
    assert failed, result
    assert result["msg"].startswith(field + ": "), result["msg"]
    assert words in result["msg"] and "Fix: " in result["msg"]
    assert api.request_log == [], "no request reached the cluster"


def test_errors_are_gpu_platform_errors():
    with pytest.raises(GpuPlatformError):
        workflow.build({"check": "gpu-burn"})


def test_every_example_passes_on_the_fake_cluster(cluster):
    from ansible_collections.gpu_platform.cluster.plugins.modules import smoke_test
    api = cluster({"cuda": Outcome("Succeeded", NVIDIA_SMI), "gang": Outcome("Running", gang_marker(0)),
                   "nccl/launcher": Outcome("Succeeded", NCCL_IB_LOG), "nccl/worker": Outcome("Running", "")})
    api.store.create(shared_node("gpu-a", 8, 32))
    api.store.create(mig_node("gpu-m", {"nvidia.com/mig-1g.10gb": "56"}))
    examples = [t["gpu_platform.cluster.smoke_test"] for t in yaml.safe_load(smoke_test.EXAMPLES)]
    assert len(examples) == 8
    for args in examples:
        failed, result = module(api, **args)
        assert not failed and result["smoke"]["passed"], (args, result)
    assert smoke_objects(api) == []
