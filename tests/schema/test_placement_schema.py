"""Placement (domain/operators/placement.py) against the pinned charts: every tolerations list and node selector it
replaces exists in the chart (or the NFD subchart it carries) at every release a pair or pin installs, and the default
placement starts from holds every entry of the chart's own, so a chart's tolerations and selector are kept when the
inventory adds one (an older release may lack a key: then placement adds it, as v26.3.3's operator.nodeSelector). Kueue's chart comes
from the Go module proxy, not shared/upstream/src, and is checked by the local cluster's converge instead."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import placement
from tests.schema import pinned_charts

CASES = [(chart, version) for chart in ("gpu-operator", "network-operator", "dra-driver-nvidia-gpu", "kai-scheduler",
                                        "volcano")
         for version in pinned_charts.pair_versions(chart)]
MISSING = object()


def _at(values, path):
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return MISSING
        values = values[key]
    return values


def _chart_values(chart, version):
    root = pinned_charts.chart_dir(chart, version)
    values = yaml.safe_load(open(os.path.join(root, "values.yaml"), encoding="utf-8")) or {}
    sub = os.path.join(root, "charts", "node-feature-discovery", "values.yaml")
    if os.path.exists(sub):  # the subchart's defaults under its key, the parent's values over them
        nfd = yaml.safe_load(open(sub, encoding="utf-8")) or {}
        for part in ("master", "gc", "worker"):
            merged = dict(nfd.get(part) or {})
            merged.update((values.get("node-feature-discovery") or {}).get(part) or {})
            values.setdefault("node-feature-discovery", {})[part] = merged
    return values


@pytest.mark.parametrize("chart, version", CASES, ids=["%s-%s" % case for case in CASES])
def test_placement_starts_from_the_charts_own_defaults(chart, version):
    values = _chart_values(chart, version)
    lost = {}
    for path, default, _side in placement.CHART_LISTS[chart]:
        found = _at(values, path)
        missing = [item for item in ([] if found is MISSING else found or []) if item not in (default or [])]
        if missing:
            lost[".".join(path)] = missing
    for path, default in placement.CHART_SELECTORS[chart]:
        found = _at(values, path)
        missing = {k: v for k, v in ({} if found is MISSING else found or {}).items() if (default or {}).get(k) != v}
        if missing:
            lost[".".join(path)] = missing
    assert lost == {}, "placement would drop these defaults of the %s %s chart: %s" % (chart, version, lost)


@pytest.mark.parametrize("chart", sorted({chart for chart, _version in CASES}))
def test_every_path_placement_writes_is_the_pinned_charts(chart):
    values = _chart_values(chart, None)
    paths = [path for path, _default, _side in placement.CHART_LISTS[chart]] + [
        path for path, _default in placement.CHART_SELECTORS[chart]] + (
        [placement.CHART_AFFINITY[chart]] if chart in placement.CHART_AFFINITY else [])
    assert [".".join(p) for p in paths if _at(values, p) is MISSING] == []
