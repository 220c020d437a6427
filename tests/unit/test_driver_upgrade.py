"""The driver upgrade domain: policy values, reading the upgrade states, stuck detection, host-mode decision."""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_upgrade as du
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade_state as du_state)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

F = "gpu_operator_driver_upgrade_policy"


# -- the policy --------------------------------------------------------------------------------------------------

UPGRADE_DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                           "upgrade.md")


def documented_policy_defaults():
    """The defaults docs/upgrade.md ("The policy variables") shows in its yaml block."""
    with open(UPGRADE_DOC, encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"## The policy variables\n.*?```yaml\n(.*?)```", text, re.S)
    assert block, "docs/upgrade.md no longer shows the policy's defaults"
    return yaml.safe_load(block.group(1))[F]


def test_no_policy_is_the_documented_defaults():
    """What docs/upgrade.md shows (the chart's defaults: tests/schema/test_driver_upgrade_policy_schema.py holds
    POLICY_DEFAULTS to the upstream chart's values), not the module's constant compared with itself."""
    documented = documented_policy_defaults()
    assert du.check_policy(None) == documented
    assert du.check_policy({}) == documented
    assert documented["gpuPodDeletion"] == {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False}


def test_keys_left_out_keep_the_defaults_and_the_input_is_not_changed():
    given = {"maxParallelUpgrades": 0, "drain": {"enable": True}, "maxUnavailable": " 50% "}
    out = du.check_policy(given)
    assert out["maxParallelUpgrades"] == 0 and out["maxUnavailable"] == "50%"
    assert out["drain"] == {"enable": True, "force": False, "podSelector": "", "timeoutSeconds": 300,
                            "deleteEmptyDir": False}
    assert given == {"maxParallelUpgrades": 0, "drain": {"enable": True}, "maxUnavailable": " 50% "}
    assert du.check_policy({"maxUnavailable": 3})["maxUnavailable"] == 3
    assert du.check_policy({"drain": {"podSelector": "app in (train, infer),tier!=system"}})


@pytest.mark.parametrize("policy, path, words", [
    ("all", F, "is not a dictionary"),
    ({"autoUpgrades": True}, F + ".autoUpgrades", "is not an upgrade policy setting"),
    ({"podDeletion": {}}, F + ".podDeletion", "is not an upgrade policy setting"),
    ({"drain": {"timeout": 5}}, F + ".drain.timeout", "is not a setting of drain"),
    ({"drain": True}, F + ".drain", "is not a dictionary"),
    ({"autoUpgrade": "yes"}, F + ".autoUpgrade", "is not true or false"),
    ({"drain": {"enable": 1}}, F + ".drain.enable", "is not true or false"),
    ({"gpuPodDeletion": {"force": "false"}}, F + ".gpuPodDeletion.force", "is not true or false"),
    ({"drain": {"timeoutSeconds": -1}}, F + ".drain.timeoutSeconds", "-1 is negative"),
    ({"drain": {"timeoutSeconds": "300"}}, F + ".drain.timeoutSeconds", "is not a whole number"),
    ({"waitForCompletion": {"timeoutSeconds": 1.5}}, F + ".waitForCompletion.timeoutSeconds", "is not a whole number"),
    ({"gpuPodDeletion": {"timeoutSeconds": True}}, F + ".gpuPodDeletion.timeoutSeconds", "is not a whole number"),
    ({"maxParallelUpgrades": -2}, F + ".maxParallelUpgrades", "-2 is negative"),
    ({"maxUnavailable": "0%"}, F + ".maxUnavailable", "outside 1% to 100%"),
    ({"maxUnavailable": "101%"}, F + ".maxUnavailable", "outside 1% to 100%"),
    ({"maxUnavailable": "2"}, F + ".maxUnavailable", "is not a percentage"),
    ({"maxUnavailable": "25 %"}, F + ".maxUnavailable", "is not a percentage"),
    ({"maxUnavailable": 0}, F + ".maxUnavailable", "lets no node be unavailable"),
    ({"maxUnavailable": -1}, F + ".maxUnavailable", "lets no node be unavailable"),
    ({"maxUnavailable": 0.5}, F + ".maxUnavailable", "neither a number of nodes nor a percentage"),
    ({"maxUnavailable": True}, F + ".maxUnavailable", "neither a number of nodes nor a percentage"),
    ({"waitForCompletion": {"podSelector": "app=="}}, None, None),  # an empty value is a valid selector
    ({"waitForCompletion": {"podSelector": "=x"}}, F + ".waitForCompletion.podSelector", "is not a label selector"),
    ({"drain": {"podSelector": ["app=x"]}}, F + ".drain.podSelector", "is not a label selector string"),
])
def test_bad_policy_values_are_refused_naming_the_field_path(policy, path, words):
    if path is None:
        du.check_policy(policy)
        return
    with pytest.raises(ParamError) as err:
        du.check_policy(policy)
    assert err.value.field == path
    assert err.value.msg.startswith(path + ": ") and words in err.value.msg and "Fix: " in err.value.msg


