"""Tests of the smoke_tests domain's checks of what the objects print: realistic nvidia-smi and nccl-tests
logs, gang start times, and allocatable resources."""
import datetime

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    checks as smoke_checks, nccl_check as smoke_nccl_check)
from local_gpu_cluster.gpu_operator import NVIDIA_SMI, gpu_node
from local_gpu_cluster.nccl_logs import NCCL_CUT_LOG, NCCL_IB_LOG, NCCL_SOCKET_LOG
from tests.unit.smoke_helpers import gang_pods


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
