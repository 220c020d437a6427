# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The panels, variables and layout of the DCGM Grafana dashboard (``domain.monitoring.objects.grafana_dashboard``).

Private to the collection: not a public API. Pure: standard library only.
The queries use only ``monitoring_metrics.DCGM_METRICS`` names and the labels of ``GPU_LABELS`` (``DCGM_LABELS``
plus the ServiceMonitor's "node"), and take the same max-by-GPU first as the rules, so time-sliced GPUs are not
counted once per pod. Units are Grafana's unit ids: percent (0-100), celsius, watt, Bps (bytes per second), short,
none.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring.metrics import _per_gpu

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


def dashboard_exprs(dashboard):
    """Every PromQL expression of the dashboard's panels (rows' nested panels included), in order."""
    out = []
    for panel in (dashboard or {}).get("panels") or []:
        for member in [panel] + list(panel.get("panels") or []):
            out += [t["expr"] for t in member.get("targets") or [] if t.get("expr")]
    return out
