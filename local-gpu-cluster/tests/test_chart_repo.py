"""Tests of the fixture chart packaging and the fake HTTP chart repository, driven by real helm 3 and 4."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.chart_repo import ChartRepoServer, http_request
from local_gpu_cluster.charts import (
    DEMO_CHART_DIR,
    chart_metadata,
    chart_sha256,
    package_chart,
    run_helm,
    tampered_archive_bytes,
)
from local_gpu_cluster.charts import helm_env as make_helm_env

CHART = "demo-operator"


def _pull(helm_bin, repo, version, dest, env):
    dest.mkdir()  # helm pull does not create --destination
    run_helm(helm_bin, ["pull", CHART, "--repo", repo.url, "--version", version, "--destination", dest], env)
    (archive,) = dest.glob("*.tgz")
    return archive


def _rendered(helm_bin, env, *source_args):
    proc = run_helm(helm_bin, ["template", "rel", *source_args], env)
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(proc.stdout) if d}


# -- packaging ---------------------------------------------------------------------------

def test_fixture_charts_are_packaged_at_the_requested_versions(fixture_charts):
    assert sorted(fixture_charts) == ["1.0.0", "1.1.0", "2.0.0"]
    for version, tgz in fixture_charts.items():
        meta = chart_metadata(tgz)
        assert (meta["name"], meta["version"]) == (CHART, version)
        assert tgz.name == f"{CHART}-{version}.tgz"


def test_chart_cache_packages_each_version_once(chart_cache, fixture_charts):
    before = len(chart_cache)
    again = chart_cache.get(DEMO_CHART_DIR, version="1.1.0")
    assert again == fixture_charts["1.1.0"]
    assert chart_sha256(again) == chart_sha256(fixture_charts["1.1.0"])
    assert len(chart_cache) == before


def test_package_chart_overrides_app_version(tmp_path):
    tgz = package_chart(DEMO_CHART_DIR, tmp_path, version="0.9.0", app_version="9.9.9")
    meta = chart_metadata(tgz)
    assert (meta["version"], meta["appVersion"]) == ("0.9.0", "9.9.9")


def test_package_chart_reports_helm_failure(tmp_path):
    with pytest.raises(RuntimeError, match="helm package"):
        package_chart(tmp_path / "no-such-chart", tmp_path / "out")


def test_helm_env_is_hermetic(tmp_path):
    outer = {"PATH": "/usr/bin", "HELM_BIN": "helm3", "KUBECONFIG": "/real/kubeconfig",
             "HELM_NAMESPACE": "prod", "HELM_REPOSITORY_CONFIG": "/real/repositories.yaml", "HOME": "/root"}
    env = make_helm_env(tmp_path, outer)
    assert env["PATH"] == "/usr/bin" and env["HELM_BIN"] == "helm3"
    assert not {"KUBECONFIG", "HELM_NAMESPACE", "HELM_REPOSITORY_CONFIG"} & set(env)
    for name in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                 "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        assert Path(env[name]).is_dir() and tmp_path in Path(env[name]).parents


def test_tampered_archive_is_a_valid_chart_with_other_bytes(fixture_charts):
    original = fixture_charts["1.0.0"]
    tampered = tampered_archive_bytes(original)
    assert chart_metadata(tampered) == chart_metadata(original)
    assert tampered != original.read_bytes()


# -- index.yaml and the HTTP surface -----------------------------------------------------

def test_index_lists_every_chart_with_its_digest(chart_repo, fixture_charts):
    status, headers, body = http_request("GET", f"{chart_repo.url}/index.yaml")
    assert status == 200
    index = yaml.safe_load(body)
    assert index["apiVersion"] == "v1"
    entries = index["entries"][CHART]
    assert [e["version"] for e in entries] == ["2.0.0", "1.1.0", "1.0.0"]
    for entry in entries:
        tgz = fixture_charts[entry["version"]]
        assert entry["name"] == CHART
        assert entry["appVersion"] == "1.0.0"
        assert entry["apiVersion"] == "v2"  # helm skips index entries without it
        assert entry["digest"] == chart_sha256(tgz)
        assert entry["urls"] == [f"charts/{tgz.name}"]
        assert entry["created"].endswith("Z")
        status, dummy, data = http_request("GET", f"{chart_repo.url}/{entry['urls'][0]}")
        assert status == 200 and data == tgz.read_bytes()


def test_unknown_paths_and_methods_are_refused(chart_repo):
    assert http_request("GET", f"{chart_repo.url}/charts/nope-1.0.0.tgz")[0] == 404
    assert http_request("GET", f"{chart_repo.url}/other")[0] == 404
    assert http_request("POST", f"{chart_repo.url}/index.yaml", body=b"x")[0] == 405


def test_head_returns_length_without_body(chart_repo, fixture_charts):
    status, headers, body = http_request("HEAD", chart_repo.chart_url(CHART, "1.0.0"))
    assert status == 200 and body == b""
    assert int(headers["content-length"]) == fixture_charts["1.0.0"].stat().st_size


def test_request_log_counts_and_clears(chart_repo):
    http_request("GET", f"{chart_repo.url}/index.yaml")
    http_request("HEAD", f"{chart_repo.url}/index.yaml")
    http_request("GET", chart_repo.chart_url(CHART, "2.0.0"))
    assert chart_repo.requests == [("GET", "/index.yaml"), ("HEAD", "/index.yaml"),
                                   ("GET", f"/charts/{CHART}-2.0.0.tgz")]
    assert chart_repo.count() == 3
    assert chart_repo.count("/index.yaml") == 2
    assert chart_repo.count("/index.yaml", method="GET") == 1
    assert chart_repo.count("/charts/") == 1
    chart_repo.clear()
    assert chart_repo.requests == [] and chart_repo.count() == 0


def test_add_and_remove_chart_update_the_index(chart_repo, chart_cache):
    tgz = chart_cache.get(DEMO_CHART_DIR, version="3.0.0")
    entry = chart_repo.add_chart(tgz)
    assert entry["version"] == "3.0.0" and entry["digest"] == chart_sha256(tgz)
    served = yaml.safe_load(http_request("GET", f"{chart_repo.url}/index.yaml")[2])
    assert served["entries"][CHART][0]["version"] == "3.0.0"
    chart_repo.remove_chart(CHART, "3.0.0")
    served = yaml.safe_load(http_request("GET", f"{chart_repo.url}/index.yaml")[2])
    assert "3.0.0" not in [e["version"] for e in served["entries"][CHART]]
    assert http_request("GET", f"{chart_repo.url}/charts/{tgz.name}")[0] == 404


def test_empty_repository_serves_an_empty_index():
    with ChartRepoServer() as repo:
        index = yaml.safe_load(http_request("GET", f"{repo.url}/index.yaml")[2])
    assert index["apiVersion"] == "v1" and index["entries"] == {}


def test_stop_releases_the_port(fixture_charts):
    repo = ChartRepoServer([fixture_charts["1.0.0"]]).start()
    port = repo.port
    assert http_request("GET", f"{repo.url}/index.yaml")[0] == 200
    repo.stop()
    repo.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_fail_all_answers_503_but_logs(chart_repo):
    chart_repo.fail_all = True
    assert http_request("GET", f"{chart_repo.url}/index.yaml")[0] == 503
    assert chart_repo.count("/index.yaml") == 1
    chart_repo.fail_all = False
    assert http_request("GET", f"{chart_repo.url}/index.yaml")[0] == 200


# -- real helm ---------------------------------------------------------------------------

def test_helm_pull_gets_the_indexed_archive(helm_bin, chart_repo, helm_env, tmp_path):
    archive = _pull(helm_bin, chart_repo, "1.1.0", tmp_path / "pulled", helm_env)
    assert chart_sha256(archive) == chart_repo.digest(CHART, "1.1.0")
    assert chart_repo.requests == [("GET", "/index.yaml"), ("GET", f"/charts/{CHART}-1.1.0.tgz")]


def test_helm_show_chart(helm_bin, chart_repo, helm_env):
    proc = run_helm(helm_bin, ["show", "chart", CHART, "--repo", chart_repo.url, "--version", "2.0.0"], helm_env)
    meta = yaml.safe_load(proc.stdout)
    assert (meta["name"], meta["version"]) == (CHART, "2.0.0")


def test_helm_template_from_repo_and_repo_flag_refetches_index(helm_bin, chart_repo, helm_env):
    for dummy in range(2):
        objs = _rendered(helm_bin, helm_env, CHART, "--repo", chart_repo.url, "--version", "1.1.0")
        assert objs[("ConfigMap", "rel-config")]["data"]["chartVersion"] == "1.1.0"
    # `--repo URL` downloads index.yaml and the archive on every invocation (helm 3 and 4).
    assert chart_repo.count("/index.yaml") == 2
    assert chart_repo.count("/charts/") == 2


def test_helm_repo_add_caches_the_index(helm_bin, chart_repo, helm_env):
    run_helm(helm_bin, ["repo", "add", "fake", chart_repo.url], helm_env)
    assert chart_repo.count("/index.yaml") == 1
    objs = _rendered(helm_bin, helm_env, "fake/" + CHART, "--version", "2.0.0")
    assert objs[("ConfigMap", "rel-config")]["data"]["chartVersion"] == "2.0.0"
    assert chart_repo.count("/index.yaml") == 1  # served from $HELM_CACHE_HOME, not re-fetched


def test_helm_env_keeps_helm_state_in_tmp(helm_bin, chart_repo, helm_env):
    run_helm(helm_bin, ["repo", "add", "fake", chart_repo.url], helm_env)
    assert list(Path(helm_env["HELM_CACHE_HOME"]).rglob("fake-index.yaml"))
    assert (Path(helm_env["HELM_CONFIG_HOME"]) / "repositories.yaml").is_file()
    assert not (Path(helm_env["HOME"]) / ".cache" / "helm").exists()


def test_tamper_serves_bytes_that_do_not_match_the_index(helm_bin, chart_repo, helm_env, tmp_path):
    chart_repo.tamper(CHART, "1.1.0")
    archive = _pull(helm_bin, chart_repo, "1.1.0", tmp_path / "tampered", helm_env)
    # helm itself does not check the index digest: the pulled chart is valid but different.
    assert chart_sha256(archive) != chart_repo.digest(CHART, "1.1.0")
    assert yaml.safe_load(http_request("GET", f"{chart_repo.url}/index.yaml")[2])["entries"][CHART][1]["digest"] \
        == chart_repo.digest(CHART, "1.1.0")
    values = run_helm(helm_bin, ["show", "values", archive], helm_env).stdout
    assert yaml.safe_load(values)["tampered"] is True
    # Other versions are untouched, and untamper restores the genuine archive.
    assert chart_sha256(_pull(helm_bin, chart_repo, "1.0.0", tmp_path / "other", helm_env)) \
        == chart_repo.digest(CHART, "1.0.0")
    chart_repo.untamper(CHART, "1.1.0")
    assert chart_sha256(_pull(helm_bin, chart_repo, "1.1.0", tmp_path / "genuine", helm_env)) \
        == chart_repo.digest(CHART, "1.1.0")


def test_tamper_with_explicit_bytes(chart_repo):
    chart_repo.tamper(CHART, "2.0.0", data=b"not a chart")
    assert http_request("GET", chart_repo.chart_url(CHART, "2.0.0"))[2] == b"not a chart"
    with pytest.raises(KeyError, match="9.9.9"):
        chart_repo.tamper(CHART, "9.9.9")


def test_fail_all_makes_helm_fail(helm_bin, chart_repo, helm_env):
    chart_repo.fail_all = True
    proc = run_helm(helm_bin, ["template", "rel", CHART, "--repo", chart_repo.url, "--version", "1.0.0"],
                    helm_env, check=False)
    assert proc.returncode != 0
    assert "503" in proc.stderr
    assert chart_repo.count("/index.yaml") == 1
    assert chart_repo.count("/charts/") == 0
