"""The binaries' cache and build: a key from the pins, a stale or tampered entry noticed, build failures explained."""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest

from local_gpu_cluster import ClusterError
from local_gpu_cluster import build
from local_gpu_cluster.paths import PROJECT


def _entry(tmp_path, content=b"binary"):
    bindir = tmp_path / "bin" / "key"
    bindir.mkdir(parents=True)
    for name in ("gpcluster", "kwok"):
        (bindir / name).write_bytes(content + name.encode())
    (bindir / "manifest.json").write_text(json.dumps({"sha256": {
        name: hashlib.sha256((bindir / name).read_bytes()).hexdigest() for name in ("gpcluster", "kwok")}}))
    return bindir


def test_a_complete_entry_is_used_and_every_damage_is_named(tmp_path):
    bindir = _entry(tmp_path)
    assert build.check_cache(bindir) == ""
    (bindir / "kwok").write_bytes(b"something else")
    assert build.check_cache(bindir) == "%s does not match the sha256 recorded when it was built" % (bindir / "kwok")
    (bindir / "kwok").unlink()
    assert build.check_cache(bindir) == "%s is missing" % (bindir / "kwok")
    (bindir / "manifest.json").write_text("{not json")
    assert "is not valid JSON" in build.check_cache(bindir)
    (bindir / "manifest.json").unlink()
    assert build.check_cache(bindir) == "no build in %s" % bindir


def test_the_key_follows_the_pins_and_the_go_version(tmp_path, monkeypatch):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho go1.26.8\n")
    fake_go.chmod(0o755)
    key = build.cache_key(str(fake_go))
    assert key == build.cache_key(str(fake_go))
    fake_go.write_text("#!/bin/sh\necho go1.27.0\n")
    assert build.cache_key(str(fake_go)) != key


def test_the_pins_come_from_the_go_mod_files():
    pins = build.pins()
    assert pins["kubernetes"].startswith("v1.") and pins["etcd"].startswith("v3.") and pins["kwok"].startswith("v0.")
    cluster_mod = (build.CLUSTER_MODULE / "go.mod").read_text()
    # every staging module is replaced by the published one of the same release
    minor = pins["kubernetes"].replace("v1.", "v0.")
    assert "k8s.io/apiserver => k8s.io/apiserver %s" % minor in cluster_mod


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "local_gpu_cluster", *args], cwd=str(PROJECT), env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_failed_build_names_what_failed_and_where_the_log_is(tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text('#!/bin/sh\nif [ "$2" = GOVERSION ]; then echo go1.26.8; exit 0; fi\n'
                       'echo "go: k8s.io/kubernetes@v1.35.8: reading https://proxy.golang.org: 403 Forbidden"\nexit 1\n')
    fake_go.chmod(0o755)
    env = dict(os.environ, GO=str(fake_go), GPU_PLATFORM_CACHE=str(tmp_path / "cache"))
    proc = _run(["build"], env)
    assert proc.returncode == 1
    assert "building the control plane (local_gpu_cluster/go/cluster) failed (go build exit 1)" in proc.stderr
    assert "403 Forbidden" in proc.stderr and "Full log: %s" % (tmp_path / "cache") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "cache" / "bin").glob("*/manifest.json")), "no half-written cache entry"


def test_a_missing_go_toolchain_is_named(tmp_path):
    env = dict(os.environ, GO=str(tmp_path / "no-such-go"), GPU_PLATFORM_CACHE=str(tmp_path / "cache"))
    proc = _run(["build"], env)
    assert proc.returncode == 1 and "the Go toolchain is not installed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_stale_cache_entry_is_reported_and_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_PLATFORM_CACHE", str(tmp_path))
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho go1.26.8\n")
    fake_go.chmod(0o755)
    key = build.cache_key(str(fake_go))
    bindir = tmp_path / "bin" / key
    bindir.parent.mkdir(parents=True)
    _entry(tmp_path / "x").rename(bindir)
    (bindir / "gpcluster").write_bytes(b"truncated")
    said, built = [], []
    monkeypatch.setattr(build, "run_build", lambda command, cwd, log, what: built.append(what) or
                        open(command[command.index("-o") + 1], "wb").close())
    monkeypatch.setattr(build, "_copy_kwok_stages", lambda go, target: target.mkdir())
    result = build.ensure_built(str(fake_go), log=said.append)
    assert result == bindir
    assert said[0] == "stale cache: %s does not match the sha256 recorded when it was built; rebuilding it" % (
        bindir / "gpcluster")
    assert built == ["the control plane (local_gpu_cluster/go/cluster)", "kwok (local_gpu_cluster/go/kwok)"]
    assert build.check_cache(bindir) == ""
    assert stat.S_ISLNK(os.lstat(bindir / "kube-apiserver").st_mode)


def test_go_failing_to_report_its_version_is_a_message(tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\nexit 3\n")
    fake_go.chmod(0o755)
    with pytest.raises(ClusterError, match="cannot run the Go toolchain"):
        build.cache_key(str(fake_go))
