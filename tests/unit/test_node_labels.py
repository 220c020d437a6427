"""The pure part of node_labels: requests checked (every bad input names its place), and which nodes change."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels as d
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

DRA = {"nvidia.com/dra-kubelet-plugin": "true"}


def node(name, labels=None):
    return {"metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize("entries, words", [
    ([], "nodes: must be a non-empty list"),
    ("nodepool=dra", "nodes: must be a non-empty list"),
    (["nodepool=dra"], "nodes[0]: 'nodepool=dra' is not a dictionary"),
    ([{"labels": DRA}], "nodes[0].selector: is missing"),
    ([{"selector": "a=b,", "labels": DRA}], "nodes[0].selector: 'a=b,' has an empty term"),
    ([{"selector": "a=b", "labels": None}], "nodes[0].labels: must be a non-empty dictionary"),
    ([{"selector": "a=b", "labels": {"x": 8}}], "nodes[0].labels: the value of label 'x' is 8, not a string"),
    ([{"selector": "a=b", "labels": {"x": "a" * 64}}], "nodes[0].labels: label 'x' has an invalid value"),
    ([{"selector": "a=b", "labels": {"-x": "y"}}], "nodes[0].labels: label key '-x'"),
    ([{"selector": "a=b", "labels": DRA}, {"selector": "a=b", "labels": DRA}], "nodes[1].name: 'a=b' names two entries"),
])
def test_bad_requests_name_the_field(entries, words):
    with pytest.raises(ParamError) as err:
        d.check_requests(entries)
    assert words in err.value.msg and "Fix:" in err.value.msg


def test_plan_writes_only_nodes_that_differ_and_merges_entries_per_node():
    requests = d.check_requests([{"name": "dra", "selector": "pool=dra", "labels": DRA},
                                 {"name": "all", "selector": "gpu=true", "labels": {"team": "x"}}])
    report, changes = d.plan(requests, [[node("n1", {"nvidia.com/dra-kubelet-plugin": "true"}), node("n2")],
                                        [node("n1", {"nvidia.com/dra-kubelet-plugin": "true", "team": "x"}),
                                         node("n3", {"team": "y"})]])
    assert report == [{"name": "dra", "selector": "pool=dra", "nodes": ["n1", "n2"]},
                      {"name": "all", "selector": "gpu=true", "nodes": ["n1", "n3"]}]
    assert changes == [("n2", DRA, {"nvidia.com/dra-kubelet-plugin": None}),
                       ("n3", {"team": "x"}, {"team": "y"})]
    assert d.unmatched(report) == []
    assert d.unmatched(d.plan(requests, [[], [node("n1")]])[0]) == [{"name": "dra", "selector": "pool=dra", "nodes": []}]


def test_two_entries_that_disagree_on_a_node_are_refused():
    requests = d.check_requests([{"name": "a", "selector": "x=1", "labels": {"k": "a"}},
                                 {"name": "b", "selector": "y=1", "labels": {"k": "b"}}])
    with pytest.raises(ParamError) as err:
        d.plan(requests, [[node("n1")], [node("n1")]])
    assert "node n1 is picked by a (k=a) and by b (k=b)" in err.value.msg
    # agreeing entries are fine
    same = d.check_requests([{"name": "a", "selector": "x=1", "labels": {"k": "a"}},
                             {"name": "b", "selector": "y=1", "labels": {"k": "a"}}])
    assert d.plan(same, [[node("n1")], [node("n1")]])[1] == [("n1", {"k": "a"}, {"k": None})]


def test_a_bundles_patch_lists_become_node_labels_entries():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels as domain
    entries = domain.from_patch_lists([
        ("gpu-sharing/gpu-sharing-node-labels.yaml", [{"kind": "NodeLabelPatchList", "patches": [
            {"selector": "nodepool=inference", "labels": {"nvidia.com/device-plugin.config": "inference"}},
            {"selector": "nodepool=training", "labels": {"nvidia.com/mig.config": "all-1g.10gb"}}]}]),
        ("mig/mig-profile-all-1g.10gb-node-labels.yaml", [None, {"kind": "NodeLabelPatchList", "patches": [
            {"node": "gpu-a100-0", "labels": {"nvidia.com/mig.config": "all-1g.10gb"}}]}]),
    ])
    assert entries == [
        {"name": "gpu-sharing/gpu-sharing-node-labels.yaml#1", "selector": "nodepool=inference",
         "labels": {"nvidia.com/device-plugin.config": "inference"}},
        {"name": "gpu-sharing/gpu-sharing-node-labels.yaml#2", "selector": "nodepool=training",
         "labels": {"nvidia.com/mig.config": "all-1g.10gb"}},
        {"name": "mig/mig-profile-all-1g.10gb-node-labels.yaml#1", "selector": "kubernetes.io/hostname=gpu-a100-0",
         "labels": {"nvidia.com/mig.config": "all-1g.10gb"}}]
    assert domain.from_patch_lists([]) == []


@pytest.mark.parametrize("docs, field", [
    ([{"kind": "ConfigMap"}], "u/x-node-labels.yaml"),
    ([{"kind": "NodeLabelPatchList", "patches": "nodepool=a"}], "u/x-node-labels.yaml"),
    ([{"kind": "NodeLabelPatchList", "patches": [{"labels": {"a": "b"}}]}], "u/x-node-labels.yaml#1"),
    ([{"kind": "NodeLabelPatchList", "patches": [{"selector": "a=b", "node": "n", "labels": {"a": "b"}}]}],
     "u/x-node-labels.yaml#1"),
    ([{"kind": "NodeLabelPatchList", "patches": [{"selector": "a=b", "labels": {"bad key!": "b"}}]}],
     "u/x-node-labels.yaml#1[0].labels"),
])
def test_a_bad_patch_list_is_refused_naming_the_file_and_patch(docs, field):
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels as domain
    with pytest.raises(ParamError) as err:
        domain.from_patch_lists([("u/x-node-labels.yaml", docs)])
    assert err.value.field.startswith(field), err.value.field


def test_a_label_given_null_is_removed_only_from_the_nodes_that_carry_it():
    requests = d.check_requests([{"name": "off", "selector": "nvidia.com/gpu.sharing", "labels":
                                  {"nvidia.com/gpu.sharing": None, "team": "x"}}])
    assert requests[0].labels == {"nvidia.com/gpu.sharing": None, "team": "x"}
    dummy, changes = d.plan(requests, [[node("n1", {"nvidia.com/gpu.sharing": "mig", "team": "x"}),
                                        node("n2", {"team": "x"})]])
    assert changes == [("n1", {"nvidia.com/gpu.sharing": None, "team": "x"},
                        {"nvidia.com/gpu.sharing": "mig", "team": "x"})]
    with pytest.raises(ParamError) as err:
        d.check_requests([{"selector": "a=b", "labels": {"-x": None}}])
    assert "nodes[0].labels: label key '-x'" in err.value.msg
    with pytest.raises(ParamError) as err:  # one entry removes what another sets: refused, as two values are
        d.plan(d.check_requests([{"name": "a", "selector": "x=1", "labels": {"k": None}},
                                 {"name": "b", "selector": "y=1", "labels": {"k": "b"}}]), [[node("n1")], [node("n1")]])
    assert "node n1 is picked by a (k=None) and by b (k=b)" in err.value.msg
