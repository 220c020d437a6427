"""Tests of the smoke_tests domain's plan (one test per layer and per sharing pool) and of collecting results."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import plan as smoke
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.smoke_helpers import NS, POOLS, settings


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
