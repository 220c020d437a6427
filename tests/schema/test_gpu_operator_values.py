"""Every value the gpu_operator role can set exists in the GPU Operator v26.7.0 chart's values.yaml."""
from __future__ import annotations

import itertools
import os

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import gpu_operator
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema import crdschema

BASE = {"driver_enabled": True, "driver_version": "", "toolkit_enabled": True, "nfd_enabled": True,
        "dcgm_exporter_enabled": True, "dcgm_exporter_service_monitor": False, "mig_strategy": "single",
        "device_plugin_config": {}, "rdma_enabled": False, "rdma_use_host_mofed": False,
        "image_pull_secrets": [], "extra_values": {}}


@pytest.fixture(scope="module")
def defaults(shared_dir):
    return os.path.join(shared_dir, "upstream", "gpu-operator", "values.default.yaml")


def combos():
    for driver, rdma, mofed, strategy, monitor in itertools.product(
            (True, False), (True, False), (True, False), gpu_operator.MIG_STRATEGIES, (True, False)):
        if (mofed and not rdma) or (rdma and not driver):
            continue
        yield dict(BASE, driver_enabled=driver, rdma_enabled=rdma, rdma_use_host_mofed=mofed, mig_strategy=strategy,
                   dcgm_exporter_service_monitor=monitor, driver_version="580.95.05",
                   device_plugin_config={"name": "time-slicing-config", "default": "any"},
                   image_pull_secrets=["ngc-pull"])


@pytest.mark.parametrize("settings", list(combos()))
def test_every_key_exists_in_the_chart(settings, defaults):
    values = gpu_operator.build_values(settings)
    assert crdschema.check_values_keys(values, defaults) == []
    assert values["driver"]["enabled"] is settings["driver_enabled"]
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": False}  # the CRD path ignores driver.enabled alone
    assert values["mig"]["strategy"] == settings["mig_strategy"]
    if settings["driver_enabled"]:
        assert values["driver"]["rdma"] == {"enabled": settings["rdma_enabled"], "useHostMofed": settings["rdma_use_host_mofed"]}
        assert values["driver"]["version"] == "580.95.05"
    else:
        assert "rdma" not in values["driver"] and "version" not in values["driver"]


def test_a_misspelt_extra_value_is_caught(defaults):
    values = gpu_operator.build_values(dict(BASE, extra_values={"driver": {"enabeld": True}}))
    assert crdschema.check_values_keys(values, defaults) == ["driver.enabeld"]


def test_extra_values_merge_last():
    values = gpu_operator.build_values(dict(BASE, extra_values={"driver": {"enabled": False}, "operator": {"defaultRuntime": "crio"}}))
    assert values["driver"]["enabled"] is False and values["operator"] == {"defaultRuntime": "crio"}


@pytest.mark.parametrize("over, field, words", [
    ({"driver_enabled": "yes"}, "gpu_operator_driver_enabled", "not true or false"),
    ({"mig_strategy": "all"}, "gpu_operator_mig_strategy", "not a MIG strategy"),
    ({"rdma_use_host_mofed": True}, "gpu_operator_rdma_use_host_mofed", "gpu_operator_rdma_enabled is false"),
    ({"rdma_enabled": True, "driver_enabled": False}, "gpu_operator_rdma_enabled", "needs the operator-managed driver"),
    ({"driver_version": "latest"}, "gpu_operator_driver_version", "not a driver version"),
    ({"dcgm_exporter_enabled": False, "dcgm_exporter_service_monitor": True}, "gpu_operator_dcgm_exporter_service_monitor",
     "DCGM exporter is disabled"),
    ({"device_plugin_config": {"name": "Bad_Name"}}, "gpu_operator_device_plugin_config.name", "not a valid name"),
    ({"image_pull_secrets": ["UPPER"]}, "gpu_operator_image_pull_secrets", "not a valid name"),
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
