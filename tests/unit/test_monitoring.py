"""The monitoring domain: the DCGM metric table, the ServiceMonitor and PrometheusRule it builds, the
thresholds that reach the alert expressions, and the errors bad role variables get."""
import ast
import re

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, metrics as monitoring_metrics, panels as monitoring_panels)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NS = "gpu-operator"
CUSTOM = {"temperature_celsius": 80.5, "memory_ratio": 0.9, "for_minutes": 3, "xid_window_minutes": 15}
# Prometheus' naming convention for recording rules: level:metric:operations
RECORD_NAME = re.compile(r"^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")


def rules(obj, key):
    return [r for g in obj["spec"]["groups"] for r in g["rules"] if key in r]


def alert(obj, name):
    found = [r for r in rules(obj, "alert") if r["alert"] == name]
    assert len(found) == 1, name
    return found[0]


# ---------------------------------------------------------------- bad inputs

def sm(**kwargs):
    return monitoring.service_monitor(**dict({"namespace": NS}, **kwargs))


def pr(**kwargs):
    return monitoring.prometheus_rule(**dict({"namespace": NS}, **kwargs))


def th(**changes):
    return pr(thresholds=changes)


BAD = [
    (lambda: sm(namespace=""), "monitoring_namespace", "empty"),
    (lambda: sm(namespace=None), "monitoring_namespace", "empty"),
    (lambda: sm(namespace="GPU_Operator"), "monitoring_namespace", "not a valid name"),
    (lambda: pr(namespace="gpu.operator"), "monitoring_namespace", "not a valid name"),
    (lambda: sm(interval="15"), "monitoring_scrape_interval", "not a prometheus duration"),
    (lambda: sm(interval="15 s"), "monitoring_scrape_interval", "not a prometheus duration"),
    (lambda: sm(interval="1.5m"), "monitoring_scrape_interval", "not a prometheus duration"),
    (lambda: sm(interval="0s"), "monitoring_scrape_interval", "above zero"),
    (lambda: sm(interval="0"), "monitoring_scrape_interval", "above zero"),
    (lambda: sm(interval=""), "monitoring_scrape_interval", "above zero"),
    (lambda: sm(interval=15), "monitoring_scrape_interval", "not a prometheus duration"),
    (lambda: sm(release_label="kube prometheus"), "monitoring_release_label", "not a valid label value"),
    (lambda: sm(release_label="-stack"), "monitoring_release_label", "not a valid label value"),
    (lambda: sm(release_label="x" * 64), "monitoring_release_label", "not a valid label value"),
    (lambda: sm(release_label=5), "monitoring_release_label", "not a string"),
    (lambda: pr(release_label="a/b"), "monitoring_release_label", "not a valid label value"),
    (lambda: pr(thresholds=[85]), "monitoring_thresholds", "must be a dictionary"),
    (lambda: pr(thresholds={"temperature": 85}), "monitoring_thresholds.temperature", "not a known threshold"),
    (lambda: th(temperature_celsius=29), "monitoring_thresholds.temperature_celsius", "out of range"),
    (lambda: th(temperature_celsius=120.5), "monitoring_thresholds.temperature_celsius", "out of range"),
    (lambda: th(temperature_celsius="85"), "monitoring_thresholds.temperature_celsius", "not a number"),
    (lambda: th(temperature_celsius=True), "monitoring_thresholds.temperature_celsius", "not a number"),
    (lambda: th(temperature_celsius=float("nan")), "monitoring_thresholds.temperature_celsius", "out of range"),
    (lambda: th(memory_ratio=0), "monitoring_thresholds.memory_ratio", "out of range"),
    (lambda: th(memory_ratio=-0.5), "monitoring_thresholds.memory_ratio", "out of range"),
    (lambda: th(memory_ratio=1.01), "monitoring_thresholds.memory_ratio", "out of range"),
    (lambda: th(memory_ratio=95), "monitoring_thresholds.memory_ratio", "out of range"),
    (lambda: th(memory_ratio="0.9"), "monitoring_thresholds.memory_ratio", "not a number"),
    (lambda: th(for_minutes=0), "monitoring_thresholds.for_minutes", "at least 1"),
    (lambda: th(for_minutes=2.5), "monitoring_thresholds.for_minutes", "whole number"),
    (lambda: th(for_minutes=True), "monitoring_thresholds.for_minutes", "whole number"),
    (lambda: th(for_minutes="5"), "monitoring_thresholds.for_minutes", "whole number"),
    (lambda: th(xid_window_minutes=0), "monitoring_thresholds.xid_window_minutes", "at least 1"),
]


