"""Tests of the smoke_tests domain: the objects each layer's smoke test runs, the checks of what they
print (realistic nvidia-smi and nccl-tests logs), the per-layer summary, and the refusals of bad inputs."""
import datetime
import os
import subprocess

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import dra as dra_domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    smoke, smoke_checks, smoke_nccl, smoke_nccl_check, smoke_objects, validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.fakes.gpu_operator import NVIDIA_SMI, gpu_node
from tests.fakes.nccl_logs import NCCL_CUT_LOG, NCCL_IB_LOG, NCCL_SOCKET_LOG

NS = "gpu-smoke"
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests:2.21.5-cuda12.4-ompi4.1"
DIGEST_IMAGE = "nvcr.io/nvidia/cuda@sha256:" + "0123456789abcdef" * 4

# ---------------------------------------------------------------- realistic logs

NVIDIA_SMI_H100 = """\
Tue Mar  3 09:14:27 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   29C    P0             69W /  700W |       1MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
| N/A   31C    P0             71W /  700W |       1MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""

NVML_MISMATCH = """\
Failed to initialize NVML: Driver/library version mismatch
NVML library version: 570.124
"""

# The header came out but the pod was given no device (the device plugin mounted nothing usable).
SMI_HEADER_ONLY = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.124.06             Driver Version: 570.124.06     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
+-----------------------------------------+------------------------+----------------------+
"""


def gang_pods(*times):
    return {"gpu-platform-smoke-gang-member-%d" % i: t for i, t in enumerate(times)}


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


# ---------------------------------------------------------------- nvidia-smi

@pytest.mark.parametrize("log, gpus, driver", [
    (NVIDIA_SMI, 1, "595.91.07"),
    (NVIDIA_SMI_H100, 2, "570.124.06"),
    (NVIDIA_SMI_H100.splitlines(), 2, "570.124.06"),  # k8s_log's log_lines
    (NVIDIA_SMI_H100.encode(), 2, "570.124.06"),
])
def test_nvidia_smi_table_passes(log, gpus, driver):
    result = smoke_checks.check_nvidia_smi(log)
    assert result["passed"] is True
    assert "saw %d GPU(s)" % gpus in result["reason"]
    assert "driver %s" % driver in result["reason"]
    assert result["evidence"][0].startswith("NVIDIA-SMI ")
    assert result["evidence"][1].startswith("|   0  NVIDIA ")


def test_nvml_mismatch_fails_quoting_the_first_line():
    result = smoke_checks.check_nvidia_smi(NVML_MISMATCH)
    assert result["passed"] is False
    assert "'Failed to initialize NVML: Driver/library version mismatch'" in result["reason"]
    assert result["evidence"] == ["Failed to initialize NVML: Driver/library version mismatch"]


def test_nvidia_smi_header_without_gpu_rows_fails():
    result = smoke_checks.check_nvidia_smi(SMI_HEADER_ONLY)
    assert result["passed"] is False
    assert "no GPU row" in result["reason"] and "570.124.06" in result["reason"]


@pytest.mark.parametrize("log", ["", None, "\n\n"])
def test_empty_nvidia_smi_log_fails(log):
    result = smoke_checks.check_nvidia_smi(log)
    assert result["passed"] is False
    assert "the log is empty" in result["reason"]


def test_gpu_rows_without_the_header_fail():
    rows_only = "\n".join(NVIDIA_SMI_H100.splitlines()[8:12])
    result = smoke_checks.check_nvidia_smi(rows_only)
    assert result["passed"] is False
    assert "did not print its GPU table" in result["reason"]


# ---------------------------------------------------------------- nccl

def test_nccl_over_ib_with_gdrdma_passes():
    result = smoke_nccl_check.check_nccl(NCCL_IB_LOG, 150)
    assert result["passed"] is True, result["reason"]
    assert "GDRDMA on 6 of 6 NET channel lines" in result["reason"]
    assert "175.888 GB/s >= 150 GB/s" in result["reason"]
    assert "peak 178.35 GB/s at 8589934592 bytes" in result["reason"]
    assert result["evidence"][0].endswith("[receive] via NET/IB/0/GDRDMA")
    assert result["evidence"][1] == "# Avg bus bandwidth    : 175.888"


def test_nccl_threshold_equal_to_the_average_passes():
    assert smoke_nccl_check.check_nccl(NCCL_IB_LOG, "175.888")["passed"] is True


