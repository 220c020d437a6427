"""The charts' image data (images.CHART_IMAGES) equal the values.yaml of the chart versions the roles pin (read from
shared/upstream/src, tests/schema/pinned_charts.py): every image repository a chart has is mirrored or left out for a
written reason, with the chart's own default, and every value the mirrors set is a key that chart has."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images
from tests.schema import crdschema, pinned_charts

CHARTS = ("gpu-operator", "network-operator", "dra-driver-nvidia-gpu")


def image_values(node, path=()):
    """(path, value) of every image location in chart values: a ``repository`` key, or an ``images`` map."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "repository" and isinstance(value, str):
                yield path + (key,), value
            elif key == "images" and isinstance(value, dict):
                yield path + (key,), value
            else:
                yield from image_values(value, path + (key,))


def covered(path, chart):
    return any(path[:len(prefix)] == prefix for prefix in images.NOT_MIRRORED.get(chart, ()))


@pytest.mark.parametrize("chart", CHARTS)
def test_chart_images_equal_the_upstream_values(chart):
    upstream = dict(image_values(pinned_charts.values(chart)))
    ours = dict(images.chart_images(chart, pinned_charts.pinned_version(chart)))
    missing = {p: v for p, v in upstream.items() if p not in ours and not covered(p, chart)}
    assert missing == {}, "images of the chart that nothing mirrors: add them to CHART_IMAGES or NOT_MIRRORED"
    assert {p: upstream.get(p) for p in ours if upstream.get(p) != ours[p]} == {}, "defaults differ from upstream"
    for prefix in images.NOT_MIRRORED.get(chart, ()):
        assert any(p[:len(prefix)] == prefix for p in upstream), "NOT_MIRRORED names %s, which the chart lacks" % (
            prefix,)


@pytest.mark.parametrize("chart", CHARTS)
def test_mirror_values_are_keys_the_chart_has(chart):
    mirrors = {"nvcr.io": "harbor.example.com/nvcr", "registry.k8s.io": "harbor.example.com/k8s"}
    values = images.chart_values(chart, mirrors, pinned_charts.pinned_version(chart))
    assert values, "every chart here pulls from nvcr.io or registry.k8s.io"
    assert crdschema.check_values_keys(values, pinned_charts.values_path(chart)) == []


def test_the_check_can_fail(monkeypatch):
    monkeypatch.setitem(images.CHART_IMAGES, "gpu-operator", images.CHART_IMAGES["gpu-operator"][1:])
    with pytest.raises(AssertionError, match="nothing mirrors"):
        test_chart_images_equal_the_upstream_values("gpu-operator")


def test_a_key_only_a_newer_release_has_is_caught(monkeypatch):
    """draDriver.repository is in GPU Operator v26.7.0's values.yaml (the aicr pair's), not in v26.3.3's (the other
    pairs'): its entry says since which release, so v26.3.3's values leave it out; without that it would be a key
    the chart lacks (Helm would ignore it, and a mirror setting would do nothing for that image)."""
    assert ("draDriver", "repository") in dict(images.chart_images("gpu-operator", "v26.7.0"))
    assert ("draDriver", "repository") not in dict(images.chart_images("gpu-operator", "v26.3.3"))
    for cached in (pinned_charts._values_text, pinned_charts._parsed, pinned_charts._written):
        cached.cache_clear()
    monkeypatch.setattr(pinned_charts, "pinned_version", lambda chart: "v26.3.3")
    try:
        assert "draDriver" not in pinned_charts.values("gpu-operator")
        test_chart_images_equal_the_upstream_values("gpu-operator")
        test_mirror_values_are_keys_the_chart_has("gpu-operator")
        unmarked = tuple(entry[:2] for entry in images.CHART_IMAGES["gpu-operator"])
        monkeypatch.setitem(images.CHART_IMAGES, "gpu-operator", unmarked)
        with pytest.raises(AssertionError, match="defaults differ"):
            test_chart_images_equal_the_upstream_values("gpu-operator")
        with pytest.raises(AssertionError, match="draDriver"):
            test_mirror_values_are_keys_the_chart_has("gpu-operator")
    finally:
        for cached in (pinned_charts._values_text, pinned_charts._parsed, pinned_charts._written):
            cached.cache_clear()
