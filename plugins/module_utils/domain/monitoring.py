# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Prometheus Operator objects for the GPU Operator's DCGM exporter: a ServiceMonitor that scrapes
it and a PrometheusRule with recording rules and alerts (monitoring role).

Private to the collection: not a public API. Pure: standard library only.
Metric names, types and labels follow dcgm-exporter 4.8.3 (image tag 4.6.0-4.8.3, the version GPU
Operator v26.7.0 pins in shared/upstream/gpu-operator/values.default.yaml, dcgmExporter.version).
Every fact below names its source; the schema tests check the ServiceMonitor against the upstream
CRD (prometheus-operator v0.93.0, shared/upstream/monitoring).
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# The dcgm-exporter image the tables below were audited against (GPU Operator v26.7.0
# values.yaml, dcgmExporter.version; shared/upstream/gpu-operator/values.default.yaml).
DCGM_EXPORTER_VERSION = "4.6.0-4.8.3"

# The metrics dcgm-exporter 4.8.3 exports with its shipped default counters.
# Sources:
# - https://raw.githubusercontent.com/NVIDIA/dcgm-exporter/4.6.0-4.8.3/etc/default-counters.csv
#   (etc/default-counters.csv at tag 4.6.0-4.8.3: the active rows, their Prometheus types)
# - https://github.com/NVIDIA/dcgm-exporter/blob/cecb62a2fee146a20d4cf3003aa88bf7d14769cc/docs/metrics.md
#   (the table of the metrics that default file enables, with units)
# The GPU Operator does not run the exporter with default-counters.csv but sets
# DCGM_EXPORTER_COLLECTORS=/etc/dcgm-exporter/dcp-metrics-included.csv
# (https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-dcgm-exporter/0800_daemonset.yaml);
# in 4.8.x that file enables the same rows (it differs in comments only).
# PCIe throughput: the NVML counters DCGM_FI_DEV_PCIE_TX_THROUGHPUT / _RX_THROUGHPUT of older
# releases are NOT in this default set. PCIe throughput comes from the profiling (DCP) fields
# DCGM_FI_PROF_PCIE_TX_BYTES / _RX_BYTES, which are gauges already holding bytes per second (no
# rate() needed) and exist only on data-centre GPUs from Volta on, with the DCGM profiling module.
# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is typed counter in docs/metrics.md; one secondary write-up of the
# 4.8.3 CSV lists it as gauge. No rule here uses it.
# dcgm-exporter 4.9.0 renames 23 of these fields and changes units (memory in bytes, utilisation as a
# ratio: https://newreleases.io/project/github/NVIDIA/dcgm-exporter/release/4.9.0), so re-audit this
# table and the rules when the GPU Operator moves past 4.8.x.
DCGM_METRICS = {
    "DCGM_FI_DEV_SM_CLOCK": {"type": "gauge", "unit": "MHz", "help": "Clock of the streaming multiprocessors."},
    "DCGM_FI_DEV_MEM_CLOCK": {"type": "gauge", "unit": "MHz", "help": "Clock of the GPU memory."},
    "DCGM_FI_DEV_MEMORY_TEMP": {"type": "gauge", "unit": "celsius", "help": "Temperature of the GPU memory."},
    "DCGM_FI_DEV_GPU_TEMP": {"type": "gauge", "unit": "celsius", "help": "Temperature of the GPU die."},
    "DCGM_FI_DEV_POWER_USAGE": {"type": "gauge", "unit": "watts", "help": "Power the board draws now."},
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": {"type": "counter", "unit": "millijoules",
                                             "help": "Energy used since the driver was loaded."},
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": {"type": "counter", "unit": "retries",
                                        "help": "PCIe packets resent; growth points at a bad link."},
    "DCGM_FI_DEV_GPU_UTIL": {"type": "gauge", "unit": "percent",
                             "help": "Share of the sample period in which a kernel was running."},
    "DCGM_FI_DEV_MEM_COPY_UTIL": {"type": "gauge", "unit": "percent",
                                  "help": "Share of the sample period spent reading or writing memory."},
    "DCGM_FI_DEV_ENC_UTIL": {"type": "gauge", "unit": "percent", "help": "Video encoder busy share."},
    "DCGM_FI_DEV_DEC_UTIL": {"type": "gauge", "unit": "percent", "help": "Video decoder busy share."},
    "DCGM_FI_DEV_XID_ERRORS": {"type": "gauge", "unit": "xid",
                               "help": "Code of the most recent XID error (a value, not a count)."},
    "DCGM_FI_DEV_FB_FREE": {"type": "gauge", "unit": "MiB", "help": "Framebuffer (GPU) memory still free."},
    "DCGM_FI_DEV_FB_USED": {"type": "gauge", "unit": "MiB", "help": "Framebuffer (GPU) memory in use."},
    "DCGM_FI_DEV_FB_RESERVED": {"type": "gauge", "unit": "MiB",
                                "help": "Framebuffer memory the driver keeps for itself."},
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": {"type": "counter", "unit": "count",
                                           "help": "NVLink bandwidth counter summed over all lanes."},
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": {"type": "gauge", "unit": "status", "help": "vGPU licence state."},
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": {"type": "counter", "unit": "rows",
                                                "help": "Memory rows remapped after uncorrectable errors."},
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": {"type": "counter", "unit": "rows",
                                              "help": "Memory rows remapped after correctable errors."},
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": {"type": "gauge", "unit": "boolean",
                                      "help": "1 when a row could not be remapped (no spare rows left)."},
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": {"type": "gauge", "unit": "ratio",
                                      "help": "Share of time the graphics/compute engine had work."},
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": {"type": "gauge", "unit": "ratio",
                                        "help": "Share of cycles the tensor-core pipe was busy."},
    "DCGM_FI_PROF_DRAM_ACTIVE": {"type": "gauge", "unit": "ratio",
                                 "help": "Share of cycles the memory interface was moving data."},
    "DCGM_FI_PROF_PCIE_TX_BYTES": {"type": "gauge", "unit": "bytes_per_second",
                                   "help": "PCIe send rate, headers included (Volta and newer)."},
    "DCGM_FI_PROF_PCIE_RX_BYTES": {"type": "gauge", "unit": "bytes_per_second",
                                   "help": "PCIe receive rate, headers included (Volta and newer)."},
}

