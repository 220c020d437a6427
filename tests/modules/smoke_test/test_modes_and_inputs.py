"""smoke_test on the fake cluster: check mode, render mode, bad inputs, errors and the module's examples."""
import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as workflow
from local_gpu_cluster.gpu_operator import NVIDIA_SMI
from local_gpu_cluster.nccl_logs import NCCL_IB_LOG
from local_gpu_cluster.smoke import Outcome, gang_marker
from tests.modules.harness import run_module
from tests.modules.smoke_test.helpers import CUDA_IMAGE, NCCL_IMAGE, mig_node, module, shared_node, smoke_objects


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


def test_render_has_flux_create_the_volcano_gang_once(tmp_path):
    # Volcano's webhook refuses a Job update that a re-apply of the same manifest makes (the defaults its mutating
    # webhook set at creation go): Flux creates it once (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent).
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "gang", "scheduler": "volcano", "queue": "vision",
                                               "image": CUDA_IMAGE, "render_to": str(out)})
    assert not failed, result
    (job,) = [yaml.safe_load(p.read_text()) for p in out.iterdir()]
    assert job["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert job["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent"


def test_render_of_allocatable_writes_nothing(tmp_path):
    out = tmp_path / "smoke"
    failed, result = run_module("smoke_test", {"check": "allocatable", "expected_per_gpu": {"nvidia.com/gpu": 4},
                                               "render_to": str(out)})
    assert not failed and not result["changed"] and not out.exists()
    assert result["smoke"]["skipped_reason"] == \
        "render mode: the allocatable check reads the nodes, which a bundle cannot"


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
