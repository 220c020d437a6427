# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What the GPU Operator's DCGM exporter exports, and the PromQL the rules and the dashboard build on it.

Private to the collection: not a public API. Pure: standard library only.
Metric names, types and labels follow dcgm-exporter 4.8.3 (image tag 4.6.0-4.8.3, the version GPU
Operator v26.7.0 pins in shared/upstream/gpu-operator/values.default.yaml, dcgmExporter.version).
Every fact below names its source. The alert thresholds (``thresholds_from``) are shared by the
PrometheusRule (``domain.monitoring.objects``) and the Grafana dashboard (``domain.monitoring.panels``).
"""

from __future__ import annotations

import re

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

# The labels that identify one GPU (or MIG instance) in the rules. "node" comes from the
# ServiceMonitor's relabeling; GPU_I_ID is empty unless MIG is on. In Kubernetes mode the exporter
# emits one series per pod sharing a GPU (time-slicing), all with the same value, so the rules take
# max by these labels first: one result per GPU, not one per pod.
GPU_LABELS = ("node", "gpu", "UUID", "modelName", "GPU_I_ID")

DCGM_NAME = re.compile(r"(?<![A-Za-z0-9_:])DCGM_[A-Z0-9_]+(?![A-Za-z0-9_:])")
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

DEFAULT_THRESHOLDS = {"temperature_celsius": 85, "memory_ratio": 0.95, "for_minutes": 5, "xid_window_minutes": 10}
TEMPERATURE_RANGE = (30, 120)


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


def metrics_in(expr):
    """The set of DCGM_* metric names a PromQL expression uses."""
    return set(DCGM_NAME.findall(str(expr or "")))


def metric_names(expr):
    """The identifiers of ``expr`` that start with DCGM_FI_ (a misspelt name is returned as written)."""
    return {name for name in IDENTIFIER.findall(str(expr or "")) if name.startswith("DCGM_FI_")}
