"""The Flux controllers' cache entry: keyed by local_gpu_cluster/go/flux alone, checked like the control plane's, failures explained."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import pytest

from local_gpu_cluster import ClusterError
from local_gpu_cluster import build


def _fake_go(tmp_path, body="exit 0"):
    go = tmp_path / "go"
    go.write_text('#!/bin/sh\nif [ "$2" = GOVERSION ]; then echo go1.26.8; exit 0; fi\n%s\n' % body)
    go.chmod(0o755)
    return str(go)


def test_each_entry_is_keyed_by_its_own_modules_only(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "GO_DIR", tmp_path / "pins")
    for module in ("cluster", "kwok", "flux/source-controller"):
        (tmp_path / "pins" / module).mkdir(parents=True)
        for name in ("go.mod", "go.sum"):
            shutil.copyfile(build.CLUSTER_MODULE.parent / module / name, tmp_path / "pins" / module / name)
    cluster = dataclasses.replace(build.CLUSTER, modules=(tmp_path / "pins/cluster", tmp_path / "pins/kwok"))
    flux = dataclasses.replace(build.FLUX, modules=(tmp_path / "pins/flux/source-controller",))
    go = _fake_go(tmp_path)
    keys = (build.cache_key(go, cluster), build.cache_key(go, flux))
    assert keys[1].startswith("flux-") and not keys[0].startswith("flux-")
    with open(tmp_path / "pins/flux/source-controller/go.sum", "a") as handle:
        handle.write("example.invalid/m v1.0.0 h1:x=\n")
    assert build.cache_key(go, cluster) == keys[0], "a Flux pin does not rebuild Kubernetes"
    assert build.cache_key(go, flux) != keys[1]
    flux_key = build.cache_key(go, flux)
    with open(tmp_path / "pins/cluster/go.mod", "a") as handle:
        handle.write("// another pin\n")
    assert build.cache_key(go, flux) == flux_key, "a Kubernetes pin does not rebuild Flux"
    assert build.cache_key(go, cluster) != keys[0]


def test_the_flux_pins_come_from_the_go_mod_files():
    assert build.flux_pins() == {"source-controller": "v1.9.1", "kustomize-controller": "v1.9.1",
                                 "helm-controller": "v1.6.4"}
    helm_mod = (build.FLUX_DIR / "helm-controller" / "go.mod").read_text()
    assert "github.com/fluxcd/helm-controller/api v1.6.4" in helm_mod, "the api module published with the same tag"


def test_a_failed_flux_build_names_the_controller_and_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_PLATFORM_CACHE", str(tmp_path / "cache"))
    go = _fake_go(tmp_path, 'echo "go: github.com/fluxcd/source-controller@v1.9.1: reading https://proxy.golang.org: '
                            '403 Forbidden"\nexit 1')
    with pytest.raises(ClusterError) as failed:
        build.ensure_built(go, log=lambda line: None, entry=build.FLUX)
    message = str(failed.value)
    assert "building source-controller v1.9.1 (local_gpu_cluster/go/flux/source-controller) failed (go build exit 1)" in message
    assert "403 Forbidden" in message
    assert "Full log: %s" % (tmp_path / "cache" / ("build-%s.log" % build.cache_key(go, build.FLUX))) in message
    assert not list((tmp_path / "cache" / "bin").glob("*/manifest.json")), "no half-written cache entry"


def test_a_stale_flux_entry_is_rebuilt_with_the_crds_of_the_pinned_modules(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_PLATFORM_CACHE", str(tmp_path / "cache"))
    go = _fake_go(tmp_path)
    modules = {}
    for name in build.FLUX_CONTROLLERS:
        bases = tmp_path / "mod" / name / "config" / "crd" / "bases"
        bases.mkdir(parents=True)
        (bases / ("x.toolkit.fluxcd.io_%ss.yaml" % name)).write_text("kind: CustomResourceDefinition\n")
        (bases / "kustomization.yaml").write_text("resources: []\n")  # not a CRD: left out
        modules["github.com/fluxcd/" + name] = tmp_path / "mod" / name
    monkeypatch.setattr(build, "module_dir", lambda go, cwd, module: modules[module])
    built = []
    monkeypatch.setattr(build, "run_build", lambda command, cwd, log, what: built.append(what) or
                        open(command[command.index("-o") + 1], "wb").close())
    said = []
    bindir = build.ensure_built(go, log=said.append, entry=build.FLUX)
    assert bindir.name == build.cache_key(go, build.FLUX) and bindir.name.startswith("flux-")
    assert built == ["%s %s (local_gpu_cluster/go/flux/%s)" % (name, build.flux_pins()[name], name) for name in build.FLUX_CONTROLLERS]
    manifest = json.loads((bindir / "manifest.json").read_text())
    assert sorted(manifest["sha256"]) == sorted(list(build.FLUX_CONTROLLERS) + [
        "crds/x.toolkit.fluxcd.io_%ss.yaml" % name for name in build.FLUX_CONTROLLERS])
    assert manifest["pins"] == build.flux_pins() and "build_seconds" in manifest
    assert build.check_cache(bindir, build.FLUX) == ""
    assert build.ensure_built(go, log=said.append, entry=build.FLUX) == bindir and len(built) == 3, "reused"

    crd = bindir / "crds" / "x.toolkit.fluxcd.io_helm-controllers.yaml"
    crd.write_text("kind: Something else\n")
    assert build.check_cache(bindir, build.FLUX) == "%s does not match the sha256 recorded when it was built" % crd
    build.ensure_built(go, log=said.append, entry=build.FLUX)
    assert said[-3] == "stale cache: %s does not match the sha256 recorded when it was built; rebuilding it" % crd
    assert build.check_cache(bindir, build.FLUX) == "" and len(built) == 6


def test_an_entry_must_hold_every_controller(tmp_path):
    bindir = tmp_path / "flux-entry"
    bindir.mkdir()
    (bindir / "source-controller").write_bytes(b"binary")
    (bindir / "manifest.json").write_text(json.dumps({"sha256": {
        "source-controller": hashlib.sha256(b"binary").hexdigest()}}))
    assert build.check_cache(bindir, build.FLUX) == "%s does not list kustomize-controller, helm-controller" % (
        bindir / "manifest.json")
