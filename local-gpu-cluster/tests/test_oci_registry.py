"""Tests of the fake OCI registry: the distribution API by hand, then real helm 3 and 4 over plain HTTP."""

from __future__ import annotations

import hashlib
import json

import yaml

from local_gpu_cluster.chart_repo import http_request
from local_gpu_cluster.charts import DEMO_CHART_DIR, chart_sha256, run_helm
from local_gpu_cluster.oci_registry import (
    HELM_CHART_LAYER_MEDIA_TYPE,
    HELM_CONFIG_MEDIA_TYPE,
    OCI_MANIFEST_MEDIA_TYPE,
    OciRegistryServer,
)

CHART = "demo-operator"
REPO = "charts/demo-operator"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _v2(registry, path):
    return f"http://{registry.url}/v2/{path}"


# -- distribution API by hand ------------------------------------------------------------

def test_api_version_check(oci_registry):
    status, headers, dummy = http_request("GET", _v2(oci_registry, ""))
    assert status == 200
    assert headers["docker-distribution-api-version"] == "registry/2.0"


def test_pushed_chart_layout(oci_registry, fixture_charts):
    manifest = oci_registry.manifest(REPO, "1.1.0")
    assert manifest["mediaType"] == OCI_MANIFEST_MEDIA_TYPE
    assert manifest["config"]["mediaType"] == HELM_CONFIG_MEDIA_TYPE
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == HELM_CHART_LAYER_MEDIA_TYPE
    assert layer["digest"] == "sha256:" + chart_sha256(fixture_charts["1.1.0"])
    assert layer["size"] == fixture_charts["1.1.0"].stat().st_size
    config = json.loads(http_request("GET", _v2(oci_registry, f"{REPO}/blobs/{manifest['config']['digest']}"))[2])
    assert (config["name"], config["version"]) == (CHART, "1.1.0")
    assert oci_registry.tags(REPO) == ["1.0.0", "1.1.0", "2.0.0"]


def test_manifest_by_tag_and_digest_with_headers(oci_registry):
    status, headers, body = http_request("GET", _v2(oci_registry, f"{REPO}/manifests/2.0.0"))
    assert status == 200
    assert headers["content-type"] == OCI_MANIFEST_MEDIA_TYPE
    assert headers["docker-content-digest"] == _digest(body)
    assert int(headers["content-length"]) == len(body)
    digest = headers["docker-content-digest"]
    status, head_headers, head_body = http_request("HEAD", _v2(oci_registry, f"{REPO}/manifests/{digest}"))
    assert (status, head_body) == (200, b"")
    assert head_headers["docker-content-digest"] == digest
    assert int(head_headers["content-length"]) == len(body)
    assert http_request("GET", _v2(oci_registry, f"{REPO}/manifests/{digest}"))[2] == body


def test_unknown_content_gives_oci_errors(oci_registry):
    status, dummy, body = http_request("GET", _v2(oci_registry, f"{REPO}/manifests/9.9.9"))
    assert status == 404 and json.loads(body)["errors"][0]["code"] == "MANIFEST_UNKNOWN"
    status, dummy, body = http_request("GET", _v2(oci_registry, f"{REPO}/blobs/{_digest(b'nothing')}"))
    assert status == 404 and json.loads(body)["errors"][0]["code"] == "BLOB_UNKNOWN"
    status, dummy, body = http_request("GET", _v2(oci_registry, "charts/absent/tags/list"))
    assert status == 404 and json.loads(body)["errors"][0]["code"] == "NAME_UNKNOWN"


def test_tags_list_paginates(oci_registry):
    status, headers, body = http_request("GET", _v2(oci_registry, f"{REPO}/tags/list?n=2"))
    assert status == 200
    assert json.loads(body) == {"name": REPO, "tags": ["1.0.0", "1.1.0"]}
    assert "last=1.1.0" in headers["link"]
    body = http_request("GET", _v2(oci_registry, f"{REPO}/tags/list?n=2&last=1.1.0"))[2]
    assert json.loads(body)["tags"] == ["2.0.0"]


def test_blob_upload_checks_the_digest(oci_registry):
    data = b"some blob"
    status, headers, dummy = http_request("POST", _v2(oci_registry, "scratch/blobs/uploads/"), body=b"")
    assert status == 202
    location = f"http://{oci_registry.url}{headers['location']}"
    assert http_request("PATCH", location, body=data[:4])[0] == 202
    status, dummy, body = http_request("PUT", f"{location}?digest={_digest(b'other')}", body=data[4:])
    assert status == 400 and json.loads(body)["errors"][0]["code"] == "DIGEST_INVALID"
    # A fresh session with the right digest succeeds; the blob is then served.
    headers = http_request("POST", _v2(oci_registry, "scratch/blobs/uploads/"), body=b"")[1]
    location = f"http://{oci_registry.url}{headers['location']}"
    http_request("PATCH", location, body=data[:4])
    status, headers, dummy = http_request("PUT", f"{location}?digest={_digest(data)}", body=data[4:])
    assert status == 201 and headers["docker-content-digest"] == _digest(data)
    assert http_request("GET", _v2(oci_registry, f"scratch/blobs/{_digest(data)}"))[2] == data


def test_manifest_push_requires_its_blobs(oci_registry):
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST_MEDIA_TYPE,
                "config": {"mediaType": HELM_CONFIG_MEDIA_TYPE, "digest": _digest(b"{}"), "size": 2},
                "layers": []}
    status, dummy, body = http_request("PUT", _v2(oci_registry, "scratch/manifests/v1"),
                                       body=json.dumps(manifest).encode(),
                                       headers={"Content-Type": OCI_MANIFEST_MEDIA_TYPE})
    assert status == 400 and json.loads(body)["errors"][0]["code"] == "MANIFEST_BLOB_UNKNOWN"


