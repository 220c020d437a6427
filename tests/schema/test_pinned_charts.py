"""tests/schema/pinned_charts.py: the values.yaml of the chart versions the roles pin, from shared/upstream/src."""
from __future__ import annotations

import os
import tarfile

import pytest
import yaml

from tests.schema import pinned_charts


def test_the_pinned_versions_are_read_from_the_roles():
    assert {chart: pinned_charts.pinned_version(chart) for chart in pinned_charts.PINS} == {
        "gpu-operator": "v26.3.3", "network-operator": "26.4.0", "nvidia-dra-driver-gpu": "25.12.0",
        "volcano": "1.15.1", "kai-scheduler": "v0.13.0"}
    assert pinned_charts.archive_path("gpu-operator").name == "gpu-operator-v26.3.3.tar.xz"
    assert pinned_charts.archive_path("network-operator").name == "network-operator-v26.4.0.tar.xz"
    assert pinned_charts.archive_path("nvidia-dra-driver-gpu").name == "k8s-dra-driver-gpu-v25.12.0.tar.xz"


@pytest.mark.parametrize("chart", sorted(pinned_charts.PINS))
def test_every_pinned_chart_has_its_values(chart):
    values = pinned_charts.values(chart)
    assert isinstance(values, dict) and values
    with open(pinned_charts.values_path(chart), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == values
    values.clear()
    assert pinned_charts.values(chart), "each caller gets a copy"


def test_the_shared_values_files_are_other_releases(shared_dir):
    """Why the archives: shared/upstream/gpu-operator/values.default.yaml is v26.7.0's, whose values.yaml has
    blocks the pinned v26.3.3 lacks; the DRA driver's is the pinned release's, byte for byte."""
    with open(os.path.join(shared_dir, "upstream", "gpu-operator", "values.default.yaml"), encoding="utf-8") as handle:
        newer = yaml.safe_load(handle)
    pinned = pinned_charts.values("gpu-operator")
    assert {"draDriver", "gpuCluster", "clusterPolicy"} <= set(newer) - set(pinned)
    assert pinned["driver"]["version"] == "580.126.20" and newer["driver"]["version"] == "595.91.07"
    with open(os.path.join(shared_dir, "upstream", "dra-driver", "values.default.yaml"), encoding="utf-8") as handle:
        assert handle.read() == pinned_charts.values_text("nvidia-dra-driver-gpu")


def test_a_missing_archive_skips_naming_it(monkeypatch, tmp_path):
    monkeypatch.setattr(pinned_charts, "SRC_DIR", tmp_path)
    with pytest.raises(pytest.skip.Exception, match="gpu-operator-v26.3.3.tar.xz"):
        pinned_charts.values("gpu-operator")
    with pytest.raises(pytest.skip.Exception, match="gpu_operator_chart_version: v26.3.3"):
        pinned_charts.values_path("gpu-operator")


def test_an_archive_without_the_values_fails(monkeypatch, tmp_path):
    empty = tmp_path / "volcano-v1.15.1.tar.xz"
    with tarfile.open(empty, "w:xz"):
        pass
    monkeypatch.setattr(pinned_charts, "SRC_DIR", tmp_path)
    pinned_charts._values_text.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="installer/helm/chart/volcano/values.yaml"):
            pinned_charts.values_text("volcano")
    finally:
        pinned_charts._values_text.cache_clear()
