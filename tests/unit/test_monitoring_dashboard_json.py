"""The Grafana dashboard of the monitoring layer: valid JSON, its header and variables, and a layout without
overlaps."""
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, panels as monitoring_panels)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.dashboard_checker import graph_panels


# ---------------------------------------------------------------- the JSON model

def test_the_dashboard_is_json_and_round_trips(dashboard):
    text = json.dumps(dashboard, allow_nan=False)
    assert json.loads(text) == dashboard
    assert json.loads(monitoring.dashboard_json(dashboard)) == dashboard
    assert monitoring.dashboard_json(dashboard) == json.dumps(dashboard, sort_keys=True, indent=2) + "\n"


def test_the_json_text_is_stable():
    first = monitoring.dashboard_json(monitoring.grafana_dashboard())
    assert first == monitoring.dashboard_json(monitoring.grafana_dashboard())
    assert first == json.dumps(json.loads(first), sort_keys=True, indent=2) + "\n"


@pytest.mark.parametrize("value", [{"x": float("nan")}, {"x": float("inf")}, {"x": {1, 2}}])
def test_the_json_writer_refuses_what_json_cannot_hold(value):
    with pytest.raises(ParamError):
        monitoring.dashboard_json(value)


def test_the_dashboard_header(dashboard):
    assert dashboard["uid"] == "gpu-platform-dcgm" and len(dashboard["uid"]) <= 40
    assert dashboard["title"] and dashboard["schemaVersion"] == 39
    assert "id" not in dashboard, "an id would clash on import; Grafana assigns one"
    assert set(dashboard) >= {"panels", "templating", "time", "refresh", "tags", "annotations"}


def test_the_variables(dashboard):
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert list(variables) == ["datasource", "node", "gpu"]
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    node, gpu = variables["node"], variables["gpu"]
    assert node["query"] == "label_values(DCGM_FI_DEV_GPU_TEMP, node)"
    assert gpu["query"] == 'label_values(DCGM_FI_DEV_GPU_TEMP{node=~"$node"}, gpu)', "GPUs of the chosen nodes"
    for var in (node, gpu):
        assert var["type"] == "query" and var["multi"] is True and var["includeAll"] is True
        assert var["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert var["definition"] == var["query"]


def test_a_datasource_uid_preselects_that_datasource():
    variables = monitoring.grafana_dashboard("prometheus")["templating"]["list"]
    assert variables[0]["current"]["value"] == "prometheus"
    assert monitoring.grafana_dashboard()["templating"]["list"][0]["current"] == {}


def test_panels_have_unique_ids_and_do_not_overlap(dashboard):
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) and i > 0 for i in ids)
    boxes = []
    for p in panels:
        pos = p["gridPos"]
        assert set(pos) == {"h", "w", "x", "y"} and all(isinstance(v, int) for v in pos.values()), p["title"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] >= 0 and pos["y"] >= 0
        assert pos["x"] + pos["w"] <= 24, p["title"]
        boxes.append((p["title"], pos))
    for index, (title, a) in enumerate(boxes):
        for other, b in boxes[index + 1:]:
            apart = (a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"]
                     or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"])
            assert apart, "%s overlaps %s" % (title, other)


def test_every_panel_queries_the_datasource_variable(dashboard):
    for p in graph_panels(dashboard):
        assert p["type"] == "timeseries" and p["targets"], p["title"]
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs))
        for target in p["targets"]:
            assert target["datasource"] == p["datasource"] and target["expr"] and target["legendFormat"]
    assert len(monitoring_panels.dashboard_exprs(dashboard)) == sum(len(p["targets"]) for p in graph_panels(dashboard))
