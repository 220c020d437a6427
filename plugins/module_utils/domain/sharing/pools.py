# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU sharing per node pool: whole GPUs, time-slicing, or MIG.

Private to the collection: not a public API. Pure: standard library only.
Validates the gpu_sharing role's pool list (each pool's fields in ``domain.sharing.pool``) and renders
what the GPU Operator needs for time-slicing: one device-plugin ConfigMap (one key per time-slicing pool plus "default"),
the ClusterPolicy ``devicePlugin.config`` chart values, and the per-node selector label.

Facts this follows (sources in brackets; nothing copied):

- Config file format [NVIDIA/k8s-device-plugin README "With CUDA Time-Slicing";
  api/config/v1/replicas.go, consts.go, config.go]: ``version: v1``; ``flags.migStrategy``
  one of none|single|mixed; ``sharing.timeSlicing`` with ``renameByDefault``,
  ``failRequestsGreaterThanOne`` (both default false) and ``resources`` (a non-empty list of
  ``{name, replicas}``). The plugin refuses ``replicas`` below 2 ("must be >= 2"; earlier
  releases only refused <= 0) and sets no upper limit. The file is read with
  sigs.k8s.io/yaml, which takes YAML or JSON, so sorted-key JSON is a valid config.
- ``renameByDefault: true`` advertises ``<resource>.shared`` (suffix constant ".shared",
  DefaultSharedResourceNameSuffix) and ``nvidia.com/gpu`` then shows 0; with false the name
  is kept and GFD appends ``-SHARED`` to ``nvidia.com/gpu.product`` [README; GPU Operator
  docs gpu-sharing.rst, "Verifying the GPU Time-Slicing Configuration"]. A node with G GPUs
  and N replicas advertises G*N [README example: 8 GPUs x 10 = 80].
- ``failRequestsGreaterThanOne``: a request for more than one shared GPU fails with
  UnexpectedAdmissionError; setting it true is recommended [README; gpu-sharing.rst].
- Time-slicing has no memory or fault isolation between replicas; one crashing workload
  takes the others with it [README "Shared Access to GPUs"; gpu-sharing.rst].
- GPU Operator wiring [gpu-sharing.rst "Applying Multiple Node-Specific Configurations";
  ClusterPolicy CRD v26.7.0 spec.devicePlugin.config {name, default}; chart values.yaml
  devicePlugin.config.{create,name,default,data}]: the ConfigMap lives in the operator's
  namespace, each data key is a config name, ``devicePlugin.config.default`` names the key
  for unlabelled nodes, and the node label ``nvidia.com/device-plugin.config=<key>`` picks a
  key per node. The operator mounts the ConfigMap into the device plugin and GFD pods and
  passes the default to the config-manager sidecar (controllers/object_controls.go,
  handleDevicePluginConfig).
- Label semantics [README "Updating Per-Node Configuration With a Node Label"]: a change of
  the label value reconfigures the plugin at once; an unknown value makes it skip
  reconfiguration (the node keeps its old config); an unset label falls back to the default.
- A changed ConfigMap is not picked up: NVIDIA/gpu-operator#1144 (editing replicas and
  re-applying had no effect until a ``rollout restart`` of the device plugin) and #412 (a
  differently named ConfigMap did not reach the device plugin). The operator re-renders its
  DaemonSets only when its own desired spec hash changes (object_controls.go,
  isDaemonsetSpecChanged), so it does not watch our ConfigMap either. Hence
  ``config_map_hash`` / ``restart_patch`` below.
- The operator sets ``MIG_STRATEGY`` on the device plugin from ClusterPolicy
  ``mig.strategy`` (object_controls.go, applyMIGConfiguration) and the plugin gives
  environment variables precedence over the config file [README "CONFIG_FILE"]. So the MIG
  strategy is one per cluster, whatever a per-node config file says: MIG pools must agree on it.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import custom as mig_custom
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing.pool import (
    DEFAULT_CONFIG, FIELD, GPU_RESOURCE, MIG, NONE, _pool)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

