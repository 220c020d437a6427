"""node_labels on the fake cluster: one list per selector, only the nodes whose labels differ are written;
check and diff mode; refusals before any write."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels as node_labels_domain

from local_gpu_cluster.gpu_operator import gpu_node
from tests.modules.harness import run_module

DRA = {"nvidia.com/dra-kubelet-plugin": "true", "nvidia.com/gpu.deploy.device-plugin": "false"}
KEY, MIG = "nvidia.com/device-plugin.config", "nvidia.com/mig.config"


@pytest.fixture
def api(fake_api_factory):
    server = fake_api_factory()
    for index in range(1, 7):
        node = gpu_node("gpu-node-%d" % index)
        node["metadata"]["labels"]["nodepool"] = "dra" if index <= 2 else ("inference" if index <= 4 else "training")
        server.store.create(node)
    server.clear_log()
    return server


def run(api, check_mode=False, diff=False, **params):
    params.setdefault("nodes", [{"selector": "nodepool=dra", "labels": DRA}])
    params.setdefault("kubeconfig", str(api.kubeconfig))
    return run_module("node_labels", params, check_mode=check_mode, diff=diff)


def labels(api, name):
    return api.store.get("v1", "Node", name)["metadata"]["labels"]


def node_writes(api):
    return sorted(entry["path"].rsplit("/", 1)[-1] for entry in api.writes())


def test_labels_the_selected_nodes_then_writes_nothing(api):
    failed, first = run(api, diff=True)
    assert not failed, first.get("msg")
    assert first["changed"] and first["changed_nodes"] == ["gpu-node-1", "gpu-node-2"]
    assert first["selected"] == [{"name": "nodepool=dra", "selector": "nodepool=dra",
                                  "nodes": ["gpu-node-1", "gpu-node-2"]}]
    assert first["diff"][0]["before"] == "" and "nvidia.com/dra-kubelet-plugin: true" in first["diff"][0]["after"]
    assert node_writes(api) == ["gpu-node-1", "gpu-node-2"]
    assert labels(api, "gpu-node-1")["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels(api, "gpu-node-1")["nodepool"] == "dra", "the node's other labels stay"
    assert "nvidia.com/dra-kubelet-plugin" not in labels(api, "gpu-node-3")
    api.clear_log()
    failed, second = run(api)
    assert not failed and second["changed"] is False and second["changed_nodes"] == []
    assert api.writes() == []
    assert [e["query"].get("labelSelector") for e in api.request_log if e["path"] == "/api/v1/nodes"] == ["nodepool=dra"]


def test_only_the_node_that_drifted_is_written(api):
    run(api)
    api.store.patch("v1", "Node", "gpu-node-2", {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "true"}}})
    api.clear_log()
    failed, result = run(api, diff=True)
    assert not failed and result["changed_nodes"] == ["gpu-node-2"]
    assert "nvidia.com/gpu.deploy.device-plugin: true" in result["diff"][0]["before"]
    assert node_writes(api) == ["gpu-node-2"]


def test_check_mode_names_the_nodes_and_writes_nothing(api):
    failed, result = run(api, check_mode=True)
    assert not failed and result["changed"] and result["changed_nodes"] == ["gpu-node-1", "gpu-node-2"]
    assert all("dryRun" in entry["query"] for entry in api.writes())
    assert "nvidia.com/dra-kubelet-plugin" not in labels(api, "gpu-node-1")


def test_several_pools_in_one_call(api):
    pools = [{"name": "inference", "selector": "nodepool=inference", "labels": {"nvidia.com/device-plugin.config": "inference"}},
             {"name": "training", "selector": "nodepool in (training)", "labels": {"nvidia.com/device-plugin.config": "default"}}]
    failed, result = run(api, nodes=pools)
    assert not failed, result.get("msg")
    assert [(s["name"], s["nodes"]) for s in result["selected"]] == [
        ("inference", ["gpu-node-3", "gpu-node-4"]), ("training", ["gpu-node-5", "gpu-node-6"])]
    assert labels(api, "gpu-node-6")["nvidia.com/device-plugin.config"] == "default"


@pytest.mark.parametrize("nodes, words", [
    ([{"selector": "nodepool=dra", "labels": {"nvidia.com/dra-kubelet-plugin": True}}],
     "nodes[0].labels: the value of label 'nvidia.com/dra-kubelet-plugin' is True, not a string"),
    ([{"selector": " ", "labels": DRA}], "nodes[0].selector: is missing"),
    ([{"selector": "nodepool in ()", "labels": DRA}], "nodes[0].selector"),
    ([{"selector": "nodepool=dra", "labels": {"bad key!": "x"}}], "nodes[0].labels: label key 'bad key!'"),
    ([{"selector": "nodepool=dra", "labels": {}}], "nodes[0].labels: must be a non-empty dictionary"),
    ([{"name": "a", "selector": "nodepool=dra", "labels": DRA}, {"name": "a", "selector": "x=y", "labels": DRA}],
     "nodes[1].name: 'a' names two entries"),
    ([{"name": "a", "selector": "nodepool=dra", "labels": {"pool": "a"}},
      {"name": "b", "selector": "nvidia.com/gpu.present=true", "labels": {"pool": "b"}}],
     "node gpu-node-1 is picked by a (pool=a) and by b (pool=b)"),
    ([{"name": "ghost", "selector": "nodepool=nope", "labels": DRA}], "ghost (selector nodepool=nope) picks no node"),
])
def test_bad_input_is_refused_before_any_write(api, nodes, words):
    failed, result = run(api, nodes=nodes)
    assert failed and words in result["msg"], result["msg"]
    assert "Fix:" in result["msg"]
    assert api.writes() == []


def test_an_empty_pool_is_allowed_when_asked(api):
    failed, result = run(api, nodes=[{"name": "ghost", "selector": "nodepool=nope", "labels": DRA}],
                         require_match=False)
    assert not failed and result["changed"] is False and result["selected"][0]["nodes"] == []


def test_every_example_runs_on_the_fake_cluster(api, tmp_path):
    from ansible_collections.gpu_platform.cluster.plugins.modules import node_labels
    tasks = yaml.safe_load(node_labels.EXAMPLES)
    assert len(tasks) == 4
    for task in tasks:
        params = dict(task["gpu_platform.cluster.node_labels"])
        if "render_to" in params:
            params["render_to"] = params["render_to"].replace("{{ playbook_dir }}", str(tmp_path))
        failed, result = run(api, **params)
        assert not failed, (task["name"], result.get("msg"))
        assert result["changed"], task["name"]
        assert result["changed_nodes"] or result["rendered"]["changed_files"], task["name"]
    assert (tmp_path / "build" / "platform" / "gpu-sharing" / "gpu-sharing-node-labels.yaml").is_file()


def test_render_to_writes_the_patch_list_kubectl_label_reads_and_never_asks_the_cluster(api, tmp_path):
    unit = tmp_path / "platform" / "gpu-sharing"
    nodes = [{"name": "inference", "selector": "nodepool=inference", "labels": {KEY: "inference"}},
             {"name": "inference MIG layout", "selector": "nodepool=inference", "labels": {MIG: "all-1g.10gb"}}]
    failed, first = run(api, check_mode=True, diff=True, nodes=nodes, render_to=str(unit), render_name="gpu-sharing")
    assert not failed, first.get("msg")
    assert first["changed"] and not unit.exists() and "NodeLabelPatchList" in first["diff"][0]["after"]
    failed, first = run(api, nodes=nodes, render_to=str(unit), render_name="gpu-sharing")
    assert not failed and first["rendered"]["changed_files"] == ["gpu-sharing-node-labels.yaml"]
    # what node_label_patches (playbooks/node_labels.py) reads back is what was asked for
    read = node_labels_domain.from_patch_lists(
        [("gpu-sharing/gpu-sharing-node-labels.yaml",
          list(yaml.safe_load_all((unit / "gpu-sharing-node-labels.yaml").read_text())))])
    assert [(e["selector"], e["labels"]) for e in read] == [(n["selector"], n["labels"]) for n in nodes]
    failed, again = run(api, nodes=nodes, render_to=str(unit), render_name="gpu-sharing")
    assert not failed and again["changed"] is False and again["rendered"]["changed_files"] == []
    assert api.request_log == [] and all(labels(api, "gpu-node-3").get(k) is None for k in (KEY, MIG))


@pytest.mark.parametrize("name", [None, "", "../x", "a/b"])
def test_render_to_without_a_usable_file_name_is_refused_naming_render_name(api, tmp_path, name):
    failed, result = run(api, render_to=str(tmp_path / "unit"), render_name=name)
    assert failed and "render_name" in result["msg"] and "Fix:" in result["msg"]
    assert not (tmp_path / "unit").exists()


def test_a_null_value_removes_the_label_whoever_set_it_then_writes_nothing(api):
    api.store.patch("v1", "Node", "gpu-node-3", {"metadata": {"labels": {KEY: "inference"}}})  # another manager's
    entries = [{"selector": KEY, "labels": {KEY: None}}]
    failed, checked = run(api, check_mode=True, nodes=entries, require_match=False)
    assert not failed and checked["changed_nodes"] == ["gpu-node-3"]
    assert labels(api, "gpu-node-3")[KEY] == "inference", "check mode writes nothing"
    failed, first = run(api, diff=True, nodes=entries, require_match=False)
    assert not failed, first.get("msg")
    assert first["changed_nodes"] == ["gpu-node-3"] and KEY not in labels(api, "gpu-node-3")
    assert first["diff"][0]["before"] == "%s: inference\n" % KEY and first["diff"][0]["after"] == ""
    assert labels(api, "gpu-node-3")["nodepool"] == "inference", "the node's other labels stay"
    api.clear_log()
    failed, second = run(api, nodes=entries, require_match=False)
    assert not failed and second["changed"] is False and api.writes() == []
