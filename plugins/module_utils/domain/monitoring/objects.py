# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Prometheus Operator objects for the GPU Operator's DCGM exporter: a ServiceMonitor that scrapes
it and a PrometheusRule with recording rules and alerts, and the Grafana dashboard's ConfigMap (monitoring role).

Private to the collection: not a public API. Pure: standard library only.
The metrics and the PromQL over them are in ``domain.monitoring.metrics`` (dcgm-exporter 4.8.3), the dashboard's
panels in ``domain.monitoring.panels``. Every fact below names its source; the schema tests check the
ServiceMonitor against the upstream CRD (prometheus-operator v0.93.0, shared/upstream/monitoring).
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring.metrics import (
    DCGM_EXPORTER_VERSION, _literal, _per_gpu, framebuffer_ratio_expr, thresholds_from, xid_changes_expr)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring.panels import (
    _gpu_panels, _layout, _node_panels, _variables)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

# The Service the GPU Operator creates for the exporter: name nvidia-dcgm-exporter, label
# app=nvidia-dcgm-exporter, port "gpu-metrics" 9400/TCP. Sources:
# https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-dcgm-exporter/0400_service.yaml (and the
# older 0600_service.yaml, same label and port), and the operator's own ServiceMonitor
# https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-dcgm-exporter/0500_service_monitor.yaml
# (endpoint port gpu-metrics, path /metrics, selector app=nvidia-dcgm-exporter).
EXPORTER_SERVICE = "nvidia-dcgm-exporter"
EXPORTER_SELECTOR = {"app": "nvidia-dcgm-exporter"}
EXPORTER_PORT_NAME = "gpu-metrics"
EXPORTER_PORT = 9400
METRICS_PATH = "/metrics"

# Our objects are not named nvidia-dcgm-exporter: the GPU Operator owns a ServiceMonitor of that name
# when dcgmExporter.serviceMonitor.enabled (true by default in v26.7.0) and would overwrite ours.
OBJECT_NAME = "gpu-platform-dcgm-exporter"
RECORDING_GROUP = "gpu-platform-dcgm.rules"
ALERTING_GROUP = "gpu-platform-dcgm.alerts"

# Prometheus duration as the CRDs accept it (pattern of endpoints[].interval in
# shared/upstream/monitoring/servicemonitors.monitoring.coreos.com.yaml).
DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")