def test_nccl_over_sockets_fails_naming_the_transport():
    result = smoke_nccl_check.check_nccl(NCCL_SOCKET_LOG, 20)  # bandwidth clears 20 GB/s: the transport alone decides
    assert result["passed"] is False
    assert result["reason"].startswith("NCCL did not use GPUDirect RDMA over InfiniBand")
    assert "it used: P2P/CUMEM/read, NET/Socket/0" in result["reason"]
    assert "below" not in result["reason"]
    assert result["evidence"][0].endswith("[receive] via NET/Socket/0")
    assert result["evidence"][1].endswith("NET/IB : No device found.")


def test_nccl_below_threshold_fails_with_both_numbers():
    result = smoke_nccl_check.check_nccl(NCCL_IB_LOG, 200)
    assert result["passed"] is False
    assert result["reason"] == "the average bus bandwidth 175.888 GB/s is below the threshold 200 GB/s"
    assert result["evidence"] == ["# Avg bus bandwidth    : 175.888"]


def test_nccl_socket_and_slow_reports_both_problems():
    result = smoke_nccl_check.check_nccl(NCCL_SOCKET_LOG, 100)
    assert "did not use GPUDirect RDMA" in result["reason"]
    assert "22.3969 GB/s is below the threshold 100 GB/s" in result["reason"]


def test_nccl_run_cut_off_before_the_bandwidth_line_fails():
    result = smoke_nccl_check.check_nccl(NCCL_CUT_LOG, 150)
    assert result["passed"] is False
    assert "did not finish (no '# Avg bus bandwidth' line)" in result["reason"]
    assert "GPUDirect" not in result["reason"]  # GDRDMA was there; only the end is missing
    assert "NCCL WARN NET/IB : Got completion from peer" in result["evidence"][0]
    assert result["evidence"][1] == "--------------------------------------------------------------------------"


def test_nccl_wrong_values_fail_even_when_fast():
    log = NCCL_IB_LOG.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    result = smoke_nccl_check.check_nccl(log, 150)
    assert result["passed"] is False
    assert "3 wrong values" in result["reason"]


def test_nccl_with_mpirun_tagged_output_passes():
    tagged = "\n".join("[1,0]<stdout>:" + line for line in NCCL_IB_LOG.splitlines())
    result = smoke_nccl_check.check_nccl(tagged, 150)
    assert result["passed"] is True
    assert "peak 178.35 GB/s at 8589934592 bytes" in result["reason"]  # the table rows are read through the tags


def test_nccl_gdrdma_on_receives_only_still_proves_gpudirect():
    """With GDR read off (send side staged through host memory) only [receive] lines carry GDRDMA."""
    log = "\n".join(line.replace("/GDRDMA", "") if "[send]" in line else line for line in NCCL_IB_LOG.splitlines())
    result = smoke_nccl_check.check_nccl(log, 150)
    assert result["passed"] is True
    assert "GDRDMA on 3 of 6 NET channel lines" in result["reason"]


def test_nccl_newer_format_with_proxy_rank_and_pci_suffix_passes():
    log = NCCL_IB_LOG.replace("[send] via NET/IB/0/GDRDMA", "[send] via NET/IBext_v8/0(8)/GDRDMA(PCI)/Shared")
    log = log.replace("[receive] via NET/IB/0/GDRDMA", "[receive] via NET/IBext_v8/0")
    log = log.replace("[receive] via NET/IB/1/GDRDMA", "[receive] via NET/IBext_v8/1")
    log = log.replace("[send] via NET/IB/1/GDRDMA", "[send] via NET/IBext_v8/1")
    result = smoke_nccl_check.check_nccl(log, 150)
    assert result["passed"] is True
    assert "GDRDMA on 2 of 6" in result["reason"]


def test_nccl_ranks_on_one_node_are_reported():
    log = "\n".join(line for line in NCCL_IB_LOG.splitlines() if "via NET/" not in line)
    result = smoke_nccl_check.check_nccl(log, 150)
    assert result["passed"] is False
    assert "it used: P2P/CUMEM/read (no network transport at all: were all ranks on one node?)" in result["reason"]


def test_nccl_without_debug_output_says_so():
    log = "\n".join(line for line in NCCL_IB_LOG.splitlines() if "NCCL INFO" not in line)
    result = smoke_nccl_check.check_nccl(log, 150)
    assert result["passed"] is False
    assert "no channel lines at all (NCCL_DEBUG=INFO was not in effect" in result["reason"]


def test_nccl_empty_log_fails_on_both_counts():
    result = smoke_nccl_check.check_nccl("", 150)
    assert result["passed"] is False
    assert "did not use GPUDirect RDMA" in result["reason"] and "did not finish" in result["reason"]


