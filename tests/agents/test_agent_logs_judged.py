"""The local cluster's node agents (local_gpu_cluster) as the collection reads them: the smoke pods' logs the agents
write, judged by the collection's own parsers. These are the collection's tests of its use of the package."""
from local_gpu_cluster import node_agent_logs
from local_gpu_cluster.fleet import hardware

H100_AKS = hardware("h100", nic="cx7-ib", nics=8, netdev="ib%d")


def test_nvidia_smi_lists_the_gpus_the_pod_holds_and_fails_without_a_driver():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import checks as smoke_checks
    text = node_agent_logs.nvidia_smi(H100_AKS, 2, "580.126.20")
    assert text.count("NVIDIA H100 80GB HBM3") == 2
    assert smoke_checks.check_nvidia_smi(text)["passed"] is True
    assert smoke_checks.check_nvidia_smi(node_agent_logs.nvidia_smi(H100_AKS, 0, "580.126.20"))["passed"] is False
    no_driver = node_agent_logs.nvidia_smi(H100_AKS, 2, None)
    assert smoke_checks.check_nvidia_smi(no_driver)["passed"] is False


def test_nccl_shows_gdrdma_only_when_nothing_blocks_it_at_the_bandwidth_of_the_nics():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
        nccl_check as smoke_nccl_check)
    bandwidth = node_agent_logs.busbw([H100_AKS, H100_AKS])
    assert bandwidth == 360.0  # 8 NDR ConnectX-7 at 45 GB/s each
    assert node_agent_logs.busbw([H100_AKS, hardware("a100", nic="cx6-ib", nics=1)]) == 22.5  # the slower node decides
    good = node_agent_logs.nccl(["w-0", "w-1"], [], bandwidth)
    assert "w-0" in good and "[send] via NET/IB/0/GDRDMA" in good
    verdict = smoke_nccl_check.check_nccl(good, 280.0)
    assert verdict["passed"] is True, verdict
    assert smoke_nccl_check.check_nccl(good, 400.0)["passed"] is False
    bad = node_agent_logs.nccl(["w-0", "w-1"], ["nvidia-peermem is not loaded on node n-1"], bandwidth)
    assert "NET/Socket" in bad and "GDRDMA" not in bad and "nvidia-peermem is not loaded on node n-1" in bad
    assert smoke_nccl_check.check_nccl(bad, 1.0)["passed"] is False


def test_a_gang_member_prints_its_pods_start_time():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import checks as smoke_checks
    text = node_agent_logs.gang_member("2026-11-26T12:00:03Z", "n-1")
    assert smoke_checks.start_time_from_log(text) == "2026-11-26T12:00:03Z"


def test_the_nccl_log_names_the_gpudirect_path_and_the_collection_reports_it():
    """NCCL names each HCA's GPUDirect RDMA path (nvidia-peermem, DMABUF); the smoke check says which carried it."""
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
        nccl_check as smoke_nccl_check)
    bandwidth = node_agent_logs.busbw([H100_AKS, H100_AKS])
    dmabuf = node_agent_logs.nccl(["w-0", "w-1"], [], bandwidth, [{"dmabuf"}, {"dmabuf"}])
    assert "w-0:41:88 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0" in dmabuf
    assert "nvidia-peermem" not in dmabuf
    verdict = smoke_nccl_check.check_nccl(dmabuf, 280.0)
    assert verdict["passed"] is True
    assert verdict["reason"].startswith("GPUDirect RDMA over InfiniBand in use through DMA-BUF (GDRDMA on ")
    peermem = node_agent_logs.nccl(["w-0", "w-1"], [], bandwidth, [{"peermem"}, {"peermem"}])
    assert "in use through nvidia-peermem (" in smoke_nccl_check.check_nccl(peermem, 280.0)["reason"]
    both = node_agent_logs.nccl(["w-0", "w-1"], [], bandwidth, [{"peermem", "dmabuf"}, {"peermem", "dmabuf"}])
    assert both.index("(nvidia-peermem) enabled") < both.index("(DMABUF) enabled"), "NCCL's order"
    assert "through DMA-BUF (nvidia-peermem loaded too)" in smoke_nccl_check.check_nccl(both, 280.0)["reason"]
    # an older NCCL names no path: nothing is claimed
    assert " through " not in smoke_nccl_check.check_nccl(node_agent_logs.nccl(["w-0", "w-1"], [], bandwidth),
                                                          280.0)["reason"]
