# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the scheduling, monitoring, dra_driver and smoke_tests roles; the logic is in module_utils/domain."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import dra_driver as dra
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import plan as monitoring_plan
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling import (
    queues as scheduling, flavors as scheduling_flavors)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import plan as sharing_plan
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import plan as smoke
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def scheduling_plan(spec, scheduler):
    return scheduling.plan(spec, scheduler)


@user_errors
def scheduling_unmatched_flavors(flavor_objects, nodes):
    return scheduling_flavors.unmatched_flavors(flavor_objects, nodes)


@user_errors
def monitoring_objects(namespace, thresholds=None, release_label=None, interval="15s", service_monitor=True):
    """The DCGM exporter's ServiceMonitor (when wanted) and the GPU PrometheusRule."""
    return monitoring_plan.objects(namespace, thresholds, release_label, interval, service_monitor)


@user_errors
def monitoring_dashboard(namespace, labels=None, thresholds=None, datasource_uid=None):
    """The ConfigMap with the DCGM Grafana dashboard, labelled for Grafana's dashboard sidecar."""
    return monitoring_plan.dashboard(namespace, labels, thresholds, datasource_uid)


@user_errors
def dra_driver_values(settings):
    return dra.values(settings)


@user_errors
def dra_driver_check(kubernetes_version, driver_version, driver_owner):
    """Warning lines; fails below the floors (Kubernetes 1.34, driver 580)."""
    return dra.check_supported(kubernetes_version, driver_version, driver_owner)


@user_errors
def dra_driver_gpu_operator_values(enabled):
    """The GPU Operator values the DRA path needs ({} when DRA is off)."""
    return dra.gpu_operator_values_when(enabled)


@user_errors
def dra_driver_node_labels(gpus_enabled=True):
    return dra.node_labels(gpus_enabled)


@user_errors
def namespace_objects(names, labels=None):
    """Namespace objects for ``names`` (each checked as a DNS-1123 label), with ``labels``."""
    return objects.namespaces(names, labels)


@user_errors
def smoke_tests_plan(settings, sharing_pools=None, mig_config=None):
    """The smoke tests of the chosen layers (``domain.smoke.plan.plan``), with the gpu_sharing pools validated first
    (against the sharing layer's custom mig-parted config, when it has one)."""
    return smoke.plan(dict(settings, sharing_pools=sharing_plan.pool_dicts(sharing_pools, mig_config),
                           mig_config=mig_config or None))


@user_errors
def smoke_tests_collect(loop_results):
    """Verdicts and errors from a loop of smoke_test tasks (``domain.smoke.plan.collect``)."""
    return smoke.collect(loop_results)


@user_errors
def smoke_tests_summary(results):
    """One line per layer and the verdict (``domain.smoke.plan.summary``)."""
    return smoke.summary(results)


class FilterModule:
    """Scheduling, monitoring, DRA and smoke-test filters."""

    def filters(self):
        return {"scheduling_plan": scheduling_plan, "scheduling_unmatched_flavors": scheduling_unmatched_flavors,
                "monitoring_objects": monitoring_objects,
                "monitoring_dashboard": monitoring_dashboard,
                "namespace_objects": namespace_objects, "dra_driver_values": dra_driver_values,
                "dra_driver_check": dra_driver_check, "dra_driver_gpu_operator_values": dra_driver_gpu_operator_values,
                "dra_driver_node_labels": dra_driver_node_labels,
                "smoke_tests_plan": smoke_tests_plan, "smoke_tests_summary": smoke_tests_summary,
                "smoke_tests_collect": smoke_tests_collect}
