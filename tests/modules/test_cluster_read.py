"""cluster_read on the fake cluster: the server's version, objects by name or by selectors, an unserved kind, and
bad options; nothing is ever written."""
from __future__ import annotations

import pytest

from local_gpu_cluster.gpu_operator import gpu_node
from tests.modules.harness import run_module


@pytest.fixture
def api(fake_api_factory):
    server = fake_api_factory(git_version="v1.35.8")
    for index, pool in enumerate(("training", "training", "inference"), start=1):
        node = gpu_node("gpu-node-%d" % index)
        node["metadata"]["labels"]["nodepool"] = pool
        server.store.create(node)
    server.clear_log()
    return server


def read(api, check_mode=False, **params):
    params.setdefault("kubeconfig", str(api.kubeconfig))
    return run_module("cluster_read", params, check_mode=check_mode)


def names(result):
    return sorted(obj["metadata"]["name"] for obj in result["resources"])


def test_the_version_in_k8s_cluster_infos_shape(api):
    failed, result = read(api, version=True)
    assert not failed, result.get("msg")
    assert result["version"]["server"]["kubernetes"]["gitVersion"] == "v1.35.8"
    assert "resources" not in result and result["changed"] is False


def test_a_list_with_selectors_is_one_request_and_writes_nothing(api):
    failed, result = read(api, kind="Node", label_selectors=["nodepool=training", "nvidia.com/gpu.present=true"])
    assert not failed, result.get("msg")
    assert names(result) == ["gpu-node-1", "gpu-node-2"] and result["api_found"] is True
    lists = [e for e in api.request_log if e["method"] == "GET" and e["path"] == "/api/v1/nodes"]
    assert len(lists) == 1 and "labelSelector" in lists[0]["query"]
    assert api.writes() == []


def test_one_object_by_name_and_a_missing_one(api):
    assert names(read(api, kind="Node", name="gpu-node-3")[1]) == ["gpu-node-3"]
    assert read(api, kind="Node", name="no-such-node")[1]["resources"] == []


def test_version_and_objects_in_one_run_and_check_mode_reads_the_same(api):
    normal = read(api, version=True, kind="Node")[1]
    checked = read(api, check_mode=True, version=True, kind="Node")[1]
    assert normal == checked and len(normal["resources"]) == 3


def test_a_kind_the_cluster_does_not_serve_is_an_empty_answer(api):
    failed, result = read(api, api_version="example.com/v1", kind="Widget")
    assert not failed and result["api_found"] is False and result["resources"] == []


def test_a_list_answered_404_is_a_kind_no_longer_served(api):
    # the discovery cache still names the kind; its CRD was deleted since (an uninstall run again)
    api.inject("GET", "/apis/nvidia.com/v1/clusterpolicies$", {"status": 404})
    failed, result = read(api, api_version="nvidia.com/v1", kind="ClusterPolicy")
    assert not failed, result.get("msg")
    assert result["api_found"] is False and result["resources"] == []


def test_other_errors_of_a_list_fail_with_the_apis_answer(api):
    api.inject("GET", "/api/v1/nodes$", *[{"status": 403}])
    failed, result = read(api, kind="Node")
    assert failed and result["msg"].startswith("list Node failed: 403")


@pytest.mark.parametrize("params, message", [
    ({}, "kind: is not set and version and helm_releases are false, so there is nothing to read. Fix: give the kind"),
    ({"kind": "Node", "name": "a", "label_selectors": ["x=y"]}, "name: is set together with selectors"),
])
def test_bad_options_name_the_field_and_nothing_is_read(api, params, message):
    failed, result = read(api, **params)
    assert failed and result["msg"].startswith(message)
    assert api.request_log == []


def _release_secret(name, namespace, chart, version, revision, status, values):
    import base64
    import gzip
    import json
    record = {"name": name, "namespace": namespace, "version": revision, "info": {"status": status},
              "chart": {"metadata": {"name": chart, "version": version, "appVersion": version}}, "config": values}
    inner = base64.b64encode(gzip.compress(json.dumps(record).encode())).decode()
    return {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, revision), "namespace": namespace,
                         "labels": {"owner": "helm", "name": name, "status": status, "version": str(revision)}},
            "data": {"release": base64.b64encode(inner.encode()).decode()}}


def test_helm_releases_are_what_helm_list_shows_without_their_values(api):
    """The latest revision of each release, from helm's Secrets; a release's values (a password here) never."""
    for secret in (_release_secret("gpu-operator", "gpu-operator", "gpu-operator", "v26.3.3", 1, "superseded", {}),
                   _release_secret("gpu-operator", "gpu-operator", "gpu-operator", "v26.7.0", 2, "deployed",
                                   {"registry": {"password": "s3cret"}}),
                   _release_secret("kai-scheduler", "kai-scheduler", "kai-scheduler", "v0.13.0", 1, "deployed", {})):
        api.store.create(secret)
    api.clear_log()
    failed, result = read(api, helm_releases=True)
    assert not failed, result.get("msg")
    assert [(r["namespace"], r["name"], r["chart"], r["status"]) for r in result["helm_releases"]] == [
        ("gpu-operator", "gpu-operator", "gpu-operator-v26.7.0", "deployed"),
        ("kai-scheduler", "kai-scheduler", "kai-scheduler-v0.13.0", "deployed")]
    assert "s3cret" not in repr(result) and "resources" not in result
    assert api.writes() == []
    lists = [e for e in api.request_log if e["method"] == "GET" and e["path"] == "/api/v1/secrets"]
    assert len(lists) == 1 and "owner=helm" in str(lists[0]["query"])
