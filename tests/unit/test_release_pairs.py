"""release_pairs: gpu_platform_release_pair refused unless it names one of gpu_platform_release_pairs (the contract
check, before anything is read or written), and preflight's line on the pair in use: the pair and its level, or the
variables set directly instead."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from local_gpu_cluster import pins

from ansible_collections.gpu_platform.cluster.plugins.filter import platform as platform_filters
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import release_pairs as rp
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import settings as platform_settings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import support as ps
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

ROOT = Path(__file__).resolve().parents[2]
PAIRS = pins.release_pairs(ROOT)
RDMA = ("rdma",)
INVENTORY = {"kubernetes": "1.35", "os": "Ubuntu 24.04", "runtime": "containerd 2.0.5"}


def combo(gpu, network, features=RDMA):
    return {"gpu_operator": gpu, "network_operator": network, "kubernetes": "1.35", "features": features}


def test_the_pairs_are_the_collections_three():
    assert PAIRS == {"aicr": {"gpu_operator": "v26.7.0", "network_operator": "26.4.1"},
                     "nvidia-matrix": {"gpu_operator": "v26.3.3", "network_operator": "26.1.2"},
                     "aks-guide": {"gpu_operator": "v26.3.3", "network_operator": "26.4.0"}}
    assert rp.check_pairs(PAIRS) is PAIRS


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_a_named_pair_is_accepted(name):
    assert rp.check_choice(name, PAIRS) == name


@pytest.mark.parametrize("name", ["aks", "AICR", "", None, 5, ["aicr"]])
def test_a_name_that_is_not_a_pair_is_refused_naming_the_variable_the_pairs_and_the_fix(name):
    with pytest.raises(ParamError) as err:
        rp.check_choice(name, PAIRS)
    assert err.value.field == "gpu_platform_release_pair"
    msg = err.value.msg
    assert "\n" not in msg
    assert "is not a release pair (the pairs: aicr, aks-guide, nvidia-matrix)" in msg
    assert "Fix: set gpu_platform_release_pair to one of aicr, aks-guide, nvidia-matrix" in msg
    assert "gpu_operator_chart_version and network_operator_chart_version" in msg


@pytest.mark.parametrize("pairs, field", [
    ({}, "gpu_platform_release_pairs"),
    ("aicr", "gpu_platform_release_pairs"),
    ({"mine": {"gpu_operator": "v26.7.0"}}, "gpu_platform_release_pairs.mine"),
    ({"mine": {"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "kai": "v0.16.8"}},
     "gpu_platform_release_pairs.mine"),
    ({"mine": ["v26.7.0", "26.4.1"]}, "gpu_platform_release_pairs.mine"),
    ({"mine": {"gpu_operator": "latest", "network_operator": "26.4.1"}}, "gpu_platform_release_pairs.mine.gpu_operator"),
    ({"mine": {"gpu_operator": "v26.7.0", "network_operator": 26.4}},
     "gpu_platform_release_pairs.mine.network_operator"),
    ({"mine": {"gpu_operator": "v26.7.0", "network_operator": ">=26.4.0"}},
     "gpu_platform_release_pairs.mine.network_operator"),
])
def test_bad_pairs_name_the_pair(pairs, field):
    with pytest.raises(ParamError) as err:
        rp.check_choice("mine", pairs)
    assert err.value.field == field and "Fix:" in err.value.msg


def test_the_contract_check_refuses_it_with_the_renamed_variables():
    """roles/gpu_platform/tasks/check.yml gives platform_check the names the inventory defines and the pair: both
    mistakes come back in one error, each on its own."""
    assert platform_settings.check({"release_pair": {"name": "aicr", "pairs": PAIRS}}) == {
        "charts": [], "mirrors": {}, "pins": [], "release_pair": "aicr"}
    with pytest.raises(ParamError) as err:
        platform_settings.check({"defined": ["network_operator_mode"],
                                 "release_pair": {"name": "aks", "pairs": PAIRS}})
    assert [e.field for e in err.value.parts] == ["network_operator_mode", "gpu_platform_release_pair"]


def test_the_contract_check_task_gives_the_pair():
    task = yaml.safe_load((ROOT / "roles" / "gpu_platform" / "tasks" / "check.yml").read_text())[0]
    that = task["ansible.builtin.assert"]["that"]
    assert "'release_pair': {'name': gpu_platform_release_pair, 'pairs': gpu_platform_release_pairs}" in that
    assert "gpu_platform.cluster.platform_check" in that


@pytest.mark.parametrize("versions_in_use, expected", [
    ({"gpu_operator": "v26.7.0", "network_operator": "26.4.1"}, {"pair": "aicr", "set_directly": [], "same_as": None}),
    # Helm ignores the leading v: so does the comparison
    ({"gpu_operator": "26.7.0", "network_operator": "v26.4.1"}, {"pair": "aicr", "set_directly": [], "same_as": None}),
    # the network layer off: only the GPU Operator is installed, and compared
    ({"gpu_operator": "v26.7.0", "network_operator": ""}, {"pair": "aicr", "set_directly": [], "same_as": None}),
    ({"gpu_operator": "v26.7.0", "network_operator": "26.4.0"},
     {"pair": None, "set_directly": ["network_operator_chart_version"], "same_as": None}),
    ({"gpu_operator": "v26.3.3", "network_operator": "26.1.2"},
     {"pair": None, "set_directly": ["gpu_operator_chart_version", "network_operator_chart_version"],
      "same_as": "nvidia-matrix"}),
    ({"gpu_operator": "v26.3.3", "network_operator": ""},
     {"pair": None, "set_directly": ["gpu_operator_chart_version"], "same_as": "aks-guide"}),
])
def test_which_pair_the_versions_are(versions_in_use, expected):
    assert rp.in_use("aicr", PAIRS, versions_in_use) == expected


def test_preflight_names_the_pair_and_its_level_first():
    lines = ps.evaluate(combo("v26.7.0", "26.4.1"), inventory=INVENTORY, release={"pair": "aicr", "pairs": PAIRS})
    assert lines[0] == ("release pair aicr (gpu_platform_release_pair): GPU Operator v26.7.0 with Network Operator "
                        "26.4.1; GPUDirect RDMA an NVIDIA recipe (NVIDIA's AI Cluster Runtime recipes), not listed in "
                        "NVIDIA's support matrix [aicr-gpu-operator-26.7.0-network-operator-26.4.1-rdma]")
    assert lines[1:] == ps.evaluate(combo("v26.7.0", "26.4.1"), inventory=INVENTORY)


@pytest.mark.parametrize("name, words", [
    ("nvidia-matrix", "GPUDirect RDMA NVIDIA's support matrix [gpu-operator-26.3-network-operator-26.1-patches-rdma]"),
    ("aks-guide", "GPUDirect RDMA a cloud provider's guide (Azure AKS's RDMA/InfiniBand guide; NVIDIA DeepOps 26.07 "
                  "defaults to it), not listed in NVIDIA's support matrix "
                  "[aks-gpu-operator-26.3.3-network-operator-26.4.0-rdma]"),
])
def test_each_pair_gets_its_own_level(name, words):
    pair = PAIRS[name]
    lines = ps.evaluate(combo(pair["gpu_operator"], pair["network_operator"]), inventory=INVENTORY,
                        release={"pair": name, "pairs": PAIRS})
    assert lines[0].startswith("release pair %s (gpu_platform_release_pair): GPU Operator %s with Network Operator %s;"
                               % (name, pair["gpu_operator"], pair["network_operator"]))
    assert lines[0].endswith(words)


def test_without_the_network_layer_the_line_says_so_and_gives_the_runs_level():
    lines = ps.evaluate({"gpu_operator": "v26.7.0", "network_operator": "", "kubernetes": "1.35", "features": ()},
                        inventory=INVENTORY, release={"pair": "aicr", "pairs": PAIRS})
    assert lines[0] == ("release pair aicr (gpu_platform_release_pair): GPU Operator v26.7.0 (its Network Operator "
                        "26.4.1 is not installed: the network layer is off); no GPUDirect RDMA: each release on its "
                        "own, validated by NVIDIA's support matrix")


def test_versions_set_directly_are_named_and_the_pair_does_not_apply():
    lines = ps.evaluate(combo("v26.3.3", "26.1.2"), inventory=INVENTORY, release={"pair": "aicr", "pairs": PAIRS})
    assert lines[0] == ("release pair: none, the versions were set directly (gpu_operator_chart_version v26.3.3, "
                        "network_operator_chart_version 26.1.2), so gpu_platform_release_pair aicr (GPU Operator v26.7.0 "
                        "with Network Operator 26.4.1) does not apply; they are pair nvidia-matrix's: set "
                        "gpu_platform_release_pair: nvidia-matrix instead; GPUDirect RDMA NVIDIA's support matrix "
                        "[gpu-operator-26.3-network-operator-26.1-patches-rdma]")


def test_a_refusal_names_the_versions_set_directly():
    """v26.7.0 with Network Operator 26.4.0: the pair's GPU Operator, another Network Operator, no fact for them."""
    with pytest.raises(Refusal) as err:
        ps.evaluate(combo("v26.7.0", "26.4.0"), inventory=INVENTORY, release={"pair": "aicr", "pairs": PAIRS})
    assert err.value.msg.startswith("Unverified platform (versions set directly (network_operator_chart_version): "
                                    "GPU Operator v26.7.0 + Network Operator 26.4.0")
    lines = ps.evaluate(combo("v26.7.0", "26.4.0"), inventory=INVENTORY, release={"pair": "aicr", "pairs": PAIRS},
                        accept=True)
    assert lines[0].endswith("GPUDirect RDMA unverified (no fact covers it)")
    assert "network_operator_chart_version 26.4.0" in lines[0]


