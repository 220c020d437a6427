"""helm_pinned_release with render_to: GitOps files, validated against the upstream CRD schemas.

No cluster and no chart repository: the run must not need helm at all (binary_path points
at a file that does not exist, so any helm call would fail the test).
"""
from __future__ import annotations

import os

import pytest
import yaml

from tests.modules.harness import run_module
from tests.schema import crdschema

PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged"}


def params(out, **over):
    base = {"release_name": "gpu-operator", "release_namespace": "gpu-operator", "chart_ref": "gpu-operator",
            "chart_repo_url": "https://helm.ngc.nvidia.com/nvidia", "chart_version": "v26.7.0",
            "create_namespace": True, "namespace_labels": PRIVILEGED, "render_to": str(out),
            "release_values": {"driver": {"enabled": False}}, "binary_path": "/nonexistent/helm",
            "kubeconfig": "/nonexistent/kubeconfig"}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def rendered(out):
    docs = {}
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), encoding="utf-8") as handle:
            docs[name] = yaml.safe_load(handle)
    return docs


def validate_all(docs):
    for name, obj in docs.items():
        if obj["kind"] == "Namespace":
            crdschema.validate_core(obj)
        else:
            crdschema.validate(obj)


@pytest.mark.parametrize("fmt, kinds", [
    ("flux", {"Namespace", "HelmRepository", "HelmRelease"}),
    ("argocd", {"Application"}),
])
def test_render_validates_and_is_idempotent(tmp_path, shared_dir, fmt, kinds):
    out = tmp_path / "platform"
    failed, result = run_module("helm_pinned_release", params(out, render_format=fmt), diff=True)
    assert not failed, result
    assert result["changed"] and result["action"] == "render"
    docs = rendered(out)
    assert {d["kind"] for d in docs.values()} == kinds
    validate_all(docs)
    assert all(d["after"] for d in result["diff"])
    failed, again = run_module("helm_pinned_release", params(out, render_format=fmt))
    assert not failed and again["changed"] is False and again["rendered"]["changed_files"] == []


def test_render_pins_version_and_values(tmp_path, shared_dir):
    out = tmp_path / "platform"
    run_module("helm_pinned_release", params(out))
    release = rendered(out)["helmrelease-gpu-operator-gpu-operator.yaml"]
    assert release["spec"]["chart"]["spec"]["version"] == "v26.7.0"
    assert release["spec"]["values"] == {"driver": {"enabled": False}}
    assert rendered(out)["namespace-gpu-operator.yaml"]["metadata"]["labels"] == PRIVILEGED


def test_render_oci_validates(tmp_path, shared_dir):
    out = tmp_path / "platform"
    failed, result = run_module("helm_pinned_release", params(
        out, chart_ref="oci://ghcr.io/nvidia/charts/gpu-operator", chart_repo_url=None, wait=True, atomic=True))
    assert not failed, result
    docs = rendered(out)
    assert "ocirepository-gpu-operator-gpu-operator.yaml" in docs
    validate_all(docs)


def test_check_mode_writes_nothing(tmp_path):
    out = tmp_path / "platform"
    failed, result = run_module("helm_pinned_release", params(out), check_mode=True, diff=True)
    assert not failed and result["changed"]
    assert not out.exists()
    assert len(result["diff"]) == 3


def test_value_change_rewrites_only_the_release(tmp_path):
    out = tmp_path / "platform"
    run_module("helm_pinned_release", params(out))
    failed, result = run_module("helm_pinned_release", params(out, release_values={"driver": {"enabled": True}}), diff=True)
    assert result["rendered"]["changed_files"] == ["helmrelease-gpu-operator-gpu-operator.yaml"]
    assert "enabled: false" in result["diff"][0]["before"] and "enabled: true" in result["diff"][0]["after"]


def test_format_switch_removes_the_other_formats_release(tmp_path):
    out = tmp_path / "platform"
    run_module("helm_pinned_release", params(out))
    failed, result = run_module("helm_pinned_release", params(out, render_format="argocd"))
    assert not failed, result
    names = set(os.listdir(out))
    assert "application-argocd-gpu-operator.yaml" in names
    assert "helmrelease-gpu-operator-gpu-operator.yaml" not in names


def test_absent_removes_release_files(tmp_path):
    out = tmp_path / "platform"
    run_module("helm_pinned_release", params(out))
    failed, result = run_module("helm_pinned_release", params(out, release_state="absent"), check_mode=True)
    assert result["changed"] and "helmrelease-gpu-operator-gpu-operator.yaml" in os.listdir(out)
    failed, result = run_module("helm_pinned_release", params(out, release_state="absent"))
    assert result["changed"] and "helmrelease-gpu-operator-gpu-operator.yaml" not in os.listdir(out)
    failed, again = run_module("helm_pinned_release", params(out, release_state="absent"))
    assert again["changed"] is False


def test_local_chart_cannot_be_rendered(tmp_path):
    from local_gpu_cluster.charts import DEMO_CHART_DIR
    out = tmp_path / "platform"
    local = params(out, chart_ref=str(DEMO_CHART_DIR), chart_repo_url=None, chart_version="1.0.0")
    failed, result = run_module("helm_pinned_release", local)
    assert failed and result["msg"].startswith("chart_ref: a local chart cannot be delivered through GitOps")
    assert not out.exists()


def test_render_to_a_file_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    failed, result = run_module("helm_pinned_release", params(target))
    assert failed and result["msg"].startswith("render_to:")
    assert target.read_text() == "x"


def test_missing_helm_is_a_clear_error(tmp_path):
    failed, result = run_module("helm_pinned_release", params(tmp_path, render_to=None))
    assert failed
    assert result["msg"].startswith("binary_path: /nonexistent/helm is not an executable file. Fix:")
