"""Fidelity: the pods/eviction subresource (policy/v1 Eviction), over HTTP and with real kubectl drain."""

import json
import urllib.error
import urllib.request

import pytest

from local_gpu_cluster import node_pods
from local_gpu_cluster.helpers import binary, run


def post(server, path, body, query=""):
    """(code, decoded Status) of a POST to the fake."""
    request = urllib.request.Request(server.url + path + query, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def eviction(name, namespace="default", dry_run=False, uid=None):
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
    options = {}
    if dry_run:
        options["dryRun"] = ["All"]
    if uid:
        options["preconditions"] = {"uid": uid}
    if options:
        body["deleteOptions"] = options
    return body


def evict(server, name, namespace="default", query="", **kwargs):
    return post(server, f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", eviction(name, namespace, **kwargs),
                query)


@pytest.fixture
def web(fake_api):
    """Three pods of one ReplicaSet on node gpu-1."""
    store = fake_api.store
    store.create(node_pods.node("gpu-1"))
    owner = node_pods.controller(store, "ReplicaSet", "web")
    for i in range(3):
        node_pods.pod(store, f"web-{i}", "gpu-1", owner=owner)
    return fake_api


def test_discovery_advertises_eviction_as_kubectl_looks_for_it(fake_k8s_client):
    pods = fake_k8s_client.resources.get(api_version="v1", kind="Pod")
    sub = pods.subresources["eviction"]
    assert sub.kind == "Eviction" and sub.verbs == ["create"]
    assert sub.extra_args == {"group": "policy", "version": "v1", "singularName": ""}


def test_eviction_deletes_the_pod_and_answers_201(web):
    code, body = evict(web, "web-0")
    assert code == 201
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    assert web.store.get("v1", "Pod", "web-0") is None
    assert node_pods.pods_on(web.store, "gpu-1") == ["default/web-1", "default/web-2"]


def test_eviction_of_a_missing_pod_is_404(web):
    code, body = evict(web, "ghost")
    assert code == 404 and body["reason"] == "NotFound" and body["message"] == 'pods "ghost" not found'


def test_eviction_body_must_name_the_pod_of_the_url(web):
    code, body = post(web, "/api/v1/namespaces/default/pods/web-0/eviction", eviction("web-1"))
    assert code == 400 and "does not match" in body["message"]
    code, body = post(web, "/api/v1/namespaces/default/pods/web-0/eviction", {"apiVersion": "v1", "kind": "Pod"})
    assert code == 400
    assert web.store.get("v1", "Pod", "web-0") is not None


def test_uid_precondition(web):
    code, dummy = evict(web, "web-0", uid="another-uid")
    assert code == 409
    assert evict(web, "web-0", uid=web.store.get("v1", "Pod", "web-0")["metadata"]["uid"])[0] == 201


@pytest.mark.parametrize("spec", [{"max_unavailable": 0}, {"min_available": 3}, {"min_available": "100%"},
                                  {"max_unavailable": "0%"}])
def test_a_budget_that_allows_no_disruption_answers_429(web, spec):
    node_pods.pdb(web.store, "web-pdb", {"app": "web"}, **spec)
    code, body = evict(web, "web-0")
    assert code == 429
    assert body["reason"] == "TooManyRequests" and body["status"] == "Failure" and body["code"] == 429
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget", "message": "The disruption budget web-pdb "
                                          "needs 3 healthy pods and has 3 currently"}]
    assert web.store.get("v1", "Pod", "web-0") is not None


def test_a_budget_allows_evictions_until_it_is_spent(web):
    node_pods.pdb(web.store, "web-pdb", {"app": "web"}, min_available=2)
    assert evict(web, "web-0")[0] == 201
    code, body = evict(web, "web-1")
    assert code == 429 and "needs 2 healthy pods and has 2 currently" in body["details"]["causes"][0]["message"]
    web.store.delete("policy/v1", "PodDisruptionBudget", "web-pdb")
    assert evict(web, "web-1")[0] == 201