def test_the_custom_resource_names_gpu_pod_deletion_pod_deletion():
    spec = du.cluster_policy_spec(du.check_policy({"waitForCompletion": {"podSelector": "job=train"}}))
    assert "gpuPodDeletion" not in spec and spec["podDeletion"]["timeoutSeconds"] == 300
    assert spec["waitForCompletion"]["podSelector"] == "job=train" and "podSelector" not in spec["drain"]


@pytest.mark.parametrize("policy, nodes, expected", [
    ({"maxParallelUpgrades": 1, "maxUnavailable": "25%"}, 8, 1),
    ({"maxParallelUpgrades": 0, "maxUnavailable": "25%"}, 8, 2),
    ({"maxParallelUpgrades": 0, "maxUnavailable": "25%"}, 3, 1),  # rounded up
    ({"maxParallelUpgrades": 4, "maxUnavailable": 2}, 8, 2),
    ({"maxParallelUpgrades": 0, "maxUnavailable": "100%"}, 5, 5),
])
def test_max_in_parallel(policy, nodes, expected):
    assert du.max_in_parallel(policy, nodes) == expected


# -- the GPU Operator values --------------------------------------------------------------------------------------

def settings(mode, policy):
    nodes = [{"name": "n1", "host": {"node_name": "n1", "driver_loaded": True, "driver_version": "535.247.01",
                                     "toolkit_packages": {}}}] if mode == "host" else []
    decided = gpu_driver_mode.decide(mode, nodes, None)["gpu_operator_values"]
    return {"driver_values": decided, "driver_version": "", "nfd_enabled": True, "dcgm_exporter_enabled": True,
            "dcgm_exporter_service_monitor": False, "mig_strategy": "single", "device_plugin_config": {},
            "rdma_enabled": False, "rdma_use_host_mofed": False, "image_pull_secrets": [], "extra_values": {},
            "driver_upgrade_policy": policy}


def test_the_policy_goes_into_the_values_when_the_operator_owns_the_driver():
    values = gpu_operator.build_values(settings("operator", {"maxParallelUpgrades": 2}))
    assert values["driver"]["upgradePolicy"]["maxParallelUpgrades"] == 2
    assert values["driver"]["upgradePolicy"]["drain"]["enable"] is False
    host = gpu_operator.build_values(settings("host", {"maxParallelUpgrades": 2}))
    assert "upgradePolicy" not in host["driver"], "no operator driver, no upgrade policy"


def test_a_bad_policy_is_refused_whoever_owns_the_driver():
    for mode in ("operator", "host"):
        with pytest.raises(ParamError) as err:
            gpu_operator.build_values(settings(mode, {"drain": {"timeoutSeconds": -5}}))
        assert err.value.field == F + ".drain.timeoutSeconds"


# -- reading the states -------------------------------------------------------------------------------------------

def node(name, state=None, unschedulable=False, **labels):
    if state is not None:
        labels[du_state.STATE_LABEL] = state
    return {"metadata": {"name": name, "labels": labels}, "spec": {"unschedulable": True} if unschedulable else {}}


def daemonset(generation=2, observed=2, desired=2, updated=2, available=2, version="595.91.07"):
    return {"metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator", "uid": "ds-uid",
                         "generation": generation},
            "spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": {"containers": [
                {"name": "driver", "image": "nvcr.io/nvidia/driver:%s-ubuntu24.04" % version}]}}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "updatedNumberScheduled": updated, "numberAvailable": available}}


def pod(node_name, generation="2", version="595.91.07"):
    return {"metadata": {"name": "nvidia-driver-daemonset-" + node_name, "namespace": "gpu-operator",
                         "labels": {"app": "nvidia-driver-daemonset", "pod-template-generation": generation},
                         "ownerReferences": [{"kind": "DaemonSet", "uid": "ds-uid", "controller": True}]},
            "spec": {"nodeName": node_name,
                     "containers": [{"image": "nvcr.io/nvidia/driver:%s-ubuntu24.04" % version}]}}


@pytest.mark.parametrize("image, version", [
    ("nvcr.io/nvidia/driver:595.91.07-ubuntu24.04", "595.91.07"),
    ("nvcr.io/nvidia/driver:580.95.05-rhel9.4@sha256:" + "a" * 64, "580.95.05"),
    ("registry:5000/driver:570.124", "570.124"),
    ("nvcr.io/nvidia/driver", ""),
    ("registry:5000/driver", ""),
    ("nvcr.io/nvidia/driver:latest", ""),
    ("", ""),
])
def test_image_version(image, version):
    assert du_state.image_version(image) == version


