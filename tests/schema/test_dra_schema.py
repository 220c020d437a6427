"""The dra_driver layer against upstream data: every chart value it sets exists in the DRA driver chart's
values.yaml (the pinned dra-driver-nvidia-gpu 0.4.1, 0.4.0, and release 0.2.0's nvidia-dra-driver-gpu 25.12.0), every
GPU Operator value exists in the pinned chart,
and the example claim objects survive a round trip through the kubernetes client's resource.k8s.io/v1 and
core/v1 models without losing a field."""
from __future__ import annotations

import itertools
import json
import os

import kubernetes.client
import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import (
    dra_driver as dra, gpu_operator)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode
from tests.schema import crdschema, pinned_charts

# The pinned chart (dra_driver_chart_version, from its source archive), 0.4.0's, and the 25.12.0 chart of release
# 0.2.0 (the chart before the rename, which playbooks/upgrade.yml moves from).
DRA_VALUES = ("pinned", "values.default.v0.4.0.yaml", "values.default.yaml")


@pytest.fixture(scope="module", params=DRA_VALUES)
def dra_defaults(request, shared_dir):
    if request.param == "pinned":
        return pinned_charts.values_path("dra-driver-nvidia-gpu")
    return os.path.join(shared_dir, "upstream", "dra-driver", request.param)


@pytest.fixture(scope="module")
def operator_defaults():
    return pinned_charts.values_path("gpu-operator")


def combos():
    roots = (("/", None), ("", "operator"), ("/home/kubernetes/bin/nvidia", "cloud"))
    for (root, owner), gpus, domains, selector, secrets in itertools.product(
            roots, (True, False), (True, False), ({}, {"nodepool": "dra"}), ([], ["ngc-pull"])):
        if gpus or domains:
            yield {"driver_root": root, "driver_owner": owner, "gpus_enabled": gpus, "compute_domains_enabled": domains,
                   "node_selector": selector, "image_pull_secrets": secrets}


@pytest.mark.parametrize("settings", list(combos()))
def test_every_chart_key_exists(settings, dra_defaults):
    values = dra.values(settings)
    # controller.affinity is a Kubernetes Affinity the template renders whole (templates/controller.yaml: toYaml
    # .Values.controller.affinity): 25.12.0's defaults have only the required term, which the values replace by
    # preferred ones; 0.4.0's already prefer the control plane and have no required term to null
    allow = ["controller.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
             "controller.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"]
    assert crdschema.check_values_keys(values, dra_defaults, allow) == []


def test_values_set_what_the_chart_defaults_get_wrong():
    """The chart's own defaults would fail to render GPU allocation (override off) or guess the API version."""
    defaults = pinned_charts.values("dra-driver-nvidia-gpu")
    values = dra.values({"driver_root": "", "driver_owner": "operator", "gpus_enabled": True,
                         "compute_domains_enabled": False})
    assert defaults["gpuResourcesEnabledOverride"] is False and values["gpuResourcesEnabledOverride"] is True
    assert defaults["resourceApiVersion"] == "" and values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert defaults["nvidiaDriverRoot"] == "/" and values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert defaults["resources"]["computeDomains"]["enabled"] is True
    assert values["resources"]["computeDomains"]["enabled"] is False
    assert defaults["kubeletPlugin"]["nodeSelector"] == {}
    # The chart renders imagePullSecrets into the pod spec as they are: a list of {name}.
    assert defaults["imagePullSecrets"] == []


@pytest.mark.parametrize("disable", (False, True))
def test_every_gpu_operator_key_exists(disable, operator_defaults):
    values = dra.gpu_operator_values(disable_device_plugin=disable)
    assert crdschema.check_values_keys(values, operator_defaults) == []
    # Helm replaces lists: the chart's driver.manager.env is empty, so setting the list drops no default.
    with open(operator_defaults, encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert defaults["driver"]["manager"]["env"] == [] and values["driver"]["manager"]["env"]
    if disable:  # the chart's default is on; the cluster-wide switch turns it off
        assert defaults["devicePlugin"]["enabled"] is True and values["devicePlugin"] == {"enabled": False}
    else:  # per node instead (node_labels), so other nodes keep the device plugin
        assert "devicePlugin" not in values


@pytest.mark.parametrize("disable", (False, True))
def test_gpu_operator_role_accepts_the_values_as_extra_values(disable, operator_defaults):
    """The route into the gpu_operator role: extra_values, which must not contradict gpu_driver_mode."""
    decided = gpu_driver_mode.decide("operator", [], None)["gpu_operator_values"]
    settings = {"driver_values": decided, "driver_version": "", "nfd_enabled": True, "dcgm_exporter_enabled": True,
                "dcgm_exporter_service_monitor": False, "mig_strategy": "single", "device_plugin_config": {},
                "rdma_enabled": False, "rdma_use_host_mofed": False, "image_pull_secrets": [],
                "extra_values": dra.gpu_operator_values(disable_device_plugin=disable)}
    values = gpu_operator.build_values(settings)
    assert values["driver"]["manager"]["env"] == dra.gpu_operator_values()["driver"]["manager"]["env"]
    assert values["driver"]["enabled"] is True
    assert crdschema.check_values_keys(values, operator_defaults) == []


# ---------------------------------------------------------------- the example claim vs the client models

API = kubernetes.client.ApiClient()
# The client (37.0.2) names resource.k8s.io/v1 models without a group prefix where core/v1 has no kind of that
# name (V1ResourceClaimTemplate, V1DeviceRequest, V1ExactDeviceRequest); v1beta1/v1beta2 ones are V1beta1*/V1beta2*.
MODELS = {("resource.k8s.io/v1", "ResourceClaimTemplate"): "V1ResourceClaimTemplate", ("v1", "Pod"): "V1Pod"}


def round_trip(obj):
    model = API.deserialize(json.dumps(obj), MODELS[(obj["apiVersion"], obj["kind"])], "application/json")
    return model, API.sanitize_for_serialization(model)


@pytest.mark.parametrize("args", [("smoke",), ("team-a", "claim-b", "nvcr.io/nvidia/cuda@sha256:" + "c" * 64)])
def test_example_claim_round_trips_without_losing_fields(args):
    template, pod = dra.example_claim(*args)
    model, back = round_trip(template)
    assert back == template
    assert model.spec.spec.devices.requests[0].exactly.device_class_name == "gpu.nvidia.com"
    model, back = round_trip(pod)
    assert back == pod
    assert model.spec.resource_claims[0].resource_claim_template_name == template["metadata"]["name"]
    assert model.spec.containers[0].resources.claims[0].name == model.spec.resource_claims[0].name


def test_a_v1beta1_shaped_request_would_lose_its_class():
    """The round trip can fail: v1beta1's request-level deviceClassName is no field of the v1 model
    (kubernetes 37.0.2: V1DeviceRequest has name, exactly, first_available; V1beta1DeviceRequest has
    device_class_name), so a claim written in the old shape comes back without its class."""
    template = dra.example_claim("smoke")[0]
    request = template["spec"]["spec"]["devices"]["requests"][0]
    request["deviceClassName"] = request.pop("exactly")["deviceClassName"]
    assert round_trip(template)[1] != template
