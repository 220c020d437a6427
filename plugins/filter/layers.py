# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the scheduling, monitoring, dra_driver and smoke_tests roles; the logic is in module_utils/domain."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    dra, monitoring, scheduling, sharing, smoke, validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def scheduling_plan(spec, scheduler):
    try:
        return scheduling.plan(spec, scheduler)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def monitoring_objects(namespace, thresholds=None, release_label=None, interval="15s", service_monitor=True):
    """The DCGM exporter's ServiceMonitor (when wanted) and the GPU PrometheusRule."""
    try:
        objects = [monitoring.service_monitor(namespace, release_label or None, interval)] if service_monitor else []
        return objects + [monitoring.prometheus_rule(namespace, thresholds or None, release_label or None)]
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def monitoring_dashboard(namespace, labels=None, thresholds=None, datasource_uid=None):
    """The ConfigMap with the DCGM Grafana dashboard, labelled for Grafana's dashboard sidecar."""
    try:
        dashboard = monitoring.grafana_dashboard(datasource_uid or None, thresholds=thresholds or None)
        return monitoring.dashboard_config_map(namespace, dashboard, labels)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def dra_driver_values(settings):
    try:
        return dra.values(settings)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def dra_driver_check(kubernetes_version, driver_version, driver_owner):
    """Warning lines; fails below the floors (Kubernetes 1.34, driver 580)."""
    try:
        return dra.check_supported(kubernetes_version, driver_version, driver_owner)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def dra_driver_gpu_operator_values(enabled):
    """The GPU Operator values the DRA path needs ({} when DRA is off)."""
    return dra.gpu_operator_values() if enabled else {}


def dra_driver_node_labels(gpus_enabled=True):
    return dra.node_labels(gpus_enabled)


def namespace_objects(names, labels=None):
    """Namespace objects for ``names`` (each checked as a DNS-1123 label), with ``labels``."""
    try:
        out = []
        for index, name in enumerate(names or []):
            validate.dns_label("namespaces[%d]" % index, name)
            meta = {"name": name}
            if labels:
                meta["labels"] = dict(labels)
            out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        return out
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def smoke_tests_plan(settings, sharing_pools=None, mig_config=None):
    """The smoke tests of the chosen layers (``domain.smoke.plan``), with the gpu_sharing pools validated first
    (against the sharing layer's custom mig-parted config, when it has one)."""
    try:
        pools = [dict(p.to_dict(), resource_name=p.resource_name)
                 for p in sharing.validate_pools(sharing_pools or [], mig_config)]
        return smoke.plan(dict(settings, sharing_pools=pools, mig_config=mig_config or None))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def smoke_tests_collect(loop_results):
    """Verdicts and errors from a loop of smoke_test tasks (``domain.smoke.collect``)."""
    return smoke.collect(loop_results)


def smoke_tests_summary(results):
    """One line per layer and the verdict (``domain.smoke.summary``)."""
    try:
        return smoke.summary(results)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule:
    """Scheduling, monitoring, DRA and smoke-test filters."""

    def filters(self):
        return {"scheduling_plan": scheduling_plan, "monitoring_objects": monitoring_objects,
                "monitoring_dashboard": monitoring_dashboard,
                "namespace_objects": namespace_objects, "dra_driver_values": dra_driver_values,
                "dra_driver_check": dra_driver_check, "dra_driver_gpu_operator_values": dra_driver_gpu_operator_values,
                "dra_driver_node_labels": dra_driver_node_labels,
                "smoke_tests_plan": smoke_tests_plan, "smoke_tests_summary": smoke_tests_summary,
                "smoke_tests_collect": smoke_tests_collect}
