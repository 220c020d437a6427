"""Fidelity: real helm 3.18 and 4.1 against the fake (no validation-skipping flags)."""

import base64
import gzip
import json

import pytest

from local_gpu_cluster.helpers import DEMO_CHART, binary, run, run_json

RELEASE_LABELS = "owner=helm,name={}"


class Helm:
    """One helm major version: binary path and its rollback-on-failure flag."""

    def __init__(self, name):
        self.path = binary(name)
        self.major = int(name[-1])
        self.rollback_flag = "--atomic" if self.major == 3 else "--rollback-on-failure"

    def __call__(self, *args, check=True):
        return run([self.path, *args], check=check)

    def json(self, *args):
        return run_json([self.path, *args, "-o", "json"])

    def install(self, release, *args, namespace="default", check=True):
        return self("upgrade", "--install", release, DEMO_CHART, "-n", namespace, *args,
                    check=check)


@pytest.fixture(params=["helm3", "helm4"])
def helm(request, fake_api):
    return Helm(request.param)


def _release_secrets(server, release, namespace="default"):
    secrets = server.store.list("v1", "Secret", namespace,
                                label_selector=RELEASE_LABELS.format(release))
    return {s["metadata"]["labels"]["version"]: s for s in secrets}


def _decode_release(secret):
    raw = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    return json.loads(gzip.decompress(raw))


def test_install_then_upgrade(fake_api, helm):
    helm.install("demo")
    deployment = fake_api.store.get("apps/v1", "Deployment", "demo", "default")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":1.0.0")
    assert fake_api.store.get("v1", "ConfigMap", "demo-config", "default")["data"]["mode"] == \
        "default"
    helm.install("demo", "--set", "config.mode=tuned")
    assert fake_api.store.get("v1", "ConfigMap", "demo-config", "default")["data"]["mode"] == \
        "tuned"
    secrets = _release_secrets(fake_api, "demo")
    assert {v: s["metadata"]["labels"]["status"] for v, s in secrets.items()} == {
        "1": "superseded", "2": "deployed"}
    assert all(s["type"] == "helm.sh/release.v1" for s in secrets.values())
    release = _decode_release(secrets["2"])
    assert release["version"] == 2 and release["config"] == {"config": {"mode": "tuned"}}
    protobuf_writes = [e for e in fake_api.request_log if e["path"].endswith("/secrets")
                       or "/secrets/" in e["path"]]
    assert "application/vnd.kubernetes.protobuf" in {e["content_type"] for e in protobuf_writes}


def test_list_values_history_status(fake_api, helm):
    helm.install("alpha", "--set", "config.mode=a")
    helm.install("beta", "--set", "config.mode=b")
    helm.install("gamma", namespace="other", check=True)
    helm.install("beta", "--set", "config.mode=b2")
    assert sorted(r["name"] for r in helm.json("list")) == ["alpha", "beta"]
    everywhere = {(r["name"], r["namespace"], r["revision"]) for r in helm.json("list", "-A")}
    assert everywhere == {("alpha", "default", "1"), ("beta", "default", "2"),
                          ("gamma", "other", "1")}
    # Label selectors must be exact, or helm would read another release's values.
    assert helm.json("get", "values", "alpha") == {"config": {"mode": "a"}}
    assert helm.json("get", "values", "beta") == {"config": {"mode": "b2"}}
    history = helm.json("history", "beta")
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"),
                                                               (2, "deployed")]
    assert helm.json("status", "beta")["info"]["status"] == "deployed"
    helm("rollback", "beta", "1")
    assert helm.json("get", "values", "beta") == {"config": {"mode": "b"}}
    assert helm.json("status", "beta")["version"] == 3


def test_wait_succeeds_when_ready(fake_api, helm):
    helm.install("ready", "--wait", "--timeout", "20s")
    status = fake_api.store.get("apps/v1", "Deployment", "ready", "default")["status"]
    assert status["readyReplicas"] == 1
    if helm.major == 4:
        watches = [e["query"] for e in fake_api.request_log if e["query"].get("watch")]
        assert any(q.get("sendInitialEvents") == "true" for q in watches)


@pytest.mark.slow
def test_wait_times_out_and_rolls_back(fake_api, helm):
    helm.install("stuck", "--set", "config.mode=good")
    failed = helm.install("stuck", "--set", "neverReady=true", "--set", "config.mode=bad",
                          "--wait", "--timeout", "3s", helm.rollback_flag, check=False)
    assert failed.returncode != 0
    assert "rolled back" in failed.stderr
    history = helm.json("history", "stuck")
    assert [(h["revision"], h["status"]) for h in history] == [
        (1, "superseded"), (2, "failed"), (3, "deployed")]
    assert fake_api.store.get("v1", "ConfigMap", "stuck-config", "default")["data"]["mode"] == \
        "good"
    labels = fake_api.store.get("apps/v1", "Deployment", "stuck", "default")["spec"][
        "template"]["metadata"]["labels"]
    assert "fake.gpu-platform.io/never-ready" not in labels


@pytest.mark.slow
def test_wait_times_out_without_rollback(fake_api, helm):
    failed = helm.install("hang", "--set", "neverReady=true", "--wait", "--timeout", "3s",
                          check=False)
    assert failed.returncode != 0
    assert helm.json("status", "hang")["info"]["status"] == "failed"


def test_render_failure_stores_nothing(fake_api, helm):
    failed = helm.install("broken", "--set", "failRender=true", check=False)
    assert failed.returncode != 0 and "failRender is set" in failed.stderr
    assert _release_secrets(fake_api, "broken") == {}


def test_uninstall_removes_objects_and_release(fake_api, helm):
    helm.install("gone")
    helm.install("kept")
    assert "uninstalled" in helm("uninstall", "gone").stdout
    assert fake_api.store.get("apps/v1", "Deployment", "gone", "default") is None
    assert fake_api.store.get("v1", "ConfigMap", "gone-config", "default") is None
    assert fake_api.store.list("apps/v1", "ReplicaSet", "default",
                               label_selector="app.kubernetes.io/instance=gone") == []
    assert _release_secrets(fake_api, "gone") == {}
    assert fake_api.store.get("apps/v1", "Deployment", "kept", "default") is not None
    assert [r["name"] for r in helm.json("list")] == ["kept"]


def test_create_namespace(fake_api, helm):
    assert fake_api.store.get("v1", "Namespace", "fresh") is None
    helm.install("ns-demo", "--create-namespace", namespace="fresh")
    namespace = fake_api.store.get("v1", "Namespace", "fresh")
    assert namespace["status"]["phase"] == "Active"
    assert fake_api.store.get("apps/v1", "Deployment", "ns-demo", "fresh") is not None
    assert set(_release_secrets(fake_api, "ns-demo", "fresh")) == {"1"}


WIDGET_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


def test_chart_with_crds_installs_them_first(fake_api, helm, tmp_path):
    chart = tmp_path / "widgets"
    (chart / "crds").mkdir(parents=True)
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: widgets\nversion: 0.1.0\n")
    (chart / "crds" / "widgets.yaml").write_text(WIDGET_CRD)
    (chart / "templates" / "widget.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\n"
        "spec:\n  size: {{ .Values.size | default 1 }}\n")
    helm("upgrade", "--install", "w", chart, "--wait", "--timeout", "20s")
    assert fake_api.store.get("example.com/v1", "Widget", "w", "default")["spec"] == {"size": 1}
    helm("upgrade", "--install", "w", chart, "--set", "size=3")
    assert fake_api.store.get("example.com/v1", "Widget", "w", "default")["spec"] == {"size": 3}
