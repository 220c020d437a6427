"""The operators the platform installs, built from their pinned upstream sources (``build --operators``).

One cache entry per operator (``<cache>/bin/<operator>-<key>/``), so a new pin of one never rebuilds another.
Each operator's version is its role's chart pin (``roles/<role>/defaults/main.yml``, the single place it lives);
its source is the ``git archive`` of that tag in ``../shared/upstream/src/`` (the key hashes the archive's
name and sha256), or for Kueue the module the Go module proxy serves at that version (the key names it: the
checksum database makes a module version immutable). An entry holds:

* the controllers, ``CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X <version>"`` as the project's own
  Makefile builds them, the dependencies from the Go module proxy at the source's go.sum;
* ``image/``: the files the controller reads at run time, at the paths its container image has them (the GPU
  Operator's ``/opt/gpu-operator``, the Network Operator's ``/manifests`` and ``/webhook-schemas``);
* ``charts/``: the project's Helm chart (with the subcharts it keeps beside it), ``helm package``d at the
  pinned version as its release does it, the chart names and versions recorded in ``manifest.json``;

An operator has a record per release line whose build differs (a moved Go module, a renamed chart, a vendored
source): the version its role pins picks the record (``record``). ``entry_for(name, project)`` is the cache entry of
the release another checkout's roles pin (release 0.2.0's, for ``make upgrade-test``): each release has an entry of
its own, so the previous releases are built only when asked for.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from . import ClusterError
from .build import Entry, cache_root, go_env, run_build
from .paths import PROJECT as ROOT, SHARED, TOOLS_BIN
from .pins import role_defaults

UPSTREAM_SRC = SHARED / "upstream" / "src"
HELM = TOOLS_BIN / "helm"  # helm 3 (make tools), or HELM_BIN
# What the KAI chart runs (the operator) and what the operator runs from its Config (templates/kai-config.yaml).
KAI_BINARIES = ("operator", "scheduler", "binder", "podgrouper", "podgroupcontroller", "queuecontroller", "admission")
FORMAT = "1"  # bump (or an operator's build_format) when the build below changes (flags, binaries, image, charts)


@dataclass(frozen=True)
class Operator:  # pylint: disable=too-many-instance-attributes
    """How one operator is built from its upstream source at its role's pin (a record: a field per fact)."""

    name: str  # the cache entry's prefix and `build --operators <name>`
    title: str  # for the user
    defaults: str  # the role defaults file that pins it
    pin: str  # the variable there (its chart version: the release tag)
    binaries: tuple  # (file in the entry, Go package in the source)
    charts: tuple  # chart folders in the source
    archive: str = ""  # the archive's name before "-<tag>.tar.xz" in ../shared/upstream/src
    module: str = ""  # or: the Go module that is the source, at the pinned version
    version_flags: tuple = ()  # -X assignments, %-formatted with tag and commit
    image: tuple = ()  # (path in the source, path in the container image[, mode]) for image/
    chart_version: str = "%(bare)s"  # helm package --version (bare: the tag without its "v")
    app_version: str = "%(tag)s"  # helm package --app-version
    values_edits: tuple = ()  # (file in the chart, pattern, replacement): what the project's release script changes
    build_format: str = FORMAT  # this operator's entry's format (bump when its build alone changes)
    since: str = ""  # the first release this record builds (the records of one operator, oldest first)
    until: str = ""  # and the first it does not (a renumbering: the DRA driver's 25.12.0 came before its 0.4.0)
    vendored: bool = False  # built from the source's vendor/ (-mod=vendor), not from the module proxy
    project: object = None  # the checkout whose role defaults pin it (None: this one, paths.PROJECT)
    tag: str = ""  # or: the release to build, whatever the pins say (``at``)

    def version(self):
        """The pinned tag (``v`` and the role's chart version)."""
        if self.tag:
            return self.tag
        path = Path(self.project or ROOT) / self.defaults
        value = role_defaults(path, self.project).get(self.pin)
        if not value:
            raise ClusterError("%s does not set %s: the %s's version is pinned there" % (path, self.pin, self.title))
        return "v" + str(value).lstrip("v")

    def archive_path(self):
        """The source archive of the pinned tag; a missing one is an error naming the file and what to do."""
        tag = self.version()
        path = UPSTREAM_SRC / ("%s-%s.tar.xz" % (self.archive, tag))
        if not path.is_file():
            there = sorted(p.name for p in UPSTREAM_SRC.glob(self.archive + "-*.tar.xz"))
            raise ClusterError(
                "%s is missing: the %s %s is built from it (%s pins %s). Put the git archive of that tag there "
                "(git archive --prefix=%s-%s/ %s | xz > %s, as ../shared/upstream/README.md describes), or pin a "
                "version whose archive is there (%s)"
                % (path, self.title, tag, self.defaults, self.pin, self.archive, tag, tag, path.name,
                   ", ".join(there) or "none"))
        return path

    def source_id(self):
        """What the source is, for the key and manifest.json: the archive and its sha256, or module@version."""
        if self.module:
            return {"module": "%s@%s" % (self.module, self.version())}
        path = self.archive_path()
        with open(path, "rb") as handle:
            return {"archive": path.name, "sha256": hashlib.sha256(handle.read()).hexdigest()}


