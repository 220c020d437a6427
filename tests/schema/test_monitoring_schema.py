"""The monitoring domain's objects against upstream schemas.

The ServiceMonitor is checked against the real prometheus-operator v0.93.0 CRD in
../shared/upstream/monitoring (a missing directory fails, never skips).

The PrometheusRule CRD is not available under shared/upstream, so the PrometheusRule is checked by
the structural validator below. It follows the PrometheusRule CRD's schema (fields, required keys,
duration pattern) as published in prometheus-operator's
example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml
(https://github.com/prometheus-operator/prometheus-operator/blob/main/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml)
plus the rule-file checks Prometheus itself makes (one of record/alert, valid metric and label names,
recording rules without for/annotations).
"""
from __future__ import annotations

import copy
import re
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, metrics as monitoring_metrics)
from tests.schema import crdschema, pinned_charts
from tests.unit.dashboard_checker import brackets_error

NS = "gpu-operator"
# GPU Operator v26.7.0's values: the release whose dcgm-exporter image the metric table was audited against.
VALUES_V26_7 = crdschema.UPSTREAM_DIR / "gpu-operator" / "values.default.yaml"

# -- the structural validator for PrometheusRule -------------------------------------------

DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
GROUP_KEYS = {"name", "interval", "rules", "limit", "partial_response_strategy", "query_offset", "labels"}
RULE_KEYS = {"record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _string_map_errors(where, value, key_pattern):
    if not isinstance(value, dict):
        return ["%s: must be a mapping of strings" % where]
    errors = []
    for key, item in value.items():
        if not isinstance(key, str) or not key_pattern.match(key):
            errors.append("%s.%s: invalid name" % (where, key))
        if not isinstance(item, str):
            errors.append("%s.%s: value must be a string, not %s" % (where, key, type(item).__name__))
    return errors


def _duration_errors(where, value):
    if not isinstance(value, str) or not DURATION.match(value):
        return ["%s: %r is not a Prometheus duration" % (where, value)]
    return []


def _rule_errors(where, rule):
    if not isinstance(rule, dict):
        return ["%s: must be a mapping" % where]
    errors = ["%s.%s: unknown field" % (where, key) for key in sorted(set(rule) - RULE_KEYS)]
    kinds = [key for key in ("record", "alert") if key in rule]
    if len(kinds) != 1:
        errors.append("%s: exactly one of record and alert must be set (found %s)" % (where, kinds or "neither"))
    name = rule.get(kinds[0]) if len(kinds) == 1 else None
    if "record" in kinds and (not isinstance(name, str) or not METRIC_NAME.match(name)):
        errors.append("%s.record: %r is not a valid metric name" % (where, name))
    if "alert" in kinds and (not isinstance(name, str) or not METRIC_NAME.match(name) or ":" in name):
        errors.append("%s.alert: %r is not a valid alert name" % (where, name))
    expr = rule.get("expr")
    if isinstance(expr, bool) or not isinstance(expr, (str, int)) or (isinstance(expr, str) and not expr.strip()):
        errors.append("%s.expr: required, a non-empty PromQL expression" % where)
    elif isinstance(expr, str) and (problem := brackets_error(expr)):
        errors.append("%s.expr: %s" % (where, problem))
    if "record" in kinds:
        errors += ["%s.%s: only valid for alerting rules" % (where, key)
                   for key in ("for", "keep_firing_for", "annotations") if key in rule]
    for key in ("for", "keep_firing_for"):
        if key in rule:
            errors += _duration_errors("%s.%s" % (where, key), rule[key])
    if "labels" in rule:
        errors += _string_map_errors(where + ".labels", rule["labels"], LABEL_NAME)
    if "annotations" in rule:
        errors += _string_map_errors(where + ".annotations", rule["annotations"], LABEL_NAME)
    return errors


def prometheus_rule_errors(obj):
    """Every structural problem of a PrometheusRule (empty when valid)."""
    if not isinstance(obj, dict):
        return ["an object must be a mapping"]
    errors = []
    if obj.get("apiVersion") != "monitoring.coreos.com/v1" or obj.get("kind") != "PrometheusRule":
        errors.append("apiVersion/kind: must be monitoring.coreos.com/v1 PrometheusRule")
    meta = obj.get("metadata") or {}
    if not isinstance(meta.get("name"), str) or not DNS1123_SUBDOMAIN.match(meta["name"]):
        errors.append("metadata.name: required, a DNS-1123 subdomain")
    if not isinstance(meta.get("namespace"), str) or not DNS1123_LABEL.match(meta["namespace"]):
        errors.append("metadata.namespace: required, a DNS-1123 label")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return errors + ["spec: required"]
    errors += ["spec.%s: unknown field" % key for key in sorted(set(spec) - {"groups"})]
    groups = spec.get("groups")
    if not isinstance(groups, list) or not groups:
        return errors + ["spec.groups: must be a non-empty list"]
    seen = set()
    for index, group in enumerate(groups):
        where = "spec.groups[%d]" % index
        if not isinstance(group, dict):
            errors.append("%s: must be a mapping" % where)
            continue
        errors += ["%s.%s: unknown field" % (where, key) for key in sorted(set(group) - GROUP_KEYS)]
        name = group.get("name")
        if not isinstance(name, str) or not name:
            errors.append("%s.name: required, a non-empty string" % where)
        elif name in seen:
            errors.append("%s.name: duplicate group name %r" % (where, name))
        seen.add(name)
        for key in ("interval", "query_offset"):
            if key in group:
                errors += _duration_errors("%s.%s" % (where, key), group[key])
        group_rules = group.get("rules")
        if not isinstance(group_rules, list) or not group_rules:
            errors.append("%s.rules: must be a non-empty list" % where)
            continue
        for position, rule in enumerate(group_rules):
            errors += _rule_errors("%s.rules[%d]" % (where, position), rule)
    return errors


# -- ServiceMonitor against the upstream CRD -----------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {}, {"release_label": "kube-prometheus-stack"}, {"interval": "30s"}, {"interval": "1m30s", "release_label": "kps"},
])
def test_service_monitor_validates_against_upstream_crd(kwargs):
    obj = monitoring.service_monitor(NS, **kwargs)
    crdschema.validate(obj)
    assert crdschema.catalog().lookup(obj["apiVersion"], obj["kind"])[0].source.startswith("monitoring/")