def test_a_budget_of_other_pods_or_namespaces_does_not_apply(web):
    node_pods.pdb(web.store, "db-pdb", {"app": "db"}, max_unavailable=0)
    node_pods.pdb(web.store, "web-pdb", {"app": "web"}, max_unavailable=0, namespace="kube-system")
    assert evict(web, "web-0")[0] == 201


def test_two_budgets_for_one_pod_are_refused_as_upstream_does(web):
    node_pods.pdb(web.store, "a", {"app": "web"}, max_unavailable=1)
    node_pods.pdb(web.store, "b", {"app": "web"}, max_unavailable=1)
    code, body = evict(web, "web-0")
    assert code == 500 and "more than one PodDisruptionBudget" in body["message"]


def test_finished_pods_are_evicted_without_asking_the_budget(web):
    node_pods.pdb(web.store, "all", {}, max_unavailable=0)
    node_pods.pod(web.store, "done", "gpu-1", phase="Succeeded")
    assert evict(web, "done")[0] == 201
    assert evict(web, "web-0")[0] == 429, "an empty selector selects every pod of the namespace"


@pytest.mark.parametrize("how", ["query", "body"])
def test_dry_run_checks_and_deletes_nothing(web, how):
    options = {"query": "?dryRun=All"} if how == "query" else {"dry_run": True}
    assert evict(web, "web-0", **options)[0] == 201
    assert web.store.get("v1", "Pod", "web-0") is not None
    node_pods.pdb(web.store, "web-pdb", {"app": "web"}, max_unavailable=0)
    assert evict(web, "web-0", **options)[0] == 429


def test_a_pod_with_finalizers_is_only_marked_terminating(web):
    store = web.store
    node_pods.pod(store, "held", "gpu-1", finalizers=["example.com/hold"])
    assert evict(web, "held")[0] == 201
    held = store.get("v1", "Pod", "held")
    assert held["metadata"]["deletionTimestamp"]
    assert evict(web, "held")[0] == 201, "evicting a terminating pod again is accepted"
    node_pods.release_finalizers(store, "held")
    assert store.get("v1", "Pod", "held") is None


@pytest.fixture(params=["kubectl", "kubectl-1.33"])
def kubectl(request, fake_api):
    return binary(request.param)


def test_kubectl_drain_uses_the_eviction_api(web, kubectl):
    store = web.store
    node_pods.pod(store, "agent", "gpu-1", owner=node_pods.controller(store, "DaemonSet", "agent"))
    node_pods.pod(store, "elsewhere", "gpu-2", owner=node_pods.controller(store, "ReplicaSet", "other"))
    web.clear_log()
    result = run([kubectl, "drain", "gpu-1", "--ignore-daemonsets", "--timeout=30s"])
    assert "node/gpu-1 cordoned" in result.stdout and "node/gpu-1 drained" in result.stdout
    assert "pod/web-0 evicted" in result.stdout
    evictions = [e for e in web.request_log if e["method"] == "POST"]
    assert sorted((e["path"], e["code"]) for e in evictions) == [  # kubectl evicts concurrently
        (f"/api/v1/namespaces/default/pods/web-{i}/eviction", 201) for i in range(3)]
    assert not [e for e in web.request_log if e["method"] == "DELETE"], "no fallback to plain deletes"
    assert store.get("v1", "Node", "gpu-1")["spec"]["unschedulable"] is True
    assert node_pods.pods_on(store, "gpu-1") == ["default/agent"]
    assert node_pods.pods_on(store, "gpu-2") == ["default/elsewhere"]
    run([kubectl, "uncordon", "gpu-1"])
    assert not store.get("v1", "Node", "gpu-1")["spec"].get("unschedulable")


def test_kubectl_drain_retries_a_budget_and_times_out(web):
    node_pods.pdb(web.store, "web-pdb", {"app": "web"}, max_unavailable=0)
    result = run([binary("kubectl"), "drain", "gpu-1", "--timeout=1s"], check=False)
    assert result.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in result.stderr
    assert len(node_pods.pods_on(web.store, "gpu-1")) == 3