CONFIG_VERSION = "v1"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEFAULT_CONFIG_MAP = "time-slicing-config"
DEFAULT_NAMESPACE = "gpu-operator"
CONFIG_HASH_ANNOTATION = "gpu-platform.io/device-plugin-config-sha256"
# The operator's DaemonSets that mount the device-plugin ConfigMap (pod names in gpu-sharing.rst).
RESTART_DAEMONSETS = ("nvidia-device-plugin-daemonset", "gpu-feature-discovery")

ISOLATION_WARNING = ("gpu_sharing pool %r: time-slicing gives no memory or fault isolation between the %d "
                     "replicas of a GPU (one tenant can exhaust its memory or crash the others' work), yet "
                     "multi_tenant is true. Use MIG for tenants that must not affect each other, or set "
                     "multi_tenant: false if one team owns these nodes.")
PROPORTION_WARNING = ("gpu_sharing pool %r: fail_requests_greater_than_one is false, so a pod may ask for several "
                      "shared GPUs and get no more compute than a pod asking for one (every process gets an equal "
                      "time share). NVIDIA recommends true.")


def validate_pools(pools, mig_config=None):
    """The role's ``gpu_platform_node_pools`` as a list of Pool, or ParamError naming the first bad field.

    Field names index the list from 0: ``gpu_platform_node_pools[1].replicas`` is the second pool. ``mig_config``:
    the role's ``gpu_platform_mig_config`` (checked first); MIG pools then name configs of it.
    """
    mig_config = mig_custom.check_config(mig_config)
    if pools is None:
        return []
    if not isinstance(pools, list):
        raise ParamError(FIELD, "must be a list of pools, not %s" % type(pools).__name__,
                         "give a list, e.g. [{name: training, node_selector: {nodepool: training}, sharing: none}]")
    out = [_pool(raw, index, mig_config) for index, raw in enumerate(pools)]
    seen_names, seen_selectors, mig_strategies = {}, {}, {}
    for index, pool in enumerate(out):
        if pool.name in seen_names:
            raise ParamError(pool.field + ".name", "%r is also the name of pool %d" % (pool.name, seen_names[pool.name]),
                             "give each pool its own name (it becomes a ConfigMap key and a node label value)")
        seen_names[pool.name] = index
        selector = tuple(pool.node_selector.items())
        if selector in seen_selectors:
            other = out[seen_selectors[selector]]
            raise ParamError(pool.field + ".node_selector", "is the same as pool %r's, so both pools would label the "
                             "same nodes" % other.name, "give each pool a selector that picks only its own nodes")
        seen_selectors[selector] = index
        if pool.sharing == MIG:
            mig_strategies.setdefault(pool.mig_strategy, pool)
    if len(mig_strategies) > 1:
        names = ", ".join("%s (%s)" % (p.name, s) for s, p in sorted(mig_strategies.items()))
        raise ParamError(FIELD, "MIG pools ask for different mig_strategy values: %s. The GPU Operator sets one "
                         "MIG_STRATEGY for the whole device plugin DaemonSet from ClusterPolicy mig.strategy, and it "
                         "overrides per-node config files" % names,
                         "give every MIG pool the same mig_strategy, matching gpu_platform_mig_strategy")
    return out


def cluster_mig_strategy(pools, cluster=None):
    """The one MIG strategy the MIG pools need, or None without MIG. With ``cluster`` (gpu_platform_mig_strategy,
    the one strategy of the cluster, carried by the GPU Operator's release), MIG pools that need another are
    refused."""
    strategies = sorted({p.mig_strategy for p in pools if p.sharing == MIG})
    needed = strategies[0] if strategies else None
    if cluster is not None and needed is not None and needed != cluster:
        raise ParamError("gpu_platform_node_pools", "the MIG pools use mig_strategy %s but gpu_platform_mig_strategy "
                         "is %s" % (needed, cluster),
                         "set gpu_platform_mig_strategy to %s (the strategy is one per cluster)" % needed)
    return needed


