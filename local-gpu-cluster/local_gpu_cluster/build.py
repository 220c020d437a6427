"""Build (or reuse) the control plane, KWOK, Flux and operator binaries, cached outside the checkout by their pins.

Cache entries, each built and keyed on its own, so changing one's pins never rebuilds another:

* ``CLUSTER``: the multi-call control plane binary (``local_gpu_cluster/go/cluster``) and KWOK (``local_gpu_cluster/go/kwok``), with
  KWOK's stages, in ``<cache>/bin/<key>/``;
* ``FLUX``: source-controller, kustomize-controller and helm-controller (``local_gpu_cluster/go/flux/<controller>``),
  with their CRDs, in ``<cache>/bin/flux-<key>/``;
* one per operator the platform installs (``operators.entry_for``), built from the pinned upstream source
  with its chart packaged, in ``<cache>/bin/<operator>-<key>/``.

An entry's key is a hash of everything that decides its binaries: its Go modules' go.mod, go.sum and
sources (or, for an operator, its source archive's sha256 or its module version), the Go toolchain's
version and the entry's build format. Its ``manifest.json`` records the
pins and each file's sha256, so an entry that was tampered with or half-written is noticed (and
rebuilt) rather than used. The Go module and build caches sit beside them, so a cold build is
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import ClusterError

from .paths import GO_DIR

CLUSTER_MODULE = GO_DIR / "cluster"
KWOK_MODULE = GO_DIR / "kwok"
FLUX_DIR = GO_DIR / "flux"
BUILD_FORMAT = "1"  # bump when the build flags below change
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
FLUX_CONTROLLERS = ("source-controller", "kustomize-controller", "helm-controller")


def cache_root():
    explicit = os.environ.get("GPU_PLATFORM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-platform"


def _required(directory, module):
    """The version ``directory``'s go.mod requires of ``module`` (go.mod is the one place a pin lives)."""
    text = (directory / "go.mod").read_text()
    found = re.search(r"^\s*(?:require\s+)?%s\s+(v\S+)" % re.escape(module), text, re.M)
    if not found:
        raise ClusterError("%s does not require %s: the pins are broken"
                           % ((directory / "go.mod").relative_to(GO_DIR.parent), module))
    return found.group(1)


def pins():
    """The versions the control plane and KWOK are built from, read from their go.mod files."""
    return {"kubernetes": _required(CLUSTER_MODULE, "k8s.io/kubernetes"),
            "etcd": _required(CLUSTER_MODULE, "go.etcd.io/etcd/server/v3"),
            "kwok": _required(KWOK_MODULE, "sigs.k8s.io/kwok")}


def flux_pins():
    """The Flux controllers' versions, read from local_gpu_cluster/go/flux/<controller>/go.mod."""
    return {name: _required(FLUX_DIR / name, "github.com/fluxcd/" + name) for name in FLUX_CONTROLLERS}


def _go_version(go):
    try:
        return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ClusterError("cannot run the Go toolchain (%s): %s. Install Go 1.26 or newer, or set GO to its path"
                           % (go, exc)) from None


def cache_key(go="go", entry=None):
    """The entry's key (the control plane's by default): its modules' go.mod, go.sum and sources (and its other
    ``inputs``: an operator's source archive), Go, format."""
    entry = entry or CLUSTER
    digest = hashlib.sha256()
    digest.update(("format %s\n%s\n" % (entry.format, _go_version(go))).encode())
    for module in entry.modules:
        for path in sorted(p for p in module.rglob("*") if p.is_file() and p.suffix in (".go", ".mod", ".sum")):
            digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    for line in entry.inputs() if entry.inputs else ():
        digest.update(line.encode() + b"\n")
    return entry.prefix + digest.hexdigest()[:16]


def _sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def go_env():
    """The environment every build runs Go in: the cache's module and build caches, no cgo."""
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


def run_build(command, cwd, log, what):
    """Run a command of a build, its output appended to ``log``; a failure is a ClusterError naming ``what``."""
    with open(log, "a") as out:
        out.write("$ %s  (in %s)\n" % (" ".join(command), cwd))
        out.flush()
        proc = subprocess.run(command, cwd=cwd, env=go_env(), stdout=out, stderr=subprocess.STDOUT, check=False)
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


def module_dir(go, cwd, module):
    """Where the Go module cache holds ``module`` at the version the module in ``cwd`` pins."""
    proc = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", module], cwd=cwd, env=go_env(),
                          capture_output=True, text=True, check=False)
    source = Path(proc.stdout.strip())
    if proc.returncode != 0 or not proc.stdout.strip() or not source.is_dir():
        raise ClusterError("cannot find the %s module's files (go list -m %s in %s: %s)"
                           % (module, module, cwd, proc.stderr.strip() or "no directory"))
    return source


def _copy_kwok_stages(go, target):
    source = module_dir(go, KWOK_MODULE, "sigs.k8s.io/kwok")
    target.mkdir()
    for relative in KWOK_STAGES:
        shutil.copyfile(source / relative, target / Path(relative).name)