def test_the_filter_refuses_an_unknown_pair_in_one_line():
    settings = {"combo": combo("v26.7.0", "26.4.1"), "inventory": INVENTORY,
                "fields": {"gpu_operator": "gpu_operator_chart_version"},
                "release": {"pair": "aks", "pairs": PAIRS}}
    with pytest.raises(AnsibleFilterError) as err:
        platform_filters.platform_support_check(settings)
    assert err.value.message.startswith("gpu_platform_release_pair: 'aks' is not a release pair")
    assert "Traceback" not in err.value.message and "\n" not in err.value.message


def test_the_preflight_play_gives_the_pair():
    play = yaml.safe_load((ROOT / "playbooks" / "preflight.yml").read_text())[0]
    task = next(t for t in play["tasks"] if "gpu_platform.cluster.platform_support_check" in str(t))
    text = task["ansible.builtin.set_fact"]["gpu_platform_version_warnings"]
    assert "'release': {'pair': gpu_platform_release_pair, 'pairs': gpu_platform_release_pairs}" in text


def test_the_level_words_are_the_validation_lines():
    verdict = versions.check(combo("v26.7.0", "26.4.1"))
    line = versions.validation_line(verdict)
    assert ("GPU Operator x Network Operator x GPUDirect RDMA: "
            + versions.level_words(versions.NVIDIA_RECIPE, "NVIDIA's AI Cluster Runtime recipes")) in line


