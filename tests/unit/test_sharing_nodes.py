"""Tests of the gpu_sharing domain's cluster MIG strategy, node assignment and label requests, and the
checks of MIG layouts and GPU products of pools."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal
from tests.unit.sharing_helpers import MIGP, TS, WHOLE, pool


# ---------------------------------------------------------------- MIG strategy and node assignment

@pytest.mark.parametrize("raws, expected", [
    ([TS, WHOLE], None),
    ([MIGP], "single"),
    ([pool(MIGP, mig_strategy="mixed"), TS], "mixed"),
    ([MIGP, pool(MIGP, name="b", node_selector={"nodepool": "b"}, mig_profile="all-3g.40gb")], "single"),
])
def test_cluster_mig_strategy(raws, expected):
    assert sharing.cluster_mig_strategy(sharing.validate_pools(raws)) == expected


def node(name, **labels):
    return {"metadata": {"name": name, "labels": labels}}


def test_assign_nodes():
    pools = sharing.validate_pools([WHOLE, TS])
    nodes = [node("n3", nodepool="inference"), node("n1", nodepool="training"), node("cpu1"), {"metadata": {"name": "x"}}]
    assert sharing.assign_nodes(pools, nodes) == {"n1": "training", "n3": "inference"}


def test_assign_nodes_refuses_overlapping_selectors():
    pools = sharing.validate_pools([pool(WHOLE, node_selector={"gpu": "a100"}), pool(TS, node_selector={"zone": "b"})])
    with pytest.raises(Refusal) as info:
        sharing.assign_nodes(pools, [node("n7", gpu="a100", zone="b")])
    assert "n7" in str(info.value) and "training, inference" in str(info.value) and "Fix:" in str(info.value)


def test_label_requests_change_only_the_nodes_whose_config_label_differs():
    from ansible_collections.gpu_platform.cluster.plugins.filter import gpu_sharing as sharing_filters
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels
    key = "nvidia.com/device-plugin.config"
    plan = sharing_filters.gpu_sharing_plan([
        {"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4},
        {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}])
    assert plan["label_requests"] == [
        {"name": "inference", "selector": "nodepool=inference", "labels": {key: "inference"}},
        {"name": "training", "selector": "nodepool=training", "labels": {key: "default"}}]

    def node(name, labels):
        return {"metadata": {"name": name, "labels": labels}}

    requests = node_labels.check_requests(plan["label_requests"])
    report, changes = node_labels.plan(requests, [[node("a", {key: "inference"}), node("b", {key: "default"}), node("c", {})],
                                                  [node("d", None)]])
    assert [(name, labels) for name, labels, before in changes] == [
        ("b", {key: "inference"}), ("c", {key: "inference"}), ("d", {key: "default"})]
    assert [entry["nodes"] for entry in report] == [["a", "b", "c"], ["d"]]
    # Every node already labelled: nothing to write.
    assert node_labels.plan(requests, [[node("a", {key: "inference"})], []])[1] == []


MIG_POOL = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}


@pytest.mark.parametrize("over, field, words", [
    ({"mig_profile": "all-9g.99gb"}, "gpu_platform_node_pools[0].mig_profile", "not a MIG layout of any GPU"),
    ({"mig_profile": "all-1g.12gb", "gpu_product": "A100-80GB"}, "gpu_platform_node_pools[0].mig_profile",
     "needs the MIG profile 1g.12gb, which A100-80GB does not have"),
    ({"gpu_product": "NVIDIA-T4"}, "gpu_platform_node_pools[0].gpu_product", "not a MIG-capable GPU"),
    ({"mig_profile": "all-balanced", "gpu_product": "RTX-9000"}, "gpu_platform_node_pools[0].gpu_product", "RTX-9000"),
])
def test_a_mig_layout_is_checked_against_the_catalog_without_a_cluster(over, field, words):
    with pytest.raises(ParamError) as err:
        sharing.validate_pools([dict(MIG_POOL, **over)])
    assert err.value.field == field and words in err.value.msg and "Fix:" in err.value.msg


@pytest.mark.parametrize("product, key", [("A100-80GB", "A100-80GB"), ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
                                          (None, None)])
def test_a_layout_of_the_pools_gpu_passes(product, key):
    raw = dict(MIG_POOL, gpu_product=product) if product else dict(MIG_POOL)
    [pool] = sharing.validate_pools([raw])
    assert pool.gpu_product == key and pool.mig_profile == "all-1g.10gb"


def test_gpu_product_belongs_to_mig_pools_only():
    with pytest.raises(ParamError) as err:
        sharing.validate_pools([{"name": "a", "node_selector": {"a": "b"}, "sharing": "none", "gpu_product": "A100-80GB"}])
    assert err.value.field == "gpu_platform_node_pools[0].gpu_product"
