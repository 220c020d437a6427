# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Objects to the cluster (server-side apply, only what changes) or to a GitOps folder, and back out.

Private to the collection: not a public API. Shared by the manifests module and the workflows of
modules that render their own objects (nic_cluster_policy).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

STATES = ("present", "absent")


def check_objects(objects, field="objects"):
    """Every object has apiVersion, kind and metadata.name; names what is missing where."""
    if not isinstance(objects, list):
        raise ParamError(field, "must be a list of Kubernetes objects", "give a list of dictionaries")
    for index, obj in enumerate(objects):
        where = "%s[%d]" % (field, index)
        if not isinstance(obj, dict):
            raise ParamError(where, "%r is not a Kubernetes object" % (obj,), "give a dictionary with apiVersion, kind "
                             "and metadata.name")
        for key in ("apiVersion", "kind"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise ParamError("%s.%s" % (where, key), "is missing", "give the object's %s" % key)
        if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
            raise ParamError("%s.metadata.name" % where, "is missing", "give the object a name")
    return objects


def render(objects, directory, source, state="present", check_mode=False):
    """Write (or, absent, remove) one file per object; returns the result's common part."""
    names = [gitops.file_name(obj) for obj in objects]
    if state == "absent":
        removed, diffs = render_adapter.remove_files(directory, names, check_mode)
        return {"changed": bool(removed), "diff": diffs,
                "rendered": {"directory": directory, "files": [], "changed_files": removed}}
    changed, diffs, files = render_adapter.write_objects(directory, objects, gitops.file_name, source, check_mode)
    return {"changed": bool(changed), "diff": diffs,
            "rendered": {"directory": directory, "files": files, "changed_files": changed}}


def apply(kube, objects, state="present", check_mode=False):
    """Server-side apply what would change (or, absent, delete in reverse order what exists)."""
    if state == "absent":
        removed = [obj for obj in reversed(objects)
                   if kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"],
                                  obj["metadata"].get("namespace"), dry_run=check_mode)]
        return {"changed": bool(removed), "removed": [gitops.file_name(o) for o in removed]}
    changed, diffs = kube.apply_objects(objects, check_mode)
    return {"changed": bool(changed), "changed_objects": changed,
            "diff": [{"before_header": d["before_header"], "after_header": d["after_header"],
                      "before": render_adapter.to_yaml(d["before"]) if d["before"] else "",
                      "after": render_adapter.to_yaml(d["after"])} for d in diffs]}


def run(params, kube_factory, check_mode=False):
    """The manifests module: its objects, applied or rendered."""
    objects = check_objects(params.get("objects"))
    state = params.get("state") or "present"
    if state not in STATES:
        raise ParamError("state", "%r is not present or absent" % (state,), "use present or absent")
    if params.get("render_to"):
        result = render(objects, params["render_to"], params.get("source") or "", state, check_mode)
    else:
        result = apply(kube_factory(), objects, state, check_mode)
    result["objects"] = [gitops.file_name(o)[:-len(".yaml")] for o in objects]
    return result
