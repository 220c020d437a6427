"""tests/schema/pinned_charts.py: the values.yaml of the chart versions the roles pin, from shared/upstream/src."""
from __future__ import annotations

import os
import tarfile

import pytest
import yaml

from tests.schema import pinned_charts


def test_the_operators_pinned_versions_are_the_default_release_pairs():
    """The GPU Operator and Network Operator charts are pinned by the release pair (gpu_platform_release_pair aicr);
    every named pair's versions are checked too."""
    assert {chart: pinned_charts.pinned_version(chart) for chart in ("gpu-operator", "network-operator")} == {
        "gpu-operator": "v26.7.0", "network-operator": "26.4.1"}
    assert pinned_charts.archive_path("gpu-operator").name == "gpu-operator-v26.7.0.tar.xz"
    assert pinned_charts.archive_path("network-operator").name == "network-operator-v26.4.1.tar.xz"
    assert pinned_charts.archive_path("network-operator", "26.1.2").name == "network-operator-v26.1.2.tar.xz"
    assert pinned_charts.pair_versions("gpu-operator") == ["v26.3.3", "v26.7.0"]
    assert pinned_charts.pair_versions("network-operator") == ["26.1.2", "26.4.0", "26.4.1"]
    assert pinned_charts.pair_versions("volcano") == [pinned_charts.pinned_version("volcano")]


def test_the_pinned_versions_are_read_from_the_roles():
    assert {chart: pinned_charts.pinned_version(chart) for chart in pinned_charts.PINS
            if chart not in ("gpu-operator", "network-operator")} == {
        "dra-driver-nvidia-gpu": "0.4.1", "volcano": "1.15.1", "kai-scheduler": "v0.16.8"}
    assert pinned_charts.archive_path("dra-driver-nvidia-gpu").name == "dra-driver-nvidia-gpu-v0.4.1.tar.xz"


@pytest.mark.parametrize("chart, version", [(c, v) for c in ("gpu-operator", "network-operator")
                                            for v in pinned_charts.pair_versions(c)])
def test_every_release_pairs_chart_has_its_values(chart, version):
    values = pinned_charts.values(chart, version)
    assert isinstance(values, dict) and values
    with open(pinned_charts.values_path(chart, version), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == values


@pytest.mark.parametrize("chart", sorted(pinned_charts.PINS))
def test_every_pinned_chart_has_its_values(chart):
    values = pinned_charts.values(chart)
    assert isinstance(values, dict) and values
    with open(pinned_charts.values_path(chart), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == values
    values.clear()
    assert pinned_charts.values(chart), "each caller gets a copy"


def test_the_shared_values_files_are_other_releases(shared_dir):
    """Why the archives: shared/upstream/gpu-operator/values.default.yaml is v26.7.0's (the default pair's), whose
    values.yaml has blocks the other pairs' v26.3.3 lacks; the DRA driver's values.default.yaml is 25.12.0's (release
    0.2.0's pin), not the pinned 0.4.1's, and values.default.v0.4.0.yaml is 0.4.0's, byte-identical to 0.4.1's."""
    with open(os.path.join(shared_dir, "upstream", "gpu-operator", "values.default.yaml"), encoding="utf-8") as handle:
        newer = yaml.safe_load(handle)
    assert newer == pinned_charts.values("gpu-operator", "v26.7.0")
    older = pinned_charts.values("gpu-operator", "v26.3.3")
    assert {"draDriver", "gpuCluster", "clusterPolicy"} <= set(newer) - set(older)
    assert older["driver"]["version"] == "580.126.20" and newer["driver"]["version"] == "595.91.07"
    for name, same in (("values.default.yaml", False), ("values.default.v0.4.0.yaml", True)):
        with open(os.path.join(shared_dir, "upstream", "dra-driver", name), encoding="utf-8") as handle:
            assert (handle.read() == pinned_charts.values_text("dra-driver-nvidia-gpu")) is same, name


def test_a_missing_archive_skips_naming_it(monkeypatch, tmp_path):
    monkeypatch.setattr(pinned_charts, "SRC_DIR", tmp_path)
    pinned = pinned_charts.pinned_version("gpu-operator")
    with pytest.raises(pytest.skip.Exception, match="gpu-operator-%s.tar.xz" % pinned):
        pinned_charts.values("gpu-operator")
    with pytest.raises(pytest.skip.Exception, match="pinned gpu-operator chart .gpu_operator_chart_version: %s" % pinned):
        pinned_charts.values_path("gpu-operator")
    with pytest.raises(pytest.skip.Exception, match="release pair's network-operator chart .network_operator_chart_"
                                                    "version: 26.1.2. is missing: .*network-operator-v26.1.2.tar.xz"):
        pinned_charts.chart_dir("network-operator", "26.1.2")


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