_GPU_OPERATOR = Operator(
    "gpu-operator", "GPU Operator", "roles/gpu_operator/defaults/main.yml", "gpu_operator_chart_version",
    # manage-crds: the chart's pre-upgrade hook Job (templates/upgrade_crd.yaml, operator.upgradeCRD) runs it to apply
    # the image's CRDs (helm upgrade leaves crds/ alone)
    (("gpu-operator", "./cmd/gpu-operator"), ("manage-crds", "./cmd/manage-crds")), ("deployments/gpu-operator",),
    archive="gpu-operator",
    version_flags=("github.com/NVIDIA/gpu-operator/internal/info.version=%(tag)s",
                   "github.com/NVIDIA/gpu-operator/internal/info.gitCommit=%(commit)s"),
    # docker/Dockerfile: COPY assets /opt/gpu-operator/, manifests, validator/manifests and the CRDs
    image=(("assets", "opt/gpu-operator"), ("manifests", "opt/gpu-operator/manifests"),
           ("validator/manifests", "opt/validator/manifests"),
           ("deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml",
            "opt/gpu-operator/nvidia.com_clusterpolicies.yaml"),
           ("deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml",
            "opt/gpu-operator/nvidia.com_nvidiadrivers.yaml"),
           ("deployments/gpu-operator/charts/node-feature-discovery/crds/nfd-api-crds.yaml",
            "opt/gpu-operator/nfd-api-crds.yaml")),
    chart_version="%(tag)s", build_format="2")
# v26.7.0: built from its vendor/ (the module proxy refuses one of its dependencies; its Dockerfile copies vendor/ and
# builds from it); the GPUCluster CRD is new in its image (docker/Dockerfile copies it to /opt/gpu-operator).
_GPU_OPERATOR_2607 = replace(
    _GPU_OPERATOR, since="v26.7.0", vendored=True, build_format="1",
    image=_GPU_OPERATOR.image + (("deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml",
                                  "opt/gpu-operator/nvidia.com_gpuclusters.yaml"),))
_NETWORK_OPERATOR = Operator(
    "network-operator", "Network Operator", "roles/network_operator/defaults/main.yml",
    "network_operator_chart_version", (("network-operator", "."),), ("deployment/network-operator",),
    archive="network-operator",
    version_flags=("github.com/Mellanox/network-operator/version.Version=%(tag)s",
                   "github.com/Mellanox/network-operator/version.Commit=%(commit)s"),
    # Dockerfile: WORKDIR /, manifests/, /webhook-schemas and the charts' CRDs in /crds (for apply-crds)
    image=(("manifests", "manifests"), ("webhook-schemas", "webhook-schemas"),
           ("deployment/network-operator/crds", "crds/network-operator"),
           ("deployment/network-operator/charts/sriov-network-operator/crds", "crds/sriov-network-operator"),
           ("deployment/network-operator/charts/node-feature-discovery/crds", "crds/node-feature-discovery"),
           ("deployment/network-operator/charts/maintenance-operator-chart/crds",
            "crds/maintenance-operator")),
    build_format="2")
_KUEUE = Operator(
    "kueue", "Kueue", "roles/scheduling/defaults/main.yml", "scheduling_kueue_chart_version",
    (("kueue", "./cmd/kueue"),), ("charts/kueue",), module="sigs.k8s.io/kueue",
    version_flags=("sigs.k8s.io/kueue/pkg/version.GitVersion=%(tag)s",
                   "sigs.k8s.io/kueue/pkg/version.GitCommit=%(commit)s"),
    # hack/helm-chart-package.sh: a promoted tag's images from registry.k8s.io at the tag, IfNotPresent
    values_edits=(
        ("values.yaml", r"us-central1-docker\.pkg\.dev/k8s-staging-images/kueue/", "registry.k8s.io/kueue/"),
        ("values.yaml", r"tag: release-\d+\.\d+\n", "tag: %(tag)s\n"),
        ("values.yaml", r"pullPolicy: Always\n", "pullPolicy: IfNotPresent\n")))