# Labels dcgm-exporter 4.8.x puts on every GPU metric. Sources: the render template in
# internal/pkg/rendermetrics of NVIDIA/dcgm-exporter (gpu, UUID, pci_bus_id, device, modelName, and
# GPU_I_PROFILE / GPU_I_ID for MIG instances); the 4.6.0-4.8.3 release notes rename the Hostname
# label to hostname (https://docs.nvidia.com/datacenter/dcgm/latest/release-notes/dcgm-exporter.html);
# DCGM_FI_DRIVER_VERSION is a "label" row of the default CSV; pod / namespace / container are the
# workload using the GPU, added in Kubernetes mode (DCGM_EXPORTER_KUBERNETES=true, which the GPU
# Operator sets).
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "hostname",
               "DCGM_FI_DRIVER_VERSION", "pod", "namespace", "container")

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
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}
RECORDING_GROUP = "gpu-platform-dcgm.rules"
ALERTING_GROUP = "gpu-platform-dcgm.alerts"

# Prometheus duration as the CRDs accept it (pattern of endpoints[].interval in
# shared/upstream/monitoring/servicemonitors.monitoring.coreos.com.yaml).
DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")
DCGM_NAME = re.compile(r"(?<![A-Za-z0-9_:])DCGM_[A-Z0-9_]+(?![A-Za-z0-9_:])")

DEFAULT_THRESHOLDS = {"temperature_celsius": 85, "memory_ratio": 0.95, "for_minutes": 5, "xid_window_minutes": 10}
TEMPERATURE_RANGE = (30, 120)

# The labels that identify one GPU (or MIG instance) in the rules. "node" comes from the
# ServiceMonitor's relabeling; GPU_I_ID is empty unless MIG is on. In Kubernetes mode the exporter
# emits one series per pod sharing a GPU (time-slicing), all with the same value, so the rules take
# max by these labels first: one result per GPU, not one per pod.
GPU_LABELS = ("node", "gpu", "UUID", "modelName", "GPU_I_ID")


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


def _number(field, value, low, high, fix):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(field, "%r is not a number" % (value,), fix)
    if not low(value) or not high(value):
        raise ParamError(field, "%r is out of range" % (value,), fix)
    return value


