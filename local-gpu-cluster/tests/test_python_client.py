"""Fidelity: the official ``kubernetes`` Python client (DynamicClient) against the fake."""

import json
import threading
import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from local_gpu_cluster.fixtures import dynamic_client


def _cm(name, labels=None, data=None, namespace=None):
    meta = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": data or {"k": "v"}}


def _deployment(name, replicas=1, template_labels=None):
    labels = {"app": name, **(template_labels or {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "img:1"}]}}}}


@pytest.fixture
def configmaps(fake_k8s_client):
    return fake_k8s_client.resources.get(api_version="v1", kind="ConfigMap")


def _reason(error):
    return error.value.reason if hasattr(error.value, "reason") else None


def test_crud_metadata_and_errors(fake_api, configmaps):
    created = configmaps.create(body=_cm("a"), namespace="default")
    meta = created.metadata
    assert meta.uid and meta.creationTimestamp == "2025-01-01T00:00:00Z"
    assert int(meta.resourceVersion) > 0

    with pytest.raises(ApiException) as error:
        configmaps.create(body=_cm("a"), namespace="default")
    assert error.value.status == 409 and "AlreadyExists" in error.value.body

    replaced = configmaps.replace(body={**_cm("a", data={"k": "new"}),
                                        "metadata": {"name": "a",
                                                     "resourceVersion": meta.resourceVersion}},
                                  namespace="default")
    assert replaced.data.k == "new"
    assert int(replaced.metadata.resourceVersion) > int(meta.resourceVersion)

    with pytest.raises(ApiException) as error:  # stale resourceVersion
        configmaps.replace(body={**_cm("a"), "metadata": {
            "name": "a", "resourceVersion": meta.resourceVersion}}, namespace="default")
    assert error.value.status == 409 and '"reason": "Conflict"' in error.value.body

    with pytest.raises(ApiException) as error:
        configmaps.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
                          namespace="default")
    assert error.value.status == 422

    generated = configmaps.create(body={"metadata": {"generateName": "gen-"}},
                                  namespace="default")
    assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) == 9

    configmaps.delete(name="a", namespace="default")
    with pytest.raises(ApiException) as error:
        configmaps.get(name="a", namespace="default")
    assert error.value.status == 404
    assert fake_api.store.get("v1", "ConfigMap", "a", "default") is None


def test_noop_update_keeps_resource_version(configmaps):
    created = configmaps.create(body=_cm("same"), namespace="default")
    patched = configmaps.patch(body={"data": {"k": "v"}}, name="same", namespace="default",
                               content_type="application/merge-patch+json")
    assert patched.metadata.resourceVersion == created.metadata.resourceVersion


@pytest.mark.parametrize("content_type, body, expected", [
    ("application/merge-patch+json", {"data": {"k": None, "n": "1"}}, {"n": "1"}),
    ("application/json-patch+json", [{"op": "add", "path": "/data/n", "value": "1"},
                                     {"op": "remove", "path": "/data/k"}], {"n": "1"}),
    ("application/strategic-merge-patch+json", {"data": {"n": "1"}}, {"k": "v", "n": "1"}),
])
def test_patch_types(configmaps, content_type, body, expected):
    configmaps.create(body=_cm("p"), namespace="default")
    patched = configmaps.patch(body=body, name="p", namespace="default",
                               content_type=content_type)
    assert patched.data.to_dict() == expected


def test_strategic_merge_merges_containers_by_name(fake_k8s_client):
    deployments = fake_k8s_client.resources.get(api_version="apps/v1", kind="Deployment")
    body = _deployment("smp")
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "s:1"})
    deployments.create(body=body, namespace="default")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}}
    result = deployments.patch(body=patch, name="smp", namespace="default",
                               content_type="application/strategic-merge-patch+json")
    containers = {c.name: c.image for c in result.spec.template.spec.containers}
    assert containers == {"c": "img:2", "side": "s:1"}
    assert result.metadata.generation == 2