def _dump(config):
    """Sorted-key JSON: valid YAML for the plugin's sigs.k8s.io/yaml reader, and the same bytes every time."""
    return json.dumps(config, sort_keys=True, indent=2, separators=(",", ": "))


def default_config():
    """The ``default`` key: no sharing, so unlabelled nodes and non-time-slicing pools keep whole GPUs."""
    return _dump({"version": CONFIG_VERSION, "flags": {"migStrategy": NONE}})


def time_slicing_config(pool):
    """The device-plugin config file for one time-slicing pool (JSON text, byte-stable)."""
    if not pool.time_slicing:
        raise ParamError(pool.field + ".sharing", "pool %r uses %s, not time-slicing" % (pool.name, pool.sharing),
                         "render a device-plugin config only for time-slicing pools")
    return _dump({
        "version": CONFIG_VERSION,
        "flags": {"migStrategy": NONE},
        "sharing": {"timeSlicing": {
            "renameByDefault": pool.rename_by_default,
            "failRequestsGreaterThanOne": pool.fail_requests_greater_than_one,
            "resources": [{"name": GPU_RESOURCE, "replicas": pool.replicas}],
        }},
    })


def _object_name(field, value):
    if not isinstance(value, str) or not value or len(value) > 253 or not validate.DNS1123_SUBDOMAIN.match(value):
        raise ParamError(field, "%r is not a valid ConfigMap name" % (value,),
                         "use lower-case letters, digits, '-' and '.', e.g. %s" % DEFAULT_CONFIG_MAP)
    return value


def config_map(pools, name=DEFAULT_CONFIG_MAP, namespace=DEFAULT_NAMESPACE):
    """The v1 ConfigMap for the operator's namespace, or None when no pool time-slices.

    Data: one key per time-slicing pool (the pool name) plus ``default`` (no sharing).
    """
    _object_name("gpu_platform_time_slicing_config_map", name)
    validate.dns_label("gpu_sharing_namespace", namespace)
    sliced = [p for p in pools if p.time_slicing]
    if not sliced:
        return None
    data = {DEFAULT_CONFIG: default_config()}
    for pool in sliced:
        data[pool.name] = time_slicing_config(pool)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "data": dict(sorted(data.items())),
    }


def node_config_labels(pools):
    """Per pool, the node selector and the ``nvidia.com/device-plugin.config`` value its nodes get.

    Time-slicing pools get their own key. Other pools get ``default`` explicitly rather than a
    removed label: a label that still names a key the ConfigMap no longer has (a pool renamed,
    or switched to none/mig) makes the plugin skip reconfiguration and keep the old sharing,
    while overwriting it with ``default`` converges in the same label patch. ``default`` is what
    an unset label falls back to anyway, so the result on the node is the same.
    """
    out = []
    for pool in pools:
        value = pool.name if pool.time_slicing else DEFAULT_CONFIG
        out.append({"pool": pool.name, "node_selector": dict(pool.node_selector), "labels": {CONFIG_LABEL: value}})
    return out


def device_plugin_values(pools, name=DEFAULT_CONFIG_MAP):
    """GPU Operator chart values pointing the device plugin at the ConfigMap, or {} without time-slicing.

    ``create`` stays false: the role applies the ConfigMap itself (so the chart does not own it).
    """
    _object_name("gpu_platform_time_slicing_config_map", name)
    if not any(p.time_slicing for p in pools):
        return {}
    return {"devicePlugin": {"config": {"name": name, "default": DEFAULT_CONFIG}}}


def warnings(pools):
    """Warnings for the play's output: isolation for multi-tenant time-slicing, and proportional requests."""
    out = []
    for pool in pools:
        if not pool.time_slicing:
            continue
        if pool.multi_tenant:
            out.append(ISOLATION_WARNING % (pool.name, pool.replicas))
        if not pool.fail_requests_greater_than_one:
            out.append(PROPORTION_WARNING % pool.name)
    return out


