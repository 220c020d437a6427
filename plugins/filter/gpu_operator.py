# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the gpu_operator role; the logic is in module_utils/domain/operators/gpu_operator.py."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def gpu_operator_values(settings):
    return gpu_operator.build_values(settings)


@user_errors
def gpu_operator_driver_upgrade_policy(policy):
    """The chart's driver.upgradePolicy from the role variable (chart defaults for keys left out)."""
    return gpu_driver_upgrade.check_policy(policy)


@user_errors
def kube_version_at_least(actual, minimum):
    return gpu_operator.version_at_least(actual, minimum)


unready_daemonsets = user_errors(gpu_operator.unready_daemonsets)
registry_pull_secrets = user_errors(gpu_operator.pull_secrets)


class FilterModule:
    """GPU Operator filters."""

    def filters(self):
        return {
            "gpu_operator_values": gpu_operator_values,
            "gpu_operator_driver_upgrade_policy": gpu_operator_driver_upgrade_policy,
            "kube_version_at_least": kube_version_at_least,
            "unready_daemonsets": unready_daemonsets,
            "registry_pull_secrets": registry_pull_secrets,
        }