# ---------------------------------------------------------------- gang

def test_gang_started_together_passes():
    result = smoke_checks.check_gang(gang_pods("2026-03-03T09:14:27Z", "2026-03-03T09:14:29Z"), 30, replicas=2)
    assert result["passed"] is True
    assert "all 2 gang pods started within 2 s" in result["reason"]
    assert result["evidence"][0] == "gpu-platform-smoke-gang-member-0 started 2026-03-03T09:14:27+00:00"


def test_gang_accepts_mixed_time_forms():
    base = datetime.datetime(2026, 3, 3, 9, 14, 27, tzinfo=datetime.timezone.utc)
    times = [base, base.timestamp() + 1.5, "2026-03-03T10:14:28.250+01:00", "2026-03-03 09:14:27.9z"]
    result = smoke_checks.check_gang(times, 2)
    assert result["passed"] is True, result
    assert "within 1.5 s" in result["reason"]


def test_gang_partly_started_fails():
    result = smoke_checks.check_gang(gang_pods("2026-03-03T09:14:27Z", None), 30, replicas=2)
    assert result["passed"] is False
    assert "only 1 of 2 gang pods started (not started: gpu-platform-smoke-gang-member-1)" in result["reason"]
    assert "gpu-platform-smoke-gang-member-1 did not start" in result["evidence"]


def test_gang_with_fewer_records_than_replicas_fails():
    result = smoke_checks.check_gang(gang_pods("2026-03-03T09:14:27Z", "2026-03-03T09:14:27Z"), 30, replicas=3)
    assert result["passed"] is False
    assert "only 2 of 3" in result["reason"]


def test_gang_none_started_fails():
    result = smoke_checks.check_gang(gang_pods(None, ""), 30)
    assert result["passed"] is False
    assert result["reason"].startswith("none of the 2 gang pods started")


def test_gang_started_apart_fails():
    result = smoke_checks.check_gang(gang_pods("2026-03-03T09:14:27Z", "2026-03-03T09:15:12Z"), 30)
    assert result["passed"] is False
    assert "started 45 s apart" in result["reason"] and "more than the 30 s window" in result["reason"]
    assert result["evidence"] == ["gpu-platform-smoke-gang-member-0 started 2026-03-03T09:14:27+00:00",
                                  "gpu-platform-smoke-gang-member-1 started 2026-03-03T09:15:12+00:00"]


def test_gang_with_more_pods_than_replicas_fails():
    result = smoke_checks.check_gang(gang_pods("2026-03-03T09:14:27Z", "2026-03-03T09:14:27Z"), 30, replicas=1)
    assert result["passed"] is False
    assert "2 pods started but the gang has 1" in result["reason"]


def test_gang_with_no_pods_fails():
    assert smoke_checks.check_gang({}, 30)["passed"] is False


# ---------------------------------------------------------------- allocatable

def test_allocatable_matching_passes():
    result = smoke_checks.check_allocatable({"gpu-a": {"nvidia.com/gpu": 32}},
                                            {"gpu-a": {"nvidia.com/gpu": "32", "cpu": "96"}})
    assert result["passed"] is True
    assert result["evidence"] == ["gpu-a: nvidia.com/gpu 32 as expected"]


def test_allocatable_from_node_objects():
    nodes = [gpu_node("gpu-a", gpus=8), gpu_node("gpu-b", gpus=4)]
    result = smoke_checks.check_allocatable({"gpu-a": {"nvidia.com/gpu": 8}, "gpu-b": {"nvidia.com/gpu": 8}}, nodes)
    assert result["passed"] is False
    assert result["reason"] == ("1 of 2 node resources differ from what was expected: "
                                "gpu-b: nvidia.com/gpu expected 8, advertises 4")


def test_allocatable_missing_resource_and_node_fail():
    result = smoke_checks.check_allocatable(
        {"gpu-a": {"nvidia.com/gpu.shared": 32, "nvidia.com/gpu": 0}, "gpu-z": {"nvidia.com/gpu": 8}},
        {"gpu-a": {"nvidia.com/gpu": "0"}})
    assert result["passed"] is False
    assert result["evidence"] == ["gpu-a: nvidia.com/gpu.shared expected 32, not advertised",
                                  "gpu-z: nvidia.com/gpu expected 8, but the node was not found"]
    assert result["reason"].startswith("2 of 3 node resources differ")


def test_allocatable_with_nothing_expected_fails():
    assert smoke_checks.check_allocatable({}, {"gpu-a": {"nvidia.com/gpu": "8"}})["passed"] is False


