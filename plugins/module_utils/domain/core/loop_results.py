# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The registered results of a role's loops (stat, find) turned into the plain inputs of the domain functions.

Private to the collection: not a public API. Pure: standard library only, no I/O.
A loop's ``register`` holds ``results``: one entry per item, with the item under ``item`` and the task's return
values beside it (``stat`` for ansible.builtin.stat, ``files`` for ansible.builtin.find).
"""

from __future__ import annotations


def stat_files(stat_results):
    """[{path, exists, checksum, mode}] from the results of a stat loop over paths (uninstall.backup_manifest)."""
    out = []
    for result in stat_results or []:
        stat = result.get("stat") or {}
        out.append({"path": result["item"], "exists": bool(stat.get("exists")), "checksum": stat.get("checksum"),
                    "mode": stat.get("mode")})
    return out


def dropins(dir_results, find_results):
    """{folder: [its files] or None when it is not a folder} from the results of a stat loop over folders and of
    a find loop over those that exist (a folder the find loop did not list has no files)."""
    found = {r["item"]: [f["path"] for f in r.get("files") or []] for r in find_results or [] if "files" in r}
    return {r["item"]: (found.get(r["item"], []) if (r.get("stat") or {}).get("isdir") else None)
            for r in dir_results or []}
