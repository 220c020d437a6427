# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Where the charts' pods go: the inventory's GPU-pool tolerations and the controllers' tolerations and node selector
(roles/gpu_platform: gpu_platform_gpu_tolerations, gpu_platform_controller_tolerations,
gpu_platform_controller_node_selector) as each chart's own values.

Private to the collection: not a public API. Pure: standard library only.

Helm replaces a list value whole, so a chart's default tolerations would be lost when the inventory adds one: each
list below starts from the chart's own default at the pinned release (``CHART_LISTS``; tests/schema checks that it
holds every entry of the values.yaml of each release a pair or pin installs), then the inventory's entries. With no
tolerations and no selector in the inventory no list or selector is set, and each chart keeps its defaults; KAI's
and Volcano's controllers get a preferred affinity away from GPU nodes while ``controllers_avoid_gpu_nodes`` is on.
"""

from __future__ import annotations

import copy

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import support
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

GPU, CONTROLLER = "gpu", "controller"
_CP_EQUAL = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"}
_MASTER_EQUAL = {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}
_CP_EXISTS = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
_MASTER_EXISTS = {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}
_CRITICAL_ADDONS = {"key": "CriticalAddonsOnly", "operator": "Exists"}

# chart -> [(path of a tolerations list in its values, the chart's default there, whose pods: GPU or CONTROLLER)].
# The NFD subchart's lists sit in both operators' charts (the platform runs one NFD, chosen by
# gpu_platform_nfd_in_gpu_operator; the other's values are ignored with its subchart off).
CHART_LISTS = {
    "gpu-operator": [
        (("daemonsets", "tolerations"), [taints.GPU_TOLERATION], GPU),
        (("node-feature-discovery", "worker", "tolerations"), [_CP_EQUAL, taints.GPU_TOLERATION], GPU),
        (("operator", "tolerations"), [_CP_EQUAL], CONTROLLER),
        (("node-feature-discovery", "master", "tolerations"), [_CP_EQUAL], CONTROLLER),
        (("node-feature-discovery", "gc", "tolerations"), [], CONTROLLER),
    ],
    "network-operator": [
        (("node-feature-discovery", "worker", "tolerations"), [_MASTER_EXISTS, _CP_EXISTS, taints.GPU_TOLERATION],
         GPU),
        (("operator", "tolerations"), [_MASTER_EQUAL, _CP_EQUAL], CONTROLLER),
        (("node-feature-discovery", "master", "tolerations"), [_CP_EQUAL], CONTROLLER),
        (("node-feature-discovery", "gc", "tolerations"), [], CONTROLLER),
    ],
    "dra-driver-nvidia-gpu": [
        (("kubeletPlugin", "tolerations"), [taints.GPU_TOLERATION], GPU),
        (("controller", "tolerations"), [_CP_EXISTS, _MASTER_EXISTS, _CRITICAL_ADDONS], CONTROLLER),
        (("webhook", "tolerations"), [_CRITICAL_ADDONS], CONTROLLER),
    ],
    "kueue": [(("controllerManager", "tolerations"), [], CONTROLLER)],
    "kai-scheduler": [(("global", "tolerations"), [], CONTROLLER),
                      (("numaPlacementExporter", "tolerations"), [], GPU)],
    "volcano": [(("custom", "default_tolerations"), None, CONTROLLER)],
}
# chart -> [(path of a controller's nodeSelector, the chart's default there)].
CHART_SELECTORS = {
    "gpu-operator": [(("operator", "nodeSelector"), {"kubernetes.io/os": "linux"}),
                     (("node-feature-discovery", "master", "nodeSelector"), {}),
                     (("node-feature-discovery", "gc", "nodeSelector"), {})],
    "network-operator": [(("operator", "nodeSelector"), {}),
                         (("node-feature-discovery", "master", "nodeSelector"), {}),
                         (("node-feature-discovery", "gc", "nodeSelector"), {})],
    "dra-driver-nvidia-gpu": [(("controller", "nodeSelector"), {}), (("webhook", "nodeSelector"), {})],
    "kueue": [(("controllerManager", "nodeSelector"), {})],
    "kai-scheduler": [(("global", "nodeSelector"), {})],
    "volcano": [(("custom", "default_ns"), None)],
}


# chart -> the path of an affinity the chart gives all its controllers (Kueue's chart has none: its controller is
# placed by the node selector and tolerations alone).
CHART_AFFINITY = {"kai-scheduler": ("global", "affinity"), "volcano": ("custom", "default_affinity")}
# The nodes a controller with a cluster-wide webhook should avoid: a GPU node is drained for a driver upgrade or a MIG
# change, and a webhook with failurePolicy Fail whose only pod is evicted stops every pod creation it covers. A
# preference, not a requirement: a cluster of GPU nodes only still runs its controllers.
AVOID_GPU_NODES = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
    "weight": 100, "preference": {"matchExpressions": [
        {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]},
        {"key": "kubernetes.azure.com/accelerator", "operator": "NotIn", "values": ["nvidia"]}]}}]}}
AVOID_FIELD = "gpu_platform_controllers_avoid_gpu_nodes"


def settings(raw):
    """The inventory's placement (gpu_platform_placement: gpu_tolerations, controller_tolerations,
    controller_node_selector, controllers_avoid_gpu_nodes, keep_off_taints), checked;
    each mistake names its variable."""
    raw = raw or {}
    return {GPU: taints.tolerations(taints.GPU_FIELD, raw.get("gpu_tolerations")),
            CONTROLLER: taints.tolerations(taints.CONTROLLER_FIELD, raw.get("controller_tolerations")),
            "selector": validate.labels(taints.CONTROLLER_SELECTOR_FIELD, raw.get("controller_node_selector") or {}),
            "avoid": validate.boolean(AVOID_FIELD, raw.get("controllers_avoid_gpu_nodes", False)),
            "keep_off": _keys(taints.KEEP_OFF_FIELD, raw.get("keep_off_taints"))}


def _keys(field, value):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParamError(field, "must be a list of taint keys", "give a list, e.g. [kwok.x-k8s.io/node]")
    out = []
    for index, key in enumerate(value):
        if not isinstance(key, str) or not key:
            raise ParamError("%s[%d]" % (field, index), "%r is not a taint key" % (key,), "quote it, e.g. sku")
        validate.label_key("%s[%d]" % (field, index), key)
        out.append(key)
    return out


def _put(out, path, value):
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def chart_values(chart, raw):
    """The values that place ``chart``'s pods as the inventory asks (``settings``); {} when it asks nothing."""
    placed = settings(raw)
    out = {}
    for path, default, side in CHART_LISTS[chart]:
        if placed[side]:
            _put(out, path, taints.merged(default or [], placed[side]))
    if placed["selector"]:
        for path, default in CHART_SELECTORS[chart]:
            _put(out, path, dict(copy.deepcopy(default or {}), **placed["selector"]))
    if placed["avoid"] and chart in CHART_AFFINITY:
        _put(out, CHART_AFFINITY[chart], copy.deepcopy(AVOID_GPU_NODES))
    return out


# A GPU node before NFD or GPU Feature Discovery labelled it: the label AKS gives every node of a GPU pool.
PROVIDER_GPU_LABELS = {"kubernetes.azure.com/accelerator": "nvidia"}


def gpu_node_names(nodes):
    """The nodes the platform counts as GPU nodes: GPU labels or allocatable (platform.support), or the provider's."""
    names = {n["metadata"]["name"] for n in support.gpu_nodes(nodes)}
    for node in nodes or []:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) == v for k, v in PROVIDER_GPU_LABELS.items()):
            names.add(node["metadata"]["name"])
    return names


def taint_verdict(nodes, raw):
    """Preflight's lines on the nodes' taints against the inventory's placement (``settings``); [] when none stops."""
    placed = settings(raw)
    return taints.check(nodes or [], gpu_node_names(nodes), placed[GPU], placed[CONTROLLER], placed["selector"],
                        placed["keep_off"])