def test_strategic_merge_is_refused_for_custom_resources(fake_k8s_client):
    policies = fake_k8s_client.resources.get(api_version="nvidia.com/v1", kind="ClusterPolicy")
    policies.create(body={"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                          "metadata": {"name": "cp"}, "spec": {}})
    with pytest.raises(ApiException) as error:
        policies.patch(body={"spec": {"x": 1}}, name="cp",
                       content_type="application/strategic-merge-patch+json")
    assert error.value.status == 415


def test_server_side_apply_creates_updates_and_prunes(fake_k8s_client, configmaps):
    first = fake_k8s_client.server_side_apply(
        configmaps, body=_cm("ssa", data={"a": "1", "b": "2"}), namespace="default",
        field_manager="tester")
    assert first.data.to_dict() == {"a": "1", "b": "2"}
    configmaps.patch(body={"data": {"other": "x"}}, name="ssa", namespace="default",
                     content_type="application/merge-patch+json")
    second = fake_k8s_client.server_side_apply(
        configmaps, body=_cm("ssa", data={"a": "9"}), namespace="default",
        field_manager="tester")
    # b was applied by "tester" before and is no longer: removed; "other" is kept.
    assert second.data.to_dict() == {"a": "9", "other": "x"}


def test_dry_run_stores_nothing(fake_api, fake_k8s_client, configmaps):
    before = fake_api.store.resource_version
    created = configmaps.create(body=_cm("dry"), namespace="default", dry_run="All")
    assert created.metadata.name == "dry"
    assert fake_api.store.get("v1", "ConfigMap", "dry", "default") is None
    configmaps.create(body=_cm("wet"), namespace="default")
    rv = fake_api.store.resource_version
    patched = configmaps.patch(body={"data": {"k": "changed"}}, name="wet",
                               namespace="default", dry_run="All",
                               content_type="application/merge-patch+json")
    assert patched.data.k == "changed"
    fake_k8s_client.server_side_apply(configmaps, body=_cm("dry-ssa"), namespace="default",
                                      field_manager="t", dry_run="All")
    configmaps.delete(name="wet", namespace="default", dry_run="All")
    assert fake_api.store.get("v1", "ConfigMap", "wet", "default")["data"] == {"k": "v"}
    assert fake_api.store.get("v1", "ConfigMap", "dry-ssa", "default") is None
    assert fake_api.store.resource_version == rv and int(rv) == int(before) + 1


def test_label_and_field_selectors(configmaps):
    for name, labels in (("x1", {"tier": "a", "gpu": "yes"}), ("x2", {"tier": "b"}),
                         ("x3", {"tier": "c", "gpu": "no"}), ("x4", {})):
        configmaps.create(body=_cm(name, labels), namespace="default")
    configmaps.create(body=_cm("x1", {"tier": "a"}), namespace="other")

    def names(**kwargs):
        return sorted(f"{i.metadata.namespace}/{i.metadata.name}"
                      for i in configmaps.get(**kwargs).items)
    assert names(namespace="default", label_selector="tier=a") == ["default/x1"]
    assert names(namespace="default", label_selector="tier!=a") == [
        "default/x2", "default/x3", "default/x4"]
    assert names(namespace="default", label_selector="tier in (a,c),gpu") == [
        "default/x1", "default/x3"]
    assert names(namespace="default", label_selector="tier notin (a,c)") == [
        "default/x2", "default/x4"]
    assert names(namespace="default", label_selector="!gpu,tier") == ["default/x2"]
    assert names(label_selector="tier==a") == ["default/x1", "other/x1"]
    assert names(field_selector="metadata.namespace=other") == ["other/x1"]
    assert names(namespace="default", field_selector="metadata.name!=x1",
                 label_selector="tier") == ["default/x2", "default/x3"]
    page = configmaps.get(namespace="default", limit=2)
    assert len(page.items) == 2 and page.metadata["continue"]
    rest = configmaps.get(namespace="default", limit=10, _continue=page.metadata["continue"])
    assert {i.metadata.name for i in rest.items} == {"x3", "x4"}
    with pytest.raises(ApiException) as error:
        configmaps.get(namespace="default", label_selector="tier in (a")
    assert error.value.status == 400


def test_delete_collection_by_label(fake_api, configmaps):
    for name, labels in (("d1", {"batch": "old"}), ("d2", {"batch": "old"}), ("d3", {})):
        configmaps.create(body=_cm(name, labels), namespace="default")
    configmaps.delete(namespace="default", label_selector="batch=old")
    assert [c["metadata"]["name"] for c in fake_api.store.list("v1", "ConfigMap",
                                                               "default")] == ["d3"]


def test_missing_namespace_is_rejected_only_on_request(fake_api_factory, tmp_path):
    lax = dynamic_client(fake_api_factory(crd_dirs=[]), tmp_path / "lax")
    lax.resources.get(api_version="v1", kind="ConfigMap").create(body=_cm("a"),
                                                                 namespace="nowhere")
    strict = dynamic_client(fake_api_factory(crd_dirs=[], require_namespaces=True),
                            tmp_path / "strict")
    with pytest.raises(ApiException) as error:
        strict.resources.get(api_version="v1", kind="ConfigMap").create(body=_cm("a"),
                                                                        namespace="nowhere")
    assert error.value.status == 404
    assert json.loads(error.value.body)["message"] == 'namespaces "nowhere" not found'


def test_status_subresource(fake_k8s_client):
    deployments = fake_k8s_client.resources.get(api_version="apps/v1", kind="Deployment")
    body = _deployment("st")
    body["status"] = {"replicas": 99}
    created = deployments.create(body=body, namespace="default")
    assert created.status is None or created.status.replicas != 99  # dropped on create
    current = deployments.get(name="st", namespace="default")
    assert current.status.readyReplicas == 1  # the controller made it ready
    deployments.patch(body={"status": {"replicas": 42}, "spec": {"replicas": 3}}, name="st",
                      namespace="default", content_type="application/merge-patch+json")
    after_main = deployments.get(name="st", namespace="default")
    assert after_main.spec.replicas == 3 and after_main.status.replicas == 3
    status_api = fake_k8s_client.resources.get(api_version="apps/v1", kind="Deployment").status
    patched = status_api.patch(body={"status": {"replicas": 7}, "spec": {"replicas": 5}},
                               name="st", namespace="default",
                               content_type="application/merge-patch+json")
    assert patched.status.replicas == 7 and patched.spec.replicas == 3


def test_upstream_crds_are_served_and_versioned(fake_k8s_client):
    policy = fake_k8s_client.resources.get(api_version="nvidia.com/v1", kind="ClusterPolicy")
    assert policy.namespaced is False
    queues = fake_k8s_client.resources.get(api_version="kueue.x-k8s.io/v1beta2",
                                           kind="LocalQueue")
    assert queues.namespaced is True
    queues.create(body={"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                        "metadata": {"name": "q"}, "spec": {"clusterQueue": "cq"}},
                  namespace="team")
    old = fake_k8s_client.resources.get(api_version="kueue.x-k8s.io/v1beta1",
                                        kind="LocalQueue")
    seen = old.get(name="q", namespace="team")
    assert seen.apiVersion == "kueue.x-k8s.io/v1beta1" and seen.spec.clusterQueue == "cq"
    crd = fake_k8s_client.resources.get(api_version="apiextensions.k8s.io/v1",
                                        kind="CustomResourceDefinition")
    established = crd.get(name="clusterpolicies.nvidia.com").status.conditions
    assert {(c.type, c.status) for c in established} >= {("Established", "True")}


def test_crd_create_and_delete_change_discovery(fake_api, fake_k8s_client, tmp_path):
    crds = fake_k8s_client.resources.get(api_version="apiextensions.k8s.io/v1",
                                         kind="CustomResourceDefinition")
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object"}}},
                              {"name": "v0", "served": False, "storage": False,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    fake_k8s_client.resources.invalidate_cache()
    widgets = fake_k8s_client.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.short_names == ["wd"] and widgets.subresources.get("status")
    widgets.create(body={"apiVersion": "example.com/v1", "kind": "Widget",
                         "metadata": {"name": "w"}}, namespace="default")
    assert fake_api.registry.by_kind("example.com/v0", "Widget") is None
    crds.delete(name="widgets.example.com")
    assert fake_api.registry.by_kind("example.com/v1", "Widget") is None
    fake_k8s_client.resources.invalidate_cache()
    with pytest.raises(ResourceNotFoundError):
        fake_k8s_client.resources.get(api_version="example.com/v1", kind="Widget")


def test_garbage_collection_and_namespace_deletion(fake_api, fake_k8s_client):
    deployments = fake_k8s_client.resources.get(api_version="apps/v1", kind="Deployment")
    deployments.create(body=_deployment("gc"), namespace="work")
    fake_api.store.create(_cm("in-work", namespace="work"))
    replicasets = fake_api.store.list("apps/v1", "ReplicaSet", "work")
    assert [rs["metadata"]["ownerReferences"][0]["name"] for rs in replicasets] == ["gc"]
    deployments.delete(name="gc", namespace="work", body={"propagationPolicy": "Background"})
    assert fake_api.store.list("apps/v1", "ReplicaSet", "work") == []
    namespaces = fake_k8s_client.resources.get(api_version="v1", kind="Namespace")
    namespaces.create(body={"metadata": {"name": "work"}})
    assert namespaces.get(name="work").status.phase == "Active"
    namespaces.delete(name="work")
    assert fake_api.store.list("v1", "ConfigMap", "work") == []


def test_watch_streams_filtered_events(fake_api, fake_k8s_client, configmaps):
    configmaps.create(body=_cm("before", {"w": "1"}), namespace="default")
    start = fake_api.store.resource_version
    fake_api.store.create(_cm("ignored", namespace="default"))
    fake_api.store.create(_cm("w2", {"w": "1"}, namespace="default"))
    fake_api.store.set_labels("v1", "ConfigMap", "w2", {"w": None}, "default")
    events = [(e["type"], e["object"].metadata.name) for e in configmaps.watch(
        namespace="default", label_selector="w=1", resource_version=start, timeout=1)]
    assert events == [("ADDED", "w2"), ("DELETED", "w2")]
    initial = [(e["type"], e["object"].metadata.name) for e in configmaps.watch(
        namespace="default", label_selector="w=1", timeout=1)]
    assert initial == [("ADDED", "before")]


def test_watch_ends_when_the_server_stops(fake_api_factory, tmp_path):
    server = fake_api_factory(crd_dirs=[])
    client_for_server = dynamic_client(server, tmp_path)
    configmaps = client_for_server.resources.get(api_version="v1", kind="ConfigMap")
    ended = threading.Event()

    def consume():
        try:
            for dummy in configmaps.watch(namespace="default", timeout=60):
                pass
        except Exception:  # noqa: BLE001 - a closed connection is a fine way to end
            pass
        ended.set()
    threading.Thread(target=consume, daemon=True).start()
    time.sleep(0.3)
    started = time.monotonic()
    server.stop()
    assert ended.wait(5) and time.monotonic() - started < 5


def test_pod_log(fake_api, fake_k8s_client):
    pods = fake_k8s_client.resources.get(api_version="v1", kind="Pod")
    pods.create(body={"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "p", "annotations": {
                          "fake.gpu-platform.io/log": "from annotation\n"}},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}},
                namespace="default")
    core = client.CoreV1Api(fake_k8s_client.client)
    assert core.read_namespaced_pod_log("p", "default") == "from annotation\n"
    fake_api.set_pod_log("default", "p", "line1\nline2\n")
    assert core.read_namespaced_pod_log("p", "default", tail_lines=1) == "line2\n"
    assert pods.get(name="p", namespace="default").status.phase == "Running"