def expected_allocatable(pool, gpus_per_node):
    """The GPU resources a node of ``pool`` with ``gpus_per_node`` GPUs should report; None for MIG pools."""
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 0:
        raise ParamError("gpus_per_node", "%r is not a GPU count" % (gpus_per_node,),
                         "give the number of physical GPUs on the node, e.g. 8")
    if pool.sharing == MIG:
        return None
    if pool.time_slicing:
        return {pool.resource_name: gpus_per_node * pool.replicas}
    return {GPU_RESOURCE: gpus_per_node}


def config_hash(text):
    """SHA-256 (hex) of a config text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_map_hash(cm):
    """One hash over all of the ConfigMap's data (key order does not matter); None without a ConfigMap."""
    if cm is None:
        return None
    return config_hash(json.dumps(cm.get("data") or {}, sort_keys=True, separators=(",", ":")))


def restart_patch(digest):
    """A DaemonSet patch that rolls the pods exactly when ``digest`` changes.

    Put ``config_map_hash`` into the pod template of each of RESTART_DAEMONSETS. The operator
    keeps it until its own desired spec changes (it then re-renders the DaemonSet without it,
    which restarts the pods anyway); re-applying the patch on the next run costs one rollout.
    """
    return {"spec": {"template": {"metadata": {"annotations": {CONFIG_HASH_ANNOTATION: digest}}}}}


def restart_objects(namespace, digest):
    """The restart patch as partial DaemonSets (one per RESTART_DAEMONSETS) for server-side apply.

    Applied only to DaemonSets that exist (the operator's; a partial one must never be created) and
    only when the annotation differs, so a converged run writes nothing.
    """
    return [dict({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace}},
                 **restart_patch(digest)) for name in RESTART_DAEMONSETS]


def assign_nodes(pools, nodes):
    """Which pool each node belongs to, from Node objects (as k8s_info returns them).

    Refuses a node that two pools' selectors both match: the label would flip between runs.
    Nodes no pool selects are left out (they keep the ``default`` config).
    """
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        node_labels = meta.get("labels") or {}
        matched = [p for p in pools if all(node_labels.get(k) == v for k, v in p.node_selector.items())]
        if len(matched) > 1:
            raise Refusal("node %s matches the node_selector of several gpu_sharing pools (%s); each node must "
                          "belong to one pool. Fix: narrow the selectors so they do not overlap."
                          % (meta.get("name"), ", ".join(p.name for p in matched)))
        if matched:
            out[meta.get("name")] = matched[0].name
    return dict(sorted(out.items()))


def resource_shortfall(nodes, expected_by_node):
    """``"node: resource has X, expected Y"`` for each node (k8s_info resources) whose allocatable differs
    from ``expected_by_node[name]`` (a dict of resource -> count); nodes without an expectation are skipped."""
    out = []
    for node in nodes:
        name = (node.get("metadata") or {}).get("name")
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, want in sorted((expected_by_node.get(name) or {}).items()):
            have = allocatable.get(resource, "0")
            if str(have) != str(want):
                out.append("%s: %s has %s, expected %s" % (name, resource, have, want))
    return out


def allocatable_shortfall(nodes, expected_per_gpu):
    """Nodes (k8s_info resources) that do not advertise ``expected_per_gpu`` x their GPU count.

    The GPU count is GFD's ``nvidia.com/gpu.count`` label (the physical GPUs, whatever the sharing).
    Returns ``"node: resource has X, expected Y"`` strings; empty when every node matches.
    """
    out, expected = [], {}
    for node in nodes:
        meta = node.get("metadata") or {}
        count = (meta.get("labels") or {}).get("nvidia.com/gpu.count")
        if count is None:
            out.append("%s: no nvidia.com/gpu.count label (GPU Feature Discovery has not labelled it)" % meta.get("name"))
            continue
        expected[meta.get("name")] = {r: per_gpu * int(count) for r, per_gpu in (expected_per_gpu or {}).items()}
    return out + resource_shortfall(nodes, expected)
