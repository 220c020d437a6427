"""Tests of the gpu_driver_mode domain on chosen examples spelled out, on the bugs the table tests found, and on
bad inputs."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_mode, gpu_host_facts)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal
from tests.unit.driver_mode_oracle import OUTER, POLICIES, SMI, ev, facts, make_node


# ---------------------------------------------------------------- chosen examples, spelled out


def test_operator_keeps_the_nvidiadriver_crd_when_objects_exist():
    node = make_node("gpu-a", ev(gfd=True, pod=True))
    got = gpu_driver_mode.decide("operator", [node], {"cluster_policy": None, "nvidia_drivers": ["a100", "h100"]})
    assert got["gpu_operator_values"]["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
    got = gpu_driver_mode.decide("operator", [node], {"cluster_policy": POLICIES[1], "nvidia_drivers": []})
    assert got["gpu_operator_values"]["driver"]["nvidiaDriverCRD"] == {"enabled": False}


def test_auto_with_every_node_managed_and_loaded_is_host_with_host_peermem_and_no_toolkit():
    nodes = [make_node(n, ev("loaded", toolkit=True)) for n in ("gpu-b", "gpu-a")]
    got = gpu_driver_mode.decide("auto", nodes, rdma=True, host_mofed=True)
    assert (got["mode"], got["owner"], got["peermem"]) == ("host", "host", "host")
    assert got["gpu_operator_values"] == {"driver": {"enabled": False, "nvidiaDriverCRD": {"enabled": False}},
                                          "toolkit": {"enabled": False}}
    assert [n["name"] for n in got["nodes"]] == ["gpu-a", "gpu-b"]
    assert got["reason"] == "auto: every GPU node (2) has a host driver"


def test_one_node_without_a_host_toolkit_keeps_the_operator_toolkit():
    nodes = [make_node("gpu-a", ev("loaded", toolkit=True)), make_node("gpu-b", ev("loaded", toolkit=False))]
    assert gpu_driver_mode.decide("host", nodes)["gpu_operator_values"]["toolkit"] == {"enabled": True}


def test_nvidia_smi_alone_counts_as_a_host_driver():
    host = facts("neither", False)
    host["nvidia_smi"] = SMI
    node = {"name": "gpu-a", "host": host, "labels": {}, "driver_pods": []}
    assert gpu_driver_mode.classify(node)["host_driver"] is True
    with pytest.raises(Refusal) as info:
        gpu_driver_mode.decide("operator", [node])
    assert "gpu-a: nvidia-smi at %s" % SMI in info.value.msg


@pytest.mark.parametrize("labels, named", [
    ({"nvidia.com/cuda.driver-version.major": "580"}, "nvidia.com/cuda.driver-version.major=580"),
    ({"nvidia.com/cuda.driver.major": "580"}, "nvidia.com/cuda.driver.major=580"),
    ({"nvidia.com/cuda.driver-version.major": "580", "nvidia.com/cuda.driver.major": "580"},
     "nvidia.com/cuda.driver-version.major=580"),
])
def test_gfd_driver_labels_current_or_deprecated_show_a_host_driver_the_inventory_does_not_manage(labels, named):
    """GFD writes its driver version under the current names and, deprecated, the old ones: a node whose hosts are
    not in gpu_hosts (bare metal set up elsewhere) with either label and no operator driver pod has a working host
    driver, so host mode accepts it (and operator mode refuses it, naming the label)."""
    node = {"name": "dgx-a100-01", "host": None, "labels": dict(labels, **{"nvidia.com/gpu.present": "true"}),
            "driver_pods": []}
    assert gpu_driver_mode.decide("host", [node])["owner"] == "host"
    with pytest.raises(Refusal) as info:
        gpu_driver_mode.decide("operator", [node])
    assert "dgx-a100-01: label %s with no operator driver pod" % named in info.value.msg


def test_every_driver_pod_is_named_in_sorted_order():
    node = {"name": "gpu-a", "host": facts("packages", False), "labels": {},
            "driver_pods": ["gpu-operator/nvidia-gpu-driver-ubuntu22.04-x", "gpu-operator/nvidia-driver-daemonset-y"]}
    with pytest.raises(Refusal) as info:
        gpu_driver_mode.decide("auto", [node])
    assert ("operator driver pod gpu-operator/nvidia-driver-daemonset-y, operator driver pod "
            "gpu-operator/nvidia-gpu-driver-ubuntu22.04-x") in info.value.msg


def test_host_facts_summary_feeds_decide():
    """The facts gpu_host_facts builds (gpu_host_facts.summarize) are what classify reads."""
    summary = gpu_host_facts.summarize(
        "gpu-a", {"0000:3b:00.0": {"vendor": "0x10de\n", "class": "0x030200\n", "device": "0x2330\n"}},
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:45:16 UTC 2025\n",
        "nvidia 56778752 2 nvidia_uvm, Live 0x0000000000000000 (POE)\n", {"nvidia-container-toolkit": "1.17.8-1"},
        SMI)
    got = gpu_driver_mode.classify({"name": "gpu-a", "host": summary, "labels": None, "driver_pods": []})
    assert got["host_driver"] and got["managed"] and got["host_toolkit"] and not got["in_cluster"]
    assert got["findings"] == ["driver 535.247.01 loaded (/proc/driver/nvidia/version)"]


# ---------------------------------------------------------------- bugs these tests found (fixed)

AKS_NOTE = ("cloud_driver=present says every GPU node's image ships the driver (e.g. an autoscaled AKS GPU pool "
            "at zero nodes), but with no node seen yet it is ignored")


def test_auto_without_nodes_follows_a_cloud_driver():
    got = gpu_driver_mode.decide("auto", [], cloud_driver="present")
    assert got["mode"] == "host" and got["owner"] == "cloud"
    assert got["gpu_operator_values"]["driver"]["enabled"] is False


def test_operator_without_nodes_refuses_a_cloud_driver():
    with pytest.raises(Refusal):
        gpu_driver_mode.decide("operator", [], cloud_driver="present")


def test_host_without_nodes_turns_the_toolkit_off_for_a_cloud_driver():
    got = gpu_driver_mode.decide("host", [], cloud_driver="present")
    assert got["gpu_operator_values"]["toolkit"] == {"enabled": False}


# ---------------------------------------------------------------- bad inputs

BOTH_NODE = [make_node("gpu-a", ev("loaded", pod=True))]
BAD = [
    # (changes, field, words in the problem, words in the fix)
    ({"mode": "Host"}, "mode", "'Host' is not a driver mode", "use host"),
    ({"mode": "hybrid"}, "mode", "'hybrid' is not a driver mode", "auto"),
    ({"mode": None}, "mode", "None is not a driver mode", "operator"),
    ({"cloud_driver": "yes"}, "cloud_driver", "'yes' is not one of unknown, present, absent", "--gpu-driver none"),
    ({"cloud_driver": None}, "cloud_driver", "None is not one of", "use present"),
    ({"cloud_driver": True}, "cloud_driver", "True is not one of", "use present"),
    ({"rdma": "true"}, "rdma", "'true' is not true or false", "set it to true or false"),
    ({"rdma": 1}, "rdma", "1 is not true or false", "set it to true or false"),
    ({"rdma": None}, "rdma", "None is not true or false", "set it to true or false"),
    ({"rdma": True, "host_mofed": "yes"}, "host_mofed", "'yes' is not true or false", "set it to true or false"),
    ({"host_mofed": 0}, "host_mofed", "0 is not true or false", "set it to true or false"),
    ({"host_mofed": True}, "host_mofed", "is true but rdma is false", "enable rdma or drop host_mofed"),
    ({"rdma": False, "host_mofed": True}, "host_mofed", "is true but rdma is false", "enable rdma"),
]


@pytest.mark.parametrize("changes, field, words, fix", BAD)
def test_bad_input_names_the_field_and_the_fix(changes, field, words, fix):
    args = {"mode": "auto", "cloud_driver": "unknown", "rdma": False, "host_mofed": False}
    args.update(changes)
    with pytest.raises(ParamError) as info:  # checked before any node (this one would be refused)
        gpu_driver_mode.decide(args["mode"], BOTH_NODE, None, cloud_driver=args["cloud_driver"], rdma=args["rdma"],
                               host_mofed=args["host_mofed"])
    err = info.value
    assert err.field == field and err.details == {"field": field}
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    dummy, fix_text = str(err).split(". Fix: ", 1)
    assert fix in fix_text


def test_check_inputs_accepts_every_valid_combination():
    for mode, cloud, (rdma, mofed) in OUTER:
        assert gpu_driver_mode.check_inputs(mode, cloud, rdma, mofed) is None
