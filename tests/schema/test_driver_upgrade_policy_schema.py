"""The gpu_operator role's driver upgrade policy: every key exists in the values of the chart it pins (v26.3.3, read
by tests/schema/pinned_charts.py), and what the chart renders from it (driver.upgradePolicy, gpuPodDeletion as
podDeletion) is valid against the upstream ClusterPolicy CRD
(../shared/upstream/gpu-operator/clusterpolicies.nvidia.com.yaml)."""
from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from local_gpu_cluster.paths import FIXTURE_CHARTS_DIR
from tests.schema import crdschema, pinned_charts

POLICIES = [
    {},
    {"autoUpgrade": False},
    {"maxParallelUpgrades": 0, "maxUnavailable": "100%"},
    {"maxParallelUpgrades": 3, "maxUnavailable": 2},
    {"waitForCompletion": {"timeoutSeconds": 3600, "podSelector": "app in (train,batch)"}},
    {"gpuPodDeletion": {"force": True, "timeoutSeconds": 0, "deleteEmptyDir": True}},
    {"drain": {"enable": True, "force": True, "podSelector": "tier!=system", "timeoutSeconds": 600,
               "deleteEmptyDir": True}},
]


# The sections the CRD requires of every ClusterPolicy (the chart always renders them); empty is valid.
REQUIRED = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "gfd", "nodeStatusExporter", "operator", "toolkit")


def cluster_policy(upgrade_policy):
    spec = {name: {} for name in REQUIRED}
    spec["driver"] = {"enabled": True, "upgradePolicy": upgrade_policy}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": spec}


@pytest.fixture(scope="module", params=pinned_charts.pair_versions("gpu-operator"))
def defaults(request):
    """The values.yaml of each release pair's GPU Operator chart."""
    return pinned_charts.values_path("gpu-operator", request.param)


@pytest.mark.parametrize("given", POLICIES)
def test_values_exist_in_the_chart_and_render_valid_against_the_crd(given, defaults):
    values = gpu_driver_upgrade.check_policy(given)
    assert crdschema.check_values_keys({"driver": {"upgradePolicy": values}}, defaults) == []
    assert crdschema.crd_errors(cluster_policy(gpu_driver_upgrade.cluster_policy_spec(values))) == []


def test_the_defaults_are_the_charts(defaults):
    with open(defaults) as handle:
        chart = yaml.safe_load(handle)["driver"]["upgradePolicy"]
    assert gpu_driver_upgrade.POLICY_DEFAULTS == chart


def test_the_crd_catches_what_the_domain_refuses():
    """The schema test can fail: values the domain refuses are invalid for the CRD too (or unknown to it)."""
    spec = gpu_driver_upgrade.cluster_policy_spec(gpu_driver_upgrade.check_policy({}))
    bad = copy.deepcopy(spec)
    bad["drain"]["timeoutSeconds"] = -1
    assert any("timeoutSeconds" in e for e in crdschema.crd_errors(cluster_policy(bad)))
    bad = copy.deepcopy(spec)
    bad["autoUpgrade"] = "yes"
    assert any("autoUpgrade" in e for e in crdschema.crd_errors(cluster_policy(bad)))
    bad = copy.deepcopy(spec)
    bad["gpuPodDeletion"] = bad.pop("podDeletion")  # the values' name is not the custom resource's
    assert any("gpuPodDeletion" in e for e in crdschema.crd_errors(cluster_policy(bad)))


def test_the_fixture_chart_renders_the_policy_as_the_domain_maps_it():
    """local_gpu_cluster/fixture_charts/gpu-operator renders driver.upgradePolicy the way cluster_policy_spec says the real
    chart does, so the simulated operator reads what a real ClusterPolicy holds."""
    root = str(FIXTURE_CHARTS_DIR)
    with open(os.path.join(root, "gpu-operator", "templates", "clusterpolicy.tpl")) as handle:
        template = handle.read()
    assert "podDeletion: {{ .gpuPodDeletion | toJson }}" in template
    with open(os.path.join(root, "gpu-operator", "values.yaml")) as handle:
        assert yaml.safe_load(handle)["driver"]["upgradePolicy"] == gpu_driver_upgrade.POLICY_DEFAULTS
