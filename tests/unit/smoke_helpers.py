"""Shared data of the smoke_tests domain tests: the namespace and images, gang pods, a check result, and plan settings."""
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import plan as smoke

NS = "gpu-smoke"
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests:2.21.5-cuda12.4-ompi4.1"
DIGEST_IMAGE = "nvcr.io/nvidia/cuda@sha256:" + "0123456789abcdef" * 4


def gang_pods(*times):
    return {"gpu-platform-smoke-gang-member-%d" % i: t for i, t in enumerate(times)}


def result(layer, check, passed=True, reason="ok", evidence=(), obj=None, skipped=None):
    out = {"layer": layer, "check": check, "object": obj or "gpu-platform-smoke-" + check, "passed": passed,
           "reason": reason, "evidence": evidence if isinstance(evidence, str) else list(evidence)}
    if skipped:
        out["skipped_reason"] = skipped
    return out


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
