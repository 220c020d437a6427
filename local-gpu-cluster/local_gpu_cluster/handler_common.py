"""Part of local_gpu_cluster/handler.py: the media types and patchers of request bodies, the parsed request target
(``Target``, ``parse_target``), continue tokens and the Status of a success."""
import base64
import json

from . import errors
from .patches import json_patch, merge_patch, strategic_merge

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
APPLY = "application/apply-patch+yaml"
PATCHERS = {"application/merge-patch+json": merge_patch,
            "application/json-patch+json": json_patch,
            "application/strategic-merge-patch+json": strategic_merge}
_BODY_TYPES = {JSON, "", "*/*", "application/yaml", APPLY, PROTOBUF, *PATCHERS}


class Target:
    """What a resource URL points at: type, namespace, name and subresource."""

    def __init__(self, rtype, namespace, name, subresource):
        self.rtype, self.namespace, self.name, self.subresource = (
            rtype, namespace, name, subresource)


def parse_target(registry, group, version, rest):
    """Resolve the path segments after ``/api/v1`` or ``/apis/<g>/<v>``."""
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise errors.route_not_found()
    rtype = registry.by_plural(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if rtype is None or not _scope_matches(rtype, namespace, name) or (
            subresource and subresource not in rtype.subresources):
        raise errors.route_not_found()
    return Target(rtype, namespace, name, subresource)


def _scope_matches(rtype, namespace, name):
    """Cluster-scoped kinds have no namespace; a namespaced object needs one."""
    if namespace:
        return rtype.namespaced
    return not (name and rtype.namespaced)


def _continue_token(obj):
    meta = obj["metadata"]
    key = json.dumps([meta.get("namespace") or "", meta["name"]])
    return base64.urlsafe_b64encode(key.encode()).decode()


def _after_token(items, token):
    try:
        after = tuple(json.loads(base64.urlsafe_b64decode(token.encode())))
    except ValueError:
        raise errors.bad_request("invalid continue token") from None
    return [o for o in items
            if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > after]


def _success(rtype, obj):
    details = {"name": obj["metadata"]["name"], "kind": rtype.plural,
               "uid": obj["metadata"]["uid"]}
    if rtype.group:
        details["group"] = rtype.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}