def test_gfd_version_current_and_older_labels():
    assert du_state.gfd_version(node("a", **{du_state.GFD_FULL: "580.126.09"})) == "580.126.09"
    assert du_state.gfd_version(node("a", **{"nvidia.com/cuda.driver-version.major": "580",
                                             "nvidia.com/cuda.driver-version.minor": "126",
                                             "nvidia.com/cuda.driver-version.revision": "09"})) == "580.126.09"
    assert du_state.gfd_version(node("a", **{"nvidia.com/cuda.driver.major": "530", "nvidia.com/cuda.driver.minor": "41",
                                             "nvidia.com/cuda.driver.rev": "03"})) == "530.41.03"
    assert du_state.gfd_version(node("a")) == ""


@pytest.mark.parametrize("ds, current, words", [
    (daemonset(), True, ""),
    (daemonset(generation=3, observed=2), False, "has not seen the newest template yet"),
    (daemonset(updated=1), False, "1 of 2 pods run the current template"),
    (daemonset(available=0), False, "0 of 2 pods available"),
])
def test_daemonset_status(ds, current, words):
    status = du_state.daemonset_status(ds)
    assert status["current"] is current and words in status["not_current"]
    assert status["version"] == "595.91.07" and status["update_strategy"] == "OnDelete"


def views(nodes, pods, dss):
    return [du_state.node_view(n, pods, dss) for n in nodes]


def test_done_needs_the_current_template_and_every_node_done():
    dss = [daemonset()]
    nodes = [node("a", "upgrade-done"), node("b", "upgrade-done")]
    verdict = du_state.evaluate(views(nodes, [pod("a"), pod("b")], dss), dss, True, "595.91.07")
    assert verdict["done"] and verdict["pending"] == [] and verdict["version_mismatch"] == []


def test_a_changed_daemonset_whose_nodes_say_done_is_not_done():
    dss = [daemonset(generation=3, observed=3, updated=0, version="595.100.05")]
    nodes = [node("a", "upgrade-done"), node("b", "upgrade-done")]
    vs = views(nodes, [pod("a"), pod("b")], dss)
    assert [v["pod_current"] for v in vs] == [False, False]
    verdict = du_state.evaluate(vs, dss, True)
    assert not verdict["done"] and verdict["pending"] == ["a", "b"] and verdict["outdated"] == ["a", "b"]
    assert "a upgrade-done" in du_state.progress(vs, verdict) and "0 of 2 pods run" in du_state.progress(vs, verdict)


def test_failed_nodes_and_their_message():
    dss = [daemonset()]
    vs = views([node("a", "upgrade-failed", True), node("b", "upgrade-done")], [pod("a"), pod("b")], dss)
    verdict = du_state.evaluate(vs, dss, True)
    assert verdict["failed"] == ["a"] and not verdict["done"]
    msg = du_state.failed_message(vs, "gpu-operator")
    assert msg.startswith("GPU driver upgrade failed on a (driver pod gpu-operator/nvidia-driver-daemonset-a)")
    assert "kubectl label node a nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite" in msg


def test_auto_upgrade_off_needs_no_state_labels_but_current_pods():
    dss = [daemonset()]
    vs = views([node("a"), node("b")], [pod("a"), pod("b")], dss)
    assert du_state.evaluate(vs, dss, False)["done"]
    assert not du_state.evaluate(vs, dss, True)["done"], "with autoUpgrade the operator labels every node"
    old = [daemonset(generation=3, observed=3, updated=0)]
    verdict = du_state.evaluate(views([node("a")], [pod("a")], old), old, False)
    assert not verdict["done"] and verdict["outdated"] == ["a"]
    assert "will not upgrade the driver on nodes by itself" in du_state.manual_message(verdict, "gpu-operator")


def test_expected_version_from_the_pod_else_gfd():
    dss = [daemonset()]
    vs = views([node("a", "upgrade-done"), node("b", "upgrade-done",
               **{du_state.GFD_FULL: "595.91.07"})], [pod("a")], dss)
    assert [v["driver_version"] for v in vs] == ["595.91.07", "595.91.07"]
    assert du_state.evaluate(vs, dss, True, "595.91.07")["done"]
    verdict = du_state.evaluate(vs, dss, True, "595.100.05")
    assert not verdict["done"] and verdict["version_mismatch"] == ["a", "b"]


def test_skipped_nodes_are_not_waited_for_and_their_old_pod_does_not_hold_the_daemonset():
    dss = [daemonset(updated=1)]
    nodes = [node("a", "upgrade-done"), node("b", "", **{du_state.SKIP_LABEL: "true"})]
    vs = views(nodes, [pod("a"), pod("b", generation="1")], dss)
    verdict = du_state.evaluate(vs, dss, True)
    assert verdict["done"] and vs[1]["skipped"]