def _minutes(field, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamError(field, "%r is not a whole number of minutes of at least 1" % (value,),
                         "give an integer such as 5")
    return value


def thresholds_from(thresholds):
    """The alert thresholds: ``DEFAULT_THRESHOLDS`` updated with the keys given (None means default)."""
    if thresholds is None:
        thresholds = {}
    if not isinstance(thresholds, dict):
        raise ParamError("monitoring_thresholds", "must be a dictionary",
                         "give e.g. {temperature_celsius: 85, memory_ratio: 0.95, for_minutes: 5}")
    unknown = sorted(str(k) for k in thresholds if k not in DEFAULT_THRESHOLDS)
    if unknown:
        raise ParamError("monitoring_thresholds.%s" % unknown[0], "is not a known threshold",
                         "use only %s" % ", ".join(sorted(DEFAULT_THRESHOLDS)))
    out = dict(DEFAULT_THRESHOLDS)
    out.update({k: v for k, v in thresholds.items() if v is not None})
    low, high = TEMPERATURE_RANGE
    _number("monitoring_thresholds.temperature_celsius", out["temperature_celsius"],
            lambda v: v >= low, lambda v: v <= high,
            "give degrees Celsius between %d and %d, e.g. 85" % (low, high))
    _number("monitoring_thresholds.memory_ratio", out["memory_ratio"], lambda v: v > 0, lambda v: v <= 1,
            "give a ratio above 0 and at most 1, e.g. 0.95 for 95% of the framebuffer")
    _minutes("monitoring_thresholds.for_minutes", out["for_minutes"])
    _minutes("monitoring_thresholds.xid_window_minutes", out["xid_window_minutes"])
    return out


def _literal(number):
    """A PromQL number literal: 85, 0.95, 85.5."""
    return str(number) if isinstance(number, int) else repr(float(number))


def _per_gpu(expr):
    return "max by (%s) (%s)" % (", ".join(GPU_LABELS), expr)


def framebuffer_ratio_expr():
    """Used share of the usable framebuffer per GPU: FB_USED / (FB_USED + FB_FREE).

    FB_RESERVED (kept by the driver) is left out: it is never available to workloads."""
    used = _per_gpu("DCGM_FI_DEV_FB_USED")
    return "%s / (%s + %s)" % (used, used, _per_gpu("DCGM_FI_DEV_FB_FREE"))


def xid_changes_expr(window_minutes):
    """How often the last-XID value changed per GPU within the window.

    DCGM_FI_DEV_XID_ERRORS is a gauge holding the code of the most recent XID, not a counter, so
    rate()/increase() mean nothing on it. changes() counts new values: a first XID (0 -> 79) or a
    different one (79 -> 48). It cannot see the same code repeated, so it is a lower bound of the
    XID events."""
    return _per_gpu("changes(DCGM_FI_DEV_XID_ERRORS[%dm])" % window_minutes)


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


def metrics_in(expr):
    """The set of DCGM_* metric names a PromQL expression uses."""
    return set(DCGM_NAME.findall(str(expr or "")))


# ---------------------------------------------------------------- the Grafana dashboard
# A Grafana dashboard (JSON model) for the metrics above, shipped as a ConfigMap for Grafana's
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
# - units are Grafana's unit ids: percent (0-100), celsius, watt, Bps (bytes per second), short, none.
# The queries use only DCGM_METRICS names and the labels of GPU_LABELS (DCGM_LABELS plus the ServiceMonitor's
# "node"), and take the same max-by-GPU first as the rules, so time-sliced GPUs are not counted once per pod.
DASHBOARD_UID = "gpu-platform-dcgm"
DASHBOARD_TITLE = "GPU platform / DCGM"
DASHBOARD_SCHEMA_VERSION = 39
DASHBOARD_FILE = "gpu-platform-dcgm.json"
DASHBOARD_CONFIG_MAP = "gpu-platform-dcgm-dashboard"
DASHBOARD_SIDECAR_LABEL = {"grafana_dashboard": "1"}
GRAFANA_UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
NODE_LABEL = "node"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# The metric the node and gpu variables list their values from: every GPU reports its die temperature.
VARIABLE_METRIC = "DCGM_FI_DEV_GPU_TEMP"
NODE_SELECTOR = 'node=~"$node"'
GPU_SELECTOR = 'node=~"$node", gpu=~"$gpu"'
GPU_LEGEND = "{{node}} GPU {{gpu}}"
NODE_LEGEND = "{{node}}"
GRID_WIDTH = 24
PANEL_HEIGHT = 8
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def _grafana_uid(field, value):
    if not isinstance(value, str) or not GRAFANA_UID.match(value):
        raise ParamError(field, "%r is not a Grafana uid" % (value,),
                         "use 1 to 40 letters, digits, '-' or '_', e.g. %s" % DASHBOARD_UID)
    return value


def _series(metric, selector, window=None):
    """One series per GPU (or MIG instance) of ``metric`` on the chosen nodes and GPUs."""
    inner = "%s{%s}" % (metric, selector)
    if window:
        inner = "changes(%s[%dm])" % (inner, window)
    return _per_gpu(inner)


def _framebuffer_percent(selector, by=None):
    used, free = _series("DCGM_FI_DEV_FB_USED", selector), _series("DCGM_FI_DEV_FB_FREE", selector)
    if by:
        used, free = "sum by (%s) (%s)" % (by, used), "sum by (%s) (%s)" % (by, free)
    return "100 * %s / (%s + %s)" % (used, used, free)


def _thresholds(red=None):
    steps = [{"color": "green", "value": None}]
    if red is not None:
        steps.append({"color": "red", "value": red})
    return {"mode": "absolute", "steps": steps}


def _panel(title, description, unit, targets, low=None, high=None, red=None, bars=False):
    defaults = {
        "unit": unit,
        "color": {"mode": "palette-classic"},
        "thresholds": _thresholds(red),
        "custom": {
            "drawStyle": "bars" if bars else "line",
            "lineWidth": 1,
            "fillOpacity": 10,
            "showPoints": "never",
            "spanNulls": False,
            "thresholdsStyle": {"mode": "off" if red is None else "line"},
        },
    }
    if low is not None:
        defaults["min"] = low
    if high is not None:
        defaults["max"] = high
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": dict(DATASOURCE),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"showLegend": True, "displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": [{"refId": chr(ord("A") + index), "datasource": dict(DATASOURCE), "expr": expr,
                     "legendFormat": legend, "range": True, "editorMode": "code"}
                    for index, (expr, legend) in enumerate(targets)],
    }


