"""smoke_test on the fake cluster, CUDA pods: simulated pods that succeed, fail and hang, left-over and
unschedulable pods, cleanup, MIG resources and pools."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as workflow
from local_gpu_cluster.gpu_operator import NVIDIA_SMI
from local_gpu_cluster.smoke import Outcome
from tests.modules.smoke_test.helpers import CUDA_IMAGE, MISMATCH, NS, module, smoke_objects, workflow_run


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
