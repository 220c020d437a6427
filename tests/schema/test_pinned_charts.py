"""tests/schema/pinned_charts.py: the values.yaml of the chart versions the roles pin, from shared/upstream/src."""
from __future__ import annotations

import os
import tarfile

import pytest
import yaml

from tests.schema import pinned_charts


def test_the_pinned_versions_are_read_from_the_roles():
    """The role defaults as the versions they stand for: the release pair's for the two operators."""
    assert {chart: pinned_charts.pinned_version(chart) for chart in pinned_charts.PINS} == {
        "gpu-operator": "v26.7.0", "network-operator": "26.4.1", "dra-driver-nvidia-gpu": "0.4.1",
        "volcano": "1.15.1", "kai-scheduler": "v0.16.8"}
    assert pinned_charts.archive_path("gpu-operator").name == "gpu-operator-v26.7.0.tar.xz"
    assert pinned_charts.archive_path("network-operator").name == "network-operator-v26.4.1.tar.xz"
    assert pinned_charts.archive_path("dra-driver-nvidia-gpu").name == "dra-driver-nvidia-gpu-v0.4.1.tar.xz"


@pytest.mark.parametrize("chart", sorted(pinned_charts.PINS))
def test_every_pinned_chart_has_its_values(chart):
    values = pinned_charts.values(chart)
    assert isinstance(values, dict) and values
    with open(pinned_charts.values_path(chart), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == values
    values.clear()
    assert pinned_charts.values(chart), "each caller gets a copy"


def test_the_shared_values_files_are_the_pinned_releases_or_named_others(shared_dir):
    """shared/upstream/gpu-operator/values.default.yaml is v26.7.0's, the pinned one (the archive's, byte for byte);
    the DRA driver's values.default.yaml is 25.12.0's (release 0.2.0's pin), not the pinned 0.4.1's, and
    values.default.v0.4.0.yaml is 0.4.0's, byte-identical to 0.4.1's."""
    with open(os.path.join(shared_dir, "upstream", "gpu-operator", "values.default.yaml"), encoding="utf-8") as handle:
        assert handle.read() == pinned_charts.values_text("gpu-operator")
    pinned = pinned_charts.values("gpu-operator")
    assert {"draDriver", "gpuCluster", "clusterPolicy"} <= set(pinned)
    assert pinned["driver"]["version"] == "595.91.07"
    for name, same in (("values.default.yaml", False), ("values.default.v0.4.0.yaml", True)):
        with open(os.path.join(shared_dir, "upstream", "dra-driver", name), encoding="utf-8") as handle:
            assert (handle.read() == pinned_charts.values_text("dra-driver-nvidia-gpu")) is same, name


def test_a_missing_archive_skips_naming_it(monkeypatch, tmp_path):
    monkeypatch.setattr(pinned_charts, "SRC_DIR", tmp_path)
    with pytest.raises(pytest.skip.Exception, match="gpu-operator-v26.7.0.tar.xz"):
        pinned_charts.values("gpu-operator")
    with pytest.raises(pytest.skip.Exception, match="gpu_operator_chart_version: v26.7.0"):
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