def test_fail_all_and_request_log(oci_registry):
    oci_registry.fail_all = True
    assert http_request("GET", _v2(oci_registry, ""))[0] == 403
    oci_registry.fail_all = False
    assert http_request("GET", _v2(oci_registry, f"{REPO}/tags/list"))[0] == 200
    assert oci_registry.requests == [("GET", "/v2/"), ("GET", f"/v2/{REPO}/tags/list")]
    assert oci_registry.count("/v2/charts/") == 1
    oci_registry.clear()
    assert oci_registry.count() == 0


# -- real helm ---------------------------------------------------------------------------

def test_helm_pull_over_plain_http(helm_bin, oci_registry, fixture_charts, helm_env, tmp_path):
    dest = tmp_path / "pulled"
    dest.mkdir()
    proc = run_helm(helm_bin, ["pull", oci_registry.oci_ref(CHART), "--version", "1.1.0", "--plain-http",
                               "--destination", dest], helm_env)
    (archive,) = dest.glob("*.tgz")
    # The pulled archive is the pushed layer byte for byte, so a chart_sha256 pin works for OCI too.
    assert chart_sha256(archive) == chart_sha256(fixture_charts["1.1.0"])
    assert f"Digest: {oci_registry.manifest_digest(REPO, '1.1.0')}" in proc.stdout + proc.stderr
    assert oci_registry.count(f"/v2/{REPO}/manifests/") == 1
    assert oci_registry.count(f"/v2/{REPO}/blobs/") == 2
    assert oci_registry.count(f"/v2/{REPO}/tags/") == 0  # an exact version needs no tag listing


def test_helm_show_chart(helm_bin, oci_registry, helm_env):
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART), "--version", "2.0.0",
                               "--plain-http"], helm_env)
    meta = yaml.safe_load(proc.stdout)
    assert (meta["name"], meta["version"]) == (CHART, "2.0.0")


def test_helm_template_oci_chart(helm_bin, oci_registry, helm_env):
    proc = run_helm(helm_bin, ["template", "rel", oci_registry.oci_ref(CHART), "--version", "1.0.0",
                               "--plain-http"], helm_env)
    config_map = next(d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "ConfigMap")
    assert config_map["data"]["chartVersion"] == "1.0.0"


def test_helm_version_range_lists_tags(helm_bin, oci_registry, helm_env):
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART), "--version", "^1.0.0",
                               "--plain-http"], helm_env)
    assert yaml.safe_load(proc.stdout)["version"] == "1.1.0"
    assert oci_registry.count(f"/v2/{REPO}/tags/list") == 1


def test_helm_needs_plain_http_flag_for_loopback(helm_bin, oci_registry, helm_env):
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART), "--version", "1.0.0"],
                    helm_env, check=False)
    assert proc.returncode != 0
    assert "https://" in proc.stderr  # helm tried TLS; the plain-HTTP server saw no valid request
    assert oci_registry.count("/v2/") == 0


def test_build_metadata_version_maps_to_underscore_tag(helm_bin, oci_registry, chart_cache, helm_env):
    pushed = oci_registry.push_chart(chart_cache.get(DEMO_CHART_DIR, version="1.2.0+gpu.1"))
    assert pushed.tag == "1.2.0_gpu.1"
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART), "--version", "1.2.0+gpu.1",
                               "--plain-http"], helm_env)
    assert yaml.safe_load(proc.stdout)["version"] == "1.2.0+gpu.1"


def test_helm_push_then_pull(helm_bin, oci_registry, fixture_charts, helm_env):
    run_helm(helm_bin, ["push", fixture_charts["2.0.0"], f"oci://{oci_registry.url}/pushed", "--plain-http"],
             helm_env)
    assert oci_registry.tags("pushed/demo-operator") == ["2.0.0"]
    manifest = oci_registry.manifest("pushed/demo-operator", "2.0.0")
    assert manifest["layers"][0]["mediaType"] == HELM_CHART_LAYER_MEDIA_TYPE
    assert manifest["layers"][0]["digest"] == "sha256:" + chart_sha256(fixture_charts["2.0.0"])
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART, repository="pushed"),
                               "--version", "2.0.0", "--plain-http"], helm_env)
    assert yaml.safe_load(proc.stdout)["version"] == "2.0.0"


def test_fail_all_makes_helm_fail_at_once(helm_bin, oci_registry, helm_env):
    oci_registry.fail_all = True  # 403 by default: helm does not retry 4xx
    proc = run_helm(helm_bin, ["show", "chart", oci_registry.oci_ref(CHART), "--version", "1.0.0",
                               "--plain-http"], helm_env, check=False)
    assert proc.returncode != 0
    assert "403" in proc.stderr
    assert oci_registry.requests == [("GET", f"/v2/{REPO}/manifests/1.0.0")]


def test_fail_all_with_5xx_is_json_error(oci_registry):
    oci_registry.fail_all = True
    oci_registry.fail_status = 503
    status, headers, body = http_request("GET", _v2(oci_registry, ""))
    assert status == 503 and json.loads(body)["errors"][0]["code"] == "UNAVAILABLE"


def test_push_chart_moves_a_tag(fixture_charts):
    with OciRegistryServer() as registry:
        first = registry.push_chart(fixture_charts["1.0.0"], repository="mirror")
        second = registry.push_chart(fixture_charts["2.0.0"], repository="mirror", tag=first.tag)
        assert registry.tags("mirror/demo-operator") == ["1.0.0"]
        assert registry.manifest("mirror/demo-operator", "1.0.0")["layers"][0]["digest"] == second.layer_digest
