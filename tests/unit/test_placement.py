"""Tolerations and placement (domain/nodes/taints.py, domain/operators/placement.py): the inventory's tolerations
checked, Kubernetes' toleration rule, each chart's values, and preflight's verdict on the nodes' taints."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import (
    dra_driver, gpu_operator, network_operator, placement)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SKU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
CRITICAL = {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
AKS = {"gpu_tolerations": [SKU], "controller_tolerations": [CRITICAL],
       "controller_node_selector": {"kubernetes.azure.com/mode": "system"}}


def node(name, labels=None, node_taints=None, gpus=None):
    out = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}, "status": {"allocatable": {}}}
    if node_taints:
        out["spec"]["taints"] = node_taints
    if gpus:
        out["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    return out


def aks_fleet(system_taints=None, gpu_taints=None):
    gpu = {"kubernetes.azure.com/agentpool": "ndh100", "kubernetes.azure.com/accelerator": "nvidia"}
    return [node("aks-system-0", {"kubernetes.azure.com/agentpool": "system", "kubernetes.azure.com/mode": "system"},
                 system_taints),
            node("aks-ndh100-0", gpu, gpu_taints), node("aks-ndh100-1", gpu, gpu_taints)]


@pytest.mark.parametrize("item, taint, expected", [
    ({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
     {"key": "sku", "value": "gpu", "effect": "NoSchedule"}, True),
    ({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
     {"key": "sku", "value": "cpu", "effect": "NoSchedule"}, False),
    ({"key": "sku", "value": "gpu"}, {"key": "sku", "value": "gpu", "effect": "NoExecute"}, True),  # Equal is default
    ({"key": "sku", "operator": "Exists", "effect": "NoExecute"}, {"key": "sku", "value": "gpu",
                                                                   "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, {"key": "anything", "value": "x", "effect": "NoExecute"}, True),
    ({"key": "nvidia.com/gpu", "operator": "Exists"},
     {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, True),
])
def test_a_toleration_tolerates_as_kubernetes_decides(item, taint, expected):
    assert taints.tolerates(item, taint) is expected


def test_prefer_no_schedule_does_not_block():
    assert taints.blocking([{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "NoSchedule"}],
                           []) == [{"key": "b", "effect": "NoSchedule"}]


@pytest.mark.parametrize("value, field, words", [
    ([{"key": "sku", "operator": "Exists", "value": "gpu"}], "gpu_platform_gpu_tolerations[0].value",
     "operator Exists matches any value"),
    ([{"key": "sku", "effect": "NoScheduled"}], "gpu_platform_gpu_tolerations[0].effect", "is not a taint effect"),
    ([{"value": "gpu"}], "gpu_platform_gpu_tolerations[0]", "has no key"),
    ({"key": "sku"}, "gpu_platform_gpu_tolerations", "must be a list"),
    ([{"key": "sku", "opertor": "Exists"}], "gpu_platform_gpu_tolerations[0]", "unknown key(s) opertor"),
])
def test_a_bad_toleration_names_its_variable(value, field, words):
    with pytest.raises(ParamError) as exc:
        placement.settings({"gpu_tolerations": value})
    assert exc.value.field == field and words in exc.value.msg


def test_a_bad_selector_names_its_variable():
    with pytest.raises(ParamError) as exc:
        placement.chart_values("kueue", {"controller_node_selector": {"mode": ["system"]}})
    assert exc.value.field == "gpu_platform_controller_node_selector"


def test_nothing_asked_sets_nothing_in_any_chart():
    assert {chart: placement.chart_values(chart, {}) for chart in placement.CHART_LISTS} == {
        chart: {} for chart in placement.CHART_LISTS}


def test_kai_and_volcano_prefer_nodes_without_gpus_when_asked():
    avoid = {"controllers_avoid_gpu_nodes": True}
    assert placement.chart_values("kai-scheduler", avoid) == {"global": {"affinity": placement.AVOID_GPU_NODES}}
    assert placement.chart_values("volcano", avoid) == {"custom": {"default_affinity": placement.AVOID_GPU_NODES}}
    assert placement.chart_values("kueue", avoid) == {}  # its chart has no affinity value
    term = placement.AVOID_GPU_NODES["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert [e["key"] for e in term["preference"]["matchExpressions"]] == [
        "nvidia.com/gpu.present", "kubernetes.azure.com/accelerator"]
    with pytest.raises(ParamError) as exc:
        placement.settings({"controllers_avoid_gpu_nodes": "yes"})
    assert exc.value.field == "gpu_platform_controllers_avoid_gpu_nodes"


def test_the_charts_lists_keep_their_own_defaults_then_the_inventorys():
    values = placement.chart_values("gpu-operator", AKS)
    assert values["daemonsets"]["tolerations"] == [taints.GPU_TOLERATION, SKU]
    assert values["node-feature-discovery"]["worker"]["tolerations"][-2:] == [taints.GPU_TOLERATION, SKU]
    assert values["operator"]["tolerations"][-1] == CRITICAL
    assert values["operator"]["nodeSelector"] == {"kubernetes.io/os": "linux", "kubernetes.azure.com/mode": "system"}
    assert placement.chart_values("kueue", AKS) == {"controllerManager": {
        "tolerations": [CRITICAL], "nodeSelector": {"kubernetes.azure.com/mode": "system"}}}
    assert placement.chart_values("volcano", AKS)["custom"] == {
        "default_tolerations": [CRITICAL], "default_ns": {"kubernetes.azure.com/mode": "system"}}
    # a toleration the chart has already is not given twice
    again = placement.chart_values("gpu-operator", {"gpu_tolerations": [dict(taints.GPU_TOLERATION)]})
    assert again["daemonsets"]["tolerations"] == [taints.GPU_TOLERATION]


def test_the_layers_values_carry_the_placement():
    gpu = gpu_operator.build_values({
        "driver_values": {"driver": {"enabled": True}}, "nfd_enabled": True, "dcgm_exporter_enabled": True,
        "dcgm_exporter_service_monitor": False, "rdma_enabled": False, "rdma_use_host_mofed": False,
        "mig_strategy": "single", "placement": AKS})
    assert gpu["daemonsets"]["tolerations"] == [taints.GPU_TOLERATION, SKU]
    net = network_operator.build_values({"nfd_enabled": True, "placement": AKS})
    assert net["node-feature-discovery"]["worker"]["tolerations"][-1] == SKU
    dra = dra_driver.values({"driver_root": "/run/nvidia/driver", "driver_owner": "operator", "gpus_enabled": True,
                             "compute_domains_enabled": True, "node_selector": {}, "placement": AKS})
    assert dra["kubeletPlugin"] == {"nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"},
                                    "tolerations": [taints.GPU_TOLERATION, SKU]}
    assert dra["controller"]["affinity"] == dra_driver.CONTROLLER_AFFINITY  # merged beside, not replaced
    assert CRITICAL in dra["controller"]["tolerations"]


def test_pods_tolerate_the_pools_taints_once():
    pod = {"kind": "Pod", "spec": {"tolerations": [dict(taints.GPU_TOLERATION)]}}
    job = {"kind": "Job", "spec": {"tasks": [{"template": {"spec": {}}}]}}
    out = objects.with_tolerations([pod, job], [taints.GPU_TOLERATION, SKU])
    assert out[0]["spec"]["tolerations"] == [taints.GPU_TOLERATION, SKU]
    assert out[1]["spec"]["tasks"][0]["template"]["spec"]["tolerations"] == [taints.GPU_TOLERATION, SKU]
    assert objects.with_tolerations([pod], []) == [pod]


def test_preflight_names_the_gpu_pool_whose_taint_nothing_tolerates():
    fleet = aks_fleet(gpu_taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}])
    lines = placement.taint_verdict(fleet, {})
    assert lines == ["gpu_platform_gpu_tolerations: GPU pool ndh100 (aks-ndh100-0, aks-ndh100-1) carries the taint "
                     "sku=gpu:NoSchedule, which the platform's pods on GPU nodes do not tolerate (its operands would "
                     "show DESIRED 0 and the smoke tests stay Pending). Fix: add {key: sku, operator: Equal, value: "
                     "gpu, effect: NoSchedule} to gpu_platform_gpu_tolerations, or remove the taint (or list its key in "
                     "gpu_platform_keep_off_taints when it is there to keep the platform's pods off)"]
    assert placement.taint_verdict(fleet, {"gpu_tolerations": [SKU]}) == []
    # a taint that is there to keep the platform off (KWOK's fake nodes) is not refused, nor tolerated
    fake = [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]
    kwok = [node("cpu"), node("fake-gpu", {}, fake, gpus=8)]
    assert placement.taint_verdict(kwok, {}) != []
    assert placement.taint_verdict(kwok, {"keep_off_taints": ["kwok.x-k8s.io/node"]}) == []
    assert placement.chart_values("gpu-operator", {"keep_off_taints": ["kwok.x-k8s.io/node"]}) == {}
    with pytest.raises(ParamError) as exc:
        placement.settings({"keep_off_taints": [3]})
    assert exc.value.field == "gpu_platform_keep_off_taints[0]"
    # nvidia.com/gpu's taint (DGX clusters) is always tolerated
    dgx = [node("cpu-01"), node("dgx-01", {}, [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                                gpus=8)]
    assert placement.taint_verdict(dgx, {}) == []


def test_preflight_names_the_system_pool_where_no_controller_could_run():
    fleet = aks_fleet(system_taints=[{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
                      gpu_taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}])
    lines = placement.taint_verdict(fleet, {"gpu_tolerations": [SKU]})
    assert len(lines) == 1 and lines[0].startswith(
        "gpu_platform_controller_tolerations: no node outside the GPU pools can run the platform's controllers "
        "(the operators, Kueue, KAI, Volcano): pool system: CriticalAddonsOnly=true:NoSchedule. Fix: "), lines
    assert placement.taint_verdict(fleet, AKS) == []
    # a selector no system node matches is named too
    lines = placement.taint_verdict(fleet, dict(AKS, controller_node_selector={"pool": "infra"}))
    assert "pool system: not matched by gpu_platform_controller_node_selector" in lines[0]
