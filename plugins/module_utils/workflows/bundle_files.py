# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> check -> write -> result for bundle_files.

Private to the collection: not a public API. Plain files into one folder of the bundle (adapters/render.py writes
only those whose text differs, every name checked before the first write).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def run(params, check_mode=False):
    """The bundle_files module: write each named text into ``dest``, only where it differs."""
    files = params["files"]
    for name, text in files.items():
        if not isinstance(text, str):
            raise ParamError("files", "%s is %s, not text" % (name, type(text).__name__),
                             "give each file's content as a string (to_json or to_nice_yaml for data)")
    try:
        changed, diffs = render.write_files(params["dest"], files, check_mode)
    except ParamError as exc:
        raise exc.renamed({"render_to": "dest"}) from None
    return {"changed": bool(changed), "files": sorted(files), "changed_files": changed, "diff": diffs}