def test_tracker_records_transitions_and_finds_stuck_nodes():
    tracker = du_state.Tracker(100.0)
    tracker.observe({"a": "upgrade-required", "b": "upgrade-required"}, 100.0)
    tracker.observe({"a": "cordon-required", "b": "upgrade-required"}, 110.0)
    tracker.observe({"a": "drain-required", "b": "upgrade-required"}, 120.0)
    assert tracker.transitions == [{"node": "a", "from": "upgrade-required", "to": "cordon-required", "at": 10.0},
                                   {"node": "a", "from": "cordon-required", "to": "drain-required", "at": 20.0}]
    # a waits in drain-required; b waits for a slot, which is a's business, not b's.
    assert tracker.stuck(419.0, 300, ["a", "b"]) == []
    assert tracker.stuck(420.0, 300, ["a", "b"]) == [("a", "drain-required", 300.0)]
    # Nobody upgrading and nothing moving: the waiting node is stuck too.
    tracker.observe({"a": "upgrade-done", "b": "upgrade-required"}, 500.0)
    assert tracker.stuck(799.0, 300, ["b"]) == []
    assert tracker.stuck(800.0, 300, ["b"]) == [("b", "upgrade-required", 300.0)]


@pytest.mark.parametrize("state, words", [
    ("drain-required", "PodDisruptionBudget"),
    ("wait-for-jobs-required", "waitForCompletion.podSelector"),
    ("pod-deletion-required", "gpuPodDeletion"),
    ("pod-restart-required", "driver pod's log"),
    ("validation-required", "validator"),
    ("node-maintenance-required", "NodeMaintenance"),
    ("upgrade-required", "maxParallelUpgrades"),
    ("", "autoUpgrade"),
])
def test_stuck_message_names_node_state_time_and_what_it_waits_for(state, words):
    msg = du_state.stuck_message([("gpu-7", state, 905.4)], 900)
    assert "gpu-7 has been in %s for 905s" % (state or "no state label (not yet seen)") in msg
    assert words in msg and "stuck_timeout 900s" in msg


def test_every_state_says_what_it_waits_for():
    assert set(du_state.IN_PROGRESS) | {du_state.NOT_SEEN, du_state.DONE} == set(du_state.WAITS_FOR)
    assert "node-maintenance-required" in du_state.IN_PROGRESS and "post-maintenance-required" in du_state.IN_PROGRESS


def test_timeout_message_names_every_node_not_done():
    dss = [daemonset(updated=0)]
    vs = views([node("a", "cordon-required", True), node("b", "upgrade-required")], [pod("a", "1"), pod("b", "1")], dss)
    msg = du_state.timeout_message(vs, du_state.evaluate(vs, dss, True), 3600)
    assert "did not finish within 3600s: a cordon-required; b upgrade-required" in msg


@pytest.mark.parametrize("field, value", [("x", "a=b"), ("x", ""), ("x", "!gpu"), ("x", "k in (a, b),c notin (d)"),
                                          ("x", "example.com/k==v")])
def test_selectors_accepted(field, value):
    assert du.check_selector(field, value) == value


@pytest.mark.parametrize("value", ["a b", "k in a", "=v", "k=v,", "k!!=v", 5])
def test_selectors_refused(value):
    with pytest.raises(ParamError):
        du.check_selector("x", value)


@pytest.mark.parametrize("value, out", [(None, ""), ("", ""), ("595.91.07", "595.91.07"), (" 580.95 ", "580.95")])
def test_check_version(value, out):
    assert du.check_version("v", value) == out


@pytest.mark.parametrize("value", ["595", "latest", "v595.91.07", "595.91.07-1"])
def test_check_version_refuses(value):
    with pytest.raises(ParamError) as err:
        du.check_version("expected_driver_version", value)
    assert err.value.field == "expected_driver_version"


# -- host mode ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host, plan, needed, words", [
    ({"node_name": "g1", "driver_loaded": True, "driver_version": "535.247.01"}, {"branch": "535", "missing": []},
     False, "g1 already has branch 535 (driver 535.247.01 loaded)"),
    ({"node_name": "g1", "driver_loaded": False, "driver_version": ""}, {"branch": "535", "missing": []},
     False, "g1 already has branch 535"),
    ({"node_name": "g1", "driver_loaded": True, "driver_version": "535.247.01"},
     {"branch": "550", "missing": ["nvidia-driver-550"]}, True, "g1 lacks nvidia-driver-550 of branch 550"),
    ({"node_name": "g1", "driver_loaded": True, "driver_version": "535.247.01"}, {"branch": "550", "missing": []},
     True, "g1 runs driver 535.247.01, not branch 550"),
])
def test_host_upgrade_needed(host, plan, needed, words):
    out = du.host_upgrade_needed(host, plan)
    assert out == {"needed": needed, "reason": words}