_VOLCANO = Operator(
    "volcano", "Volcano", "roles/scheduling/defaults/main.yml", "scheduling_volcano_chart_version",
    (("vc-scheduler", "./cmd/scheduler"), ("vc-controller-manager", "./cmd/controller-manager"),
     ("vc-webhook-manager", "./cmd/webhook-manager")),
    ("installer/helm/chart/volcano",), archive="volcano",
    version_flags=("volcano.sh/volcano/pkg/version.Version=%(tag)s",
                   "volcano.sh/volcano/pkg/version.GitSHA=%(commit)s"),
    # installer/dockerfile/webhook-manager/Dockerfile: the chart's admission-init Job runs
    # ./gen-admission-secret.sh from the webhook manager's image (WORKDIR /)
    image=(("installer/dockerfile/webhook-manager/gen-admission-secret.sh", "gen-admission-secret.sh"),),
    app_version="%(bare)s", build_format="3")
_KAI = Operator(
    "kai-scheduler", "KAI Scheduler", "roles/scheduling/defaults/main.yml", "scheduling_kai_chart_version",
    tuple((name, "./cmd/" + name) for name in KAI_BINARIES),
    ("deployments/kai-scheduler",), archive="kai-scheduler",
    version_flags=("github.com/NVIDIA/KAI-scheduler/pkg/scheduler/version.gitVersion=%(tag)s",
                   "github.com/NVIDIA/KAI-scheduler/pkg/scheduler/version.gitCommit=%(commit)s",
                   "github.com/NVIDIA/KAI-scheduler/pkg/scheduler/version.gitTreeState=clean"),
    # deployments/crd-upgrader/Dockerfile: the chart's crd-upgrader hook Job runs /apply-crds.sh (kubectl
    # server-side apply of /internal-crds, the chart's CRDs)
    image=(("deployments/crd-upgrader/apply-crds.sh", "apply-crds.sh", 0o755),  # RUN chmod +x
           ("deployments/kai-scheduler/crds", "internal-crds")),
    chart_version="%(tag)s",
    # .github/workflows/on-release.yaml: the images' registry
    values_edits=(("values.yaml", r"registry/local/kai-scheduler", "ghcr.io/nvidia/kai-scheduler"),),
    build_format="3")
# v0.14.0 moved the project to kai-scheduler/KAI-Scheduler: the Go module (go.mod: github.com/kai-scheduler/
# KAI-scheduler, so the version package's path) and the images' registry (.github/workflows/on-release.yaml's
# DOCKER_REGISTRY ghcr.io/kai-scheduler/kai-scheduler).
_KAI_016 = replace(
    _KAI, since="v0.14.0",
    version_flags=tuple(flag.replace("github.com/NVIDIA/KAI-scheduler", "github.com/kai-scheduler/KAI-scheduler")
                        for flag in _KAI.version_flags),
    values_edits=(("values.yaml", r"registry/local/kai-scheduler", "ghcr.io/kai-scheduler/kai-scheduler"),))
_DRA_DRIVER = Operator(
    "dra-driver", "NVIDIA DRA driver", "roles/dra_driver/defaults/main.yml", "dra_driver_chart_version",
    (("compute-domain-controller", "./cmd/compute-domain-controller"),),
    ("deployments/helm/nvidia-dra-driver-gpu",), archive="k8s-dra-driver-gpu",
    version_flags=("github.com/NVIDIA/k8s-dra-driver-gpu/internal/info.version=%(tag)s",
                   "github.com/NVIDIA/k8s-dra-driver-gpu/internal/info.gitCommit=%(commit)s"),
    # deployments/container/Dockerfile: COPY /templates /templates (the compute-domain controller renders
    # its daemons' DaemonSet and claim templates from them)
    image=(("templates", "templates"),),
    app_version="%(bare)s", build_format="2")
# v0.4.0 moved the project to kubernetes-sigs/dra-driver-nvidia-gpu (module sigs.k8s.io/dra-driver-nvidia-gpu, its
# Makefile's CLI_VERSION_PACKAGE $(MODULE)/internal/info) and renamed the chart dra-driver-nvidia-gpu; it also
# renumbered the releases (calendar 25.3.0 ... 25.12.0 before, semantic 0.4.0 after: RELEASE.md).
_DRA_DRIVER_04 = replace(
    _DRA_DRIVER, since="v0.4.0", until="v25.0.0", archive="dra-driver-nvidia-gpu", charts=("deployments/helm/dra-driver-nvidia-gpu",),
    version_flags=("sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.version=%(tag)s",
                   "sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.gitCommit=%(commit)s"))

