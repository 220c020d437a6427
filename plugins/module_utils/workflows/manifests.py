# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Objects to the cluster (server-side apply, only what changes) or to a GitOps folder, and back out.

Private to the collection: not a public API. Shared by the manifests module and the workflows of
modules that render their own objects (nic_cluster_policy).
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import flux_argocd as gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects as domain_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError

STATES = ("present", "absent")
API_VERSION = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$")
KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,62}$")
# Object names: DNS subdomains for most kinds; RBAC objects' names are path segments (':' and upper case allowed,
# as in system:node). Never '/', so a name cannot leave the render folder.
OBJECT_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.:]*[A-Za-z0-9])?$")
PATH_SEGMENT_NAMES = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
UNSERVED = ("fail", "skip")
MISSING = ("create", "skip")


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
        if not API_VERSION.match(obj["apiVersion"]):
            raise ParamError(where + ".apiVersion", "%r is not an API version" % obj["apiVersion"][:100],
                             "give v1 or group/version, e.g. apps/v1")
        if not KIND.match(obj["kind"]):
            raise ParamError(where + ".kind", "%r is not a kind (letters and digits, starting with a letter, at "
                             "most 63)" % obj["kind"][:100], "give the object's kind, e.g. ConfigMap")
        if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
            raise ParamError("%s.metadata.name" % where, "is missing", "give the object a name")
        name = obj["metadata"]["name"]
        rbac = obj["kind"] in PATH_SEGMENT_NAMES
        rule = OBJECT_NAME if rbac else validate.DNS1123_SUBDOMAIN
        if not isinstance(name, str) or len(name) > 253 or not rule.match(name):
            raise ParamError(where + ".metadata.name", "%r is not a %s name (at most 253 characters: %s)"
                             % (str(name)[:100], obj["kind"], "letters, digits, '-', '.', '_' or ':'" if rbac else
                                "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"),
                             "give a name such as gpu-platform-smoke")
        if obj["metadata"].get("namespace") is not None:
            validate.dns_label(where + ".metadata.namespace", obj["metadata"]["namespace"])
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


def served(kube, objects, unserved="fail"):
    """(the objects whose kind the cluster serves, the identities of those it does not serve).

    Asked of discovery for every object before any write, so a missing CRD never leaves a layer
    half applied: ``fail`` names every unserved kind, ``skip`` leaves those objects out.
    """
    kept, missing = [], []
    for obj in objects:
        (kept if kube.serves(obj["apiVersion"], obj["kind"]) else missing).append(obj)
    if missing and unserved == "fail":
        kinds = sorted(set("%s %s" % (o["apiVersion"], o["kind"]) for o in missing))
        raise ToolError("the cluster does not serve %s, so nothing was applied. Fix: install the operator or CRD "
                        "that provides it first, or set unserved: skip to leave such objects out"
                        % " and ".join(kinds), kinds=kinds)
    return kept, [domain_objects.identity(o) for o in missing]


def apply(kube, objects, state="present", check_mode=False, unserved="fail", missing="create"):
    """Server-side apply what would change (or, absent, delete in reverse order what exists)."""
    if state == "absent":
        objects = served(kube, objects, "skip")[0]  # a kind the cluster does not serve has nothing left to delete
        removed = [obj for obj in reversed(objects)
                   if kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"],
                                  obj["metadata"].get("namespace"), dry_run=check_mode)]
        return {"changed": bool(removed), "removed": [gitops.file_name(o) for o in removed]}
    objects, skipped = served(kube, objects, unserved)
    absent = [] if missing == "skip" else None
    changed, diffs = kube.apply_objects(objects, check_mode, missing=absent)
    skipped += absent or []
    return {"changed": bool(changed), "changed_objects": changed, "left_out": skipped,
            "diff": [{"before_header": d["before_header"], "after_header": d["after_header"],
                      "before": render_adapter.to_yaml(domain_objects.without_secret_data(d["before"], d["after"]))
                      if d["before"] else "",
                      "after": render_adapter.to_yaml(domain_objects.without_secret_data(d["after"], d["before"]))}
                     for d in diffs]}


def run(params, kube_factory, check_mode=False):
    """The manifests module: its objects, applied or rendered."""
    objects = check_objects(params.get("objects"))
    state = params.get("state") or "present"
    if state not in STATES:
        raise ParamError("state", "%r is not present or absent" % (state,), "use present or absent")
    unserved = params.get("unserved") or "fail"
    if unserved not in UNSERVED:
        raise ParamError("unserved", "%r is not fail or skip" % (unserved,), "use fail or skip")
    missing = params.get("missing") or "create"
    if missing not in MISSING:
        raise ParamError("missing", "%r is not create or skip" % (missing,), "use create or skip")
    if params.get("render_to"):
        result = render(objects, params["render_to"], params.get("source") or "", state, check_mode)
    else:
        result = apply(kube_factory(), objects, state, check_mode, unserved, missing)
    result["objects"] = [gitops.file_name(o)[:-len(".yaml")] for o in objects]
    return result