@pytest.mark.parametrize("path, key, value, expected", [
    (("spec", "endpoints", 0), "honourLabels", True, "spec.endpoints[0].honourLabels: unknown field"),
    (("spec",), "namespaceSelectors", {"any": True}, "spec.namespaceSelectors: unknown field"),
    (("spec", "endpoints", 0, "relabelings", 0), "target_label", "node",
     "spec.endpoints[0].relabelings[0].target_label: unknown field"),
    (("spec", "endpoints", 0, "relabelings", 0), "action", "rename",
     "spec.endpoints[0].relabelings[0].action: 'rename' is not one of"),
    (("spec", "endpoints", 0), "interval", "15 seconds", "spec.endpoints[0].interval: '15 seconds' does not match"),
])
def test_crd_catches_a_misspelt_or_wrong_field(path, key, value, expected):
    obj = monitoring.service_monitor(NS)
    assert crdschema.crd_errors(obj) == []
    here = obj
    for part in path:
        here = here[part]
    here[key] = value
    errors = crdschema.crd_errors(obj)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_defaults_follow_the_gpu_operator_release_in_shared_upstream():
    with open(VALUES_V26_7, encoding="utf-8") as handle:
        exporter = yaml.safe_load(handle)["dcgmExporter"]
    # the metric table was audited for v26.7.0's exporter image; a new pin there means a new audit
    assert exporter["version"].startswith(monitoring_metrics.DCGM_EXPORTER_VERSION + "-")
    # same scrape interval as the operator's own ServiceMonitor, in the chart of every release pair
    for version in pinned_charts.pair_versions("gpu-operator"):
        pinned = pinned_charts.values("gpu-operator", version)["dcgmExporter"]["serviceMonitor"]
        assert monitoring.service_monitor(NS)["spec"]["endpoints"][0]["interval"] == pinned["interval"], version


