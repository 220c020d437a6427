# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the host_driver and peermem roles; the logic is in module_utils/domain."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import host_driver, peermem
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def host_driver_plan(os_info, settings, installed=None):
    return host_driver.plan(os_info, settings, installed)


@user_errors
def host_checks(hosts, platform, skip=None):
    return findings.evaluate(hosts, platform, skip)


@user_errors
def peermem_daemonset(namespace, image, module="nvidia-peermem", node_selector=None, image_pull_secrets=None):
    return peermem.daemonset(namespace, image, module, node_selector, image_pull_secrets)


@user_errors
def peermem_loader_ready(daemonset, nodes, node_selector=None):
    return peermem.loader_ready(daemonset, nodes, node_selector)


class FilterModule:
    """GPU host filters."""

    def filters(self):
        return {"host_driver_plan": host_driver_plan, "host_checks": host_checks, "peermem_daemonset": peermem_daemonset,
                "peermem_loader_ready": peermem_loader_ready}
