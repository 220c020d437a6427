"""OpenAPI v3 documents, just enough for clients to choose server-side field validation.

``/openapi/v3`` lists each served group-version with a ``serverRelativeURL`` (with a
content hash, so clients caching by URL see changes). Each group-version document has the
resource paths with their operations; every operation carries
``x-kubernetes-group-version-kind``, ``x-kubernetes-action`` and its query parameters,
``fieldValidation`` included, which is what helm and ``kubectl apply`` look for. There are
no schemas (``components.schemas`` is empty), so ``kubectl explain`` and client-side
validation have nothing to work with; ``/openapi/v2`` is not served.
"""

import hashlib
import json

from .kinds import BUILTIN_GROUPS

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/apply-patch+yaml")
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


def _param(name, location="query", required=False):
    return {"name": name, "in": location, "required": required, "schema": {"type": "string"},
            "uniqueItems": True}


def _operation(rtype, action, op_id, params=()):
    operation = {
        "operationId": op_id, "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rtype.group, "version": rtype.version,
                                            "kind": rtype.kind},
        "parameters": [_param(p) for p in params],
        "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}},
    }
    if action in ("post", "put", "patch"):
        types = PATCH_TYPES if action == "patch" else ("*/*",)
        if action == "patch" and rtype.group in BUILTIN_GROUPS:
            types += ("application/strategic-merge-patch+json",)
        operation["requestBody"] = {"content": {t: {"schema": {"type": "object"}}
                                                for t in types}, "required": True}
    return operation


def _item_operations(rtype, suffix=""):
    name = rtype.kind + suffix.replace("/", "").title()
    return {
        "get": _operation(rtype, "get", f"read{name}"),
        "put": _operation(rtype, "put", f"replace{name}", _WRITE_PARAMS),
        "patch": _operation(rtype, "patch", f"patch{name}", _WRITE_PARAMS + ("force",)),
        **({} if suffix else {"delete": _operation(rtype, "delete", f"delete{name}",
                                                   ("dryRun",))}),
    }


def _collection_operations(rtype):
    return {
        "get": _operation(rtype, "list", f"list{rtype.kind}",
                          ("labelSelector", "fieldSelector", "limit", "watch")),
        "post": _operation(rtype, "post", f"create{rtype.kind}", _WRITE_PARAMS),
        "delete": _operation(rtype, "deletecollection", f"deleteCollection{rtype.kind}",
                             ("labelSelector", "fieldSelector", "dryRun")),
    }


def _prefix(group, version):
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def group_version_document(registry, group, version):
    """The OpenAPI v3 document of one group-version, or None if it is not served."""
    types = registry.types_in(group, version)
    if not types:
        return None
    paths = {}
    for rtype in types:
        base = _prefix(group, version)
        if rtype.namespaced:
            paths[f"{base}/{rtype.plural}"] = {"get": _operation(
                rtype, "list", f"list{rtype.kind}ForAllNamespaces")}
            base += "/namespaces/{namespace}"
        paths[f"{base}/{rtype.plural}"] = _collection_operations(rtype)
        paths[f"{base}/{rtype.plural}/{{name}}"] = _item_operations(rtype)
        for sub in rtype.subresources:
            if sub in ("status", "scale"):
                paths[f"{base}/{rtype.plural}/{{name}}/{sub}"] = _item_operations(rtype, "/" + sub)
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes (fake)", "version": version},
            "paths": paths, "components": {"schemas": {}}}


def _digest(document):
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


def root_document(registry):
    """``/openapi/v3``: every served group-version and where its document is."""
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            relative = _prefix(group, version).lstrip("/")
            document = group_version_document(registry, group, version)
            paths[relative] = {"serverRelativeURL":
                               f"/openapi/v3/{relative}?hash={_digest(document)}"}
    return {"paths": paths}