# Every operator's records, oldest first: the pinned version picks one (``record``).
OPERATORS = (_GPU_OPERATOR, _GPU_OPERATOR_2607, _NETWORK_OPERATOR, _KUEUE, _VOLCANO, _KAI, _KAI_016, _DRA_DRIVER,
             _DRA_DRIVER_04)
NAMES = tuple(dict.fromkeys(operator.name for operator in OPERATORS))


def _release(version):
    return tuple(int(part) for part in re.findall(r"\d+", str(version).split("-", 1)[0])[:3])


def _line(name, version):
    """The record of operator ``name`` that builds ``version``: the newest whose ``since`` it has reached."""
    candidates = [operator for operator in OPERATORS if operator.name == name]
    if not candidates:
        raise ClusterError("no operator named %s: choose from %s" % (name, ", ".join(NAMES)))
    release = _release(version)
    fits = [operator for operator in candidates if _release(operator.since or "0") <= release
            and (not operator.until or release < _release(operator.until))]
    if not fits:
        raise ClusterError("no build of the %s %s is known here (%s)" % (candidates[0].title, version, __name__))
    return fits[-1]


def record(name, project=None):
    """The record that builds operator ``name`` at the version ``project``'s roles pin (this checkout's when None)."""
    version = replace(_line(name, "0"), project=project).version()
    return replace(_line(name, version), project=project)


def at(name, version):
    """The record that builds operator ``name`` at ``version`` (``v`` and the release), whatever the roles pin."""
    return replace(_line(name, version), tag="v" + str(version).lstrip("v"))


def _formats(version, commit=""):
    return {"tag": version, "bare": version.lstrip("v"), "commit": commit}


def _unpack(operator, scratch):
    """The archive's tree under ``scratch``, and the commit ``git archive`` recorded in it."""
    path = operator.archive_path()
    with tarfile.open(path, "r:xz") as archive:
        tops = {member.name.split("/", 1)[0] for member in archive.getmembers()}
        archive.extractall(scratch, filter="data")
        commit = archive.pax_headers.get("comment", "")
    if len(tops) != 1:
        raise ClusterError("%s is not a git archive with one top folder (it has %s)" % (path, ", ".join(sorted(tops))))
    return scratch / tops.pop(), commit


def _module(go, operator, version, scratch):
    """The Go module at ``version`` from the module proxy (read-only, in the module cache) and its commit."""
    ref = "%s@%s" % (operator.module, version)
    proc = subprocess.run([go, "mod", "download", "-json", ref], cwd=scratch, env=go_env(), capture_output=True,
                          text=True, check=False)
    try:
        found = json.loads(proc.stdout or "{}")
    except ValueError:
        found = {}
    if proc.returncode != 0 or not found.get("Dir"):
        raise ClusterError("cannot download %s (go mod download %s: %s). Is the Go module proxy reachable "
                           "(GOPROXY=%s)?" % (ref, ref, (found.get("Error") or proc.stderr).strip(),
                                              os.environ.get("GOPROXY", "https://proxy.golang.org,direct")))
    return Path(found["Dir"]), (found.get("Origin") or {}).get("Hash", "")


def _copy(source, target):
    """A file or folder's content to ``target`` (folders merged), writable whatever the source's modes."""
    if source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        if source.stat().st_mode & 0o111:  # a script the image runs stays executable
            target.chmod(0o755)
        return
    if not source.is_dir():
        raise ClusterError("%s is not in the source: the layout this build expects has changed (bump FORMAT in %s "
                           "after fixing it)" % (source, Path(__file__).name))
    for folder, _subfolders, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(folder) / name, into / name)


def _helm():
    helm = Path(os.environ.get("HELM_BIN") or HELM)
    if not helm.is_file():
        raise ClusterError("helm is not installed (%s): run make tools" % helm)
    return helm


def _chart_yaml(archive):
    """The chart's Chart.yaml and those of the subcharts it carries (``<name>/charts/<sub>/Chart.yaml``)."""
    found = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if member.isfile() and parts[-1] == "Chart.yaml" and (len(parts) == 2 or (len(parts) == 4
                                                                                      and parts[1] == "charts")):
                found["/".join(parts[1:-1])] = yaml.safe_load(tar.extractfile(member).read())
    return found


