# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What the monitoring role applies, assembled from objects.py's objects.

Private to the collection: not a public API. Pure: standard library only, no I/O.
An empty value from the inventory ("" or {}) means the default, as leaving the variable out does.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import objects as monitoring


def objects(namespace, thresholds=None, release_label=None, interval="15s", service_monitor=True):
    """The DCGM exporter's ServiceMonitor (when ``service_monitor``) and the GPU PrometheusRule."""
    out = [monitoring.service_monitor(namespace, release_label or None, interval)] if service_monitor else []
    return out + [monitoring.prometheus_rule(namespace, thresholds or None, release_label or None)]


def dashboard(namespace, labels=None, thresholds=None, datasource_uid=None):
    """The ConfigMap with the DCGM Grafana dashboard, labelled for Grafana's dashboard sidecar."""
    board = monitoring.grafana_dashboard(datasource_uid or None, thresholds=thresholds or None)
    return monitoring.dashboard_config_map(namespace, board, labels)
