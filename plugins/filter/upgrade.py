# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/upgrade.yml; the logic is in module_utils/domain/drivers/gpu_driver_upgrade.py and
module_utils/domain/helm/moves.py."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import moves
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def host_driver_upgrade_needed(gpu_host, plan):
    return gpu_driver_upgrade.host_upgrade_needed(gpu_host, plan)


@user_errors
def release_moves(deployed, wanted, fields=None, claims=None):
    return moves.plan(deployed, wanted, fields, claims)


class FilterModule:
    """Upgrade filters."""

    def filters(self):
        return {"host_driver_upgrade_needed": host_driver_upgrade_needed, "release_moves": release_moves}
