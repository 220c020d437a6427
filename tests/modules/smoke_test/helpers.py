"""Shared data and helpers of the smoke_test module tests: namespace, images, the module and workflow runs on the
fake cluster, the objects a run left behind, and node builders for the allocatable checks."""

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as workflow
from local_gpu_cluster.gpu_operator import gpu_node
from tests.modules.harness import run_module

NS = "gpu-platform-smoke"
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9"
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n"


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


def shared_node(name, gpus, advertised, pool="shared"):
    node = gpu_node(name, gpus=gpus)
    node["metadata"]["labels"].update({"nodepool": pool, "nvidia.com/gpu.count": str(gpus)})
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(advertised)
    return node


def mig_node(name, advertised, product="NVIDIA-A100-SXM4-80GB"):
    node = gpu_node(name, product=product)
    node["metadata"]["labels"]["nodepool"] = "mig"
    node["status"]["allocatable"] = dict(advertised)
    return node
