# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The platform contract (roles/gpu_platform): the variables every layer shares, and the names they had before.

Private to the collection: not a public API. Pure: standard library only, no I/O.
A variable more than one layer reads is defined once, as ``gpu_platform_*``, by the gpu_platform role. The layer
variables of 0.1.0 that became contract variables are refused by name, so an inventory written for the old names
fails before anything is written instead of being silently ignored.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate

# old layer variable -> the contract variable that replaced it
RENAMED = {
    "dra_driver_enabled": "gpu_platform_dra_enabled",
    "gpu_operator_cloud_driver": "gpu_platform_cloud_driver",
    "gpu_operator_driver_decision": "gpu_platform_driver_decision",
    "gpu_operator_driver_mode": "gpu_platform_driver_mode",
    "gpu_operator_driver_version": "gpu_platform_driver_version",
    "gpu_operator_mig_strategy": "gpu_platform_mig_strategy",
    "gpu_operator_namespace": "gpu_platform_gpu_operator_namespace",
    "gpu_operator_nfd_enabled": "gpu_platform_nfd_in_gpu_operator",
    "gpu_operator_rdma_enabled": "gpu_platform_gpudirect_rdma",
    "gpu_operator_rdma_use_host_mofed": "gpu_platform_host_mofed",
    "gpu_sharing_config_map_name": "gpu_platform_time_slicing_config_map",
    "gpu_sharing_mig_config": "gpu_platform_mig_config",
    "gpu_sharing_mig_config_map_name": "gpu_platform_mig_config_map",
    "gpu_sharing_pools": "gpu_platform_node_pools",
    "host_driver_branch": "gpu_platform_driver_branch",
    "network_operator_mode": "gpu_platform_network_mode",
    "network_operator_namespace": "gpu_platform_network_operator_namespace",
    "network_operator_network_name": "gpu_platform_rdma_network_name",
    "network_operator_network_namespace": "gpu_platform_rdma_network_namespace",
    "network_operator_nics_per_pod": "gpu_platform_rdma_nics_per_pod",
    "network_operator_node_type": "gpu_platform_rdma_node_type",
    "network_operator_release_name": "gpu_platform_network_operator_release_name",
    "network_operator_resource_name": "gpu_platform_rdma_resource_name",
    "scheduling_scheduler": "gpu_platform_scheduler",
    "scheduling_teams": "gpu_platform_teams",
}


def check_renamed(names):
    """Refuse every variable in ``names`` (the names the inventory, extra vars or a survey define) that was renamed
    into the contract: one ParamError naming each, with its new name. Returns the sorted names checked."""
    names = sorted(set(names or ()))

    def refuse(old):
        def check():
            raise ParamError(old, "was renamed to %s (it is shared by several layers, so the platform contract, "
                                  "roles/gpu_platform, defines it)" % RENAMED[old],
                             "rename %s to %s in the inventory, the extra vars or the survey" % (old, RENAMED[old]))
        return check

    validate.every([refuse(n) for n in names if n in RENAMED], "renamed variables")
    return names
