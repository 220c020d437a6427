"""The Grafana dashboard's queries: only metric names the DCGM exporter exports (and labels it or the
ServiceMonitor sets), the panels an operator expects, thresholds, and promtool's parse."""
import copy
import json
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, metrics as monitoring_metrics, panels as monitoring_panels)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.dashboard_checker import CUSTOM, NS, dashboard_problems, graph_panels, panel, variable_exprs


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
