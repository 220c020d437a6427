# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_sharing role's plan; the logic is in module_utils/domain/sharing (plan.py, pools.py)."""

from __future__ import annotations

import json

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import custom as mig_custom
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import (
    pools as sharing, plan as sharing_plan)
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


def _mig_config_text(config):
    # The same YAML text mig_profile writes for its mig_config (workflows/mig_profile.py), so the role's
    # ConfigMap and the module's are the same bytes. Plain containers first: the YAML writer refuses the
    # dict and list subclasses Ansible hands a filter.
    return render_adapter.to_yaml(json.loads(json.dumps(config))).split("---\n", 1)[1]


@user_errors
def gpu_sharing_plan(pools, name=sharing.DEFAULT_CONFIG_MAP, namespace=sharing.DEFAULT_NAMESPACE, mig_config=None,
                     mig_config_map_name=mig_custom.CONFIG_MAP, cluster_mig_strategy=None):
    """Everything the role applies, from the inventory's pools and the optional custom mig-parted config; with
    ``cluster_mig_strategy``, MIG pools that need another strategy are refused."""
    return sharing_plan.plan(pools, name, namespace, mig_config, mig_config_map_name, cluster_mig_strategy,
                             config_text=_mig_config_text)


gpu_sharing_shortfall = user_errors(sharing.allocatable_shortfall)
gpu_resource_shortfall = user_errors(sharing.resource_shortfall)


class FilterModule:
    """GPU sharing filters."""

    def filters(self):
        return {"gpu_sharing_plan": gpu_sharing_plan, "gpu_sharing_shortfall": gpu_sharing_shortfall,
                "gpu_resource_shortfall": gpu_resource_shortfall}