# ---------------------------------------------------------------- summary

def result(layer, check, passed=True, reason="ok", evidence=(), obj=None, skipped=None):
    out = {"layer": layer, "check": check, "object": obj or "gpu-platform-smoke-" + check, "passed": passed,
           "reason": reason, "evidence": evidence if isinstance(evidence, str) else list(evidence)}
    if skipped:
        out["skipped_reason"] = skipped
    return out


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


# ---------------------------------------------------------------- plan and collect

POOLS = [
    {"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4,
     "resource_name": "nvidia.com/gpu", "mig_profile": None, "mig_strategy": None},
    {"name": "renamed", "node_selector": {"nodepool": "renamed"}, "sharing": "time-slicing", "replicas": 2,
     "resource_name": "nvidia.com/gpu.shared", "mig_profile": None, "mig_strategy": None},
    {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "replicas": None,
     "resource_name": "nvidia.com/gpu", "mig_profile": "all-1g.10gb", "mig_strategy": "mixed"},
    {"name": "whole", "node_selector": {"nodepool": "whole"}, "sharing": "none", "replicas": None,
     "resource_name": "nvidia.com/gpu", "mig_profile": None, "mig_strategy": None},
]


def settings(**over):
    base = {"layers": list(smoke.LAYERS), "namespace": NS, "image": CUDA_IMAGE, "nccl_image": NCCL_IMAGE,
            "timeout": 300, "nccl_timeout": 900, "cuda_resources": {"nvidia.com/gpu": 1}, "sharing_pools": POOLS,
            "dra_enabled": True, "device_class": "gpu.nvidia.com", "scheduler": "volcano", "queue": "",
            "kai_queue": "vision", "replicas": 2, "window": 30.0, "network_mode": "rdma_shared",
            "rdma_resource": None, "network": "default/rdma-net", "nodes": 2, "gpus_per_node": 8, "min_busbw": 40.0}
    base.update(over)
    return base


def test_plan_has_one_test_per_layer_and_per_sharing_pool_in_layer_order():
    items = smoke.plan(settings())
    assert [(i["layer"], i["check"]) for i in items] == [
        ("gpu_operator", "cuda"),
        ("gpu_sharing", "allocatable"), ("gpu_sharing", "cuda"),
        ("gpu_sharing", "allocatable"), ("gpu_sharing", "cuda"),
        ("gpu_sharing", "allocatable"), ("gpu_sharing", "cuda"),
        ("dra_driver", "dra"), ("scheduling", "gang"), ("network_operator", "nccl")]
    assert not any(i["skipped_reason"] for i in items)
    sharing = [i["params"] for i in items if i["layer"] == "gpu_sharing"]
    assert sharing[0] == {"namespace": NS, "timeout": 300, "node_selector": {"nodepool": "inference"},
                          "expected_per_gpu": {"nvidia.com/gpu": 4}}
    assert sharing[1]["resources"] == {"nvidia.com/gpu": 1} and sharing[1]["suffix"] == "inference"
    assert sharing[2]["expected_per_gpu"] == {"nvidia.com/gpu.shared": 2}
    assert sharing[3]["resources"] == {"nvidia.com/gpu.shared": 1}
    assert sharing[4] == {"namespace": NS, "timeout": 300, "node_selector": {"nodepool": "training"},
                          "mig_layout": "all-1g.10gb", "mig_strategy": "mixed"}
    assert sharing[5]["resources"] == {"nvidia.com/mig-1g.10gb": 1}, "a mixed MIG pool asks for its MIG resource"
    nccl = items[-1]["params"]
    assert nccl["rdma_resource"] == {"rdma/shared_ib": 1} and nccl["queue"] == "default" and nccl["timeout"] == 900
    assert items[-2]["params"]["queue"] == "default", "Volcano's own queue"


def test_plan_single_strategy_mig_pool_asks_for_whole_gpus():
    pool = dict(POOLS[2], mig_strategy="single")
    (allocatable, item) = smoke.plan(settings(layers=["gpu_sharing"], sharing_pools=[pool]))
    assert allocatable["params"]["mig_strategy"] == "single"
    assert item["params"]["resources"] == {"nvidia.com/gpu": 1}


def test_plan_kai_uses_the_first_team_queue_and_sriov_its_resource():
    items = smoke.plan(settings(scheduler="kai", layers=["scheduling", "network_operator"], network_mode="sriov",
                                node_type="nd-h100-v5"))
    assert items[0]["params"]["scheduler"] == "kai" and items[0]["params"]["queue"] == "vision"
    assert items[1]["skipped_reason"] is None, "nccl-tests runs under KAI too"
    assert items[1]["params"]["scheduler"] == "kai" and items[1]["params"]["queue"] == "vision"
    items = smoke.plan(settings(layers=["network_operator"], network_mode="sriov", nics_per_pod=1))
    assert items[0]["params"]["rdma_resource"] == {"rdma/ib": 1}


