"""Every value the gpu_operator role can set exists in the values.yaml of the GPU Operator chart of every release pair
(v26.7.0, v26.3.3: tests/schema/pinned_charts.py)."""
from __future__ import annotations

import itertools

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema import crdschema, pinned_charts

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode


def decided(mode, rdma=False, mofed=False, nodes=(), cluster=None, cloud="unknown"):
    """The driver values gpu_driver_mode returns, as the role passes them on."""
    return gpu_driver_mode.decide(mode, list(nodes), cluster, cloud_driver=cloud, rdma=rdma,
                                  host_mofed=mofed)["gpu_operator_values"]


BASE = {"driver_values": decided("operator"), "driver_version": "", "nfd_enabled": True,
        "dcgm_exporter_enabled": True, "dcgm_exporter_service_monitor": False, "mig_strategy": "single",
        "device_plugin_config": {}, "rdma_enabled": False, "rdma_use_host_mofed": False,
        "image_pull_secrets": [], "extra_values": {}}
HOST_TOOLKIT = {"name": "n1", "host": {"node_name": "n1", "driver_loaded": True, "driver_version": "535.247.01",
                                       "toolkit_packages": {"nvidia-container-toolkit": "1.17.8-1"}}}


@pytest.fixture(scope="module", params=pinned_charts.pair_versions("gpu-operator"))
def defaults(request):
    return pinned_charts.values_path("gpu-operator", request.param)


def combos():
    for mode, rdma, mofed, strategy, monitor, crd in itertools.product(
            ("host", "operator"), (True, False), (True, False), gpu_operator.MIG_STRATEGIES, (True, False),
            (True, False)):
        if mofed and not rdma:
            continue
        nodes = [HOST_TOOLKIT] if mode == "host" else []
        cluster = {"nvidia_drivers": ["default"]} if crd and mode == "operator" else None
        yield dict(BASE, driver_values=decided(mode, rdma, mofed, nodes, cluster), rdma_enabled=rdma,
                   rdma_use_host_mofed=mofed, mig_strategy=strategy, dcgm_exporter_service_monitor=monitor,
                   driver_version="580.95.05" if mode == "operator" else "",
                   device_plugin_config={"name": "time-slicing-config", "default": "any"},
                   image_pull_secrets=["ngc-pull"])


@pytest.mark.parametrize("settings", list(combos()))
def test_every_key_exists_in_the_chart(settings, defaults):
    values = gpu_operator.build_values(settings)
    assert crdschema.check_values_keys(values, defaults) == []
    operator = settings["driver_values"]["driver"]["enabled"]
    assert values["mig"]["strategy"] == settings["mig_strategy"]
    if operator:
        assert values["driver"]["rdma"] == {"enabled": settings["rdma_enabled"],
                                            "useHostMofed": settings["rdma_use_host_mofed"]}
        assert values["driver"]["version"] == "580.95.05"
        assert values["toolkit"]["enabled"] is True
    else:
        # The CRD path ignores driver.enabled alone (gpu-operator#1795): both off with a host driver.
        assert values["driver"]["enabled"] is False and values["driver"]["nvidiaDriverCRD"] == {"enabled": False}
        assert "rdma" not in values["driver"] and "version" not in values["driver"]
        assert values["toolkit"]["enabled"] is False  # every node has the toolkit on the host


GUIDE_OFF = {"migManager": {"enabled": False}, "vgpuDeviceManager": {"enabled": False},
             "vfioManager": {"enabled": False}, "sandboxDevicePlugin": {"enabled": False}}


def test_unused_operands_off_as_the_aks_guide_has_them(defaults):
    """The AKS RDMA/InfiniBand guide's GPU Operator values (Azure/aks-rdma-infiniband configs/values/gpu-operator/
    values.yaml): MIG manager, vGPU device manager, VFIO manager and sandbox device plugin off; keys of each pair's
    chart."""
    values = gpu_operator.build_values(dict(BASE, disable_unused_operands=True, mig_pools=[], mig_config=None))
    assert {k: values[k] for k in GUIDE_OFF} == GUIDE_OFF
    assert crdschema.check_values_keys(values, defaults) == []


@pytest.mark.parametrize("over, kept", [
    ({}, set(GUIDE_OFF)),  # off by default: the chart's own defaults
    ({"disable_unused_operands": True, "mig_pools": [{"name": "training", "profile": "all-1g.10gb"}]}, {"migManager"}),
    ({"disable_unused_operands": True, "mig_config": {"version": "v1", "mig-configs": {}}}, {"migManager"}),
    ({"disable_unused_operands": True, "extra_values": {"sandboxWorkloads": {"enabled": True}}},
     {"vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin"}),
])
def test_an_operand_a_pool_needs_stays_as_the_chart_has_it(over, kept):
    values = gpu_operator.build_values(dict(BASE, **over))
    assert {k for k in GUIDE_OFF if k not in values or values[k] != GUIDE_OFF[k]} == kept


