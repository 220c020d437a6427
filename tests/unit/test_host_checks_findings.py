"""The host preflight's verdict (domain/host_checks/findings.py) on readings given as data: who owns the driver under
auto, the GPU Operator's values it reads, and the re-run of an operator-owned cluster (its own driver is loaded)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def host(**driver):
    base = {"loaded": False, "version": "", "packages": {}, "nvidia_smi": "", "operator_root": False,
            "module_type": ""}
    base.update(driver)
    return {"node_name": "n1", "gpus": [{"address": "0000:17:00.0", "device": "0x2330"}], "driver": base,
            "os": {"ID": "ubuntu"},
            "kernel": {"release": "6.8.0-90-generic", "modules_dir": True, "headers": False, "headers_candidate": "none"}}


@pytest.mark.parametrize("mode, cloud, driver, who", [
    ("auto", "unknown", {"loaded": True, "version": "580.95.05"}, "host"),
    ("auto", "unknown", {"packages": {"nvidia-driver-580-server": "580.95.05"}}, "host"),
    ("auto", "unknown", {}, "operator"),
    ("auto", "present", {}, "host"),
    # a re-run: the GPU Operator's driver container loaded this driver
    ("auto", "unknown", {"loaded": True, "version": "580.95.05", "operator_root": True}, "operator"),
    ("host", "unknown", {}, "host"),
    ("operator", "unknown", {"loaded": True}, "operator"),
])
def test_owner(mode, cloud, driver, who):
    assert findings.owner(mode, cloud, host(**driver)) == who


def test_a_rerun_with_the_operators_own_driver_is_not_a_host_driver():
    checks = host(loaded=True, version="580.95.05", operator_root=True, module_type="open")
    verdict = findings.evaluate([checks], {"driver_mode": "operator", "gpu_operator_values": {}})
    assert verdict["blocking"] == [] and verdict["warnings"] == []


def test_headers_the_repositories_lack_block_the_operators_build_only():
    verdict = findings.evaluate([host()], {"driver_mode": "operator"})
    assert [f["id"] for f in verdict["blocking"]] == ["no-kernel-headers"]
    assert "apt-cache policy linux-headers-6.8.0-90-generic: no candidate" in verdict["lines"][0]
    installable = host()
    installable["kernel"]["headers_candidate"] = "6.8.0-90.91"
    assert findings.evaluate([installable], {"driver_mode": "operator"})["blocking"] == []
    precompiled = {"driver_mode": "operator", "gpu_operator_values": {"driver": {"usePrecompiled": True}}}
    assert findings.evaluate([host()], precompiled)["blocking"] == []


@pytest.mark.parametrize("values, expected", [
    ({}, {"precompiled": False, "kernel_module_type": "auto", "gds": False, "gdrcopy": False, "toolkit": True,
          "config_source_file": False}),
    ({"driver": {"usePrecompiled": True, "kernelModuleType": "open"}, "gds": {"enabled": True},
      "toolkit": {"enabled": False, "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file,command"}]}},
     {"precompiled": True, "kernel_module_type": "open", "gds": True, "gdrcopy": False, "toolkit": False,
      "config_source_file": True}),
    ({"toolkit": {"env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "command,file"}]}, "driver": "odd"},
     {"precompiled": False, "kernel_module_type": "auto", "gds": False, "gdrcopy": False, "toolkit": True,
      "config_source_file": False}),
])
def test_operator_settings(values, expected):
    assert findings.operator_settings(values) == expected


def test_the_containerd_prediction_is_a_warning_until_the_config_source_is_file():
    checks = host(loaded=True, version="580.95.05")
    checks["containerd"] = {"config": True, "version": 2, "dropins": [], "binary_major": 2}
    verdict = findings.evaluate([checks], {"driver_mode": "host"})
    assert [f["id"] for f in verdict["warnings"]] == ["containerd-dropin-version"] and verdict["blocking"] == []
    from_file = {"driver_mode": "host", "gpu_operator_values": {"toolkit": {"env": [
        {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}}}
    assert findings.evaluate([checks], from_file)["warnings"] == []


def test_a_wrong_driver_mode_names_the_variable():
    with pytest.raises(ParamError, match="gpu_platform_driver_mode: 'hosts' is not a driver mode"):
        findings.evaluate([host()], {"driver_mode": "hosts"})


def test_every_check_is_in_the_contracts_choices():
    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "roles/gpu_platform/meta/argument_specs.yml")
                          .read_text())["argument_specs"]
    assert sorted(spec["main"]["options"]["gpu_platform_host_checks_skip"]["choices"]) == sorted(findings.CHECKS)
    assert sorted(spec["host_checks"]["options"]["gpu_platform_host_checks_skip"]["choices"]) == sorted(findings.CHECKS)