@pytest.mark.parametrize("call, field, words", BAD, ids=["%s-%d" % (b[1], i) for i, b in enumerate(BAD)])
def test_bad_inputs_name_the_role_variable(call, field, words):
    with pytest.raises(ParamError) as err:
        call()
    assert err.value.field == field
    assert str(err.value).startswith(field + ": ")
    assert words in str(err.value).lower()
    assert "Fix: " in str(err.value)


@pytest.mark.parametrize("changes", [
    {"temperature_celsius": 30}, {"temperature_celsius": 120}, {"temperature_celsius": 87.5},
    {"memory_ratio": 1}, {"memory_ratio": 0.01}, {"for_minutes": 1}, {"xid_window_minutes": 1},
])
def test_threshold_bounds_are_inclusive_where_documented(changes):
    got = monitoring_metrics.thresholds_from(changes)
    assert got == dict(monitoring_metrics.DEFAULT_THRESHOLDS, **changes)


def test_missing_or_none_thresholds_take_the_defaults():
    defaults = {"temperature_celsius": 85, "memory_ratio": 0.95, "for_minutes": 5, "xid_window_minutes": 10}
    assert monitoring_metrics.thresholds_from(None) == defaults
    assert monitoring_metrics.thresholds_from({}) == defaults
    assert monitoring_metrics.thresholds_from({"for_minutes": None, "memory_ratio": 0.8}) == dict(defaults, memory_ratio=0.8)


# ---------------------------------------------------------------- the metric table

def test_metric_table_shape():
    assert len(monitoring_metrics.DCGM_METRICS) == 25  # 26 active CSV rows in 4.8.3, one of them a label
    for name, info in monitoring_metrics.DCGM_METRICS.items():
        assert re.match(r"^DCGM_FI_(DEV|PROF)_[A-Z0-9_]+$", name), name
        assert set(info) == {"type", "unit", "help"}, name
        assert info["type"] in ("gauge", "counter"), name
        assert info["unit"] and info["help"] and len(info["help"]) <= 80, name


def test_metric_table_has_what_the_dashboard_needs_with_the_upstream_types():
    types = {name: info["type"] for name, info in monitoring_metrics.DCGM_METRICS.items()}
    assert types["DCGM_FI_DEV_GPU_UTIL"] == "gauge"
    assert types["DCGM_FI_DEV_FB_USED"] == types["DCGM_FI_DEV_FB_FREE"] == "gauge"
    assert types["DCGM_FI_DEV_GPU_TEMP"] == types["DCGM_FI_DEV_POWER_USAGE"] == "gauge"
    assert types["DCGM_FI_DEV_XID_ERRORS"] == "gauge"  # the last XID code, not a count
    assert types["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == types["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] == "counter"
    # PCIe throughput in the default set is the DCP pair, already a rate in bytes per second
    assert types["DCGM_FI_PROF_PCIE_TX_BYTES"] == types["DCGM_FI_PROF_PCIE_RX_BYTES"] == "gauge"
    assert monitoring_metrics.DCGM_METRICS["DCGM_FI_PROF_PCIE_TX_BYTES"]["unit"] == "bytes_per_second"
    assert "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" not in types and "DCGM_FI_DEV_PCIE_RX_THROUGHPUT" not in types
    # a label row of the CSV, not a metric
    assert "DCGM_FI_DRIVER_VERSION" not in types and "DCGM_FI_DRIVER_VERSION" in monitoring_metrics.DCGM_LABELS


def test_rule_labels_are_labels_the_exporter_or_the_service_monitor_provides():
    relabeled = {r["targetLabel"] for r in sm()["spec"]["endpoints"][0]["relabelings"]}
    assert set(monitoring_metrics.GPU_LABELS) <= set(monitoring_metrics.DCGM_LABELS) | relabeled


# ---------------------------------------------------------------- metrics_in

