# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> plan -> write -> result for gitops_bundle.

Private to the collection: not a public API. The units' manifests are listed and, for Flux's health checks, read
(adapters/render.py), the layout that ties them together comes from domain/gitops/gitops_bundle.py, and only the files whose text
differs are written.
"""

from __future__ import annotations

import os

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SOURCE = "site.yml (docs/gitops.md)"
# The platform variables domain/gitops/gitops_bundle.py names, as this module's options
OPTIONS = {"gpu_platform_flux_path": "flux_path", "gpu_platform_flux_source": "flux_source",
           "gpu_platform_render_format": "render_format"}


def run(params, check_mode=False):
    """The gitops_bundle module: write the kustomizations that apply the bundle's units in the platform's order."""
    root = params["render_to"]
    path = bundle.flux_path(root, params.get("flux_path"))
    fmt = params.get("render_format") or "flux"
    files = render.unit_manifests(root)
    # Flux's health checks name the units' objects; Argo CD judges health from argocd-cm (docs/gitops.md).
    objects = None
    if fmt == "flux":
        objects = render.manifest_objects(root, ["%s/%s" % (unit, name)
                                                 for unit, names in bundle.unit_files(files).items() for name in names])
    try:
        tree = bundle.layout(files, fmt, path, params.get("flux_source") or None, objects=objects)
    except ParamError as exc:
        raise exc.renamed(OPTIONS) from None
    # The unit folders' kustomizations, then the root's files: write_files takes plain names in one folder.
    folders = {}
    for name, obj in tree.items():
        folder, dummy, base = name.rpartition("/")
        folders.setdefault(folder, {})[base] = render.to_yaml(obj, SOURCE)
    changed, diffs = [], []
    for folder in sorted(folders, key=lambda f: (f == "", f)):
        names, folder_diffs = render.write_files(os.path.join(root, folder) if folder else root, folders[folder],
                                                 check_mode)
        changed += [(folder + "/" + n) if folder else n for n in names]
        diffs += folder_diffs
    return {"changed": bool(changed), "files": sorted(tree), "changed_files": changed,
            "units": [name.split("/")[0] for name in tree if name.endswith("/kustomization.yaml")],
            "diff": diffs}
