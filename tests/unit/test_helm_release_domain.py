"""The pure plan of a pinned release: request validation, values coalescing, the plan table."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import helm_pinned_release as d
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import records
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

BASE = {
    "release_name": "gpu-operator", "release_namespace": "gpu-operator", "chart_ref": "gpu-operator",
    "chart_repo_url": "https://helm.ngc.nvidia.com/nvidia", "chart_version": "v26.7.0", "release_state": "present",
}


def request(**over):
    params = dict(BASE, **over)
    req = d.build_request(params, over.pop("_local", None))
    req.values = d.merge_values([], params.get("release_values"))
    return req


@pytest.mark.parametrize("ref, url, local, kind, name", [
    ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", None, d.REPO, "gpu-operator"),
    ("oci://ghcr.io/nvidia/charts/gpu-operator", "", None, d.OCI, "gpu-operator"),
    ("oci://127.0.0.1:5000/charts/demo/", "", None, d.OCI, "demo"),
    ("/srv/charts/gpu-operator", "", "dir", d.LOCAL_DIR, ""),
    ("/srv/charts/gpu-operator-v26.7.0.tgz", "", "tgz", d.LOCAL_TGZ, ""),
])
def test_classify(ref, url, local, kind, name):
    source = d.classify_chart(ref, url, local)
    assert (source.kind, source.name) == (kind, name)


@pytest.mark.parametrize("ref, url, field, words", [
    ("", "", "chart_ref", "is required"),
    ("oci://ghcr.io/nvidia/charts/gpu-operator", "https://x", "chart_repo_url", "must not be set"),
    ("oci://ghcr.io", "", "chart_ref", "does not name a registry and a chart"),
    ("oci://ghcr.io/nvidia/gpu-operator:v26.7.0", "", "chart_ref", "carries a tag"),
    ("nvidia/gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "chart_ref", "not a bare chart name"),
    ("gpu-operator", "helm.ngc.nvidia.com/nvidia", "chart_repo_url", "not an http(s) URL"),
    ("nvidia/gpu-operator", "", "chart_ref", "neither an oci:// reference nor an existing local chart"),
])
def test_classify_refusals(ref, url, field, words):
    with pytest.raises(ParamError) as err:
        d.classify_chart(ref, url, None)
    assert err.value.field == field
    assert words in err.value.msg


@pytest.mark.parametrize("over, field, words", [
    ({"chart_version": "latest"}, "chart_version", "not a version"),
    ({"chart_version": ">=26.0.0"}, "chart_version", "not an exact version"),
    ({"chart_version": None}, "chart_version", "is required"),
    ({"release_name": "GPU"}, "release_name", "not a valid Helm release name"),
    ({"release_namespace": "gpu_operator"}, "release_namespace", "not a valid name"),
    ({"namespace_labels": {"a": "b"}}, "namespace_labels", "create_namespace is false"),
    ({"render_format": "kustomize"}, "render_format", "not supported"),
    ({"wait_timeout": "soon"}, "wait_timeout", "not a duration"),
    ({"chart_sha256": "123"}, "chart_sha256", "not a SHA-256"),
    ({"chart_ref": "/c", "chart_repo_url": "", "chart_sha256": "a" * 64, "_local": "dir"}, "chart_sha256", "chart directory"),
    ({"chart_ref": "/c.tgz", "chart_repo_url": "", "render_to": "/tmp/x", "_local": "tgz"}, "chart_ref", "GitOps"),
])
def test_request_refusals(over, field, words):
    local = over.pop("_local", None)
    with pytest.raises(ParamError) as err:
        d.build_request(dict(BASE, **over), local)
    assert err.value.field == field
    assert words in err.value.msg
    assert "Fix:" in err.value.msg


def test_absent_needs_no_chart():
    req = d.build_request({"release_name": "x", "release_namespace": "y", "release_state": "absent"})
    assert req.chart is None and req.state == "absent"


def test_merge_values_helm_coalescing():
    files = [{"driver": {"enabled": True, "version": "580"}, "list": [1, 2]}, {"driver": {"version": "595"}}, None]
    merged = d.merge_values(files, {"list": [3], "toolkit": {"enabled": False}})
    assert merged == {"driver": {"enabled": True, "version": "595"}, "list": [3], "toolkit": {"enabled": False}}


def test_merge_values_refuses_non_mapping():
    with pytest.raises(ParamError, match="values_files: file 2 does not hold a mapping"):
        d.merge_values([{}, ["a"]], {})
    with pytest.raises(ParamError, match="release_values: must be a dictionary"):
        d.merge_values([], "a=b")


@pytest.mark.parametrize("field, name, version", [
    ("gpu-operator-v26.7.0", "gpu-operator", "v26.7.0"),
    ("demo-operator-1.0.0", "demo-operator", "1.0.0"),
    ("my-chart-2-1.0.0-rc.1", "my-chart-2", "1.0.0-rc.1"),
    ("weird", "weird", ""),
])
def test_split_chart_field(field, name, version):
    assert records.split_chart_field(field) == (name, version)


def deployed(status="deployed", chart="gpu-operator-v26.7.0", ns="gpu-operator", name="gpu-operator", revision="3"):
    return {"name": name, "namespace": ns, "chart": chart, "status": status, "revision": revision}


HISTORY_GOOD = [{"revision": 1, "status": "superseded"}, {"revision": 2, "status": "deployed"}, {"revision": 3, "status": "failed"}]


@pytest.mark.parametrize("current, values, history, action, repair, reasons", [
    (None, {}, [], "install", None, ["does not exist"]),
    (deployed(), {}, [], "none", None, []),
    (deployed(chart="gpu-operator-v26.3.3"), {}, [], "upgrade", None, ["version v26.3.3 -> v26.7.0"]),
    (deployed(chart="gpu-operator-26.7.0"), {}, [], "none", None, []),  # leading v is not a difference
    (deployed(), {"driver": {"enabled": False}}, [], "upgrade", None, ["values differ"]),
    (deployed(chart="other-chart-v26.7.0"), {}, [], "upgrade", None, ["chart other-chart -> gpu-operator"]),
    (deployed(status="failed"), {}, HISTORY_GOOD, "repair", "upgrade", ["release is failed"]),
    (deployed(status="failed", revision="1"), {}, [{"revision": 1, "status": "failed"}], "repair", "uninstall", ["release is failed"]),
    (deployed(status="pending-upgrade"), {}, HISTORY_GOOD, "repair", "rollback", ["stuck in pending-upgrade"]),
    (deployed(status="pending-rollback"), {}, HISTORY_GOOD, "repair", "rollback", ["stuck in pending-rollback"]),
    (deployed(status="pending-install", revision="1"), {}, [{"revision": 1, "status": "pending-install"}], "repair", "uninstall", ["no good revision"]),
    (deployed(status="uninstalling"), {}, [], "repair", "uninstall", ["stuck in uninstalling"]),
])
def test_plan_table(current, values, history, action, repair, reasons):
    plan = d.plan_present(request(), current, values, history)
    assert plan.action == action
    assert plan.repair == repair
    for reason in reasons:
        assert any(reason in r for r in plan.reasons), plan.reasons
    if action == "none":
        assert not plan.changed and plan.reasons == []


def test_plan_rollback_target_is_last_good_revision():
    plan = d.plan_present(request(), deployed(status="pending-upgrade"), {}, HISTORY_GOOD)
    assert plan.rollback_to == 2


def test_plan_values_compare_as_helm_stores_them():
    req = request(release_values={"replicas": 2, "ratio": 1.5, "name": "x"})
    plan = d.plan_present(req, deployed(), {"name": "x", "ratio": 1.5, "replicas": 2}, [])
    assert plan.action == "none"
    assert plan.before["values"] == plan.after["values"]


def test_plan_diff_shows_before_and_after():
    req = request(release_values={"driver": {"enabled": False}})
    plan = d.plan_present(req, deployed(chart="gpu-operator-v26.3.3"), {"driver": {"enabled": True}}, [])
    assert plan.before == {"chart": "gpu-operator", "version": "v26.3.3", "status": "deployed", "values": {"driver": {"enabled": True}}}
    assert plan.after == {"chart": "gpu-operator", "version": "v26.7.0", "status": "deployed", "values": {"driver": {"enabled": False}}}


def test_second_release_of_the_same_chart_elsewhere_is_refused():
    releases = [deployed(ns="nvidia-gpu-operator", name="gpu-op"), deployed(chart="other-1.0.0", ns="x", name="y")]
    with pytest.raises(Refusal) as err:
        d.check_other_namespaces(releases, request())
    assert "nvidia-gpu-operator/gpu-op" in err.value.msg
    assert "uninstall it first" in err.value.msg
    assert err.value.details["existing"] == ["nvidia-gpu-operator/gpu-op (gpu-operator-v26.7.0, deployed)"]


def test_same_namespace_release_is_not_a_conflict():
    d.check_other_namespaces([deployed()], request())


def test_plan_absent():
    assert d.plan_absent(None).action == "none"
    plan = d.plan_absent(deployed())
    assert plan.action == "uninstall" and plan.before["version"] == "v26.7.0"


def test_release_summary_from_list_entry_and_release_object():
    req = request()
    assert records.release_summary(req, None) == {"name": "gpu-operator", "namespace": "gpu-operator", "status": "absent"}
    entry = dict(deployed(), app_version="v26.7.0")
    assert records.release_summary(req, entry)["revision"] == 3
    full = {"name": "gpu-operator", "namespace": "gpu-operator", "version": 4, "info": {"status": "deployed"},
            "chart": {"metadata": {"name": "gpu-operator", "version": "v26.7.0", "appVersion": "v26.7.0"}}}
    assert records.release_summary(req, full) == {"name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
                                                  "version": "v26.7.0", "app_version": "v26.7.0", "revision": 4, "status": "deployed"}


def release_secret(name, namespace, version, status, chart="gpu-operator", chart_version="v26.7.0", config=None,
                   gzipped=True, kind="helm.sh/release.v1"):
    """A release Secret as the API returns it in JSON: data.release is base64 of helm's base64 of gzip'd JSON."""
    import base64
    import gzip
    import json
    record = {"name": name, "namespace": namespace, "version": version,
              "info": {"status": status, "last_deployed": "2026-11-24T00:00:00Z"},
              "chart": {"metadata": {"name": chart, "version": chart_version, "appVersion": chart_version}},
              "manifest": "", "config": config}
    raw = json.dumps(record).encode()
    helm_text = base64.b64encode(gzip.compress(raw) if gzipped else raw)
    return {"metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, version), "namespace": namespace,
                         "labels": {"owner": "helm", "name": name, "status": status, "version": str(version)}},
            "type": kind, "data": {"release": base64.b64encode(helm_text).decode()}}


def test_releases_from_secrets_are_helm_list_and_get_values():
    secrets = [
        release_secret("gpu-operator", "gpu-operator", 1, "superseded", chart_version="v25.10.0"),
        release_secret("gpu-operator", "gpu-operator", 2, "deployed", config={"driver": {"enabled": False}}),
        release_secret("kueue", "kueue-system", 1, "failed", chart="kueue", chart_version="0.19.2", gzipped=False),
        release_secret("old", "tools", 3, "superseded", chart="old", chart_version="1.0.0"),
        release_secret("x", "tools", 1, "deployed", kind="Opaque"),
    ]
    entries, values = records.releases_from_secrets(secrets)
    assert entries == [
        {"name": "gpu-operator", "namespace": "gpu-operator", "revision": "2", "status": "deployed",
         "chart": "gpu-operator-v26.7.0", "app_version": "v26.7.0", "updated": "2026-11-24T00:00:00Z"},
        {"name": "kueue", "namespace": "kueue-system", "revision": "1", "status": "failed",
         "chart": "kueue-0.19.2", "app_version": "0.19.2", "updated": "2026-11-24T00:00:00Z"},
    ], "latest revision per release; a release whose latest revision is superseded is not listed, nor a non-release"
    assert values == {("gpu-operator", "gpu-operator"): {"driver": {"enabled": False}}, ("kueue-system", "kueue"): {}}
    # the entries feed the same plan as helm's own JSON
    plan = d.plan_present(request(), records.find_release(entries, "gpu-operator", "gpu-operator"),
                          values[("gpu-operator", "gpu-operator")])
    assert plan.action == "upgrade" and plan.reasons == ["values differ"]


@pytest.mark.parametrize("data", ["not base64!", "aGVsbG8=", ""])
def test_a_release_record_helm_did_not_write_is_refused(data):
    secret = {"metadata": {"name": "sh.helm.release.v1.a.v1", "namespace": "n"}, "type": "helm.sh/release.v1",
              "data": {"release": data}}
    with pytest.raises(records.BadReleaseRecord):
        records.releases_from_secrets([secret])


def test_the_reader_is_helm_for_other_storage_drivers_and_unreadable_records():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import helm_pinned_release as w

    class Kube:
        def __init__(self, secrets):
            self.secrets, self.asked = secrets, []

        def list(self, api_version, kind, namespace=None, label_selector=None):
            self.asked.append((api_version, kind, namespace, label_selector))
            return self.secrets

    helm = object()
    good = Kube([release_secret("gpu-operator", "gpu-operator", 1, "deployed")])
    reader = w.release_reader(helm, lambda: good, environ={})
    assert isinstance(reader, w.SecretReleases) and good.asked == [("v1", "Secret", None, "owner=helm")]
    assert reader.get_values("gpu-operator", "gpu-operator") == {} and reader.list_releases()[0]["revision"] == "1"
    assert w.release_reader(helm, lambda: good, environ={"HELM_DRIVER": "secrets"}) is not helm
    for driver in ("configmap", "sql", "memory"):
        assert w.release_reader(helm, lambda: pytest.fail("not asked"), environ={"HELM_DRIVER": driver}) is helm
    bad = Kube([{"metadata": {"name": "sh.helm.release.v1.a.v1"}, "type": "helm.sh/release.v1",
                 "data": {"release": "aGVsbG8="}}])
    assert w.release_reader(helm, lambda: bad, environ={}) is helm
