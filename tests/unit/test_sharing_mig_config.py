"""gpu_sharing with a custom mig-parted config: the docs example rendered, the chart values, every refusal."""
import copy
import pathlib
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_sharing import gpu_sharing_plan
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import custom as mig_custom
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema import crdschema, pinned_charts

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sharing.md"


def doc_example():
    """The YAML block of docs/sharing.md that sets gpu_platform_mig_config (the example users copy)."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    found = [yaml.safe_load(b) for b in blocks if "gpu_platform_mig_config:" in b]
    assert len(found) == 1
    return found[0]


def refused(call, *args):
    with pytest.raises(ParamError) as err:
        call(*args)
    assert "Fix:" in err.value.msg
    return err.value


def test_the_docs_example_renders_the_config_map_and_values():
    example = doc_example()
    plan = gpu_sharing_plan(example["gpu_platform_node_pools"], "time-slicing-config", "gpu-operator",
                            example["gpu_platform_mig_config"], "custom-mig-parted-config")
    cm = plan["mig_config_map"]
    assert cm["metadata"] == {"name": "custom-mig-parted-config", "namespace": "gpu-operator",
                              "labels": {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}}
    assert yaml.safe_load(cm["data"]["config.yaml"]) == example["gpu_platform_mig_config"]
    assert plan["mig_config"] == example["gpu_platform_mig_config"]
    assert plan["mig_pools"] == [{"name": "training", "profile": "training-mix", "strategy": "mixed",
                                  "selector": "nodepool=training"}]
    values = plan["mig_manager_values"]
    expected = {"name": "custom-mig-parted-config", "default": "all-disabled", "create": False}
    assert values == {"migManager": {"config": expected}}
    for version in pinned_charts.pair_versions("gpu-operator"):
        assert crdschema.check_values_keys(values, pinned_charts.values_path("gpu-operator", version)) == [], version
    # Byte-stable, and the same text mig_profile writes for the same config.
    again = gpu_sharing_plan(example["gpu_platform_node_pools"], "time-slicing-config", "gpu-operator",
                             copy.deepcopy(example["gpu_platform_mig_config"]))
    assert again["mig_config_map"] == cm
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import mig_profile
    module_cm = mig_profile._config_map({"mig_config": example["gpu_platform_mig_config"],
                                         "config_map_name": "custom-mig-parted-config", "operator_namespace": "gpu-operator"})
    assert module_cm["data"] == cm["data"]


def test_without_a_custom_config_nothing_changes():
    plan = gpu_sharing_plan([{"name": "t", "node_selector": {"p": "t"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}])
    assert plan["mig_config"] is None and plan["mig_config_map"] is None and plan["mig_manager_values"] == {}
    assert mig_custom.check_config({}) is None and mig_custom.check_config(None) is None


def test_a_custom_layout_name_needs_the_custom_config():
    pool = {"name": "t", "node_selector": {"p": "t"}, "sharing": "mig", "mig_profile": "training-mix"}
    err = refused(sharing.validate_pools, [pool])
    assert err.field == "gpu_platform_node_pools[0].mig_profile"
    assert sharing.validate_pools([pool], doc_example()["gpu_platform_mig_config"])[0].mig_profile == "training-mix"


def test_with_a_custom_config_standard_names_must_be_in_it():
    pool = {"name": "t", "node_selector": {"p": "t"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}
    err = refused(sharing.validate_pools, [pool], doc_example()["gpu_platform_mig_config"])
    assert err.field == "gpu_platform_node_pools[0].mig_profile"
    assert "training-mix" in err.msg and "only its configs" in err.msg


def test_all_disabled_is_still_refused_for_a_mig_pool():
    config = doc_example()["gpu_platform_mig_config"]
    config["mig-configs"]["off"] = [{"devices": "all", "mig-enabled": False}]
    for name in ("all-disabled", "off"):
        pool = {"name": "t", "node_selector": {"p": "t"}, "sharing": "mig", "mig_profile": name}
        err = refused(sharing.validate_pools, [pool], config)
        assert err.field == "gpu_platform_node_pools[0].mig_profile"
        assert "sharing: none" in err.msg


def bad(path, value):
    config = copy.deepcopy(doc_example()["gpu_platform_mig_config"])
    target = config
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return config


@pytest.mark.parametrize("config, field, words", [
    ("not a dict", "gpu_platform_mig_config", "version and mig-configs"),
    (bad(["version"], "v2"), "gpu_platform_mig_config.version", "v1"),
    (bad(["mig-configs"], {}), "gpu_platform_mig_config.mig-configs", "non-empty"),
    (bad(["mig-configs", "training-mix", 1, "mig-devices", "3g.40gb"], 0),
     "gpu_platform_mig_config.mig-configs.training-mix[1].mig-devices", "at least 1"),
    (bad(["mig-configs", "training-mix", 0, "devices"], "some"),
     "gpu_platform_mig_config.mig-configs.training-mix[0].devices", "GPU indices"),
    (bad(["mig-configs", "training-mix", 0, "mig-enabled"], "yes"),
     "gpu_platform_mig_config.mig-configs.training-mix[0].mig-enabled", "true or false"),
    (bad(["mig-configs", "training-mix", 0, "device-filter"], "A100"),
     "gpu_platform_mig_config.mig-configs.training-mix[0].device-filter", "PCI device ID"),
    (bad(["mig-configs", "all-disabled"], KeyError), "gpu_platform_mig_config.mig-configs.all-disabled", "missing"),
    (bad(["mig-configs", "all-disabled"], [{"devices": "all", "mig-enabled": True, "mig-devices": {}}]),
     "gpu_platform_mig_config.mig-configs.all-disabled", "enables MIG"),
])
def test_bad_configs_name_the_path(config, field, words):
    err = refused(mig_custom.check_config, config)
    assert err.field == field
    assert words in err.msg
    # The role's plan reports the same field.
    with pytest.raises(AnsibleFilterError) as plan_err:
        gpu_sharing_plan([], mig_config=config)
    assert (field + ":") in str(plan_err.value)


def test_the_layout_is_fitted_to_the_pools_gpu():
    example = doc_example()
    pool = dict(example["gpu_platform_node_pools"][0], gpu_product="A100-40GB")
    err = refused(sharing.validate_pools, [pool], example["gpu_platform_mig_config"])
    assert err.field == "gpu_platform_mig_config.mig-configs.training-mix[0].mig-devices"
    assert "A100-40GB" in err.msg and "3g.40gb" in err.msg
    pool["gpu_product"] = "NVIDIA-H100-80GB-HBM3"
    assert sharing.validate_pools([pool], example["gpu_platform_mig_config"])[0].gpu_product == "H100-80GB"
    pool["gpu_product"] = "Tesla-T4"
    assert refused(sharing.validate_pools, [pool], example["gpu_platform_mig_config"]).field == \
        "gpu_platform_node_pools[0].gpu_product"


def test_config_map_name_is_checked():
    config = doc_example()["gpu_platform_mig_config"]
    assert refused(mig_custom.config_map, config, "x", "Bad_Name").field == "gpu_platform_mig_config_map"
    assert refused(mig_custom.chart_values, config, "").field == "gpu_platform_mig_config_map"
