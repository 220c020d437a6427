"""manifests, run in-process against a cluster: check, diff, apply, idempotence, a change, absent, and an
object the API server rejects.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
from tests.integration.modules_cluster_helpers import ok, run


# ---------------------------------------------------------------------------------------------- manifests

def namespaced_objects(ns, gpus="8"):
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns},
         "data": {"gpus": gpus}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "smoke-runner", "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader", "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]},
    ]


def manifests_present(cluster):
    ns = cluster.namespace
    return {"ConfigMap": cluster.get("v1", "ConfigMap", "settings", ns),
            "ServiceAccount": cluster.get("v1", "ServiceAccount", "smoke-runner", ns),
            "Role": cluster.get("rbac.authorization.k8s.io/v1", "Role", "pod-reader", ns)}


def test_manifests_check_diff_apply_idempotence_change_and_absent(cluster):
    ns = cluster.namespace
    objects = namespaced_objects(ns)
    identities = ["ConfigMap %s/settings" % ns, "ServiceAccount %s/smoke-runner" % ns, "Role %s/pod-reader" % ns]

    # check mode + diff: every object would be created, each with an empty before; nothing is written
    checked = ok(run(cluster, "manifests", {"objects": objects}, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["changed_objects"] == identities
    assert [d["before_header"] for d in checked["diff"]] == identities
    assert all(d["before"] == "" and d["after"] for d in checked["diff"])
    assert "gpus: '8'" in checked["diff"][0]["after"] and "pods/log" in checked["diff"][2]["after"]
    assert manifests_present(cluster) == {"ConfigMap": None, "ServiceAccount": None, "Role": None}

    # apply
    applied = ok(run(cluster, "manifests", {"objects": objects}))
    assert applied["changed"] is True and applied["changed_objects"] == identities
    assert applied["objects"] == ["configmap-%s-settings" % ns, "serviceaccount-%s-smoke-runner" % ns,
                                  "role-%s-pod-reader" % ns]
    found = manifests_present(cluster)
    assert found["ConfigMap"]["data"] == {"gpus": "8"}
    assert found["ServiceAccount"] is not None
    assert found["Role"]["rules"][0]["resources"] == ["pods", "pods/log"]
    versions = {kind: obj["metadata"]["resourceVersion"] for kind, obj in found.items()}

    # the same objects again: nothing to do, nothing written
    again = ok(run(cluster, "manifests", {"objects": objects}, diff=True))
    assert again["changed"] is False and again["changed_objects"] == [] and again["diff"] == []
    assert {kind: obj["metadata"]["resourceVersion"] for kind, obj in manifests_present(cluster).items()} == versions

    # one field changed: only that object, with its before and after
    changed_objects = namespaced_objects(ns, gpus="16")
    preview = ok(run(cluster, "manifests", {"objects": changed_objects}, check_mode=True, diff=True))
    assert preview["changed_objects"] == ["ConfigMap %s/settings" % ns]
    assert cluster.get("v1", "ConfigMap", "settings", ns)["data"] == {"gpus": "8"}, "check mode wrote"
    changed = ok(run(cluster, "manifests", {"objects": changed_objects}, diff=True))
    assert changed["changed"] is True and changed["changed_objects"] == ["ConfigMap %s/settings" % ns]
    (diff,) = changed["diff"]
    assert "gpus: '8'" in diff["before"] and "gpus: '16'" in diff["after"]
    assert cluster.get("v1", "ConfigMap", "settings", ns)["data"] == {"gpus": "16"}
    assert cluster.get("v1", "ServiceAccount", "smoke-runner", ns)["metadata"]["resourceVersion"] == \
        versions["ServiceAccount"]

    # absent: check mode removes nothing; then everything goes, in reverse order; then nothing to do
    would = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}, check_mode=True))
    assert would["changed"] is True
    assert all(obj is not None for obj in manifests_present(cluster).values()), "check mode deleted"
    removed = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}))
    assert removed["changed"] is True
    assert removed["removed"] == ["role-%s-pod-reader.yaml" % ns, "serviceaccount-%s-smoke-runner.yaml" % ns,
                                  "configmap-%s-settings.yaml" % ns]
    assert manifests_present(cluster) == {"ConfigMap": None, "ServiceAccount": None, "Role": None}
    gone = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}))
    assert gone["changed"] is False and gone["removed"] == []


def test_manifests_refuses_an_object_the_api_server_rejects(cluster):
    """The API server's validation, not the module's (which checks names and kinds itself): a label value with a
    space is invalid (422) on any server, and the error reaches the task also in check mode (server-side dry-run)."""
    bad = [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad-label", "namespace": cluster.namespace, "labels": {"tier": "not a value"}},
            "data": {"gpus": "8"}}]
    for check_mode in (True, False):
        failed, result = run(cluster, "manifests", {"objects": bad}, check_mode=check_mode)
        assert failed and "422" in result["msg"] and "bad-label" in result["msg"], result
    assert "bad-label" not in cluster.names("v1", "ConfigMap", cluster.namespace)
