# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/uninstall.yml; the logic is in module_utils/domain/uninstall.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import uninstall
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def uninstall_plan(settings, served_crds=None):
    """The removal plan, layer by layer in reverse install order (see docs/uninstall.md)."""
    try:
        removal = uninstall.plan(settings, served_crds)
        return dict(removal, lines=uninstall.describe(removal))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def uninstall_check(removal, settings, cluster=None):
    """{refusals, warnings}: the guards that stop the uninstall before any write."""
    try:
        return uninstall.check(removal, settings, cluster)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def _dropins(dir_results, find_results):
    """{folder: [its files] or None} from the registered results of stat (folders) and find loops."""
    found = {r["item"]: [f["path"] for f in r.get("files") or []] for r in find_results or [] if "files" in r}
    return {r["item"]: (found.get(r["item"], []) if (r.get("stat") or {}).get("isdir") else None)
            for r in dir_results or []}


def runtime_backup_manifest(stat_results, dir_results, find_results, taken, service="containerd"):
    """The manifest of a host's container runtime backup, from the registered results of the stat loop over its
    files (sha256), the stat loop over its drop-in folders and the find loop over those that exist."""
    try:
        files = [{"path": r["item"], "exists": bool((r.get("stat") or {}).get("exists")),
                  "checksum": (r.get("stat") or {}).get("checksum"), "mode": (r.get("stat") or {}).get("mode")}
                 for r in stat_results or []]
        return uninstall.backup_manifest(files, _dropins(dir_results, find_results), taken, service)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def runtime_restore_plan(manifest, backup_dir, dir_results=None, find_results=None):
    """Which files a restore copies back and which it removes, from the manifest and the registered results of
    the stat loop over its drop-in folders and the find loop over those that exist now."""
    try:
        return uninstall.restore_plan(manifest, backup_dir, _dropins(dir_results, find_results))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule:
    """Uninstall filters."""

    def filters(self):
        return {"uninstall_plan": uninstall_plan, "uninstall_check": uninstall_check,
                "runtime_backup_manifest": runtime_backup_manifest, "runtime_restore_plan": runtime_restore_plan}
