"""The default values (values.yaml), charts and CRDs of the chart versions the roles pin, read from the upstream source
archives.

shared/upstream/<chart>/values.default.yaml holds one release of each chart (GPU Operator v26.7.0, Network Operator
26.4.1, see shared/upstream/README.md), which need not be the release a role installs. Helm silently ignores a value
the chart does not have, so the values the roles set are checked against the chart they pin: its values.yaml, read out
of the ``git archive`` of the pinned tag in shared/upstream/src (``<project>-v<version>.tar.xz``, the tag as its top
folder). The version is read from the role's defaults (the release pair's, for the GPU Operator and the Network
Operator, local_gpu_cluster.pins), so a new pin is checked against its own chart (and needs its archive); for those
two, ``pair_versions`` gives every named release pair's version (gpu_platform_release_pairs), so each pair's chart is
checked, not only the default's.

Reading one file out of an archive takes about a second: each is read once per test process, and a chart folder (with
the subcharts it carries) or a CRD folder is extracted once per process into a temporary folder. A missing archive
skips the test, naming the archive; a missing values.yaml in an archive that is there is a failure.
"""
from __future__ import annotations

import atexit
import collections
import copy
import functools
import os
import shutil
import tarfile
import tempfile

import pytest
import yaml
from local_gpu_cluster import pins

from tests.schema.crdschema_syntax import REPO_ROOT, UPSTREAM_DIR

SRC_DIR = UPSTREAM_DIR / "src"

Pin = collections.namedtuple("Pin", "role variable project values")
# chart -> the role default that pins its version, the archive's project name, and values.yaml inside the archive.
PINS = {
    "gpu-operator": Pin("gpu_operator", "gpu_operator_chart_version", "gpu-operator",
                        "deployments/gpu-operator/values.yaml"),
    "network-operator": Pin("network_operator", "network_operator_chart_version", "network-operator",
                            "deployment/network-operator/values.yaml"),
    "dra-driver-nvidia-gpu": Pin("dra_driver", "dra_driver_chart_version", "dra-driver-nvidia-gpu",
                                 "deployments/helm/dra-driver-nvidia-gpu/values.yaml"),
    "volcano": Pin("scheduling", "scheduling_volcano_chart_version", "volcano",
                   "installer/helm/chart/volcano/values.yaml"),
    "kai-scheduler": Pin("scheduling", "scheduling_kai_chart_version", "kai-scheduler",
                         "deployments/kai-scheduler/values.yaml"),
}


@functools.lru_cache(maxsize=None)
def pinned_version(chart):
    """The chart version the role installs (its defaults/main.yml), as written there (v26.7.0, 26.4.1)."""
    pin = PINS[chart]
    return str(pins.role_defaults(pin.role, REPO_ROOT)[pin.variable])


# The charts whose version the release pair decides, by the pair's key (roles/gpu_platform: gpu_platform_release_pairs).
PAIR_KEYS = {"gpu-operator": "gpu_operator", "network-operator": "network_operator"}


def pair_versions(chart):
    """Every version of ``chart`` that a named release pair installs (sorted, the default's among them); the pinned
    version alone for a chart no pair decides."""
    if chart not in PAIR_KEYS:
        return [pinned_version(chart)]
    return sorted({str(pair[PAIR_KEYS[chart]]) for pair in pins.release_pairs(REPO_ROOT).values()}
                  | {pinned_version(chart)})


def _version(chart, version):
    return str(version) if version else pinned_version(chart)


def archive_path(chart, version=None):
    """shared/upstream/src/<project>-v<version>.tar.xz of the pinned version, or of ``version`` (tags carry the v
    prefix)."""
    return SRC_DIR / ("%s-v%s.tar.xz" % (PINS[chart].project, _version(chart, version).lstrip("v")))


def _top(archive):
    return archive.name[:-len(".tar.xz")]


