"""scheduling_flavors.unmatched_flavors: a Kueue flavor whose node labels no node carries, with GFD's renames named."""

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling import queues as scheduling
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling.flavors import unmatched_flavors
from ansible_collections.gpu_platform.cluster.plugins.filter.layers import FilterModule


def _flavors(*flavors):
    spec = {"flavors": list(flavors), "teams": [{"name": "t", "namespaces": ["t"],
                                                 "quota": {f["name"]: 1 for f in flavors}}],
            "local_queue_name": "gpu"}
    return scheduling.plan(spec, "volcano")["objects"]


def _node(product, **labels):
    return {"metadata": {"name": "n", "labels": dict(labels, **{"nvidia.com/gpu.product": product})}}


def test_a_flavor_some_node_matches_is_fine():
    objects = _flavors({"name": "h100", "gpu_product": "NVIDIA-H100-80GB-HBM3"})
    assert unmatched_flavors(objects, [_node("NVIDIA-A100-SXM4-80GB"), _node("NVIDIA-H100-80GB-HBM3")]) == []


def test_time_sliced_and_mig_single_nodes_name_the_renamed_product():
    objects = _flavors({"name": "h100", "gpu_product": "NVIDIA-H100-80GB-HBM3"},
                       {"name": "a100", "gpu_product": "NVIDIA-A100-SXM4-80GB"})
    nodes = [_node("NVIDIA-H100-80GB-HBM3-SHARED"), _node("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb")]
    lines = unmatched_flavors(objects, nodes)
    assert len(lines) == 2
    h100 = next(line for line in lines if line.startswith("ResourceFlavor h100:"))
    assert "no node has nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3;" in h100
    assert "Fix: give that flavor gpu_product: NVIDIA-H100-80GB-HBM3-SHARED" in h100
    a100 = next(line for line in lines if line.startswith("ResourceFlavor a100:"))
    assert "gpu_product: NVIDIA-A100-SXM4-80GB-MIG-1g.10gb" in a100


def test_a_product_no_node_has_at_all_says_so():
    objects = _flavors({"name": "b200", "gpu_product": "NVIDIA-B200"})
    lines = unmatched_flavors(objects, [_node("NVIDIA-H100-80GB-HBM3")])
    assert lines == [line for line in lines if "no node has nvidia.com/gpu.product=NVIDIA-B200, so workloads" in line]
    assert len(lines) == 1 and "scaled to zero" in lines[0]
    assert "NVIDIA-H100" not in lines[0]  # another product is not a rename of this one


def test_the_extra_node_labels_count_too():
    objects = _flavors({"name": "h100", "gpu_product": "NVIDIA-H100-80GB-HBM3", "node_labels": {"pool": "a"}})
    assert len(unmatched_flavors(objects, [_node("NVIDIA-H100-80GB-HBM3", pool="b")])) == 1
    assert unmatched_flavors(objects, [_node("NVIDIA-H100-80GB-HBM3", pool="a")]) == []
    renamed = unmatched_flavors(objects, [_node("NVIDIA-H100-80GB-HBM3-SHARED", pool="b")])
    assert "renamed" not in renamed[0]  # the renamed node is not in the flavor's pool either


def test_the_filter_is_registered():
    assert FilterModule().filters()["scheduling_unmatched_flavors"]([], []) == []
