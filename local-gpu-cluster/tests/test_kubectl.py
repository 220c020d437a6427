"""Fidelity: real ``kubectl`` (1.35 and 1.33) against the fake, with default validation."""

import json

import pytest

from local_gpu_cluster.helpers import binary, run, run_json

MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
  labels: {tier: backend}
data:
  mode: "{mode}"
---
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  driver: {enabled: {driver}}
"""


@pytest.fixture(params=["kubectl", "kubectl-1.33"])
def kubectl(request, fake_api):
    return binary(request.param)


def _write(tmp_path, mode, driver):
    path = tmp_path / f"manifest-{mode}.yaml"
    path.write_text(MANIFEST.replace("{mode}", mode).replace("{driver}", driver))
    return path


def test_client_side_apply_create_update_unchanged(fake_api, kubectl, tmp_path):
    first = run([kubectl, "apply", "-f", _write(tmp_path, "a", "true")]).stdout
    assert "configmap/settings created" in first
    assert "clusterpolicy.nvidia.com/cluster-policy created" in first
    second = run([kubectl, "apply", "-f", _write(tmp_path, "b", "false")]).stdout
    assert "configmap/settings configured" in second
    third = run([kubectl, "apply", "-f", _write(tmp_path, "b", "false")]).stdout
    assert "configmap/settings unchanged" in third
    stored = fake_api.store.get("v1", "ConfigMap", "settings", "default")
    assert stored["data"] == {"mode": "b"}
    annotations = stored["metadata"]["annotations"]
    last_applied = annotations["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last_applied)["data"] == {"mode": "b"}
    policy = fake_api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"] == {"driver": {"enabled": False}}
    patches = [e for e in fake_api.request_log if e["method"] == "PATCH"]
    assert {e["content_type"] for e in patches} == {
        "application/strategic-merge-patch+json", "application/merge-patch+json"}


def test_server_side_apply_with_validation(fake_api, kubectl, tmp_path):
    out = run([kubectl, "apply", "--server-side", "-f", _write(tmp_path, "a", "true")]).stdout
    assert "configmap/settings serverside-applied" in out
    run([kubectl, "apply", "--server-side", "-f", _write(tmp_path, "c", "false")])
    assert fake_api.store.get("v1", "ConfigMap", "settings", "default")["data"] == {"mode": "c"}
    applies = [e for e in fake_api.request_log
               if e["content_type"] == "application/apply-patch+yaml"]
    assert applies and all(e["query"].get("fieldValidation") == "Strict" for e in applies)
    assert {e["code"] for e in applies} == {200, 201}


def test_get_json_label_and_delete(fake_api, kubectl, tmp_path):
    run([kubectl, "apply", "-f", _write(tmp_path, "a", "true")])
    fake_api.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "elsewhere", "namespace": "other"}})
    listed = run_json([kubectl, "get", "configmaps", "-A", "-o", "json"])
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed["items"]} == {
        ("default", "settings"), ("other", "elsewhere")}
    run([kubectl, "label", "configmap", "settings", "gpu=yes"])
    selected = run_json([kubectl, "get", "cm", "-l", "gpu=yes,tier in (backend)", "-o", "json"])
    assert [i["metadata"]["name"] for i in selected["items"]] == ["settings"]
    none = run_json([kubectl, "get", "cm", "-l", "gpu!=yes", "-o", "json"])
    assert none["items"] == []
    single = run_json([kubectl, "get", "clusterpolicy", "cluster-policy", "-o", "json"])
    assert single["spec"]["driver"]["enabled"] is True
    assert "deleted" in run([kubectl, "delete", "configmap", "settings"]).stdout
    missing = run([kubectl, "get", "configmap", "settings"], check=False)
    assert missing.returncode != 0 and 'configmaps "settings" not found' in missing.stderr
    assert fake_api.store.get("v1", "ConfigMap", "settings", "default") is None


def test_wait_for_condition_uses_watch(fake_api, kubectl):
    fake_api.store.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    out = run([kubectl, "wait", "--for=condition=Available", "deployment/web",
               "--timeout=10s"]).stdout
    assert "condition met" in out
    out = run([kubectl, "rollout", "status", "deployment/web", "--timeout=10s"]).stdout
    assert "successfully rolled out" in out
    assert any(e["query"].get("watch") in ("true", "1") for e in fake_api.request_log)
    run([kubectl, "scale", "deployment/web", "--replicas=3"])
    deployment = fake_api.store.get("apps/v1", "Deployment", "web", "default")
    assert deployment["spec"]["replicas"] == 3 and deployment["status"]["readyReplicas"] == 3
