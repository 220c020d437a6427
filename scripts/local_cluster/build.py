"""Build (or reuse) the control plane and KWOK binaries, cached outside the checkout by their pins.

The cache key is a hash of everything that decides the binaries: both Go modules' go.mod,
go.sum and sources, the Go toolchain's version and this file's build flags. The binaries
live in ``<cache>/bin/<key>/`` with a ``manifest.json`` recording the pins and each binary's
sha256, so a cache that was tampered with or half-written is noticed (and rebuilt) rather
than used. The Go module and build caches sit beside them, so a cold build is
``rm -rf <cache>``.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import ClusterError

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_MODULE = ROOT / "tools" / "cluster"
KWOK_MODULE = ROOT / "tools" / "kwok"
BUILD_FORMAT = "1"  # bump when the build flags below change
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def cache_root():
    explicit = os.environ.get("GPU_PLATFORM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-platform"


def pins():
    """The versions the binaries are built from, read from the two go.mod files (the one place they live)."""
    cluster_mod = (CLUSTER_MODULE / "go.mod").read_text()
    kwok_mod = (KWOK_MODULE / "go.mod").read_text()

    def required(text, module):
        found = re.search(r"^\s*(?:require\s+)?%s\s+(v\S+)" % re.escape(module), text, re.M)
        if not found:
            raise ClusterError("tools/*/go.mod does not require %s: the pins are broken" % module)
        return found.group(1)
    return {"kubernetes": required(cluster_mod, "k8s.io/kubernetes"),
            "etcd": required(cluster_mod, "go.etcd.io/etcd/server/v3"),
            "kwok": required(kwok_mod, "sigs.k8s.io/kwok")}


def _go_version(go):
    try:
        return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ClusterError("cannot run the Go toolchain (%s): %s. Install Go 1.26 or newer, or set GO to its path"
                           % (go, exc)) from None


def cache_key(go="go"):
    digest = hashlib.sha256()
    digest.update(("format %s\n%s\n" % (BUILD_FORMAT, _go_version(go))).encode())
    for module in (CLUSTER_MODULE, KWOK_MODULE):
        for path in sorted(p for p in module.rglob("*") if p.is_file() and p.suffix in (".go", ".mod", ".sum")):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _go_env():
    root = cache_root()
    env = dict(os.environ)
    env.update({"GOMODCACHE": str(root / "go" / "mod"), "GOCACHE": str(root / "go" / "build"),
                "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"})
    return env


def _ldflags(versions):
    """The version the API server reports on /version (helm needs valid semver there)."""
    kube = versions["kubernetes"]
    major, minor = kube.lstrip("v").split(".")[:2]
    stamp = "gitVersion=%s gitMajor=%s gitMinor=%s gitTreeState=clean buildDate=1970-01-01T00:00:00Z" % (
        kube, major, minor)
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += ["-X %s.%s" % (package, pair) for pair in stamp.split()]
    return " ".join(flags)


def _run_build(command, cwd, log, what):
    with open(log, "a") as out:
        out.write("$ %s  (in %s)\n" % (" ".join(command), cwd))
        out.flush()
        proc = subprocess.run(command, cwd=cwd, env=_go_env(), stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = Path(log).read_text().splitlines()[-25:]
        raise ClusterError("building %s failed (go build exit %d). Last lines:\n  %s\nFull log: %s\n"
                           "A module that cannot be downloaded means the Go module proxy is unreachable "
                           "(GOPROXY=%s)." % (what, proc.returncode, "\n  ".join(tail), log,
                                              os.environ.get("GOPROXY", "https://proxy.golang.org,direct")))


# KWOK's own stages (from the pinned module, used as they are): node set-up and lease heartbeat,
# pods Running/Ready, pods of Jobs complete, deleted pods go.
KWOK_STAGES = ("kustomize/stage/node/fast/node-initialize.yaml",
               "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "kustomize/stage/pod/fast/pod-ready.yaml", "kustomize/stage/pod/fast/pod-complete.yaml",
               "kustomize/stage/pod/fast/pod-delete.yaml")


def _copy_kwok_stages(go, target):
    proc = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"], cwd=KWOK_MODULE, env=_go_env(),
                          capture_output=True, text=True, check=False)
    source = Path(proc.stdout.strip())
    if proc.returncode != 0 or not source.is_dir():
        raise ClusterError("cannot find the kwok module's files (go list -m sigs.k8s.io/kwok: %s)"
                           % (proc.stderr.strip() or "no directory"))
    target.mkdir()
    for relative in KWOK_STAGES:
        shutil.copyfile(source / relative, target / Path(relative).name)


def check_cache(bindir):
    """'' when ``bindir`` holds a complete, untampered build; else why not (for the user)."""
    manifest = bindir / "manifest.json"
    if not manifest.exists():
        return "no build in %s" % bindir
    try:
        recorded = json.loads(manifest.read_text())
    except ValueError:
        return "%s is not valid JSON" % manifest
    for name, digest in sorted(recorded.get("sha256", {}).items()):
        path = bindir / name
        if not path.exists():
            return "%s is missing" % path
        if _sha256(path) != digest:
            return "%s does not match the sha256 recorded when it was built" % path
    if set(recorded.get("sha256", {})) != {"gpcluster", "kwok"}:
        return "%s does not list both binaries" % manifest
    return ""


def ensure_built(go=None, log=print):
    """Return the directory holding gpcluster, its component links and kwok; build them when needed."""
    go = go or os.environ.get("GO", "go")
    if shutil.which(go) is None and not os.path.exists(go):
        raise ClusterError("the Go toolchain is not installed ('%s' not found): install Go 1.26 or newer "
                           "(or set GO=/path/to/go), then run make cluster-build again" % go)
    versions = pins()
    key = cache_key(go)
    bindir = cache_root() / "bin" / key
    problem = check_cache(bindir)
    if not problem:
        return bindir
    if (bindir / "manifest.json").exists():
        log("stale cache: %s; rebuilding it" % problem)
    log("building the control plane (kubernetes %s, etcd %s) and kwok %s into %s: a cold build takes "
        "tens of minutes on 2 cores" % (versions["kubernetes"], versions["etcd"], versions["kwok"], bindir))
    bindir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=key + ".", dir=bindir.parent))
    build_log = cache_root() / ("build-%s.log" % key)
    build_log.write_text("")
    started = time.monotonic()
    try:
        _build_into(go, versions, staging, build_log)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    seconds = round(time.monotonic() - started, 1)
    (staging / "manifest.json").write_text(json.dumps({
        "pins": versions, "go": _go_version(go), "key": key, "build_seconds": seconds,
        "sha256": {name: _sha256(staging / name) for name in ("gpcluster", "kwok")}}, indent=1, sort_keys=True))
    if bindir.exists():
        shutil.rmtree(bindir)
    os.replace(staging, bindir)  # complete or absent: never a half-written cache entry
    log("built in %.0f s: %s" % (seconds, bindir))
    return bindir


def _build_into(go, versions, staging, build_log):
    _run_build([go, "build", "-trimpath", "-ldflags", _ldflags(versions), "-o", str(staging / "gpcluster"),
                "./cmd/gpcluster"], CLUSTER_MODULE, build_log, "the control plane (tools/cluster)")
    _run_build([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(staging / "kwok"), "sigs.k8s.io/kwok/cmd/kwok"],
               KWOK_MODULE, build_log, "kwok (tools/kwok)")
    for component in COMPONENTS:
        os.symlink("gpcluster", staging / component)
    _copy_kwok_stages(go, staging / "stages")
