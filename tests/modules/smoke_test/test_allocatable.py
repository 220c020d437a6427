"""smoke_test on the fake cluster, allocatable checks: time-sliced replicas, MIG layouts and exact counts."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as workflow
from tests.modules.smoke_test.helpers import mig_node, module, shared_node, workflow_run


def test_allocatable_passes_when_each_gpu_gives_its_replicas(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 32))
    api.store.create(shared_node("gpu-b", 4, 16))
    api.store.create(shared_node("gpu-c", 8, 8, pool="whole"))
    api.clear_log()
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "shared"},
                            expected_per_gpu={"nvidia.com/gpu": "4"})
    assert not failed, result
    assert result["smoke"]["layer"] == "gpu_sharing" and result["smoke"]["passed"]
    assert "gpu-a: nvidia.com/gpu 32 as expected" in result["smoke"]["evidence"]
    assert "gpu-b: nvidia.com/gpu 16 as expected" in result["smoke"]["evidence"]
    assert api.writes() == []


def test_allocatable_waits_then_names_the_node_that_differs(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 8))
    started = api.clock.time()
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "shared"},
                     expected_per_gpu={"nvidia.com/gpu": 4}, timeout=20)
    assert api.clock.time() - started >= 20
    assert "after 20s" in caught.value.msg and "gpu-a: nvidia.com/gpu expected 32, advertises 8" in caught.value.msg


def test_allocatable_without_the_gpu_count_label_says_gfd_has_not_run(cluster):
    api = cluster({})
    node = shared_node("gpu-a", 8, 32)
    del node["metadata"]["labels"]["nvidia.com/gpu.count"]
    api.store.create(node)
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "shared"},
                     expected_per_gpu={"nvidia.com/gpu": 4}, timeout=10)
    assert "no nvidia.com/gpu.count label on gpu-a" in caught.value.msg


def test_allocatable_in_check_mode_reads_once_and_does_not_wait(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 8))
    started = api.clock.time()
    result = workflow_run(api, check_mode=True, check="allocatable", node_selector={"nodepool": "shared"},
                          expected_per_gpu={"nvidia.com/gpu": 4}, timeout=600)
    assert api.clock.time() == started
    assert result["smoke"]["passed"] is None
    assert "check mode: not waited for" in result["smoke"]["skipped_reason"]
    assert "expected 32, advertises 8" in result["smoke"]["skipped_reason"]


@pytest.mark.parametrize("strategy, advertised", [
    ("mixed", {"nvidia.com/mig-1g.10gb": "56"}),
    ("single", {"nvidia.com/gpu": "56"}),
])
def test_allocatable_of_a_mig_layout_follows_the_board_and_strategy(cluster, strategy, advertised):
    api = cluster({})
    api.store.create(mig_node("gpu-m", advertised))
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-1g.10gb",
                            mig_strategy=strategy)
    assert not failed and result["smoke"]["passed"], result
    assert result["smoke"]["evidence"] == ["gpu-m: %s 56 as expected" % next(iter(advertised))], "8 A100-80GB x 7"


def test_allocatable_of_a_mig_layout_names_what_is_missing(cluster):
    api = cluster({})
    api.store.create(mig_node("gpu-m", {"nvidia.com/gpu": "8"}))  # MIG manager has not finished
    with pytest.raises(workflow.SmokeFailed) as caught:
        workflow_run(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-1g.10gb",
                     mig_strategy="mixed", timeout=15)
    assert "gpu-m: nvidia.com/mig-1g.10gb expected 56, not advertised" in caught.value.msg


def test_allocatable_of_a_layout_the_board_lacks_is_refused(cluster):
    api = cluster({})
    api.store.create(mig_node("gpu-m", {"nvidia.com/gpu": "8"}, product="NVIDIA-A100-SXM4-40GB"))
    failed, result = module(api, check="allocatable", node_selector={"nodepool": "mig"}, mig_layout="all-3g.40gb")
    assert failed and result["msg"].startswith("mig_layout: node gpu-m (A100-40GB): ")
    assert "3g.40gb, which A100-40GB does not have" in result["msg"]
    assert "Fix: " in result["msg"]


def test_allocatable_with_exact_counts_per_node(cluster):
    api = cluster({})
    api.store.create(shared_node("gpu-a", 8, 56))
    failed, result = module(api, check="allocatable", expected_allocatable={"gpu-a": {"nvidia.com/gpu": 56}})
    assert not failed and result["smoke"]["passed"], result