@pytest.mark.parametrize("expr, expected", [
    ("DCGM_FI_DEV_GPU_TEMP > 85", {"DCGM_FI_DEV_GPU_TEMP"}),
    ("rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m]) + DCGM_FI_DEV_FB_USED{gpu=\"0\"} / DCGM_FI_DEV_FB_USED",
     {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_FB_USED"}),
    ("max by (node, gpu, GPU_I_ID) (node_gpu:dcgm_fb_used:ratio)", set()),
    ("my_DCGM_FI_DEV_GPU_TEMP + DCGM_FI_DEV_GPU_TEMP:avg + x:DCGM_FI_DEV_GPU_TEMP", set()),
    ("", set()),
    (None, set()),
])
def test_metrics_in(expr, expected):
    assert monitoring_metrics.metrics_in(expr) == expected


# ---------------------------------------------------------------- the rules

@pytest.mark.parametrize("thresholds", [None, CUSTOM])
def test_every_metric_the_rules_use_is_one_the_exporter_exports(thresholds):
    obj = pr(thresholds=thresholds)
    for rule in rules(obj, "expr"):
        used = monitoring_metrics.metrics_in(rule["expr"])
        assert used, rule  # every rule reads the exporter directly
        assert used <= set(monitoring_metrics.DCGM_METRICS), used - set(monitoring_metrics.DCGM_METRICS)


def test_default_thresholds_reach_the_expressions():
    obj = pr()
    assert alert(obj, "GpuTemperatureHigh")["expr"].endswith(") > 85")
    assert alert(obj, "GpuTemperatureHigh")["for"] == "5m"
    assert alert(obj, "GpuFramebufferMemoryPressure")["expr"].endswith(")) > 0.95")
    assert alert(obj, "GpuFramebufferMemoryPressure")["for"] == "5m"
    assert "changes(DCGM_FI_DEV_XID_ERRORS[10m])" in alert(obj, "GpuXidError")["expr"]
    assert "node:dcgm_xid_errors:changes10m" in [r["record"] for r in rules(obj, "record")]


def test_given_thresholds_reach_the_expressions_and_the_text():
    obj = pr(thresholds=CUSTOM)
    temp, mem, xid = (alert(obj, n) for n in ("GpuTemperatureHigh", "GpuFramebufferMemoryPressure", "GpuXidError"))
    assert temp["expr"].endswith(") > 80.5") and temp["for"] == "3m"
    assert "80.5 C" in temp["annotations"]["summary"] and "for 3 minutes" in temp["annotations"]["description"]
    assert mem["expr"].endswith(")) > 0.9") and mem["for"] == "3m"
    assert "90%" in mem["annotations"]["summary"] and "90%" in mem["annotations"]["description"]
    assert "changes(DCGM_FI_DEV_XID_ERRORS[15m])" in xid["expr"] and "[10m]" not in xid["expr"]
    assert "15 minutes" in xid["annotations"]["description"]
    records = {r["record"]: r["expr"] for r in rules(obj, "record")}
    assert "changes(DCGM_FI_DEV_XID_ERRORS[15m])" in records["node:dcgm_xid_errors:changes15m"]
    # only the given keys change: an integer temperature stays an integer literal
    assert pr(thresholds={"temperature_celsius": 90})["spec"]["groups"][1]["rules"][1]["expr"].endswith(") > 90")


def test_recording_rule_names_follow_level_metric_operations():
    obj = pr(thresholds=CUSTOM)
    records = rules(obj, "record")
    assert len(records) == 3
    for rule in records:
        assert RECORD_NAME.match(rule["record"]), rule["record"]
        level, metric, operations = rule["record"].split(":")
        # the metric part names a DCGM metric the expression reads (dcgm_fb_used <- DCGM_FI_DEV_FB_USED)
        stem = metric[len("dcgm_"):].upper()
        assert metric.startswith("dcgm_") and any(m.endswith("_" + stem) for m in monitoring_metrics.metrics_in(rule["expr"]))
        # the level names the labels the result keeps
        kept = re.match(r"^(?:sum|avg|max) by \(([^)]*)\)", rule["expr"]).group(1).replace(" ", "").split(",")
        assert level == "_".join(label for label in kept if label in ("node", "gpu")), rule


def test_framebuffer_ratio_is_used_over_used_plus_free():
    expr = monitoring_metrics.framebuffer_ratio_expr()
    used, free = ("max by (node, gpu, UUID, modelName, GPU_I_ID) (DCGM_FI_DEV_FB_%s)" % k for k in ("USED", "FREE"))
    assert expr == "%s / (%s + %s)" % (used, used, free)
    records = {r["record"]: r["expr"] for r in rules(pr(), "record")}
    assert records["node_gpu:dcgm_fb_used:ratio"] == expr


def test_xid_alert_treats_the_metric_as_a_last_value_gauge():
    expr = alert(pr(), "GpuXidError")["expr"]
    assert "rate(" not in expr and "increase(" not in expr  # meaningless on a gauge holding a code
    # fires on a new value, but not on a change back to 0; $value is the XID code (left-hand side)
    assert expr == ("(max by (node, gpu, UUID, modelName, GPU_I_ID) (DCGM_FI_DEV_XID_ERRORS) > 0) and "
                    "(max by (node, gpu, UUID, modelName, GPU_I_ID) (changes(DCGM_FI_DEV_XID_ERRORS[10m])) > 0)")
    assert "for" not in alert(pr(), "GpuXidError")  # the window already holds it for N minutes


def test_every_alert_has_severity_and_text_naming_node_and_gpu():
    alerts = rules(pr(), "alert")
    assert sorted(a["alert"] for a in alerts) == ["GpuFramebufferMemoryPressure", "GpuTemperatureHigh", "GpuXidError"]
    for rule in alerts:
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert set(rule["annotations"]) == {"summary", "description"}
        for text in rule["annotations"].values():
            assert "{{ $labels.node }}" in text and "{{ $labels.gpu }}" in text, text
        assert "{{ $labels.UUID }}" in rule["annotations"]["description"]
        # one result per GPU: every alert aggregates the per-pod series by the GPU's labels first
        assert "max by (node, gpu, UUID, modelName, GPU_I_ID) (" in rule["expr"]


def test_rule_object_metadata_and_release_label():
    obj = pr(release_label="kube-prometheus-stack")
    assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "PrometheusRule"
    assert obj["metadata"] == {"name": "gpu-platform-dcgm-exporter", "namespace": NS, "labels": {
        "app.kubernetes.io/managed-by": "gpu_platform.cluster", "release": "kube-prometheus-stack"}}
    assert "release" not in pr()["metadata"]["labels"] and "release" not in pr(release_label="")["metadata"]["labels"]
    assert [g["name"] for g in obj["spec"]["groups"]] == [monitoring.RECORDING_GROUP, monitoring.ALERTING_GROUP]


# ---------------------------------------------------------------- the ServiceMonitor

def test_service_monitor_targets_the_operator_service():
    obj = sm(release_label="kps", interval="30s")
    assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "ServiceMonitor"
    assert obj["metadata"] == {"name": "gpu-platform-dcgm-exporter", "namespace": NS, "labels": {
        "app.kubernetes.io/managed-by": "gpu_platform.cluster", "release": "kps"}}
    spec = obj["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
    assert spec["namespaceSelector"] == {"matchNames": [NS]}
    assert spec["endpoints"] == [{
        "port": "gpu-metrics", "path": "/metrics", "interval": "30s", "honorLabels": True,
        "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                         "targetLabel": "node"}],
    }]


def test_service_monitor_defaults():
    obj = monitoring.service_monitor("gpu-ops")
    assert obj["spec"]["endpoints"][0]["interval"] == "15s"
    assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}
    assert obj["spec"]["namespaceSelector"]["matchNames"] == ["gpu-ops"] and obj["metadata"]["namespace"] == "gpu-ops"


@pytest.mark.parametrize("interval", ["15s", "1m", "1m30s", "500ms", "2h"])
def test_service_monitor_accepts_prometheus_durations(interval):
    assert sm(interval=interval)["spec"]["endpoints"][0]["interval"] == interval


def test_outputs_do_not_share_state_with_the_module():
    first = sm()
    first["spec"]["selector"]["matchLabels"]["app"] = "changed"
    first["metadata"]["labels"]["x"] = "y"
    again = sm()
    assert again["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}
    assert monitoring.MANAGED_BY == {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}
    thresholds = {"for_minutes": 2}
    pr(thresholds=thresholds)
    assert thresholds == {"for_minutes": 2} and monitoring_metrics.DEFAULT_THRESHOLDS["for_minutes"] == 5


@pytest.mark.parametrize("module", [monitoring, monitoring_metrics, monitoring_panels])
def test_module_is_pure_standard_library(module):
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    own = "ansible_collections.gpu_platform.cluster.plugins.module_utils."
    assert {m for m in imported if not m.startswith(own)} <= {"__future__", "json", "re"}
