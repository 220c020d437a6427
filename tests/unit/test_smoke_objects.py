"""Tests of the smoke_tests domain's objects: the CUDA, DRA, gang and NCCL pods and jobs each layer's
smoke test runs, their names, labels, scripts and images."""
import datetime
import os
import subprocess

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import dra_driver as dra_domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    checks as smoke_checks, nccl as smoke_nccl, objects as smoke_objects)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from tests.unit.smoke_helpers import CUDA_IMAGE, DIGEST_IMAGE, NCCL_IMAGE, NS


# ---------------------------------------------------------------- builders

def test_cuda_pod_runs_nvidia_smi_on_one_gpu():
    pod = smoke_objects.cuda_pod(NS, CUDA_IMAGE)
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert pod["metadata"]["name"] == "gpu-platform-smoke-cuda"
    assert pod["metadata"]["namespace"] == NS
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu_platform.cluster",
                                         "gpu-platform.io/smoke": "cuda"}
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    (container,) = spec["containers"]
    assert container["image"] == CUDA_IMAGE
    assert container["command"] == ["nvidia-smi"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize("resources, name", [
    ({"nvidia.com/mig-1g.10gb": 1}, "gpu-platform-smoke-cuda-mig-1g.10gb"),
    ({"nvidia.com/gpu.shared": 1}, "gpu-platform-smoke-cuda-gpu.shared"),
    ({"nvidia.com/gpu": 2}, "gpu-platform-smoke-cuda-gpu"),
])
def test_cuda_pod_for_other_resources_gets_its_own_name(resources, name):
    pod = smoke_objects.cuda_pod(NS, DIGEST_IMAGE, resources)
    assert pod["metadata"]["name"] == name
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {k: str(v) for k, v in resources.items()}


def test_dra_claim_pod_gets_its_gpu_through_a_resource_claim_template():
    template, pod = smoke_objects.dra_claim_pod(NS, CUDA_IMAGE)
    assert (template["apiVersion"], template["kind"]) == ("resource.k8s.io/v1", "ResourceClaimTemplate")
    assert template["spec"] == {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}]}}}
    # The DRA docs' example, named and labelled as a smoke test.
    example = dra_domain.example_claim(NS, template["metadata"]["name"], CUDA_IMAGE)
    assert (template["spec"], pod["spec"]) == (example[0]["spec"], example[1]["spec"])
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {"claims": [{"name": "gpu"}]}  # no device-plugin GPU as well
    assert container["command"] == ["nvidia-smi"]
    assert template["metadata"]["labels"]["gpu-platform.io/smoke"] == pod["metadata"]["labels"]["gpu-platform.io/smoke"]


def test_dra_claim_pod_uses_the_given_device_class():
    template = smoke_objects.dra_claim_pod(NS, CUDA_IMAGE, device_class="mig.nvidia.com")[0]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com"


