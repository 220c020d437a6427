"""The ConfigMap Grafana's sidecar picks up, the dashboard filter and its documentation."""
import json
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import objects as monitoring
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.dashboard_checker import NS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------- the ConfigMap

def test_the_config_map_carries_the_sidecar_label_and_the_dashboard():
    dash = monitoring.grafana_dashboard()
    obj = monitoring.dashboard_config_map(NS, dash, {"grafana_dashboard": "1"})
    assert obj["apiVersion"] == "v1" and obj["kind"] == "ConfigMap"
    assert obj["metadata"]["name"] == "gpu-platform-dcgm-dashboard" and obj["metadata"]["namespace"] == NS
    assert obj["metadata"]["labels"] == {"grafana_dashboard": "1", "app.kubernetes.io/managed-by": "gpu_platform.cluster"}
    assert list(obj["data"]) == ["gpu-platform-dcgm.json"]
    assert json.loads(obj["data"]["gpu-platform-dcgm.json"]) == dash
    assert obj["data"]["gpu-platform-dcgm.json"] == monitoring.dashboard_json(dash)
    assert len(obj["data"]["gpu-platform-dcgm.json"].encode()) < 1024 * 1024, "a ConfigMap holds at most 1 MiB"
    # the default label is kube-prometheus-stack's sidecar label; others are taken as given
    assert monitoring.dashboard_config_map(NS, dash)["metadata"]["labels"]["grafana_dashboard"] == "1"
    other = monitoring.dashboard_config_map("monitoring", dash, {"grafana.io/dashboard": "gpu"})
    assert other["metadata"]["labels"]["grafana.io/dashboard"] == "gpu" and "grafana_dashboard" not in other["metadata"]["labels"]


def test_the_config_map_survives_yaml():
    obj = monitoring.dashboard_config_map(NS, monitoring.grafana_dashboard())
    again = yaml.safe_load(yaml.safe_dump(obj))
    assert json.loads(again["data"]["gpu-platform-dcgm.json"]) == monitoring.grafana_dashboard()


@pytest.mark.parametrize("namespace, labels, field, words", [
    ("GPU", None, "monitoring_dashboard_namespace", "not a valid name"),
    ("", None, "monitoring_dashboard_namespace", "empty"),
    (NS, {}, "monitoring_dashboard_label", "empty"),
    (NS, {"grafana_dashboard": 1}, "monitoring_dashboard_label", "not a string"),
    (NS, {"grafana dashboard": "1"}, "monitoring_dashboard_label", "not a valid kubernetes label name"),
    (NS, ["grafana_dashboard"], "monitoring_dashboard_label", "dictionary"),
])
def test_bad_config_map_inputs_name_the_role_variable(namespace, labels, field, words):
    with pytest.raises(ParamError) as err:
        monitoring.dashboard_config_map(namespace, monitoring.grafana_dashboard(), labels)
    assert err.value.field == field and words in str(err.value).lower()


# ---------------------------------------------------------------- the filter and its documentation

def test_the_filter():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpu_platform.cluster.plugins.filter import layers

    filters = layers.FilterModule().filters()
    assert filters["monitoring_dashboard"] is layers.monitoring_dashboard and "monitoring_objects" in filters
    obj = layers.monitoring_dashboard(NS, {"grafana_dashboard": "1"}, {"temperature_celsius": 80})
    assert obj == monitoring.dashboard_config_map(NS, monitoring.grafana_dashboard(thresholds={"temperature_celsius": 80}))
    with pytest.raises(AnsibleFilterError, match="monitoring_dashboard_label"):
        layers.monitoring_dashboard(NS, {"grafana_dashboard": True})


def test_the_filter_documentation_matches_the_filter():
    import inspect
    from ansible_collections.gpu_platform.cluster.plugins.filter import layers

    with open(os.path.join(ROOT, "plugins", "filter", "monitoring_dashboard.yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == "monitoring_dashboard"
    params = list(inspect.signature(layers.monitoring_dashboard).parameters)
    assert set(doc["DOCUMENTATION"]["options"]) == {"_input"} | set(params[1:])
