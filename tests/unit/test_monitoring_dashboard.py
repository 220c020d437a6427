"""The Grafana dashboard of the monitoring layer: valid JSON, a layout without overlaps, every query
using only metric names the DCGM exporter exports (and labels it or the ServiceMonitor sets), the
panels an operator expects, and the ConfigMap Grafana's sidecar picks up."""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import monitoring, monitoring_metrics, monitoring_panels
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "gpu-operator"
CUSTOM = {"temperature_celsius": 80.5, "memory_ratio": 0.9, "for_minutes": 3, "xid_window_minutes": 15}

# -- a small PromQL checker (structure only; promtool below parses for real when installed) -----

# PromQL functions and aggregation operators the dashboard may call (Prometheus 2.x/3.x names).
FUNCTIONS = {"abs", "avg", "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "count",
             "count_over_time", "delta", "deriv", "floor", "histogram_quantile", "idelta", "increase", "irate",
             "label_replace", "last_over_time", "max", "max_over_time", "min", "min_over_time", "quantile",
             "rate", "resets", "round", "scalar", "sort", "sort_desc", "stddev", "sum", "sum_over_time", "topk",
             "bottomk", "vector", "group", "absent"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
PAIRS = {")": "(", "]": "[", "}": "{"}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
MATCHERS = re.compile(r"\{([^}]*)\}")
MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"\"\s*$")
RANGE = re.compile(r"\[[^\]]*\]")
WORD = re.compile(r"(?<![A-Za-z0-9_:.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")
LEGEND_LABEL = re.compile(r"\{\{\s*([^}\s]+)\s*\}\}")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$")


def allowed_labels():
    """The exporter's labels and the ones the ServiceMonitor's relabelings add (node)."""
    relabeled = {r["targetLabel"] for r in monitoring.service_monitor(NS)["spec"]["endpoints"][0]["relabelings"]}
    return set(monitoring_metrics.DCGM_LABELS) | relabeled


def brackets_error(expr):
    stack, quote = [], None
    for char in expr:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            stack.append(char)
        elif char in PAIRS:
            if not stack or stack.pop() != PAIRS[char]:
                return "unbalanced %r" % char
    if quote or stack:
        return "unclosed %r" % (quote or stack[-1])
    return None


def expr_problems(expr):
    """What is wrong with a PromQL expression: brackets, unknown metrics, functions or labels."""
    problem = brackets_error(expr)
    if problem:
        return [problem]
    errors, labels = [], allowed_labels()
    text = STRING.sub('""', expr)
    for match in GROUPING.finditer(text):
        for label in filter(None, (part.strip() for part in match.group(2).split(","))):
            if label not in labels:
                errors.append("label %r in %s() is not one the exporter or the ServiceMonitor sets" % (label, match.group(1)))
    text = GROUPING.sub(" ", text)  # "sum by (node) (x)" -> "sum  (x)": sum stays a call
    for match in MATCHERS.finditer(text):
        for part in filter(str.strip, match.group(1).split(",")):
            found = MATCHER.match(part)
            if not found:
                errors.append("matcher %r does not parse" % part)
            elif found.group(1) not in labels:
                errors.append("label %r in a matcher is not one the exporter or the ServiceMonitor sets" % found.group(1))
    text = RANGE.sub(" ", MATCHERS.sub(" ", text))
    for match in WORD.finditer(text):
        name, call = match.group(1), match.group(2)
        if name in KEYWORDS:
            continue
        if call:
            if name not in FUNCTIONS:
                errors.append("%r is not a PromQL function" % name)
        elif name not in monitoring_metrics.DCGM_METRICS:
            errors.append("metric %r is not one dcgm-exporter %s exports" % (name, monitoring_metrics.DCGM_EXPORTER_VERSION))
    # the domain's extractor must agree: every DCGM_FI_* identifier is a known metric
    errors += ["metric %r is unknown (metric_names)" % name
               for name in sorted(monitoring_metrics.metric_names(expr) - set(monitoring_metrics.DCGM_METRICS))]
    return errors


def variable_exprs(dashboard):
    """The series selectors inside the query variables' label_values(<selector>, <label>)."""
    out = []
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            found = LABEL_VALUES.match(var["query"])
            assert found, var["query"]
            out.append((found.group(1), found.group(2)))
    return out