# -- PrometheusRule against the structural validator ---------------------------------------

@pytest.mark.parametrize("thresholds", [
    None,
    {"temperature_celsius": 80.5, "memory_ratio": 0.9, "for_minutes": 3, "xid_window_minutes": 15},
    {"temperature_celsius": 120, "memory_ratio": 1, "for_minutes": 1, "xid_window_minutes": 1},
])
def test_prometheus_rule_passes_the_structural_validator(thresholds):
    obj = monitoring.prometheus_rule(NS, thresholds, release_label="kube-prometheus-stack")
    assert prometheus_rule_errors(obj) == []


def _broken(change):
    obj = copy.deepcopy(monitoring.prometheus_rule(NS))
    change(obj)
    return obj


def _rule(obj, group, index):
    return obj["spec"]["groups"][group]["rules"][index]


BROKEN = [
    (lambda o: _rule(o, 1, 0).update(record="also_a_record"), "spec.groups[1].rules[0]: exactly one"),
    (lambda o: _rule(o, 0, 0).pop("record"), "spec.groups[0].rules[0]: exactly one"),
    (lambda o: _rule(o, 1, 1).pop("expr"), "spec.groups[1].rules[1].expr: required"),
    (lambda o: _rule(o, 1, 1).update(expr="  "), "spec.groups[1].rules[1].expr: required"),
    (lambda o: _rule(o, 1, 1).update(expr="max by (node (DCGM_FI_DEV_GPU_TEMP) > 85"),
     "spec.groups[1].rules[1].expr: unclosed"),
    (lambda o: _rule(o, 1, 1).update({"for": "5 minutes"}), "spec.groups[1].rules[1].for: '5 minutes' is not"),
    (lambda o: _rule(o, 1, 1).update({"for": 5}), "spec.groups[1].rules[1].for: 5 is not"),
    (lambda o: _rule(o, 0, 0).update({"for": "5m"}), "spec.groups[0].rules[0].for: only valid for alerting"),
    (lambda o: _rule(o, 0, 0).update(record="node gpu:fb:ratio"), "spec.groups[0].rules[0].record: "),
    (lambda o: _rule(o, 1, 0).update(alert="Gpu:Xid"), "spec.groups[1].rules[0].alert: "),
    (lambda o: _rule(o, 1, 0).update(annotation={"summary": "x"}), "spec.groups[1].rules[0].annotation: unknown"),
    (lambda o: _rule(o, 1, 0)["labels"].update(severity=3), "spec.groups[1].rules[0].labels.severity: value"),
    (lambda o: _rule(o, 1, 0)["labels"].update({"team-name": "gpu"}), "spec.groups[1].rules[0].labels.team-name"),
    (lambda o: o["spec"]["groups"][1].update(name=o["spec"]["groups"][0]["name"]), "spec.groups[1].name: duplicate"),
    (lambda o: o["spec"]["groups"][0].update(interval="1 m"), "spec.groups[0].interval: "),
    (lambda o: o["spec"]["groups"][0].update(rules=[]), "spec.groups[0].rules: must be a non-empty list"),
    (lambda o: o["spec"].update(groups=[]), "spec.groups: must be a non-empty list"),
    (lambda o: o["spec"].update(group=[]), "spec.group: unknown field"),
    (lambda o: o["metadata"].update(namespace="GPU"), "metadata.namespace: "),
]


@pytest.mark.parametrize("change, expected", BROKEN, ids=[b[1].split(":")[0] + "-%d" % i for i, b in enumerate(BROKEN)])
def test_structural_validator_rejects_a_broken_rule(change, expected):
    errors = prometheus_rule_errors(_broken(change))
    assert any(e.startswith(expected) for e in errors), errors