@pytest.mark.parametrize("replicas", [2, 4])
def test_volcano_gang_job_is_all_or_nothing(replicas):
    (job,) = smoke_objects.gang_job("volcano", NS, CUDA_IMAGE, replicas=replicas, queue="research")
    assert (job["apiVersion"], job["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    spec = job["spec"]
    assert spec["minAvailable"] == replicas
    assert spec["schedulerName"] == "volcano"
    assert spec["queue"] == "research"
    (task,) = spec["tasks"]
    assert task["replicas"] == replicas
    pod_spec = task["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    (container,) = pod_spec["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert smoke_objects.GANG_MARKER in container["command"][-1]


@pytest.mark.parametrize("replicas", [2, 3])
def test_kai_gang_is_a_pod_group_its_pods_join(replicas):
    objects = smoke_objects.gang_job("kai", NS, CUDA_IMAGE, replicas=replicas, queue="team-a")
    group, pods = objects[0], objects[1:]
    assert (group["apiVersion"], group["kind"]) == ("scheduling.run.ai/v2alpha2", "PodGroup")
    assert group["spec"] == {"minMember": replicas, "queue": "team-a"}
    assert len(pods) == replicas
    assert len({p["metadata"]["name"] for p in pods}) == replicas
    for pod in pods:
        assert pod["kind"] == "Pod"
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
        assert pod["metadata"]["annotations"]["pod-group-name"] == group["metadata"]["name"]
        assert pod["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true"
        assert "ownerReferences" not in pod["metadata"]  # ownerless: the pod-grouper leaves them in our group
        assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    # the pods do not share (and so cannot corrupt) one another's nested dicts
    pods[0]["spec"]["containers"][0]["env"].append({"name": "X", "value": "1"})
    assert len(pods[1]["spec"]["containers"][0]["env"]) == 1


def test_gang_member_prints_a_start_time_that_parses(tmp_path):
    """Run the member's print statement in a real shell and read it back as check_gang's input."""
    (job,) = smoke_objects.gang_job("volcano", NS, CUDA_IMAGE)
    script = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][-1]
    echo = script.split(";")[0]
    out = subprocess.run(["sh", "-c", echo], env=dict(os.environ, NODE_NAME="gpu-a"), check=True,
                         capture_output=True, text=True).stdout
    assert out.rstrip().endswith(" on gpu-a")
    started = smoke_checks.start_time_from_log("some noise\n" + out)
    now = datetime.datetime.now(datetime.timezone.utc)
    result = smoke_checks.check_gang({"a": started, "b": now.isoformat()}, 60)
    assert result["passed"], result


def test_start_time_from_log_without_the_marker_is_none():
    assert smoke_checks.start_time_from_log("sh: date: not found\n") is None
    assert smoke_checks.start_time_from_log(None) is None


def test_nccl_job_two_tasks_with_ssh_and_svc_plugins():
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE, network="default/rdma-net")
    assert (job["apiVersion"], job["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    spec = job["spec"]
    assert spec["plugins"] == {"ssh": [], "svc": []}
    assert spec["schedulerName"] == "volcano"
    assert spec["minAvailable"] == 3  # the launcher and both workers, or nothing
    launcher, worker = spec["tasks"]
    assert (launcher["name"], launcher["replicas"]) == ("launcher", 1)
    assert (worker["name"], worker["replicas"]) == ("worker", 2)
    assert launcher["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]

    (wc,) = worker["template"]["spec"]["containers"]
    assert wc["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}
    assert wc["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert "sshd" in wc["command"][-1]
    assert worker["template"]["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "default/rdma-net"}
    anti = worker["template"]["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
    assert anti[0]["labelSelector"]["matchLabels"].items() <= worker["template"]["metadata"]["labels"].items()

    (lc,) = launcher["template"]["spec"]["containers"]
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in lc["env"]
    script = lc["command"][-1]
    assert "/etc/volcano/worker.host" in script  # the svc plugin's host file for the task named worker
    assert "-np 16 " in script and ":8" in script
    assert "-x NCCL_DEBUG" in script
    assert "$test_bin\" -b 512M -e 8G -f 2 -g 1" in script
    assert "nvidia.com/gpu" not in str(lc.get("resources"))
    assert smoke_nccl.launcher_pod_name() == "gpu-platform-smoke-nccl-launcher-0"


def test_nccl_job_scales_with_nodes_and_gpus_and_takes_other_rdma_resources():
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE, nodes=4, gpus_per_node=4, rdma_resource={"rdma/ib": 2})
    launcher, worker = job["spec"]["tasks"]
    assert job["spec"]["minAvailable"] == 5
    assert worker["replicas"] == 4
    assert worker["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4",
                                                                                  "rdma/ib": "2"}
    assert "-np 16 " in launcher["template"]["spec"]["containers"][0]["command"][-1]
    assert ":4\"" in launcher["template"]["spec"]["containers"][0]["command"][-1]
    assert "annotations" not in worker["template"]["metadata"]  # no network given, no Multus annotation


def test_nccl_job_without_rdma_resource_and_with_several_networks():
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE, rdma_resource={}, network=["net-a", "infra/net-b@net2"])
    worker = job["spec"]["tasks"][1]
    assert worker["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert worker["template"]["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "net-a,infra/net-b@net2"}


@pytest.mark.parametrize("script", [
    smoke_nccl.nccl_job(NS, NCCL_IMAGE)[0]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][-1],
    smoke_nccl.WORKER_SCRIPT,
], ids=["launcher", "worker"])
def test_pod_scripts_are_valid_shell(script):
    done = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def all_objects():
    yield smoke_objects.cuda_pod(NS, CUDA_IMAGE)
    yield from smoke_objects.dra_claim_pod(NS, CUDA_IMAGE)
    yield from smoke_objects.gang_job("volcano", NS, CUDA_IMAGE)
    yield from smoke_objects.gang_job("kai", NS, CUDA_IMAGE)
    yield from smoke_nccl.nccl_job(NS, NCCL_IMAGE, network="rdma-net")


def pod_templates(obj):
    if obj["kind"] == "Job":
        return [t["template"] for t in obj["spec"]["tasks"]]
    return [obj] if obj["kind"] == "Pod" else []


@pytest.mark.parametrize("obj", list(all_objects()), ids=lambda o: "%s-%s" % (o["kind"], o["metadata"]["name"]))
def test_every_object_and_pod_is_named_and_labelled_for_cleanup(obj):
    meta = obj["metadata"]
    assert meta["name"].startswith("gpu-platform-smoke-")
    assert meta["namespace"] == NS
    for labels in [meta["labels"]] + [t["metadata"]["labels"] for t in pod_templates(obj)]:
        assert labels["app.kubernetes.io/managed-by"] == "gpu_platform.cluster"
        assert labels["gpu-platform.io/smoke"] in ("cuda", "dra", "gang", "nccl")
    for template in pod_templates(obj):
        for container in template["spec"]["containers"]:
            assert container["image"] in (CUDA_IMAGE, NCCL_IMAGE)


def test_pinned_images_are_accepted_as_given():
    for image in (CUDA_IMAGE, DIGEST_IMAGE, "localhost:5000/cuda:12.8.1", "cuda:latest@sha256:" + "ab" * 32,
                  "registry.example.com:443/a/b/c:v1.2.3_rc-1"):
        assert validate.pinned_image("smoke_tests_image", image) == image