def dashboard_problems(dashboard):
    errors = []
    for expr in monitoring_panels.dashboard_exprs(dashboard):
        errors += ["%s: %s" % (expr, e) for e in expr_problems(expr)]
    for selector, label in variable_exprs(dashboard):
        errors += ["%s: %s" % (selector, e) for e in expr_problems(selector)]
        if label not in allowed_labels():
            errors.append("label_values over unknown label %r" % label)
    for panel in graph_panels(dashboard):
        for target in panel["targets"]:
            errors += ["legend %r: unknown label %r" % (target["legendFormat"], label)
                       for label in LEGEND_LABEL.findall(target.get("legendFormat", "")) if label not in allowed_labels()]
    return errors


def graph_panels(dashboard):
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def panel(dashboard, title):
    found = [p for p in dashboard["panels"] if p["title"] == title]
    assert len(found) == 1, title
    return found[0]


@pytest.fixture(params=[None, CUSTOM], ids=["defaults", "custom"])
def dashboard(request):
    return monitoring.grafana_dashboard(thresholds=request.param)


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


# ---------------------------------------------------------------- the queries

def test_every_query_uses_only_metrics_and_labels_the_exporter_provides(dashboard):
    assert dashboard_problems(dashboard) == []
    used = set().union(*(monitoring_metrics.metric_names(e) for e in monitoring_panels.dashboard_exprs(dashboard)))
    assert used and used <= set(monitoring_metrics.DCGM_METRICS)


def test_no_rate_over_gauges():
    """All the dashboard's metrics are gauges (PCIe bytes are already per second): rate() would be wrong."""
    for expr in monitoring_panels.dashboard_exprs(monitoring.grafana_dashboard()):
        for name in monitoring_metrics.metric_names(expr):
            if monitoring_metrics.DCGM_METRICS[name]["type"] == "gauge":
                assert not re.search(r"\b(rate|irate|increase)\(\s*%s\b" % name, expr), expr


@pytest.mark.parametrize("wrong, words", [
    (("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMPERATURE"), "DCGM_FI_DEV_GPU_TEMPERATURE"),
    (("DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"), "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"),
    (("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_Power_Usage"), "DCGM_FI_DEV_Power_Usage"),
    (("DCGM_FI_DEV_GPU_UTIL", "nvidia_gpu_util"), "nvidia_gpu_util"),
    (("by (node, gpu,", "by (Hostname, gpu,"), "Hostname"),
    (('node=~"$node"', 'instance=~"$node"'), "instance"),
    (("{{node}} GPU", "{{hostname_x}} GPU"), "hostname_x"),
    (("max by", "maxx by"), "maxx"),
    (("(DCGM_FI_DEV_FB_FREE{", "(DCGM_FI_DEV_FB_FREE{{"), "unbalanced"),
])
def test_the_checker_catches_a_misspelt_name(wrong, words):
    old, new = (json.dumps(part)[1:-1] for part in wrong)  # as they appear in the JSON text
    text = json.dumps(monitoring.grafana_dashboard())
    assert old in text
    problems = dashboard_problems(json.loads(text.replace(old, new)))
    assert problems and any(words in p for p in problems), problems


def test_a_misspelt_metric_in_a_variable_query_is_caught():
    broken = copy.deepcopy(monitoring.grafana_dashboard())
    broken["templating"]["list"][1]["query"] = "label_values(DCGM_FI_DEV_GPU_TEMPERATURE, node)"
    assert any("DCGM_FI_DEV_GPU_TEMPERATURE" in p for p in dashboard_problems(broken))


@pytest.mark.parametrize("expr, expected", [
    ("max by (node) (DCGM_FI_DEV_GPU_TEMP{gpu=~\"$gpu\"})", {"DCGM_FI_DEV_GPU_TEMP"}),
    ("DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)", {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}),
    ("changes(DCGM_FI_DEV_XID_ERRORS[10m])", {"DCGM_FI_DEV_XID_ERRORS"}),
    ("DCGM_FI_DEV_Gpu_Temp", {"DCGM_FI_DEV_Gpu_Temp"}),  # returned as written, so it is caught
    ("x:DCGM_FI_DEV_GPU_TEMP + node_gpu:dcgm_fb_used:ratio", set()),
    ("", set()),
    (None, set()),
])
def test_metric_names(expr, expected):
    assert monitoring_metrics.metric_names(expr) == expected


