"""The charts' image data (images.CHART_IMAGES) equal the values.yaml of the chart versions the roles pin, every release
pair's for the GPU Operator and the Network Operator (read from shared/upstream/src, tests/schema/pinned_charts.py):
every image repository a chart has is mirrored or left out for a written reason, with the chart's own default, and
every value the mirrors set is a key each of those charts has."""
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


RELEASES = [(chart, version) for chart in CHARTS for version in pinned_charts.pair_versions(chart)]


@pytest.mark.parametrize("chart, version", RELEASES)
def test_chart_images_equal_the_upstream_values(chart, version):
    upstream = dict(image_values(pinned_charts.values(chart, version)))
    ours = dict(images.CHART_IMAGES[chart])
    missing = {p: v for p, v in upstream.items() if p not in ours and not covered(p, chart)}
    assert missing == {}, "images of the chart that nothing mirrors: add them to CHART_IMAGES or NOT_MIRRORED"
    assert {p: upstream.get(p) for p in ours if upstream.get(p) != ours[p]} == {}, "defaults differ from upstream"


@pytest.mark.parametrize("chart", CHARTS)
def test_every_value_left_alone_is_in_a_pinned_chart(chart):
    every = [p for version in pinned_charts.pair_versions(chart)
             for p in dict(image_values(pinned_charts.values(chart, version)))]
    for prefix in images.NOT_MIRRORED.get(chart, ()):
        assert any(p[:len(prefix)] == prefix for p in every), "NOT_MIRRORED names %s, which no pinned chart has" % (
            prefix,)


@pytest.mark.parametrize("chart, version", RELEASES)
def test_mirror_values_are_keys_the_chart_has(chart, version):
    values = images.chart_values(chart, {"nvcr.io": "harbor.example.com/nvcr", "registry.k8s.io": "harbor.example.com/k8s"})
    assert values, "every chart here pulls from nvcr.io or registry.k8s.io"
    assert crdschema.check_values_keys(values, pinned_charts.values_path(chart, version)) == []


def test_the_check_can_fail(monkeypatch):
    monkeypatch.setitem(images.CHART_IMAGES, "gpu-operator", images.CHART_IMAGES["gpu-operator"][1:])
    with pytest.raises(AssertionError, match="nothing mirrors"):
        test_chart_images_equal_the_upstream_values("gpu-operator", pinned_charts.pinned_version("gpu-operator"))


def test_a_key_only_a_newer_release_has_is_caught(monkeypatch):
    """draDriver.repository is in GPU Operator v26.7.0's values.yaml (the aicr pair's), not in v26.3.3's (the other
    pairs'): Helm would ignore it there, and a mirror setting would do nothing for that image."""
    assert "draDriver" in pinned_charts.values("gpu-operator", "v26.7.0")
    assert "draDriver" not in pinned_charts.values("gpu-operator", "v26.3.3")
    newer = images.CHART_IMAGES["gpu-operator"] + ((("draDriver", "repository"), "nvcr.io/nvidia"),)
    monkeypatch.setitem(images.CHART_IMAGES, "gpu-operator", newer)
    with pytest.raises(AssertionError, match="defaults differ"):
        test_chart_images_equal_the_upstream_values("gpu-operator", "v26.3.3")
    with pytest.raises(AssertionError, match="draDriver"):
        test_mirror_values_are_keys_the_chart_has("gpu-operator", "v26.3.3")
    test_mirror_values_are_keys_the_chart_has("gpu-operator", "v26.7.0")


def test_an_override_of_the_dra_driver_image_is_refused():
    """Left alone is not unpinned: an extra value that changes draDriver's image is refused like any pinned image."""
    assert images.pinned_overrides("gpu-operator", {"draDriver": {"version": "v0.6.0"}}, "gpu_operator_extra_values") \
        == ["gpu_operator_extra_values.draDriver.version"]
