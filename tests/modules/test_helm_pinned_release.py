"""helm_pinned_release end to end: real helm 3 and 4, the fake API server, a loopback chart repository.

Every test runs twice (helm3, helm4).
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_check_mode_install_writes_nothing(hm):
    failed, result = hm.run(check_mode=True, diff=True)
    assert not failed, result
    assert result["changed"] and result["action"] == "install"
    assert "version: 1.0.0" in result["diff"]["after"] and result["diff"]["before"] == ""
    assert hm.release_secrets() == []
    assert hm.api.writes() == []
    assert hm.repo.count() == 0, "check mode must not fetch the chart"


def test_install_then_noop_never_touches_the_repository(hm):
    failed, result = hm.run(release_values={"config": {"mode": "fast"}})
    assert not failed, result
    assert result["changed"] and result["action"] == "install"
    assert result["release"]["status"] == "deployed" and result["release"]["revision"] == 1
    assert result["release"]["version"] == "1.0.0" and result["release"]["chart"] == "demo-operator"
    cm = hm.api.store.get("v1", "ConfigMap", "demo-config", "demo")
    assert cm["data"]["mode"] == "fast"

    hm.repo.clear()
    hm.repo.fail_all = True  # any request to the repository would now fail the run
    hm.api.clear_log()
    failed, again = hm.run(release_values={"config": {"mode": "fast"}})
    assert not failed, again
    assert again["changed"] is False and again["action"] == "none"
    assert hm.repo.count() == 0
    assert hm.api.writes() == []
    assert again["commands"] == [], "a converged release is read from its Secret, with no helm process"
    reads = [(e["method"], e["path"], e["query"].get("labelSelector")) for e in hm.api.request_log
             if e["path"].endswith("/secrets")]
    assert reads == [("GET", "/api/v1/secrets", "owner=helm")], "one LIST of every release, as helm list -A"
    assert sorted(hm.releases()) == [1]


def test_another_storage_driver_is_read_through_helm(hm, monkeypatch):
    hm.run()
    monkeypatch.setenv("HELM_DRIVER", "secret")
    failed, result = hm.run()
    assert not failed and result["commands"] == []
    monkeypatch.setenv("HELM_DRIVER", "configmap")
    failed, result = hm.run(check_mode=True)
    assert not failed, result
    assert result["action"] == "install", "helm's configmap storage holds no release yet: helm said so, not the Secrets"
    assert [c.split()[1] for c in result["commands"]] == ["list"]


def test_diff_mode_upgrade_shows_version_and_values(hm):
    hm.run()
    failed, result = hm.run(check_mode=True, diff=True, chart_version="1.1.0",
                            release_values={"config": {"mode": "fast"}})
    assert not failed, result
    assert result["action"] == "upgrade" and result["changed"]
    assert set(result["reasons"]) == {"version 1.0.0 -> 1.1.0", "values differ"}
    assert "version: 1.0.0" in result["diff"]["before"] and "version: 1.1.0" in result["diff"]["after"]
    assert "mode: fast" in result["diff"]["after"] and "mode" not in result["diff"]["before"]
    assert sorted(hm.releases()) == [1], "check mode must not upgrade"


def test_upgrade_version_and_values(hm):
    hm.run()
    failed, result = hm.run(chart_version="1.1.0", release_values={"replicaCount": 2})
    assert not failed, result
    assert result["action"] == "upgrade"
    assert result["release"]["revision"] == 2 and result["release"]["version"] == "1.1.0"
    records = hm.releases()
    assert records[1]["info"]["status"] == "superseded" and records[2]["info"]["status"] == "deployed"
    assert records[2]["config"] == {"replicaCount": 2}
    assert hm.api.store.get("v1", "ConfigMap", "demo-config", "demo")["data"]["chartVersion"] == "1.1.0"
    failed, again = hm.run(chart_version="1.1.0", release_values={"replicaCount": 2})
    assert again["changed"] is False


def test_values_files_and_values_both_count(hm, tmp_path):
    vf = tmp_path / "values.yaml"
    vf.write_text("config:\n  mode: from-file\nreplicaCount: 3\n")
    failed, result = hm.run(values_files=[str(vf)], release_values={"replicaCount": 1})
    assert not failed, result
    assert hm.releases()[1]["config"] == {"config": {"mode": "from-file"}, "replicaCount": 1}
    vf.write_text("config:\n  mode: changed\nreplicaCount: 3\n")
    failed, result = hm.run(check_mode=True, diff=True, values_files=[str(vf)], release_values={"replicaCount": 1})
    assert result["changed"] and result["reasons"] == ["values differ"]
    assert "mode: changed" in result["diff"]["after"]


def test_failure_with_rollback_returns_to_previous_revision(hm, helm_major):
    hm.run()
    failed, result = hm.run(chart_version="1.1.0", release_values={"neverReady": True}, wait=True,
                            atomic=True, wait_timeout="3s")
    assert failed
    assert "rollback on failure was on" in result["msg"]
    flag = "--rollback-on-failure" if helm_major == 4 else "--atomic"
    assert any(flag in c for c in result["commands"])
    records = hm.releases()
    latest = max(records)
    assert records[latest]["info"]["status"] == "deployed"
    assert records[latest]["chart"]["metadata"]["version"] == "1.0.0"
    assert result["release"]["status"] == "deployed" and result["release"]["version"] == "1.0.0"


def test_failed_release_is_repaired(hm):
    failed, result = hm.run(release_values={"neverReady": True}, wait=True, wait_timeout="2s")
    assert failed and result["release"]["status"] == "failed"
    failed, result = hm.run(check_mode=True)
    assert result["changed"] and result["action"] == "repair" and result["repair"] == "uninstall"
    assert "release is failed" in result["reasons"]
    failed, result = hm.run()
    assert not failed, result
    assert result["action"] == "repair" and result["release"]["status"] == "deployed"
    failed, again = hm.run()
    assert again["changed"] is False


def test_failed_upgrade_is_repaired_in_place(hm):
    hm.run()
    failed, result = hm.run(release_values={"neverReady": True}, wait=True, wait_timeout="2s")
    assert failed and result["release"]["status"] == "failed"
    failed, result = hm.run()
    assert not failed, result
    assert result["repair"] == "upgrade" and result["release"]["status"] == "deployed"
    assert result["release"]["revision"] == 3


def test_pending_upgrade_is_rolled_back_then_upgraded(hm):
    hm.run()
    hm.run(chart_version="1.1.0")
    hm.set_release_status(2, "pending-upgrade")
    failed, result = hm.run(chart_version="1.1.0", check_mode=True)
    assert result["action"] == "repair" and result["repair"] == "rollback"
    assert any("pending-upgrade" in r for r in result["reasons"])
    failed, result = hm.run(chart_version="1.1.0")
    assert not failed, result
    assert any(c.split()[1] == "rollback" for c in result["commands"])
    assert result["release"]["status"] == "deployed" and result["release"]["version"] == "1.1.0"
    failed, again = hm.run(chart_version="1.1.0")
    assert again["changed"] is False


def test_pending_install_is_reinstalled(hm):
    hm.run()
    hm.set_release_status(1, "pending-install")
    failed, result = hm.run()
    assert not failed, result
    assert result["repair"] == "uninstall" and result["release"]["status"] == "deployed"


def test_second_release_of_same_chart_in_another_namespace_is_refused(hm):
    hm.run(release_name="first", release_namespace="team-a")
    hm.api.clear_log()
    failed, result = hm.run(release_name="second", release_namespace="team-b")
    assert failed
    assert "team-a/first" in result["msg"] and "uninstall it first" in result["msg"]
    assert hm.api.writes() == []
    assert hm.release_secrets("second", "team-b") == []


def test_state_absent(hm):
    hm.run()
    failed, result = hm.run(state="absent", check_mode=True)
    assert result["changed"] and result["action"] == "uninstall"
    assert hm.release_secrets() != []
    failed, result = hm.run(state="absent")
    assert not failed and result["changed"]
    assert hm.release_secrets() == []
    assert hm.api.store.get("v1", "ConfigMap", "demo-config", "demo") is None
    failed, again = hm.run(state="absent")
    assert again["changed"] is False and again["action"] == "none"


def test_namespace_created_with_labels_and_check_mode_uses_dry_run(hm):
    labels = {"pod-security.kubernetes.io/enforce": "privileged"}
    failed, result = hm.run(release_namespace="gpu", create_namespace=True, namespace_labels=labels, check_mode=True)
    assert not failed, result
    assert result["namespace"]["changed"] and hm.api.store.get("v1", "Namespace", "gpu") is None
    failed, result = hm.run(release_namespace="gpu", create_namespace=True, namespace_labels=labels)
    assert not failed, result
    ns = hm.api.store.get("v1", "Namespace", "gpu")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    failed, again = hm.run(release_namespace="gpu", create_namespace=True, namespace_labels=labels)
    assert again["changed"] is False and again["namespace"]["changed"] is False


def test_existing_namespace_gets_missing_label(hm):
    hm.api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu", "labels": {"team": "ml"}}})
    failed, result = hm.run(release_namespace="gpu", create_namespace=True,
                            namespace_labels={"pod-security.kubernetes.io/enforce": "privileged"})
    assert not failed, result
    labels = hm.api.store.get("v1", "Namespace", "gpu")["metadata"]["labels"]
    assert labels["team"] == "ml" and labels["pod-security.kubernetes.io/enforce"] == "privileged"


def test_chart_sha256_good_and_bad(hm):
    good = hm.repo.digest("demo-operator", "1.0.0")
    failed, result = hm.run(chart_sha256=good)
    assert not failed, result
    assert any(c.split()[1] == "pull" for c in result["commands"])
    hm.repo.tamper("demo-operator", "1.1.0")
    failed, result = hm.run(chart_version="1.1.0", chart_sha256=hm.repo.digest("demo-operator", "1.1.0"))
    assert failed and result["msg"].startswith("chart_sha256: the archive of demo-operator 1.1.0 has sha256")
    assert sorted(hm.releases()) == [1], "nothing installed after a digest mismatch"


def test_oci_chart(hm, oci_registry):
    failed, result = hm.run(chart_ref=oci_registry.oci_ref("demo-operator"), chart_repo_url=None, plain_http=True)
    assert not failed, result
    assert result["release"]["version"] == "1.0.0"
    failed, again = hm.run(chart_ref=oci_registry.oci_ref("demo-operator"), chart_repo_url=None, plain_http=True)
    assert again["changed"] is False


def test_local_directory_and_archive(hm, fixture_charts):
    from local_gpu_cluster.charts import DEMO_CHART_DIR
    failed, result = hm.run(chart_ref=str(DEMO_CHART_DIR), chart_repo_url=None)
    assert not failed, result
    assert result["release"]["version"] == "1.0.0"
    failed, result = hm.run(chart_ref=str(fixture_charts["1.1.0"]), chart_repo_url=None, chart_version="1.1.0")
    assert not failed and result["action"] == "upgrade"
    failed, result = hm.run(chart_ref=str(fixture_charts["2.0.0"]), chart_repo_url=None, chart_version="1.1.0")
    assert failed and "chart_version: is 1.1.0 but the local chart" in result["msg"]


@pytest.mark.parametrize("over, words", [
    ({"chart_version": "latest"}, "chart_version: 'latest' is not a version"),
    ({"chart_version": "^1.0.0"}, "chart_version: '^1.0.0' is not an exact version"),
    ({"chart_version": ""}, "chart_version: is required and empty"),
    ({"chart_ref": "stable/demo-operator"}, "chart_ref: 'stable/demo-operator' is not a bare chart name"),
    ({"release_namespace": "Demo"}, "release_namespace:"),
    ({"namespace_labels": {"a": "b"}}, "namespace_labels: is set but create_namespace is false"),
    ({"wait_timeout": "ten"}, "wait_timeout: 'ten' is not a duration"),
    ({"values_files": ["/nonexistent/values.yaml"]}, "values_files: cannot read /nonexistent/values.yaml"),
])
def test_bad_input_fails_before_anything_runs(hm, over, words):
    failed, result = hm.run(**over)
    assert failed
    assert result["msg"].startswith(words), result["msg"]
    assert "Fix:" in result["msg"]
    assert hm.api.request_log == [] and hm.repo.count() == 0


def test_missing_namespace_without_create_namespace_fails_clearly(hm):
    failed, result = hm.run(release_namespace="nowhere")
    assert failed
    assert result["msg"].startswith("helm upgrade failed")
    assert 'namespaces "nowhere" not found' in result["msg"]
    assert result["release"]["status"] == "absent"


def test_pending_upgrade_whose_good_revision_is_desired_needs_no_upgrade(hm):
    hm.run()
    hm.run(chart_version="1.1.0")
    hm.set_release_status(2, "pending-upgrade")
    failed, result = hm.run(chart_version="1.0.0")
    assert not failed, result
    assert result["repair"] == "rollback"
    assert [c.split()[1] for c in result["commands"]].count("upgrade") == 0
    assert result["release"]["version"] == "1.0.0" and result["release"]["status"] == "deployed"
    assert result["release"]["revision"] == 3