@functools.lru_cache(maxsize=None)
def _values_text(chart, version=None):
    archive = archive_path(chart, version)
    member = "%s/%s" % (_top(archive), PINS[chart].values)
    with tarfile.open(archive, "r:xz") as tar:
        for info in tar:  # streamed: stops at the file instead of listing the whole archive
            if info.name == member and info.isfile():
                return tar.extractfile(info).read().decode("utf-8")
    raise FileNotFoundError("%s has no %s" % (archive, member))


def _need(chart, version=None):
    """Skip the test, naming the archive, when the source archive of ``chart`` at ``version`` is missing."""
    archive = archive_path(chart, version)
    if not archive.is_file():
        pytest.skip("the source archive of the %s %s chart (%s: %s) is missing: %s" % (
            "pinned" if not version or _version(chart, version) == pinned_version(chart) else "release pair's",
            chart, PINS[chart].variable, _version(chart, version), archive))


def values_text(chart, version=None):
    """The pinned (or ``version``'s) chart's values.yaml as text; skips the test when its archive is missing."""
    _need(chart, version)
    return _values_text(chart, version)


@functools.lru_cache(maxsize=None)
def _parsed(chart, version=None):
    return yaml.safe_load(_values_text(chart, version)) or {}


def values(chart, version=None):
    """The pinned (or ``version``'s) chart's default values (a copy: change it freely)."""
    values_text(chart, version)  # skips, uncached, while the archive is missing
    return copy.deepcopy(_parsed(chart, version))


@functools.lru_cache(maxsize=1)
def _folder():
    folder = tempfile.mkdtemp(prefix="pinned-chart-values-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=None)
def _written(chart, version=None):
    path = os.path.join(_folder(), "%s-%s.values.yaml" % (chart, _version(chart, version)))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_values_text(chart, version))
    return path


def values_path(chart, version=None):
    """A file holding the pinned (or ``version``'s) chart's values.yaml (for crdschema.check_values_keys), written
    once per process."""
    values_text(chart, version)  # skips, uncached, while the archive is missing
    return _written(chart, version)


@functools.lru_cache(maxsize=None)
def _extracted(chart, version, paths):
    archive = archive_path(chart, version)
    top = _top(archive) + "/"
    root = tempfile.mkdtemp(prefix="%s-%s-" % (chart, _version(chart, version)), dir=_folder())
    found = 0
    with tarfile.open(archive, "r:xz") as tar:
        for info in tar:
            name = info.name[len(top):] if info.name.startswith(top) else None
            if name and (info.isfile() or info.isdir()) and any(name == p or name.startswith(p.rstrip("/") + "/")
                                                                for p in paths):
                info.name = name
                tar.extract(info, root, filter="data")
                found += info.isfile()
    if not found:
        raise FileNotFoundError("%s has none of %s" % (archive, ", ".join(paths)))
    return root


def extracted(chart, version, *paths):
    """A folder holding ``paths`` (files or folders inside the source archive, without its top folder) of ``chart`` at
    ``version``, extracted once per process; skips the test when the archive is missing."""
    _need(chart, version)
    return _extracted(chart, _version(chart, version), tuple(paths))


def chart_dir(chart, version=None):
    """The chart's own folder (``deployments/gpu-operator``, ``deployment/network-operator``, with the subcharts it
    carries in ``charts/``) of the pinned (or ``version``'s) source archive, extracted once per process."""
    folder = os.path.dirname(PINS[chart].values)
    return os.path.join(extracted(chart, version, folder), folder)


# The Network Operator's CRDs of a release: the chart's crds/ and NV-IPAM's, which the operator applies itself when it
# reconciles the policy (manifests/state-nv-ipam-cni, see workflows/nic_cluster_policy.py).
NETWORK_OPERATOR_CRDS = ("deployment/network-operator/crds",
                         "manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml",
                         "manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_cidrpools.yaml")


def network_operator_crds(version):
    """A folder with the Network Operator CRDs of ``version``'s source archive (for crdschema's ``upstream_dir``)."""
    return extracted("network-operator", version, *NETWORK_OPERATOR_CRDS)