AKS = ROOT / "inventories" / "aks" / "group_vars" / "all" / "platform.yml"


def test_the_aks_inventory_switches_to_the_guides_pair_in_one_line():
    text = AKS.read_text()
    assert "\n# gpu_platform_release_pair: aks-guide\n" in text
    choices = yaml.safe_load(text)
    assert "gpu_platform_release_pair" not in choices, "the default pair, aicr, unless the line is uncommented"
    assert not {"gpu_operator_chart_version", "network_operator_chart_version"} & set(choices), "no version set directly"
    assert rp.check_choice("aks-guide", PAIRS) == "aks-guide"
    assert "```yaml\ngpu_platform_release_pair: aks-guide\n```" in (ROOT / "docs" / "aks.md").read_text()


def test_the_aks_inventory_carries_the_guides_gpu_operator_choices():
    """Azure/aks-rdma-infiniband configs/values/gpu-operator/values.yaml: NFD off (the Network Operator's), and the
    MIG manager, vGPU device manager, VFIO manager and sandbox device plugin off."""
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
    from tests.schema.test_gpu_operator_values import BASE, decided
    choices = yaml.safe_load(AKS.read_text())
    assert choices["gpu_operator_disable_unused_operands"] is True and choices["gpu_platform_nfd_in_gpu_operator"] is False
    values = gpu_operator.build_values(dict(
        BASE, driver_values=decided("operator", rdma=True), rdma_enabled=choices["gpu_platform_gpudirect_rdma"],
        nfd_enabled=choices["gpu_platform_nfd_in_gpu_operator"],
        disable_unused_operands=choices["gpu_operator_disable_unused_operands"],
        mig_pools=choices.get("gpu_platform_node_pools", []), mig_config=choices.get("gpu_platform_mig_config")))
    assert {k: values[k] for k in ("nfd", "migManager", "vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin")} \
        == {"nfd": {"enabled": False}, "migManager": {"enabled": False}, "vgpuDeviceManager": {"enabled": False},
            "vfioManager": {"enabled": False}, "sandboxDevicePlugin": {"enabled": False}}
    assert values["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