def test_the_decision_is_not_modified_in_place():
    settings = dict(BASE, driver_version="580.95.05")
    gpu_operator.build_values(settings)
    assert "version" not in settings["driver_values"]["driver"]


def test_a_misspelt_extra_value_is_caught(defaults):
    values = gpu_operator.build_values(dict(BASE, extra_values={"driver": {"enabeld": True}}))
    assert crdschema.check_values_keys(values, defaults) == ["driver.enabeld"]


def test_extra_values_merge_last():
    values = gpu_operator.build_values(dict(BASE, extra_values={"driver": {"enabled": True, "useOpenKernelModules": True},
                                                                "operator": {"defaultRuntime": "crio"}}))
    assert values["driver"]["useOpenKernelModules"] is True and values["operator"] == {"defaultRuntime": "crio"}


@pytest.mark.parametrize("over, field, words", [
    ({"driver_values": {"driver": {"enabled": "yes"}}}, "gpu_operator_driver_values", "not a gpu_driver_mode decision"),
    ({"driver_values": None}, "gpu_operator_driver_values", "not a gpu_driver_mode decision"),
    ({"mig_strategy": "all"}, "gpu_platform_mig_strategy", "not a MIG strategy"),
    ({"rdma_use_host_mofed": True}, "gpu_platform_host_mofed", "gpu_platform_gpudirect_rdma is false"),
    ({"driver_version": "latest"}, "gpu_platform_driver_version", "not a driver version"),
    ({"driver_version": "580.95.05", "driver_values": decided("host", nodes=[HOST_TOOLKIT])},
     "gpu_platform_driver_version", "the hosts own the driver"),
    # An override of what gpu_driver_mode decided would bypass its conflict check.
    ({"extra_values": {"driver": {"enabled": False}}}, "gpu_operator_extra_values.driver.enabled", "contradicts"),
    ({"extra_values": {"driver": {"nvidiaDriverCRD": {"enabled": True}}}},
     "gpu_operator_extra_values.driver.nvidiaDriverCRD.enabled", "contradicts"),
    ({"driver_values": decided("host", nodes=[HOST_TOOLKIT]), "extra_values": {"toolkit": {"enabled": True}}},
     "gpu_operator_extra_values.toolkit.enabled", "contradicts"),
    ({"dcgm_exporter_enabled": False, "dcgm_exporter_service_monitor": True}, "gpu_operator_dcgm_exporter_service_monitor",
     "DCGM exporter is disabled"),
    ({"device_plugin_config": {"name": "Bad_Name"}}, "gpu_operator_device_plugin_config.name", "not a valid name"),
    ({"image_pull_secrets": ["UPPER"]}, "gpu_operator_image_pull_secrets[0]", "is not a Secret name"),
    ({"disable_unused_operands": "yes"}, "gpu_operator_disable_unused_operands", "is not true or false"),
    ({"extra_values": "driver.enabled=false"}, "gpu_operator_extra_values", "must be a dictionary"),
])
def test_bad_choices_name_the_variable(over, field, words):
    with pytest.raises(ParamError) as err:
        gpu_operator.build_values(dict(BASE, **over))
    assert err.value.field == field and words in err.value.msg and "Fix:" in err.value.msg


@pytest.mark.parametrize("actual, minimum, ok", [
    ("v1.34.1", "1.30", True), ("v1.30.0", "1.30", True), ("v1.29.9", "1.30", False), ("1.35", "1.30", True),
    ("v2.0.0", "1.30", True), ("v1.31.0-eks-abc", "1.30", True),
])
def test_version_at_least(actual, minimum, ok):
    assert gpu_operator.version_at_least(actual, minimum) is ok


def test_bad_version_text():
    with pytest.raises(ParamError):
        gpu_operator.version_at_least("unknown", "1.30")


def test_unready_daemonsets():
    def ds(name, desired, ready, updated=None, gen=1, observed=1):
        return {"metadata": {"name": name, "generation": gen},
                "status": {"desiredNumberScheduled": desired, "numberReady": ready,
                           "updatedNumberScheduled": desired if updated is None else updated, "observedGeneration": observed}}
    items = [ds("ok", 2, 2), ds("driver", 2, 0), ds("stale", 2, 2, gen=2, observed=1), ds("rolling", 2, 2, updated=1),
             {"metadata": {"name": "nostatus"}}]
    assert gpu_operator.unready_daemonsets(items) == ["driver (0/2 ready)", "rolling (2/2 ready)", "stale (2/2 ready)"]
