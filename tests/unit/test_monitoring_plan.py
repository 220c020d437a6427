"""monitoring_plan: the monitoring role's objects, from monitoring/objects.py's parts."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, plan as monitoring_plan)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NS = "gpu-operator"


def kinds(objs):
    return [o["kind"] for o in objs]


def test_the_service_monitor_then_the_rule_or_only_the_rule():
    both = monitoring_plan.objects(NS)
    assert kinds(both) == ["ServiceMonitor", "PrometheusRule"]
    assert both == [monitoring.service_monitor(NS), monitoring.prometheus_rule(NS)]
    assert kinds(monitoring_plan.objects(NS, service_monitor=False)) == ["PrometheusRule"]


def test_empty_inventory_values_mean_the_defaults():
    assert monitoring_plan.objects(NS, {}, "", "15s") == monitoring_plan.objects(NS)
    assert monitoring_plan.dashboard(NS, None, {}, "") == monitoring_plan.dashboard(NS)


def test_the_values_given_reach_the_objects():
    objs = monitoring_plan.objects(NS, {"temperature_celsius": 80}, "kube-prometheus-stack", "30s")
    assert objs == [monitoring.service_monitor(NS, "kube-prometheus-stack", "30s"),
                    monitoring.prometheus_rule(NS, {"temperature_celsius": 80}, "kube-prometheus-stack")]
    cm = monitoring_plan.dashboard("monitoring", {"grafana_dashboard": "1"}, {"temperature_celsius": 80}, "prom")
    expected = monitoring.grafana_dashboard("prom", thresholds={"temperature_celsius": 80})
    assert cm == monitoring.dashboard_config_map("monitoring", expected, {"grafana_dashboard": "1"})


def test_bad_values_name_the_role_variable():
    with pytest.raises(ParamError, match="monitoring_thresholds.temperature_celsius"):
        monitoring_plan.objects(NS, {"temperature_celsius": 300})
    with pytest.raises(ParamError, match="monitoring_dashboard_label"):
        monitoring_plan.dashboard(NS, {"grafana_dashboard": True})