def _release_label(value):
    """The ``release`` label value kube-prometheus-stack selects on, or None when not given."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ParamError("monitoring_release_label", "%r is not a string" % (value,),
                         "give the Helm release name of kube-prometheus-stack, e.g. kube-prometheus-stack")
    if len(value) > 63 or not validate.LABEL_VALUE.match(value):
        raise ParamError("monitoring_release_label", "%r is not a valid label value" % value,
                         "use at most 63 characters: letters, digits, '-', '_' and '.', starting and ending "
                         "with a letter or digit (the Prometheus object's serviceMonitorSelector value)")
    return value


def _interval(value):
    # The pattern also accepts "0" and "" (no interval): a scrape interval must be above zero.
    if not isinstance(value, str) or not DURATION.match(value) or not re.search(r"[1-9]", value):
        raise ParamError("monitoring_scrape_interval", "%r is not a Prometheus duration above zero" % (value,),
                         "give a duration such as 15s, 30s or 1m")
    return value


def _metadata(namespace, release_label):
    labels = dict(MANAGED_BY)
    if release_label:
        labels["release"] = release_label
    return {"name": OBJECT_NAME, "namespace": namespace, "labels": labels}


# Sources for the choices below: the exporter takes its host-name label from NODE_NAME, else from
# os.Hostname() (https://github.com/NVIDIA/dcgm-exporter/blob/main/internal/pkg/hostname/hostname.go);
# its Kubernetes-mode labels are pod, namespace, container (podAttribute, namespaceAttribute,
# containerAttribute in NVIDIA/dcgm-exporter's transformation code); the operator's DaemonSet runs the
# exporter with hostNetwork false (dcgmExporter.hostNetwork in values.default.yaml of v26.7.0).
def service_monitor(namespace, release_label=None, interval="15s"):
    """A ServiceMonitor that scrapes the GPU Operator's dcgm-exporter Service in ``namespace``.

    - ``honorLabels: true``: in Kubernetes mode the exporter labels each GPU metric with the pod,
      namespace and container of the workload using the GPU; without it Prometheus would overwrite
      them with the exporter pod's own target labels (and keep the workload's as exported_pod ...).
    - ``node``: set from the target's ``__meta_kubernetes_pod_node_name``, not by relabeling the
      exporter's host-name label. That label was renamed Hostname -> hostname in 4.8.3 and holds the
      NODE_NAME variable when the pod has one, else the pod's own host name (the exporter pod's name,
      as the operator runs it without hostNetwork), so it cannot be trusted as the node name. The
      service-discovery label is always the node the exporter pod runs on, the same ``node`` label
      kube-state-metrics uses, so GPU series join node series.
    - ``release: <release_label>`` when given: kube-prometheus-stack's Prometheus selects
      ServiceMonitors by its release label.
    """
    namespace = validate.dns_label("monitoring_namespace", namespace)
    release_label = _release_label(release_label)
    interval = _interval(interval)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": _metadata(namespace, release_label),
        "spec": {
            "selector": {"matchLabels": dict(EXPORTER_SELECTOR)},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{
                "port": EXPORTER_PORT_NAME,
                "path": METRICS_PATH,
                "interval": interval,
                "honorLabels": True,
                "relabelings": [{
                    "action": "replace",
                    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                    "targetLabel": "node",
                }],
            }],
        },
    }


def _gpu_text():
    return "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on node {{ $labels.node }}"


def _alert(name, expr, severity, summary, description, for_minutes=None):
    rule = {"alert": name, "expr": expr}
    if for_minutes:
        rule["for"] = "%dm" % for_minutes
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary, "description": description}
    return rule


def prometheus_rule(namespace, thresholds=None, release_label=None):
    """A PrometheusRule with a recording group and an alerting group for the DCGM exporter's metrics.

    Alerts:
    - GpuXidError: the last-XID gauge changed within ``xid_window_minutes`` and is not 0. The value
      (and so ``$value``) is the XID code. A change back to 0 (exporter restart) does not fire. The
      alert stays up for the window after the XID, then resolves by itself.
    - GpuTemperatureHigh: die temperature above ``temperature_celsius`` for ``for_minutes``.
    - GpuFramebufferMemoryPressure: used / (used + free) above ``memory_ratio`` for ``for_minutes``.
    """
    namespace = validate.dns_label("monitoring_namespace", namespace)
    release_label = _release_label(release_label)
    limits = thresholds_from(thresholds)
    window = limits["xid_window_minutes"]
    temperature = _literal(limits["temperature_celsius"])
    ratio = _literal(limits["memory_ratio"])
    gpu = _gpu_text()
    recording = [
        {"record": "node_gpu:dcgm_fb_used:ratio", "expr": framebuffer_ratio_expr()},
        {"record": "node:dcgm_gpu_util:avg",
         "expr": "avg by (node) (%s)" % _per_gpu("DCGM_FI_DEV_GPU_UTIL")},
        {"record": "node:dcgm_xid_errors:changes%dm" % window,
         "expr": "sum by (node) (%s)" % xid_changes_expr(window)},
    ]
    alerts = [
        _alert("GpuXidError",
               "(%s > 0) and (%s > 0)" % (_per_gpu("DCGM_FI_DEV_XID_ERRORS"), xid_changes_expr(window)),
               "warning",
               "XID {{ $value }} on GPU {{ $labels.gpu }} of node {{ $labels.node }}",
               "%s reported XID {{ $value }} within the last %d minutes. Look the code up in NVIDIA's XID "
               "catalogue (https://docs.nvidia.com/deploy/xid-errors/); some codes need the node drained "
               "and the GPU reset." % (gpu, window)),
        _alert("GpuTemperatureHigh",
               "%s > %s" % (_per_gpu("DCGM_FI_DEV_GPU_TEMP"), temperature),
               "warning",
               "GPU {{ $labels.gpu }} on node {{ $labels.node }} is above %s C" % temperature,
               "%s has been above %s C for %d minutes (now {{ $value }} C). Check cooling and power "
               "capping." % (gpu, temperature, limits["for_minutes"]),
               limits["for_minutes"]),
        _alert("GpuFramebufferMemoryPressure",
               "%s > %s" % (framebuffer_ratio_expr(), ratio),
               "warning",
               "GPU {{ $labels.gpu }} on node {{ $labels.node }} has used over %g%% of its memory"
               % (limits["memory_ratio"] * 100),
               "%s has had more than %g%% of its framebuffer in use for %d minutes (now "
               "{{ $value | humanizePercentage }}); new allocations may fail with out-of-memory."
               % (gpu, limits["memory_ratio"] * 100, limits["for_minutes"]),
               limits["for_minutes"]),
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _metadata(namespace, release_label),
        "spec": {"groups": [
            {"name": RECORDING_GROUP, "rules": recording},
            {"name": ALERTING_GROUP, "rules": alerts},
        ]},
    }


# ---------------------------------------------------------------- the Grafana dashboard
# A Grafana dashboard (JSON model) for the exporter's metrics, shipped as a ConfigMap for Grafana's
# dashboard sidecar and as a plain JSON file in the GitOps bundle.
# Sources:
# - the dashboard JSON model (uid at most 40 characters of letters, digits, '-' and '_'; panels with
#   gridPos on a 24-column grid; templating.list; schemaVersion):
#   https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
#   schemaVersion 39 is that of the Grafana 10.4 / 11.x line; Grafana migrates older schema versions on load.
# - the sidecar: kube-prometheus-stack's values.yaml sets grafana.sidecar.dashboards.label
#   grafana_dashboard, labelValue "1" and searchNamespace ALL, and provisions a Prometheus data source
#   of uid "prometheus" (grafana.sidecar.datasources.uid)
#   (https://github.com/prometheus-community/helm-charts/blob/main/charts/kube-prometheus-stack/values.yaml).
# The panels (their queries and units) are in panels.py.
DASHBOARD_UID = "gpu-platform-dcgm"
DASHBOARD_TITLE = "GPU platform / DCGM"
DASHBOARD_SCHEMA_VERSION = 39
DASHBOARD_FILE = "gpu-platform-dcgm.json"
DASHBOARD_CONFIG_MAP = "gpu-platform-dcgm-dashboard"
DASHBOARD_SIDECAR_LABEL = {"grafana_dashboard": "1"}
GRAFANA_UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _grafana_uid(field, value):
    if not isinstance(value, str) or not GRAFANA_UID.match(value):
        raise ParamError(field, "%r is not a Grafana uid" % (value,),
                         "use 1 to 40 letters, digits, '-' or '_', e.g. %s" % DASHBOARD_UID)
    return value


def grafana_dashboard(datasource_uid=None, title=DASHBOARD_TITLE, uid=DASHBOARD_UID, thresholds=None):
    """A Grafana dashboard (JSON model as a dict) for the DCGM exporter's metrics.

    - Variables: ``datasource`` (any Prometheus data source; ``datasource_uid`` preselects one),
      ``node`` and ``gpu`` (multi-value, with All), listed from ``DCGM_FI_DEV_GPU_TEMP``.
    - A "Per node" row: mean utilisation, framebuffer used %, power and XID changes per node.
    - A "Per GPU" row: utilisation, framebuffer used % (FB_USED / (FB_USED + FB_FREE)), temperature,
      power, XID changes and the last XID code, PCIe transmit and receive (bytes/s).
    - ``thresholds`` (the role's monitoring_thresholds) draw the alert thresholds and set the XID window,
      so the panels show what the PrometheusRule alerts on.
    """
    if datasource_uid is not None and datasource_uid != "":
        _grafana_uid("datasource_uid", datasource_uid)
    uid = _grafana_uid("uid", uid)
    if not isinstance(title, str) or not title.strip():
        raise ParamError("title", "is empty", "give the dashboard a title such as %r" % DASHBOARD_TITLE)
    limits = thresholds_from(thresholds)
    return {
        "uid": uid,
        "title": title,
        "description": "GPUs of the cluster from NVIDIA's DCGM exporter %s (gpu_platform.cluster monitoring "
                       "role)." % DCGM_EXPORTER_VERSION,
        "tags": ["gpu", "dcgm", "gpu-platform"],
        "schemaVersion": DASHBOARD_SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "timezone": "browser",
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "links": [],
        "annotations": {"list": []},
        "templating": {"list": _variables(datasource_uid or None)},
        "panels": _layout([("Per node", 6, _node_panels(limits)), ("Per GPU", 12, _gpu_panels(limits))]),
    }


def dashboard_json(dashboard):
    """The dashboard as stable JSON text (sorted keys, two-space indent, final newline)."""
    try:
        return json.dumps(dashboard, sort_keys=True, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise ParamError("dashboard", "cannot be written as JSON (%s)" % exc,
                         "use dicts with string keys, lists, strings, finite numbers, booleans and None") from None


def dashboard_config_map(namespace, dashboard, labels=None):
    """A ConfigMap holding ``dashboard`` as ``gpu-platform-dcgm.json``, labelled for Grafana's sidecar.

    ``labels`` default to kube-prometheus-stack's sidecar label (grafana_dashboard: "1"); the sidecar
    watches every namespace there (searchNamespace ALL)."""
    namespace = validate.dns_label("monitoring_dashboard_namespace", namespace)
    if labels is None:
        labels = dict(DASHBOARD_SIDECAR_LABEL)
    labels = validate.labels("monitoring_dashboard_label", labels)
    if not labels:
        raise ParamError("monitoring_dashboard_label", "is empty",
                         "give the label Grafana's dashboard sidecar watches, e.g. grafana_dashboard: \"1\"")
    if not isinstance(dashboard, dict) or not dashboard.get("panels"):
        raise ParamError("dashboard", "is not a dashboard with panels", "build it with grafana_dashboard()")
    meta_labels = dict(MANAGED_BY)
    meta_labels.update(labels)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DASHBOARD_CONFIG_MAP, "namespace": namespace, "labels": meta_labels},
        "data": {DASHBOARD_FILE: dashboard_json(dashboard)},
    }
