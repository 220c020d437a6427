# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the scheduling and monitoring roles; the logic is in module_utils/domain."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import monitoring, scheduling, validate
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


class FilterModule:
    """Scheduling and monitoring filters."""

    def filters(self):
        return {"scheduling_plan": scheduling_plan, "monitoring_objects": monitoring_objects,
                "namespace_objects": namespace_objects}
