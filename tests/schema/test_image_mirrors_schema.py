"""The charts' image data (images.CHART_IMAGES) equal the charts' values.yaml in shared/upstream: every image
repository a chart has is mirrored or left out for a written reason, with the chart's own default."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import images
from tests.schema import crdschema

VALUES = {
    "gpu-operator": ("gpu-operator", "values.default.yaml"),
    "network-operator": ("network-operator", "values.default.yaml"),
    "nvidia-dra-driver-gpu": ("dra-driver", "values.default.yaml"),
}


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


@pytest.mark.parametrize("chart", sorted(VALUES))
def test_chart_images_equal_the_upstream_values(shared_dir, chart):
    folder, name = VALUES[chart]
    with open(os.path.join(shared_dir, "upstream", folder, name), encoding="utf-8") as handle:
        upstream = dict(image_values(yaml.safe_load(handle)))
    ours = dict(images.CHART_IMAGES[chart])
    missing = {p: v for p, v in upstream.items() if p not in ours and not covered(p, chart)}
    assert missing == {}, "images of the chart that nothing mirrors: add them to CHART_IMAGES or NOT_MIRRORED"
    assert {p: upstream.get(p) for p in ours if upstream.get(p) != ours[p]} == {}, "defaults differ from upstream"
    for prefix in images.NOT_MIRRORED.get(chart, ()):
        assert any(p[:len(prefix)] == prefix for p in upstream), "NOT_MIRRORED names %s, which the chart lacks" % (
            prefix,)


@pytest.mark.parametrize("chart", sorted(VALUES))
def test_mirror_values_are_keys_the_chart_has(shared_dir, chart):
    folder, name = VALUES[chart]
    values = images.chart_values(chart, {"nvcr.io": "harbor.example.com/nvcr"})
    assert values, "every chart here pulls from nvcr.io"
    assert crdschema.check_values_keys(values, os.path.join(shared_dir, "upstream", folder, name)) == []


def test_the_check_can_fail(shared_dir, monkeypatch):
    monkeypatch.setitem(images.CHART_IMAGES, "gpu-operator", images.CHART_IMAGES["gpu-operator"][1:])
    with pytest.raises(AssertionError, match="nothing mirrors"):
        test_chart_images_equal_the_upstream_values(shared_dir, "gpu-operator")
