# -*- coding: utf-8 -*-
"""platform_support: validated platforms per release, and the acknowledgement gate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from local_gpu_cluster import pins

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import support as ps
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

ROOT = Path(__file__).resolve().parents[2]
RDMA = ["rdma"]


def node(name, os_image="Ubuntu 24.04.2 LTS", runtime="containerd://1.7.27", gpu=True):
    labels = {"nvidia.com/gpu.present": "true"} if gpu else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"nodeInfo": {"osImage": os_image, "containerRuntimeVersion": runtime,
                                    "kubeletVersion": "v1.35.8", "kernelVersion": "6.8.0-1021-azure"}}}


def role_default(role, key):
    """A role default as the version it stands for (the release pair's, for the two operators' chart versions)."""
    return pins.role_defaults(role, ROOT)[key]


def test_the_default_pair_is_known_good_for_rdma_on_the_local_cluster_version():
    combo = {"gpu_operator": role_default("gpu_operator", "gpu_operator_chart_version"),
             "network_operator": role_default("network_operator", "network_operator_chart_version"),
             "kubernetes": "v1.35.8", "features": RDMA}
    verdict = versions.check(combo)
    assert verdict.status == versions.KNOWN_GOOD, verdict.messages
    assert "aicr-gpu-operator-26.7.0-network-operator-26.4.1-rdma" in [m["id"] for m in verdict.matched]
    lines = ps.evaluate(combo, nodes=[node("gpu-1", runtime="containerd://2.0.5")], cluster_version="v1.35.8")
    assert lines == [versions.validation_line(verdict)] + list(verdict.messages)
    # preflight prints who validated the pair in use, truthfully
    assert lines[0].startswith("validation of GPU Operator v26.7.0 + Network Operator 26.4.1 + Kubernetes 1.35.8 + "
                               "features rdma: validated by an NVIDIA recipe")
    assert "not listed in NVIDIA's support matrix" in lines[0]


# Each named pair's level with GPUDirect RDMA (docs/versions.md, "Release pairs").
PAIR_LEVELS = {"aicr": versions.NVIDIA_RECIPE, "nvidia-matrix": versions.NVIDIA_MATRIX,
               "aks-guide": versions.CLOUD_GUIDE}


@pytest.mark.parametrize("name", sorted(pins.release_pairs(ROOT)))
def test_every_named_pair_is_known_good_for_rdma_on_the_local_cluster_version(name):
    """A pair the platform names passes preflight without gpu_platform_accept_unverified, at its level."""
    pair = pins.release_pairs(ROOT)[name]
    combo = {"gpu_operator": pair["gpu_operator"], "network_operator": pair["network_operator"],
             "kubernetes": "v1.35.8", "features": RDMA}
    verdict = versions.check(combo)
    assert verdict.status == versions.KNOWN_GOOD, verdict.messages
    assert verdict.level == PAIR_LEVELS[name]
    ps.evaluate(combo, inventory={"kubernetes": "1.35", "os": "Ubuntu 24.04", "runtime": "containerd 2.0.5"})


def test_every_platform_entry_says_who_validated_it():
    for item in ps.PLATFORMS:
        assert item["validated_by"][0] in versions.VALIDATION_LEVELS, item["id"]


def test_preflight_play_reads_the_roles_own_chart_versions():
    """The preflight play restates no role default: it loads the GPU Operator's and the Network Operator's variables
    (their defaults) and checks those."""
    play = yaml.safe_load((ROOT / "playbooks" / "preflight.yml").read_text())[0]
    assert "_defaults" not in play["vars"]
    loaded = {(task["ansible.builtin.import_role"]["name"], task["ansible.builtin.import_role"].get("tasks_from"))
              for task in play["tasks"] if "ansible.builtin.import_role" in task}
    assert {("gpu_platform.cluster.gpu_operator", "variables"),
            ("gpu_platform.cluster.network_operator", "variables")} <= loaded
    assert role_default("gpu_operator", "gpu_operator_chart_version") not in (ROOT / "playbooks" / "preflight.yml").read_text()


def test_gpu_operator_26_7_with_another_network_operator_and_rdma_is_refused_without_acknowledgement():
    combo = {"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "kubernetes": "1.35", "features": RDMA}
    with pytest.raises(Refusal) as err:
        ps.evaluate(combo, inventory={"kubernetes": "1.35", "os": "Ubuntu 24.04", "runtime": "containerd 2.0.5"})
    assert "GPU Operator x Network Operator x GPUDirect RDMA" in err.value.msg
    assert ps.ACCEPT_FIELD + ": true" in err.value.msg
    lines = ps.evaluate(combo, inventory={"kubernetes": "1.35", "os": "Ubuntu 24.04", "runtime": "containerd 2.0.5"},
                        accept=True)
    assert any(line.startswith("going on although unverified") and "GPUDirect RDMA" in line for line in lines)
    assert any("NVIDIA/gpu-operator#2301" in line for line in lines)


def test_kubernetes_1_30_is_refused_for_26_7_and_names_the_floor():
    with pytest.raises(Refusal) as err:
        ps.evaluate({"gpu_operator": "v26.7.0", "kubernetes": "1.30"}, inventory={"kubernetes": "1.30"})
    assert "Kubernetes 1.30 is outside GPU Operator v26.7.0's validated range >=1.33,<1.38" in err.value.msg
    assert ps.kubernetes_floor("gpu_operator", "v26.7.0") == "1.33"
    assert ps.kubernetes_floor("gpu_operator", "v26.3.3") == "1.32"
    assert ps.kubernetes_floor("network_operator", "26.4.0") == "1.31"
    assert ps.kubernetes_floor("network_operator", "26.1.2") == "1.31"
    assert ps.kubernetes_floor("gpu_operator", "v25.10.1") == ""


@pytest.mark.parametrize("os_image, runtime, words", [
    ("Ubuntu 20.04.6 LTS", "containerd://2.0.5", ["Ubuntu 20.04.6 LTS", "gpu-operator-26.7"]),
    ("CBL-Mariner/Linux", "containerd://2.0.5", ["CBL-Mariner/Linux"]),
    ("Ubuntu 24.04.2 LTS", "containerd://1.7.27", ["containerd://1.7.27", "containerd >=1.8,<2.4"]),
    ("Ubuntu 24.04.2 LTS", "docker://24.0.7", ["docker://24.0.7"]),
])
def test_nodes_outside_the_releases_platforms_are_unverified(os_image, runtime, words):
    unverified = ps.check({"gpu_operator": "v26.7.0"}, nodes=[node("gpu-1", os_image, runtime)],
                          cluster_version="v1.35.8")[0]
    assert len(unverified) == 1 and all(w in unverified[0] for w in words), unverified


def test_supported_nodes_pass_and_cpu_nodes_are_not_judged():
    nodes = [node("gpu-1", "Ubuntu 24.04.2 LTS", "containerd://2.0.5"), node("sys-1", "Windows", "", gpu=False),
             node("gpu-2", "Red Hat Enterprise Linux 9.4 (Plow)", "cri-o://1.31.1")]
    assert ps.check({"gpu_operator": "v26.7.0"}, nodes=nodes, cluster_version="v1.35.8") == ([], [])


def test_many_nodes_with_one_finding_give_one_line():
    nodes = [node("gpu-%d" % i, "Ubuntu 20.04.6 LTS", "containerd://2.0.5") for i in range(1000)]
    unverified = ps.check({"gpu_operator": "v26.7.0"}, nodes=nodes, cluster_version="v1.35.8")[0]
    assert len(unverified) == 1
    assert unverified[0].startswith("nodes gpu-0, gpu-1, gpu-2 and 997 more:")


def test_api_server_version_outside_the_network_operator_range():
    unverified = ps.check({"network_operator": "26.4.0"}, nodes=[], cluster_version="v1.36.1")[0]
    assert unverified == ["the API server: Kubernetes 1.36.1 is outside Network Operator 26.4.0's validated range "
                          ">=1.31,<1.36 [network-operator-26.4, source: %s]" % versions.NETOP_2640]


def test_render_mode_without_platform_facts_warns_and_names_the_variables():
    unverified, warnings = ps.check({"gpu_operator": "v26.3.3"}, inventory={})
    assert unverified == []
    assert any(all(v in w for v in ps.INVENTORY_FIELDS.values()) for w in warnings), warnings


def test_no_platform_data_for_a_release_is_a_warning():
    unverified, warnings = ps.check({"gpu_operator": "v25.10.1"}, inventory={"kubernetes": "1.30"})
    assert unverified == [] and "no platform data for GPU Operator v25.10.1" in warnings[0]


@pytest.mark.parametrize("inventory, field", [
    ({"kubernetes": 1.3}, "gpu_platform_kubernetes_version"),
    ({"os": ["Ubuntu"]}, "gpu_platform_node_os"),
    ({"kubernetes": "one.thirty"}, "kubernetes"),
    ({"distro": "Ubuntu"}, "distro"),
])
def test_bad_inventory_facts_name_the_field(inventory, field):
    with pytest.raises(ParamError) as err:
        ps.check({"gpu_operator": "v26.3.3"}, inventory=inventory)
    assert err.value.msg.startswith(field)


def test_bad_acknowledgement_and_bad_versions_name_the_variable():
    with pytest.raises(ParamError, match="^gpu_platform_accept_unverified"):
        ps.gate([], [], "yes")
    with pytest.raises(ParamError, match="^gpu_operator: 'latest' is not") as err:
        ps.evaluate({"gpu_operator": "latest"})
    renamed = err.value.renamed({"gpu_operator": "gpu_operator_chart_version"})
    assert renamed.msg == "gpu_operator_chart_version" + err.value.msg[len("gpu_operator"):]


def test_known_broken_is_refused_even_when_acknowledged():
    with pytest.raises(Refusal, match="Known-broken"):
        ps.evaluate({"kubernetes": "1.33", "features": ["dra"]}, accept=True)


@pytest.mark.parametrize("text, expected", [
    ("Ubuntu 24.04.2 LTS", ("ubuntu", "24.04.2")), ("Red Hat Enterprise Linux CoreOS 418.94", ("rhcos", "418.94")),
    ("Red Hat Enterprise Linux 9.4 (Plow)", ("rhel", "9.4")), ("Gentoo", ("", "")),
])
def test_parse_os(text, expected):
    assert ps.parse_os(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("containerd://1.7.27-1", ("containerd", "1.7.27")), ("cri-o://1.31.1", ("cri-o", "1.31.1")),
    ("containerd 2.0.5", ("containerd", "2.0.5")), ("", ("", "")),
])
def test_parse_runtime(text, expected):
    assert ps.parse_runtime(text) == expected


def test_docs_list_every_platform_entry_with_its_range():
    text = (ROOT / "docs" / "versions.md").read_text()
    for item in ps.PLATFORMS:
        row = next((line for line in text.splitlines() if line.startswith("| `%s` |" % item["id"])), None)
        assert row is not None, item["id"]
        assert "`%s`" % item["kubernetes"] in row, item["id"]
        ranges = re.findall(r"`([^`]*)`", row)
        assert item["versions"] in ranges, item["id"]


def test_the_combination_judged_leaves_out_empty_keys():
    assert ps.judged_combo({"gpu_operator": "v26.3.3", "network_operator": "", "driver": None, "features": [],
                            "kubernetes": "1.35"}) == {"gpu_operator": "v26.3.3", "kubernetes": "1.35"}
    assert ps.judged_combo("v26.3.3") == "v26.3.3", "not a dict: left for versions.check to refuse"
    assert ps.evaluate({"gpu_operator": "v26.3.3", "network_operator": "", "features": []}, inventory={}) \
        == ps.evaluate({"gpu_operator": "v26.3.3"}, inventory={})