def _copy_flux_crds(go, target):
    """Each controller's CRDs (config/crd/bases of the pinned module, as they are) into ``target``."""
    target.mkdir()
    for name in FLUX_CONTROLLERS:
        crds = sorted((module_dir(go, FLUX_DIR / name, "github.com/fluxcd/" + name) / "config" / "crd" / "bases")
                      .glob("*.toolkit.fluxcd.io_*.yaml"))
        if not crds:
            raise ClusterError("the github.com/fluxcd/%s module has no CRDs under config/crd/bases" % name)
        for crd in crds:
            shutil.copyfile(crd, target / crd.name)


def _build_cluster(go, versions, staging, build_log):
    run_build([go, "build", "-trimpath", "-ldflags", _ldflags(versions), "-o", str(staging / "gpcluster"),
               "./cmd/gpcluster"], CLUSTER_MODULE, build_log, "the control plane (local_gpu_cluster/go/cluster)")
    run_build([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(staging / "kwok"), "sigs.k8s.io/kwok/cmd/kwok"],
              KWOK_MODULE, build_log, "kwok (local_gpu_cluster/go/kwok)")
    for component in COMPONENTS:
        os.symlink("gpcluster", staging / component)
    _copy_kwok_stages(go, staging / "stages")


def _build_flux(go, versions, staging, build_log):
    for name in FLUX_CONTROLLERS:
        run_build([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(staging / name), "github.com/fluxcd/" + name],
                  FLUX_DIR / name, build_log, "%s %s (local_gpu_cluster/go/flux/%s)" % (name, versions[name], name))
    _copy_flux_crds(go, staging / "crds")


@dataclass(frozen=True)
class Entry:
    """One cache entry: the Go modules its key hashes, the binaries it must hold, how to build them."""

    name: str
    modules: tuple
    binaries: tuple
    prefix: str  # of the key, so an entry's directory says what it holds
    format: str  # bump when the entry's build flags change
    what: str  # for the user: %-formatted with the pins
    cold: str  # how long a cold build takes, for the user
    pins: Callable[[], dict]
    build: Callable  # (go, versions, staging directory, build log) -> None, or more fields for manifest.json
    inputs: Callable[[], list] | None = None  # more lines the key hashes (an operator's source archive and sha256)
    make: str = "cluster-build"  # the make target that builds it, for the user


CLUSTER = Entry("cluster", (CLUSTER_MODULE, KWOK_MODULE), ("gpcluster", "kwok"), "", BUILD_FORMAT,
                "the control plane (kubernetes %(kubernetes)s, etcd %(etcd)s) and kwok %(kwok)s",
                "tens of minutes on 2 cores", pins, _build_cluster)
FLUX = Entry("flux", tuple(FLUX_DIR / name for name in FLUX_CONTROLLERS), FLUX_CONTROLLERS, "flux-", "1",
             "the Flux controllers (" + ", ".join("%s %%(%s)s" % (name, name) for name in FLUX_CONTROLLERS) + ")",
             "minutes on 2 cores", flux_pins, _build_flux, make="flux-build")


def check_cache(bindir, entry=None):
    """'' when ``bindir`` holds a complete, untampered build of ``entry`` (the control plane's); else why not."""
    entry = entry or CLUSTER
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
    missing = [name for name in entry.binaries if name not in recorded.get("sha256", {})]
    if missing:
        return "%s does not list %s" % (manifest, ", ".join(missing))
    return ""


def _recorded_files(staging):
    """Every file of a build (binaries, stages, CRDs), not the links to them."""
    return sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file() and not p.is_symlink())


def ensure_built(go=None, log=print, entry=None):
    """Return the directory of ``entry``'s build (the control plane's: gpcluster, its component links, kwok and
    its stages; ``FLUX``'s: the three controllers and crds/; an operator's: its binaries, image/ and charts/);
    build it when the cache has none."""
    entry = entry or CLUSTER
    go = go or os.environ.get("GO", "go")
    if shutil.which(go) is None and not os.path.exists(go):
        raise ClusterError("the Go toolchain is not installed ('%s' not found): install Go 1.26 or newer "
                           "(or set GO=/path/to/go), then run make %s again" % (go, entry.make))
    versions = entry.pins()
    key = cache_key(go, entry)
    bindir = cache_root() / "bin" / key
    problem = check_cache(bindir, entry)
    if not problem:
        return bindir
    if (bindir / "manifest.json").exists():
        log("stale cache: %s; rebuilding it" % problem)
    log("building %s into %s: a cold build takes %s" % (entry.what % versions, bindir, entry.cold))
    bindir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=key + ".", dir=bindir.parent))
    build_log = cache_root() / ("build-%s.log" % key)
    build_log.write_text("")
    started = time.monotonic()
    try:
        more = entry.build(go, versions, staging, build_log) or {}
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    seconds = round(time.monotonic() - started, 1)
    (staging / "manifest.json").write_text(json.dumps(dict(more, **{
        "pins": versions, "go": _go_version(go), "key": key, "build_seconds": seconds,
        "sha256": {name: _sha256(staging / name) for name in _recorded_files(staging)}}), indent=1, sort_keys=True))
    if bindir.exists():
        shutil.rmtree(bindir)
    os.replace(staging, bindir)  # complete or absent: never a half-written cache entry
    log("built in %.0f s: %s" % (seconds, bindir))
    return bindir