# -- optional: Prometheus' own rule checker and rule unit tests -----------------------------

PROMTOOL_TESTS = """
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - series: 'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="0",UUID="GPU-a",modelName="H100",pod="p1"}'
    values: '0 0 0 79x16'
  - series: 'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="0",UUID="GPU-a",modelName="H100",pod="p2"}'
    values: '0 0 0 79x16'
  - series: 'DCGM_FI_DEV_XID_ERRORS{node="n2",gpu="1",UUID="GPU-b",modelName="H100"}'
    values: '48 48 48 0x16'
  - series: 'DCGM_FI_DEV_GPU_TEMP{node="n1",gpu="0",UUID="GPU-a",modelName="H100"}'
    values: '90x15'
  - series: 'DCGM_FI_DEV_FB_USED{node="n1",gpu="0",UUID="GPU-a",modelName="H100"}'
    values: '79000x15'
  - series: 'DCGM_FI_DEV_FB_FREE{node="n1",gpu="0",UUID="GPU-a",modelName="H100"}'
    values: '1000x15'
  alert_rule_test:
  - {eval_time: 2m, alertname: GpuXidError, exp_alerts: []}
  - eval_time: 4m
    alertname: GpuXidError
    exp_alerts:
    - exp_labels: {severity: warning, node: n1, gpu: "0", UUID: GPU-a, modelName: H100}
      exp_annotations:
        summary: XID 79 on GPU 0 of node n1
        description: "GPU 0 (H100, GPU-a) on node n1 reported XID 79 within the last 10 minutes. Look the code up
          in NVIDIA's XID catalogue (https://docs.nvidia.com/deploy/xid-errors/); some codes need the node drained
          and the GPU reset."
  - {eval_time: 15m, alertname: GpuXidError, exp_alerts: []}
  - {eval_time: 3m, alertname: GpuTemperatureHigh, exp_alerts: []}
  - eval_time: 6m
    alertname: GpuTemperatureHigh
    exp_alerts:
    - exp_labels: {severity: warning, node: n1, gpu: "0", UUID: GPU-a, modelName: H100}
      exp_annotations:
        summary: GPU 0 on node n1 is above 85 C
        description: "GPU 0 (H100, GPU-a) on node n1 has been above 85 C for 5 minutes (now 90 C). Check cooling
          and power capping."
  - eval_time: 6m
    alertname: GpuFramebufferMemoryPressure
    exp_alerts:
    - exp_labels: {severity: warning, node: n1, gpu: "0", UUID: GPU-a, modelName: H100}
      exp_annotations:
        summary: GPU 0 on node n1 has used over 95% of its memory
        description: "GPU 0 (H100, GPU-a) on node n1 has had more than 95% of its framebuffer in use for 5 minutes
          (now 98.75%); new allocations may fail with out-of-memory."
  promql_expr_test:
  - expr: node:dcgm_xid_errors:changes10m
    eval_time: 5m
    exp_samples:
    - {labels: 'node:dcgm_xid_errors:changes10m{node="n1"}', value: 1}
    - {labels: 'node:dcgm_xid_errors:changes10m{node="n2"}', value: 1}
  - expr: node_gpu:dcgm_fb_used:ratio
    eval_time: 5m
    exp_samples:
    - {labels: 'node_gpu:dcgm_fb_used:ratio{node="n1",gpu="0",UUID="GPU-a",modelName="H100"}', value: 0.9875}
"""


@pytest.mark.skipif(shutil.which("promtool") is None and not os.environ.get("CI"),
                    reason="promtool is not installed: run `make system-deps` (Debian package prometheus)")
def test_promtool_accepts_the_rules_and_they_fire_as_documented(tmp_path):
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(monitoring.prometheus_rule(NS)["spec"]), encoding="utf-8")
    (tmp_path / "tests.yml").write_text(PROMTOOL_TESTS, encoding="utf-8")
    for command in (["promtool", "check", "rules", "rules.yml"], ["promtool", "test", "rules", "tests.yml"]):
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stdout + run.stderr
