# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What the gpu_sharing role applies, assembled from its pools (pools.py) and custom mig-parted config
(mig/custom.py); and those pools as the layers after it (the smoke tests) read them.

Private to the collection: not a public API. Pure: standard library only, no I/O.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import custom as mig_custom
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing

MIG_CONFIG_LABEL = "nvidia.com/mig.config"


def selector(labels):
    """A label selector string (``key=value,...``, sorted) for a pool's node_selector."""
    return ",".join("%s=%s" % pair for pair in sorted(labels.items()))


def plan(pools, name=sharing.DEFAULT_CONFIG_MAP, namespace=sharing.DEFAULT_NAMESPACE, mig_config=None,
         mig_config_map_name=mig_custom.CONFIG_MAP, cluster_mig_strategy=None, *, config_text):
    """Everything the role applies, from the inventory's ``pools`` and the optional custom mig-parted config.

    ``config_text`` turns the checked mig-parted config into the text of its ConfigMap (the caller's YAML writer,
    so that the role's ConfigMap and the mig_profile module's are the same bytes). Raises ParamError naming the
    bad field (``gpu_platform_node_pools[1].replicas``, ``gpu_platform_mig_config.mig-configs.x[0].mig-devices``).
    With ``cluster_mig_strategy`` (gpu_platform_mig_strategy), MIG pools that need another strategy are refused.
    """
    checked = sharing.validate_pools(pools, mig_config)
    custom = mig_custom.check_config(mig_config)
    mig_map = mig_custom.config_map(custom, config_text(custom), mig_config_map_name, namespace) if custom else None
    config_map = sharing.config_map(checked, name, namespace)
    node_labels = [dict(entry, selector=selector(entry["node_selector"])) for entry in sharing.node_config_labels(checked)]
    mig_pools = [{"name": p.name, "profile": p.mig_profile, "strategy": p.mig_strategy, "selector": selector(p.node_selector)}
                 for p in checked if p.sharing == sharing.MIG]
    return {
        "config_map": config_map,
        "restart_objects": sharing.restart_objects(namespace, sharing.config_map_hash(config_map) or ""),
        "node_labels": node_labels,
        # The node_labels module's entries: each pool's nodes get its device-plugin config label.
        "label_requests": [{"name": e["pool"], "selector": e["selector"], "labels": e["labels"]} for e in node_labels],
        "device_plugin_config": sharing.device_plugin_values(checked, name).get("devicePlugin", {}).get("config", {}),
        "warnings": sharing.warnings(checked),
        "mig_strategy": sharing.cluster_mig_strategy(checked, cluster_mig_strategy),
        "mig_pools": mig_pools,
        # Each MIG pool's own options of its mig_profile call (the role's task and the preflight's check).
        "mig_calls": [{"node_selector": m["selector"], "profile": m["profile"], "strategy": m["strategy"]}
                      for m in mig_pools],
        # The custom mig-parted config (None without one), its ConfigMap, and the chart values that point the
        # MIG manager at it (the gpu_operator layer merges them, as it does device_plugin_config).
        "mig_config": custom,
        "mig_config_map": mig_map,
        "mig_manager_values": mig_custom.chart_values(custom, mig_config_map_name),
        # For GitOps: the node labels to apply, per selector (device-plugin config, and the MIG layout).
        # (the node_labels module's entries with render_to; named, as one pool may have two patches)
        "label_patches": [{"name": e["pool"], "selector": e["selector"], "labels": e["labels"]} for e in node_labels]
        + [{"name": m["name"] + " MIG layout", "selector": m["selector"], "labels": {MIG_CONFIG_LABEL: m["profile"]}}
           for m in mig_pools],
        "expected_per_gpu": {p.name: sharing.expected_allocatable(p, 1) for p in checked if p.sharing != sharing.MIG},
    }


def pool_dicts(pools, mig_config=None):
    """The pools validated (against the custom mig-parted config, when there is one), as plain dicts with the
    GPU resource each advertises (``resource_name``): the smoke tests' ``sharing_pools``."""
    return [dict(p.to_dict(), resource_name=p.resource_name) for p in sharing.validate_pools(pools or [], mig_config)]
