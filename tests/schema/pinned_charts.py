"""The default values (values.yaml) of the chart versions the roles pin, read from the upstream source archives.

shared/upstream/<chart>/values.default.yaml holds one release of each chart (GPU Operator v26.7.0, Network Operator
26.4.1, see shared/upstream/README.md), which need not be the release a role installs (gpu_operator_chart_version
v26.3.3, network_operator_chart_version 26.4.0 with the aks-guide pair). Helm silently ignores a value the chart does not have, so the
values the roles set are checked against the chart they pin: its values.yaml, read out of the ``git archive`` of the
pinned tag in shared/upstream/src (``<project>-v<version>.tar.xz``, the tag as its top folder). The version is read
from the role's defaults, so a new pin is checked against its own chart (and needs its archive).

Reading one file out of an archive takes about a second: each is read once per test process. A missing archive
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
    """The chart version the role installs (its defaults/main.yml), as written there (v26.3.3, 26.4.0)."""
    pin = PINS[chart]
    return str(pins.role_defaults(pin.role, REPO_ROOT)[pin.variable])


def archive_path(chart):
    """shared/upstream/src/<project>-v<version>.tar.xz of the pinned version (tags carry the v prefix)."""
    return SRC_DIR / ("%s-v%s.tar.xz" % (PINS[chart].project, pinned_version(chart).lstrip("v")))


@functools.lru_cache(maxsize=None)
def _values_text(chart):
    archive = archive_path(chart)
    member = "%s/%s" % (archive.name[:-len(".tar.xz")], PINS[chart].values)
    with tarfile.open(archive, "r:xz") as tar:
        for info in tar:  # streamed: stops at the file instead of listing the whole archive
            if info.name == member and info.isfile():
                return tar.extractfile(info).read().decode("utf-8")
    raise FileNotFoundError("%s has no %s" % (archive, member))


def values_text(chart):
    """The pinned chart's values.yaml as text; skips the test when the pinned version's archive is missing."""
    archive = archive_path(chart)
    if not archive.is_file():
        pytest.skip("the source archive of the pinned %s chart (%s: %s) is missing: %s" % (
            chart, PINS[chart].variable, pinned_version(chart), archive))
    return _values_text(chart)


@functools.lru_cache(maxsize=None)
def _parsed(chart):
    return yaml.safe_load(_values_text(chart)) or {}


def values(chart):
    """The pinned chart's default values (a copy: change it freely)."""
    values_text(chart)  # skips, uncached, while the archive is missing
    return copy.deepcopy(_parsed(chart))


@functools.lru_cache(maxsize=1)
def _folder():
    folder = tempfile.mkdtemp(prefix="pinned-chart-values-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=None)
def _written(chart):
    path = os.path.join(_folder(), "%s-%s.values.yaml" % (chart, pinned_version(chart)))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_values_text(chart))
    return path


def values_path(chart):
    """A file holding the pinned chart's values.yaml (for crdschema.check_values_keys), written once per process."""
    values_text(chart)  # skips, uncached, while the archive is missing
    return _written(chart)
