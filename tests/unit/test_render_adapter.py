"""The GitOps writer: stable files, writes only on change, check mode writes nothing."""
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError

OBJ = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator", "labels": {"a": "b"}}}


def name_of(obj):
    return obj["kind"].lower() + "-" + obj["metadata"]["name"] + ".yaml"


def test_write_then_no_change(tmp_path):
    changed, diffs, files = render.write_objects(str(tmp_path), [OBJ], name_of, "test")
    assert changed == ["namespace-gpu-operator.yaml"] and files == changed
    assert diffs[0]["before"] == "" and "gpu-operator" in diffs[0]["after"]
    text = (tmp_path / "namespace-gpu-operator.yaml").read_text()
    assert text.startswith("# Rendered by gpu_platform.cluster test.")
    assert yaml.safe_load(text) == OBJ
    mtime = os.stat(tmp_path / "namespace-gpu-operator.yaml").st_mtime_ns
    changed, diffs, dummy = render.write_objects(str(tmp_path), [OBJ], name_of, "test")
    assert changed == [] and diffs == []
    assert os.stat(tmp_path / "namespace-gpu-operator.yaml").st_mtime_ns == mtime


def test_key_order_is_kept_and_lists_indented():
    text = render.to_yaml({"kind": "X", "apiVersion": "v1", "spec": {"items": ["a"]}})
    body = text.split("---\n", 1)[1]
    assert body.startswith("kind: X\napiVersion: v1\n")
    assert "  items:\n    - a\n" in body


def test_check_mode_writes_nothing(tmp_path):
    target = tmp_path / "out"
    changed, diffs, dummy = render.write_objects(str(target), [OBJ], name_of, check_mode=True)
    assert changed and diffs
    assert not target.exists()


def test_changed_content_rewrites_with_diff(tmp_path):
    render.write_objects(str(tmp_path), [OBJ], name_of)
    new = {**OBJ, "metadata": {"name": "gpu-operator", "labels": {"a": "c"}}}
    changed, diffs, dummy = render.write_objects(str(tmp_path), [new], name_of)
    assert changed == ["namespace-gpu-operator.yaml"]
    assert "a: b" in diffs[0]["before"] and "a: c" in diffs[0]["after"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "no temp files left behind"


def test_remove_files(tmp_path):
    render.write_objects(str(tmp_path), [OBJ], name_of)
    removed, dummy = render.remove_files(str(tmp_path), ["namespace-gpu-operator.yaml", "absent.yaml"], check_mode=True)
    assert removed == ["namespace-gpu-operator.yaml"] and (tmp_path / "namespace-gpu-operator.yaml").exists()
    removed, dummy = render.remove_files(str(tmp_path), ["namespace-gpu-operator.yaml"])
    assert removed and not (tmp_path / "namespace-gpu-operator.yaml").exists()


def test_render_to_a_file_is_refused(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ParamError, match="render_to: .* exists and is not a directory"):
        render.write_objects(str(path), [OBJ], name_of)


def test_manifest_objects_names_each_document_of_each_file(tmp_path):
    """Who each object of a unit is, as the bundle's health checks name it (gitops_bundle, Flux)."""
    unit = tmp_path / "network-config"
    unit.mkdir()
    render.write_objects(str(unit), [OBJ], name_of, "test")
    (unit / "two.yaml").write_text("---\napiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n"
                                   "  name: nic-cluster-policy\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                   "  name: c\n  namespace: n\n")
    out = render.manifest_objects(str(tmp_path), ["network-config/namespace-gpu-operator.yaml", "network-config/two.yaml"])
    assert out == {
        "network-config/namespace-gpu-operator.yaml": [
            {"apiVersion": "v1", "kind": "Namespace", "name": "gpu-operator", "namespace": ""}],
        "network-config/two.yaml": [
            {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "name": "nic-cluster-policy", "namespace": ""},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n"}]}


@pytest.mark.parametrize("text, words", [
    ("kind: [unclosed\n", "could not read"),
    ("- a list\n", "not a Kubernetes object"),
    ("apiVersion: v1\nkind: Namespace\n", "not a Kubernetes object"),
    ("apiVersion: v1\nmetadata: {name: x}\n", "not a Kubernetes object"),
])
def test_manifest_objects_refuses_what_is_not_an_object_naming_the_file(tmp_path, text, words):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ToolError) as err:
        render.manifest_objects(str(tmp_path), ["bad.yaml"])
    assert words in str(err.value) and "bad.yaml" in str(err.value) and "Fix:" in str(err.value)
    with pytest.raises(ToolError):
        render.manifest_objects(str(tmp_path), ["missing.yaml"])