def test_the_panels_an_operator_expects():
    dash = monitoring.grafana_dashboard()
    by_metric = {}
    for p in graph_panels(dash):
        for target in p["targets"]:
            for name in monitoring_metrics.metric_names(target["expr"]):
                by_metric.setdefault(name, []).append(p)
    units = {"DCGM_FI_DEV_GPU_UTIL": "percent", "DCGM_FI_DEV_GPU_TEMP": "celsius", "DCGM_FI_DEV_POWER_USAGE": "watt",
             "DCGM_FI_PROF_PCIE_TX_BYTES": "Bps", "DCGM_FI_PROF_PCIE_RX_BYTES": "Bps",
             "DCGM_FI_DEV_FB_USED": "percent", "DCGM_FI_DEV_FB_FREE": "percent"}
    for name, unit in units.items():
        assert name in by_metric, name
        assert {p["fieldConfig"]["defaults"]["unit"] for p in by_metric[name]} == {unit}, name
    # framebuffer as a percentage of the usable memory: FB_USED / (FB_USED + FB_FREE)
    for p in by_metric["DCGM_FI_DEV_FB_USED"]:
        expr = p["targets"][0]["expr"]
        assert expr.startswith("100 * ") and re.search(r"/ \(.*DCGM_FI_DEV_FB_USED.* \+ .*DCGM_FI_DEV_FB_FREE", expr)
    # XID: the changes of the last-code gauge (as the rules count them), and the last code itself
    xid = [t["expr"] for p in by_metric["DCGM_FI_DEV_XID_ERRORS"] for t in p["targets"]]
    assert any("changes(DCGM_FI_DEV_XID_ERRORS{" in e and e.endswith("[10m]))") for e in xid)
    assert any("changes(" not in e for e in xid), "a panel with the last XID code"


def test_per_gpu_and_per_node_panels():
    dash = monitoring.grafana_dashboard()
    rows = [p["title"] for p in dash["panels"] if p["type"] == "row"]
    assert rows == ["Per node", "Per GPU"]
    split = next(i for i, p in enumerate(dash["panels"]) if p["title"] == "Per GPU")
    for p in dash["panels"][1:split]:
        for target in p["targets"]:
            assert target["legendFormat"] == "{{node}}" and " by (node) (" in target["expr"], p["title"]
    for p in dash["panels"][split + 1:]:
        for target in p["targets"]:
            assert target["legendFormat"] == "{{node}} GPU {{gpu}}", p["title"]
            assert 'node=~"$node", gpu=~"$gpu"' in target["expr"], p["title"]
            # one series per GPU, as the rules take it (time-sliced GPUs report once per pod)
            assert "max by (%s)" % ", ".join(monitoring_metrics.GPU_LABELS) in target["expr"]


def test_the_node_label_is_the_one_the_rules_use():
    rule_exprs = " ".join(r["expr"] for g in monitoring.prometheus_rule(NS)["spec"]["groups"] for r in g["rules"])
    assert "by (node)" in rule_exprs
    for expr in monitoring_panels.dashboard_exprs(monitoring.grafana_dashboard()):
        assert "node" in re.findall(r"by \(([^)]*)\)", expr)[0] and "Hostname" not in expr and "hostname" not in expr


