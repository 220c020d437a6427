"""network_operator.build_values: the Network Operator chart's values from the role's choices (the role's
_network_operator_values), and its bad inputs, each naming the role variable."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import network_operator
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults():
    assert network_operator.build_values({"nfd_enabled": True}) == {
        "nfd": {"enabled": True}, "sriovNetworkOperator": {"enabled": False}, "maintenanceOperator": {"enabled": False}}


def test_mirrors_then_extra_values_merge_last():
    values = network_operator.build_values({
        "nfd_enabled": False, "image_mirrors": {"nvcr.io": "harbor.example.com/nvcr"},
        "extra_values": {"operator": {"resources": {"limits": {"memory": "256Mi"}}}, "nfd": {"enabled": True}}})
    assert values["operator"] == {"repository": "harbor.example.com/nvcr/nvidia/cloud-native",
                                  "resources": {"limits": {"memory": "256Mi"}},
                                  "ofedDriver": {"initContainer": {"repository": "harbor.example.com/nvcr/nvidia/mellanox"}}}
    assert values["nfd"] == {"enabled": True}


@pytest.mark.parametrize("settings, field", [
    ({"nfd_enabled": "yes"}, "network_operator_nfd_enabled"),
    ({}, "network_operator_nfd_enabled"),
    ({"nfd_enabled": True, "extra_values": "nfd.enabled=true"}, "network_operator_extra_values"),
    ({"nfd_enabled": True, "image_mirrors": {"nvcr.io": "https://u:p@harbor"}}, "network_operator_image_mirrors.nvcr.io"),
])
def test_bad_input_names_the_variable(settings, field):
    with pytest.raises(ParamError) as err:
        network_operator.build_values(settings)
    assert err.value.field == field and "Fix:" in err.value.msg


def test_the_role_builds_its_values_with_it():
    """The role's release values are this function's (one place for them, which the schema tests render)."""
    raw = yaml.safe_load((ROOT / "roles" / "network_operator" / "vars" / "main.yml").read_text())
    assert "gpu_platform.cluster.network_operator_values" in raw["_network_operator_values"]
    assert raw["_network_operator_release_options"]["release_values"] == "{{ _network_operator_values }}"
