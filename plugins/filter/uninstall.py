# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/uninstall.yml and the runtime backup; the logic is in module_utils/domain (uninstall/plan.py,
core/loop_results.py)."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import loop_results
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall import plan as uninstall
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def uninstall_plan(settings, served_crds=None):
    """The removal plan, layer by layer in reverse install order (see docs/uninstall.md), with its lines."""
    removal = uninstall.plan(settings, served_crds)
    return dict(removal, lines=uninstall.describe(removal))


@user_errors
def uninstall_check(removal, settings, cluster=None):
    """{refusals, warnings}: the guards that stop the uninstall before any write."""
    return uninstall.check(removal, settings, cluster)


@user_errors
def uninstall_deletable_crs(results):
    """The custom resources uninstall.yml deletes one by one (those a chart's webhook protects go with their CRD)."""
    return uninstall.deletable_crs(results)


@user_errors
def runtime_backup_manifest(stat_results, dir_results, find_results, taken, service="containerd"):
    """The manifest of a host's container runtime backup, from the registered results of the stat loop over its
    files (sha256), the stat loop over its drop-in folders and the find loop over those that exist."""
    return uninstall.backup_manifest(loop_results.stat_files(stat_results),
                                     loop_results.dropins(dir_results, find_results), taken, service)


@user_errors
def runtime_restore_plan(manifest, backup_dir, dir_results=None, find_results=None):
    """Which files a restore copies back and which it removes, from the manifest and the registered results of
    the stat loop over its drop-in folders and the find loop over those that exist now."""
    return uninstall.restore_plan(manifest, backup_dir, loop_results.dropins(dir_results, find_results))


class FilterModule:
    """Uninstall filters."""

    def filters(self):
        return {"uninstall_plan": uninstall_plan, "uninstall_check": uninstall_check,
                "uninstall_deletable_crs": uninstall_deletable_crs,
                "runtime_backup_manifest": runtime_backup_manifest, "runtime_restore_plan": runtime_restore_plan}