@pytest.mark.parametrize("over, layer, words", [
    ({"dra_enabled": False}, "dra_driver", "gpu_platform_dra_enabled"),
    ({"scheduler": "none"}, "scheduling", "gpu_platform_scheduler: none"),
    ({"network_mode": "none"}, "network_operator", "RDMA is off (gpu_platform_network_mode is none)"),
    ({"network_mode": None}, "network_operator", "RDMA is off"),
])
def test_plan_says_why_a_test_cannot_run_here(over, layer, words):
    (item,) = [i for i in smoke.plan(settings(**over)) if i["layer"] == layer]
    assert words in item["skipped_reason"] and item["params"] == {}


@pytest.mark.parametrize("over, field", [
    ({"layers": ["gpu_operator", "monitoring"]}, "smoke_tests_layers"),
    ({"layers": "gpu_operator"}, "smoke_tests_layers"),
    ({"namespace": "Smoke"}, "smoke_tests_namespace"),
    ({"image": "nvcr.io/nvidia/cuda:latest"}, "smoke_tests_image"),
    ({"timeout": 0}, "smoke_tests_timeout"),
    ({"nccl_timeout": "soon"}, "smoke_tests_nccl_timeout"),
    ({"cuda_resources": {"nvidia.com/gpu": "x"}}, "smoke_tests_cuda_resources"),
    ({"device_class": "Not A Class"}, "smoke_tests_dra_device_class"),
    ({"replicas": 1}, "smoke_tests_gang_replicas"),
    ({"window": 0}, "smoke_tests_gang_window_seconds"),
    ({"scheduler": "kai", "kai_queue": ""}, "smoke_tests_queue"),
    ({"nccl_image": "nccl-tests"}, "smoke_tests_nccl_image"),
    ({"nodes": 1}, "smoke_tests_nccl_nodes"),
    ({"min_busbw": -5}, "smoke_tests_nccl_min_busbw_gbps"),
    ({"network": "Bad Net"}, "smoke_tests_nccl_network"),
    ({"nccl_image": ""}, "smoke_tests_nccl_image"),
    ({"nccl_image": "", "network_mode": "ipoib"}, "smoke_tests_nccl_image"),
    ({"nccl_image": "", "scheduler": "none"}, "smoke_tests_nccl_image"),
    ({"min_busbw": ""}, "smoke_tests_nccl_min_busbw_gbps"),
    ({"node_type": "nd-x-v9"}, "gpu_platform_rdma_node_type"),
    ({"network_mode": "sriov"}, "gpu_platform_rdma_nics_per_pod"),
    ({"nics_per_pod": "many"}, "gpu_platform_rdma_nics_per_pod"),
    ({"gpus_per_node": "eight"}, "smoke_tests_nccl_gpus_per_node"),
])
def test_plan_refuses_bad_settings_naming_the_variable(over, field):
    with pytest.raises(ParamError) as caught:
        smoke.plan(settings(**over))
    assert caught.value.field == field, caught.value.msg
    assert "Fix: " in caught.value.msg


def test_collect_keeps_plan_order_and_separates_errors():
    ran = {"layer": "gpu_operator", "check": "cuda", "object": "pod-x", "passed": True, "reason": "ok",
           "evidence": [], "skipped_reason": None}
    loop = [{"item": {"layer": "gpu_operator", "check": "cuda", "skipped_reason": None}, "smoke": ran},
            {"item": {"layer": "dra_driver", "check": "dra", "skipped_reason": "not enabled"}, "skipped": True},
            {"item": {"layer": "scheduling", "check": "gang", "skipped_reason": None}, "failed": False,
             "msg": "the gang smoke test needs batch.volcano.sh/v1alpha1 Job"}]
    out = smoke.collect(loop)
    assert [r["layer"] for r in out["results"]] == ["gpu_operator", "dra_driver"]
    assert out["results"][1]["skipped_reason"] == "not enabled" and out["results"][1]["passed"] is None
    assert out["errors"] == ["scheduling gang: the gang smoke test needs batch.volcano.sh/v1alpha1 Job"]
    assert smoke.summary(out["results"])["lines"] == ["gpu_operator: PASS", "dra_driver: SKIPPED - not enabled"]
