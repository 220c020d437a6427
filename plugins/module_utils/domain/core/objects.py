# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Comparing Kubernetes objects as the server returns them.

Private to the collection: not a public API. Pure: standard library only.
"""

from __future__ import annotations

import copy

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate

SERVER_METADATA = ("resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink")


def comparable(obj):
    """The object without the fields the server sets on every write (and without status)."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for key in SERVER_METADATA:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        meta.pop("annotations", None)
    return out


HIDDEN = "(hidden: Secret data)"
HIDDEN_CHANGED = "(hidden: Secret data, changed)"


def without_secret_data(obj, other=None):
    """``obj`` for a diff: a Secret's ``data`` and ``stringData`` values hidden, marked changed where they differ
    from ``other``'s (the other side of the diff). Any other object is returned as it is."""
    if not obj or obj.get("kind") != "Secret":
        return obj
    out = copy.deepcopy(obj)
    for field in ("data", "stringData"):
        values = out.get(field)
        if isinstance(values, dict):
            theirs = ((other or {}).get(field) or {}) if isinstance(other, dict) else {}
            out[field] = {key: HIDDEN if theirs.get(key) == value else HIDDEN_CHANGED
                          for key, value in values.items()}
    return out


def differs(current, proposed):
    """True when applying would change the object (``proposed`` is the server's dry-run answer)."""
    return comparable(current) != comparable(proposed)


def identity(obj):
    meta = obj.get("metadata") or {}
    return "%s %s%s" % (obj.get("kind"), (meta.get("namespace") + "/") if meta.get("namespace") else "", meta.get("name"))


# PodSecurity "restricted" (Kubernetes Pod Security Standards): not root, the runtime's seccomp profile, no
# privilege escalation, every capability dropped; and no service-account token, which these pods never use.
NON_ROOT_UID = 65534  # nobody
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "runAsGroup": NON_ROOT_UID,
                  "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def restricted(pod_spec):
    """``pod_spec`` (a Pod's spec or a template's) made to meet PodSecurity restricted: a new dict."""
    spec = copy.deepcopy(pod_spec)
    spec["automountServiceAccountToken"] = False
    spec["securityContext"] = dict(spec.get("securityContext") or {}, **copy.deepcopy(RESTRICTED_POD))
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        container["securityContext"] = dict(container.get("securityContext") or {},
                                            **copy.deepcopy(RESTRICTED_CONTAINER))
    return spec


def namespaces(names, labels=None):
    """Namespace objects for ``names`` (each checked as a DNS-1123 label, an error naming its index), with ``labels``."""
    out = []
    for index, name in enumerate(names or []):
        validate.dns_label("namespaces[%d]" % index, name)
        meta = {"name": name}
        if labels:
            meta["labels"] = dict(labels)
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    return out


def node_label_objects(names, labels):
    """Partial Node objects that carry only ``labels``: server-side apply of them sets just those labels."""
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}}
            for name in names or []]


def _pod_specs(obj):
    """The pod specs inside ``obj``: a Pod's spec, a workload's template spec, each Volcano Job task's."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return [spec]
    if "template" in spec:
        return [spec["template"].setdefault("spec", {})]
    return [task.setdefault("template", {}).setdefault("spec", {}) for task in spec.get("tasks") or []]


def with_tolerations(objs, tolerations):
    """``objs`` (new dicts) whose pods also tolerate ``tolerations`` (each added once); unchanged without any."""
    out = copy.deepcopy(list(objs))
    for obj in out:
        for spec in _pod_specs(obj) if tolerations else ():
            have = spec.setdefault("tolerations", [])
            have.extend(dict(item) for item in tolerations if item not in have)
    return out


def with_pull_secrets(objs, names):
    """``objs`` (new dicts) whose pods pull with the image pull Secrets ``names``; unchanged without names."""
    out = copy.deepcopy(list(objs))
    if names:
        for obj in out:
            for spec in _pod_specs(obj):
                spec["imagePullSecrets"] = [{"name": name} for name in names]
    return out