def _percent(ratio):
    """A ratio as a percentage without float noise (0.9 -> 90.0, not 90.00000000000001)."""
    return round(ratio * 100, 6)


def _row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _node_panels(limits):
    window = limits["xid_window_minutes"]
    return [
        _panel("GPU utilisation, mean per node",
               "Mean of DCGM_FI_DEV_GPU_UTIL over the node's GPUs: share of time a kernel was running.",
               "percent", [("avg by (node) (%s)" % _series("DCGM_FI_DEV_GPU_UTIL", NODE_SELECTOR), NODE_LEGEND)],
               low=0, high=100),
        _panel("Framebuffer used, per node",
               "Used share of the node's GPU memory: FB_USED / (FB_USED + FB_FREE), summed over its GPUs.",
               "percent", [(_framebuffer_percent(NODE_SELECTOR, by=NODE_LABEL), NODE_LEGEND)],
               low=0, high=100, red=_percent(limits["memory_ratio"])),
        _panel("Power draw, per node",
               "DCGM_FI_DEV_POWER_USAGE summed over the node's GPUs.",
               "watt", [("sum by (node) (%s)" % _series("DCGM_FI_DEV_POWER_USAGE", NODE_SELECTOR), NODE_LEGEND)],
               low=0),
        _panel("XID changes, per node (%d min)" % window,
               "New XID codes on the node's GPUs within the last %d minutes (the window of the GpuXidError "
               "alert). DCGM_FI_DEV_XID_ERRORS holds the last code, so this counts its changes: a lower bound "
               "of the XID events." % window,
               "short", [("sum by (node) (%s)" % _series("DCGM_FI_DEV_XID_ERRORS", NODE_SELECTOR, window),
                          NODE_LEGEND)],
               low=0, bars=True),
    ]