def _release_edits(operator, chart, formats):
    """What the project's release script changes in the chart's values before it packages it."""
    for relative, pattern, replacement in operator.values_edits:
        path = chart / relative
        text, count = re.subn(pattern, replacement % formats, path.read_text(encoding="utf-8"))
        if not count:
            raise ClusterError("%s of the %s chart has no %r any more: the release edit of values this build makes "
                               "(%s) needs updating" % (relative, operator.title, pattern, __name__))
        path.write_text(text, encoding="utf-8")


def _package(operator, chart, target, log):
    """``helm package`` the chart folder ``chart`` into ``target`` at the pin, helm's settings in a scratch home."""
    formats = _formats(operator.version())
    env = {key: value for key, value in os.environ.items() if not key.startswith("HELM_") and key != "KUBECONFIG"}
    for name in ("HOME", "HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        env[name] = str(chart.parent / "helm-home" / name.lower())
    _release_edits(operator, chart, formats)
    command = [str(_helm()), "package", str(chart), "--destination", str(target),
               "--version", operator.chart_version % formats, "--app-version", operator.app_version % formats]
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ %s\n" % " ".join(command))
        out.flush()
        proc = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = Path(log).read_text(encoding="utf-8").splitlines()[-10:]
        raise ClusterError("packaging the %s chart (%s of %s) failed (helm package exit %d):\n  %s\nFull log: %s"
                           % (operator.title, chart.name, operator.archive or operator.module, proc.returncode,
                              "\n  ".join(tail), log))


def _charts(target):
    """manifest.json's record of the packaged charts: name, version, appVersion, dependencies, subcharts inside."""
    charts = {}
    for archive in sorted(target.glob("*.tgz")):
        found = _chart_yaml(archive)
        top = found.pop("")
        version = str(top["version"])
        charts[top["name"]] = {
            "name": top["name"], "file": "charts/" + archive.name, "version": version,
            "appVersion": str(top.get("appVersion")),
            "dependencies": {str(d["name"]): str(d.get("version")) for d in top.get("dependencies") or []},
            "subcharts": {str(meta["name"]): str(meta["version"]) for meta in found.values()}}
    return charts


def _build(operator, go, staging, log, scratch):
    """Binaries, image/ and charts/ of ``operator`` into ``staging``; what manifest.json records of them."""
    version = operator.version()
    if operator.module:
        source, commit = _module(go, operator, version, scratch)
    else:
        source, commit = _unpack(operator, scratch)
    ldflags = " ".join(["-s", "-w"] + ["-X " + flag % _formats(version, commit) for flag in operator.version_flags])
    mod = ["-mod=vendor"] if operator.vendored else []  # after GOFLAGS' -mod=readonly, so it wins
    for binary, package in operator.binaries:
        run_build([go, "build"] + mod + ["-trimpath", "-ldflags", ldflags, "-o", str(staging / binary), package],
                  source, log,
                  "%s (%s %s of the %s %s)" % (binary, package, "module" if operator.module else "in the archive",
                                               operator.title, version))
    for inside, path, *mode in operator.image:  # (path in the source, path in the image[, mode its Dockerfile sets])
        _copy(source / inside, staging / "image" / path)
        if mode:
            (staging / "image" / path).chmod(mode[0])
    for folder in operator.charts:
        chart = scratch / "charts" / Path(folder).name
        _copy(source / folder, chart)
        _package(operator, chart, staging / "charts", log)
    return {"charts": _charts(staging / "charts"),
            "source": dict(operator.source_id(), commit=commit)}


def entry(operator):
    """The cache entry of ``operator``: its binaries, ``image/`` and ``charts/``, keyed by its source."""
    def build(go, versions, staging, log):
        del versions  # the operator reads its pin itself
        root = cache_root() / "src"
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=operator.name + ".", dir=root))
        try:
            return _build(operator, go, staging, log, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def pins():
        version = operator.version()
        return {"version": version, "source": "%s@%s" % (operator.module, version) if operator.module
                else operator.archive_path().name}

    def inputs():
        return ["%s %s" % pair for pair in sorted(operator.source_id().items())]

    return Entry(operator.name, (), tuple(name for name, _package in operator.binaries), operator.name + "-",
                 operator.build_format, operator.title + " %(version)s (from %(source)s)", "minutes on 2 cores", pins,
                 build, inputs=inputs, make="operators-build")


def entry_for(name, project=None):
    """The cache entry of operator ``name`` at the release ``project``'s roles pin (this checkout's when None)."""
    return entry(record(name, project))
