"""smoke_test on the fake cluster, DRA claim pods and gangs: Volcano and KAI gangs that start together,
apart or not at all."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as workflow
from local_gpu_cluster.crds import DEFAULT_CRD_DIR
from local_gpu_cluster.gpu_operator import NVIDIA_SMI
from local_gpu_cluster.smoke import Outcome, gang_marker
from tests.modules.smoke_test.helpers import CUDA_IMAGE, module, smoke_objects, workflow_run


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