def test_the_thresholds_are_the_alerts():
    for thresholds, temperature, memory, window in ((None, 85, 95.0, 10), (CUSTOM, 80.5, 90.0, 15)):
        dash = monitoring.grafana_dashboard(thresholds=thresholds)
        steps = panel(dash, "Temperature")["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert steps[-1] == {"color": "red", "value": temperature}
        steps = panel(dash, "Framebuffer used")["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert steps[-1] == {"color": "red", "value": memory}
        xid = panel(dash, "XID changes (%d min)" % window)["targets"][0]["expr"]
        assert "[%dm]" % window in xid


@pytest.mark.parametrize("call, field", [
    (lambda: monitoring.grafana_dashboard(uid="x" * 41), "uid"),
    (lambda: monitoring.grafana_dashboard(uid="gpu dcgm"), "uid"),
    (lambda: monitoring.grafana_dashboard(title=" "), "title"),
    (lambda: monitoring.grafana_dashboard("prom/etheus"), "datasource_uid"),
    (lambda: monitoring.grafana_dashboard(thresholds={"temperature_celsius": 300}),
     "monitoring_thresholds.temperature_celsius"),
])
def test_bad_dashboard_inputs(call, field):
    with pytest.raises(ParamError) as err:
        call()
    assert err.value.field == field and "Fix: " in str(err.value)


# ---------------------------------------------------------------- the ConfigMap

def test_the_config_map_carries_the_sidecar_label_and_the_dashboard():
    dash = monitoring.grafana_dashboard()
    obj = monitoring.dashboard_config_map(NS, dash, {"grafana_dashboard": "1"})
    assert obj["apiVersion"] == "v1" and obj["kind"] == "ConfigMap"
    assert obj["metadata"]["name"] == "gpu-platform-dcgm-dashboard" and obj["metadata"]["namespace"] == NS
    assert obj["metadata"]["labels"] == {"grafana_dashboard": "1", "app.kubernetes.io/managed-by": "gpu_platform.cluster"}
    assert list(obj["data"]) == ["gpu-platform-dcgm.json"]
    assert json.loads(obj["data"]["gpu-platform-dcgm.json"]) == dash
    assert obj["data"]["gpu-platform-dcgm.json"] == monitoring.dashboard_json(dash)
    assert len(obj["data"]["gpu-platform-dcgm.json"].encode()) < 1024 * 1024, "a ConfigMap holds at most 1 MiB"
    # the default label is kube-prometheus-stack's sidecar label; others are taken as given
    assert monitoring.dashboard_config_map(NS, dash)["metadata"]["labels"]["grafana_dashboard"] == "1"
    other = monitoring.dashboard_config_map("monitoring", dash, {"grafana.io/dashboard": "gpu"})
    assert other["metadata"]["labels"]["grafana.io/dashboard"] == "gpu" and "grafana_dashboard" not in other["metadata"]["labels"]


def test_the_config_map_survives_yaml():
    obj = monitoring.dashboard_config_map(NS, monitoring.grafana_dashboard())
    again = yaml.safe_load(yaml.safe_dump(obj))
    assert json.loads(again["data"]["gpu-platform-dcgm.json"]) == monitoring.grafana_dashboard()


@pytest.mark.parametrize("namespace, labels, field, words", [
    ("GPU", None, "monitoring_dashboard_namespace", "not a valid name"),
    ("", None, "monitoring_dashboard_namespace", "empty"),
    (NS, {}, "monitoring_dashboard_label", "empty"),
    (NS, {"grafana_dashboard": 1}, "monitoring_dashboard_label", "not a string"),
    (NS, {"grafana dashboard": "1"}, "monitoring_dashboard_label", "not a valid kubernetes label name"),
    (NS, ["grafana_dashboard"], "monitoring_dashboard_label", "dictionary"),
])
def test_bad_config_map_inputs_name_the_role_variable(namespace, labels, field, words):
    with pytest.raises(ParamError) as err:
        monitoring.dashboard_config_map(namespace, monitoring.grafana_dashboard(), labels)
    assert err.value.field == field and words in str(err.value).lower()


# ---------------------------------------------------------------- the filter and its documentation

def test_the_filter():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpu_platform.cluster.plugins.filter import layers

    filters = layers.FilterModule().filters()
    assert filters["monitoring_dashboard"] is layers.monitoring_dashboard and "monitoring_objects" in filters
    obj = layers.monitoring_dashboard(NS, {"grafana_dashboard": "1"}, {"temperature_celsius": 80})
    assert obj == monitoring.dashboard_config_map(NS, monitoring.grafana_dashboard(thresholds={"temperature_celsius": 80}))
    with pytest.raises(AnsibleFilterError, match="monitoring_dashboard_label"):
        layers.monitoring_dashboard(NS, {"grafana_dashboard": True})


def test_the_filter_documentation_matches_the_filter():
    import inspect
    from ansible_collections.gpu_platform.cluster.plugins.filter import layers

    with open(os.path.join(ROOT, "plugins", "filter", "monitoring_dashboard.yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == "monitoring_dashboard"
    params = list(inspect.signature(layers.monitoring_dashboard).parameters)
    assert set(doc["DOCUMENTATION"]["options"]) == {"_input"} | set(params[1:])


# ---------------------------------------------------------------- promtool

@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed: run `make system-deps` (Debian package prometheus)")
def test_promtool_parses_every_query(tmp_path):
    dash = monitoring.grafana_dashboard(thresholds=CUSTOM)
    exprs = monitoring_panels.dashboard_exprs(dash) + [selector for selector, dummy in variable_exprs(dash)]
    rules = [{"record": "gpu_platform:dashboard_query_%d:check" % index, "expr": expr}
             for index, expr in enumerate(exprs)]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}),
                                        encoding="utf-8")
    run = subprocess.run(["promtool", "check", "rules", "rules.yml"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS: %d rules found" % len(rules) in run.stdout + run.stderr