def _gpu_panels(limits):
    window = limits["xid_window_minutes"]
    return [
        _panel("GPU utilisation", "DCGM_FI_DEV_GPU_UTIL: share of the sample period in which a kernel was running.",
               "percent", [(_series("DCGM_FI_DEV_GPU_UTIL", GPU_SELECTOR), GPU_LEGEND)], low=0, high=100),
        _panel("Framebuffer used",
               "Used share of the usable GPU memory, FB_USED / (FB_USED + FB_FREE); the free share is 100 minus "
               "this. The red line is the GpuFramebufferMemoryPressure threshold.",
               "percent", [(_framebuffer_percent(GPU_SELECTOR), GPU_LEGEND)],
               low=0, high=100, red=_percent(limits["memory_ratio"])),
        _panel("Temperature", "DCGM_FI_DEV_GPU_TEMP, the die temperature. The red line is the GpuTemperatureHigh "
               "threshold.",
               "celsius", [(_series("DCGM_FI_DEV_GPU_TEMP", GPU_SELECTOR), GPU_LEGEND)],
               red=limits["temperature_celsius"]),
        _panel("Power draw", "DCGM_FI_DEV_POWER_USAGE, what the board draws now.",
               "watt", [(_series("DCGM_FI_DEV_POWER_USAGE", GPU_SELECTOR), GPU_LEGEND)], low=0),
        _panel("XID changes (%d min)" % window,
               "How often the last-XID value changed within the last %d minutes, as the GpuXidError alert "
               "counts it. A repeat of the same code is not seen." % window,
               "short", [(_series("DCGM_FI_DEV_XID_ERRORS", GPU_SELECTOR, window), GPU_LEGEND)], low=0, bars=True),
        _panel("Last XID code",
               "DCGM_FI_DEV_XID_ERRORS: the code of the most recent XID error (0: none since the driver loaded). "
               "Look codes up in https://docs.nvidia.com/deploy/xid-errors/.",
               "none", [(_series("DCGM_FI_DEV_XID_ERRORS", GPU_SELECTOR), GPU_LEGEND)], low=0),
        _panel("PCIe transmit", "DCGM_FI_PROF_PCIE_TX_BYTES, already bytes per second (profiling field, data-centre "
               "GPUs from Volta on; empty elsewhere).",
               "Bps", [(_series("DCGM_FI_PROF_PCIE_TX_BYTES", GPU_SELECTOR), GPU_LEGEND)], low=0),
        _panel("PCIe receive", "DCGM_FI_PROF_PCIE_RX_BYTES, already bytes per second (profiling field, data-centre "
               "GPUs from Volta on; empty elsewhere).",
               "Bps", [(_series("DCGM_FI_PROF_PCIE_RX_BYTES", GPU_SELECTOR), GPU_LEGEND)], low=0),
    ]


def _layout(sections):
    """Rows of full width, then their panels left to right and top to bottom; ids from 1."""
    panels, y = [], 0
    for title, width, members in sections:
        panels.append(dict(_row(title), gridPos={"h": 1, "w": GRID_WIDTH, "x": 0, "y": y}))
        y += 1
        for index, panel in enumerate(members):
            per_line = GRID_WIDTH // width
            x = (index % per_line) * width
            line = y + (index // per_line) * PANEL_HEIGHT
            panels.append(dict(panel, gridPos={"h": PANEL_HEIGHT, "w": width, "x": x, "y": line}))
        y += -(-len(members) // (GRID_WIDTH // width)) * PANEL_HEIGHT
    for number, panel in enumerate(panels, start=1):
        panel["id"] = number
    return panels


def _variables(datasource_uid):
    source = {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
              "regex": "", "hide": 0, "refresh": 1, "options": [], "current": {}}
    if datasource_uid:
        source["current"] = {"selected": True, "text": datasource_uid, "value": datasource_uid}
    node_query = "label_values(%s, %s)" % (VARIABLE_METRIC, NODE_LABEL)
    gpu_query = "label_values(%s{%s}, gpu)" % (VARIABLE_METRIC, NODE_SELECTOR)
    common = {"type": "query", "datasource": dict(DATASOURCE), "refresh": 2, "sort": 3, "multi": True,
              "includeAll": True, "allValue": ".*", "hide": 0, "regex": "", "options": [],
              "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}
    return [
        source,
        dict(common, name="node", label="Node", query=node_query, definition=node_query),
        dict(common, name="gpu", label="GPU", query=gpu_query, definition=gpu_query),
    ]


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


def dashboard_exprs(dashboard):
    """Every PromQL expression of the dashboard's panels (rows' nested panels included), in order."""
    out = []
    for panel in (dashboard or {}).get("panels") or []:
        for member in [panel] + list(panel.get("panels") or []):
            out += [t["expr"] for t in member.get("targets") or [] if t.get("expr")]
    return out


def metric_names(expr):
    """The identifiers of ``expr`` that start with DCGM_FI_ (a misspelt name is returned as written)."""
    return {name for name in IDENTIFIER.findall(str(expr or "")) if name.startswith("DCGM_FI_")}
