# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_sharing role's plan; the logic is in module_utils/domain/sharing.py."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import mig_custom, sharing
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError


def _selector(labels):
    return ",".join("%s=%s" % pair for pair in sorted(labels.items()))


def _mig_config_text(config):
    # The same YAML text mig_profile writes for its mig_config (workflows/mig_profile.py), so the role's
    # ConfigMap and the module's are the same bytes. Plain containers first: the YAML writer refuses the
    # dict and list subclasses Ansible hands a filter.
    return render_adapter.to_yaml(json.loads(json.dumps(config))).split("---\n", 1)[1]


def gpu_sharing_plan(pools, name=sharing.DEFAULT_CONFIG_MAP, namespace=sharing.DEFAULT_NAMESPACE, mig_config=None,
                     mig_config_map_name=mig_custom.CONFIG_MAP):
    """Everything the role applies, from the inventory's pools and the optional custom mig-parted config."""
    try:
        checked = sharing.validate_pools(pools, mig_config)
        custom = mig_custom.check_config(mig_config)
        mig_map = (mig_custom.config_map(custom, _mig_config_text(custom), mig_config_map_name, namespace)
                   if custom else None)
        config_map = sharing.config_map(checked, name, namespace)
        node_labels = [dict(entry, selector=_selector(entry["node_selector"]))
                       for entry in sharing.node_config_labels(checked)]
        mig_pools = [{"name": p.name, "profile": p.mig_profile, "strategy": p.mig_strategy,
                      "selector": _selector(p.node_selector)} for p in checked if p.sharing == sharing.MIG]
        return {
            "config_map": config_map,
            "restart_objects": sharing.restart_objects(namespace, sharing.config_map_hash(config_map) or ""),
            "node_labels": node_labels,
            # The node_labels module's entries: each pool's nodes get its device-plugin config label.
            "label_requests": [{"name": e["pool"], "selector": e["selector"], "labels": e["labels"]} for e in node_labels],
            "device_plugin_config": sharing.device_plugin_values(checked, name).get("devicePlugin", {}).get("config", {}),
            "warnings": sharing.warnings(checked),
            "mig_strategy": sharing.cluster_mig_strategy(checked),
            "mig_pools": mig_pools,
            # The custom mig-parted config (None without one), its ConfigMap, and the chart values that point the
            # MIG manager at it (the gpu_operator layer merges them, as it does device_plugin_config).
            "mig_config": custom,
            "mig_config_map": mig_map,
            "mig_manager_values": mig_custom.chart_values(custom, mig_config_map_name),
            # For GitOps: the node labels to apply, per selector (device-plugin config, and the MIG layout).
            "label_patches": [{"selector": e["selector"], "labels": e["labels"]} for e in node_labels]
            + [{"selector": m["selector"], "labels": {"nvidia.com/mig.config": m["profile"]}} for m in mig_pools],
            "expected_per_gpu": {p.name: sharing.expected_allocatable(p, 1) for p in checked if p.sharing != sharing.MIG},
        }
    except GpuPlatformError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule:
    """GPU sharing filters."""

    def filters(self):
        return {"gpu_sharing_plan": gpu_sharing_plan, "gpu_sharing_shortfall": sharing.allocatable_shortfall,
                "gpu_resource_shortfall": sharing.resource_shortfall}
