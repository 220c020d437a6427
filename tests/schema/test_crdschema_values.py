"""Tests of tests/schema/crdschema.py's check of Helm values keys against the GPU Operator's upstream
values.default.yaml in ../shared/upstream.

A missing ../shared directory makes these tests fail (never skip)."""
import pytest

from tests.schema.crdschema import UPSTREAM_DIR, check_values_keys

GPU_OPERATOR_VALUES = UPSTREAM_DIR / "gpu-operator" / "values.default.yaml"


# -- Helm values keys ---------------------------------------------------------------------

def test_known_values_keys_pass():
    assert check_values_keys({"driver": {"enabled": True, "version": "595.91.07"}}, GPU_OPERATOR_VALUES) == []


def test_misspelt_values_key_is_reported():
    assert check_values_keys({"driver": {"enabeld": True}}, GPU_OPERATOR_VALUES) == ["driver.enabeld"]


def test_list_default_is_free_form():
    values = {"toolkit": {"env": [{"name": "CONTAINERD_CONFIG", "value": "/etc/containerd/config.toml"}]}}
    assert check_values_keys(values, GPU_OPERATOR_VALUES) == []


def test_empty_map_default_is_free_form():
    values = {"daemonsets": {"labels": {"team": "ml"}}, "driver": {"resources": {"limits": {"memory": "1Gi"}}}}
    assert check_values_keys(values, GPU_OPERATOR_VALUES) == []


def test_every_unknown_key_is_reported_with_its_path():
    values = {"drivr": {"enabled": True}, "driver": {"rdma": {"enabled": True, "useHostMofd": True}},
              "toolkit": {"enabled": {"nested": 1}}}
    assert check_values_keys(values, GPU_OPERATOR_VALUES) == [
        "drivr", "driver.rdma.useHostMofd", "toolkit.enabled.nested"]


def test_allow_list_with_wildcards():
    values = {"driver": {"extraEnv": [1], "enabeld": True}, "toolkit": {"custom": {"a": 1}}}
    assert check_values_keys(values, GPU_OPERATOR_VALUES, allow=["driver.extraEnv", "*.custom"]) == [
        "driver.enabeld"]


def test_null_default_is_free_form(tmp_path):
    defaults = tmp_path / "values.default.yaml"
    defaults.write_text("a:\n  b: ~\n  c: 1\n", encoding="utf-8")
    assert check_values_keys({"a": {"b": {"anything": 1}}}, defaults) == []
    assert check_values_keys({"a": {"d": 1}}, defaults) == ["a.d"]


def test_values_must_be_a_mapping():
    with pytest.raises(TypeError):
        check_values_keys(["driver"], GPU_OPERATOR_VALUES)
