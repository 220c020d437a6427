"""Patch algorithms: JSON merge patch, JSON patch, strategic merge (approximate) and apply.

All functions are pure: they return a new document and never change their arguments.

Strategic merge patch is approximated: it is a JSON merge patch, except that lists of
maps under a field listed in ``MERGE_KEYS`` are merged item by item on that key
(containers by ``name``, ports by ``containerPort``/``port``, ...), the directives
``$patch: delete`` (list item or map) and ``$patch: replace`` (map), and
``$deleteFromPrimitiveList/<field>`` are honoured, and ``$setElementOrder/<field>`` and
``$retainKeys`` are dropped (order: existing items first, new ones appended). Any other
list is replaced, as a JSON merge patch does.

Server-side apply is approximated by ``apply_merge``: the applied configuration is merged
like a strategic merge patch, and fields that the same field manager applied last time but
no longer applies are removed. There is no per-field ownership across managers and no
conflict detection.
"""

import copy
import json

from .errors import ApiError

# List field name -> candidate merge keys (the first one present in the items is used).
MERGE_KEYS = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "volumes": ("name",), "env": ("name",), "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",), "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"), "conditions": ("type",),
    "ownerReferences": ("uid",), "hostAliases": ("ip",), "topologySpreadConstraints":
    ("topologyKey",), "resourceClaims": ("name",),
}


def _clone(value):
    return copy.deepcopy(value)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return _clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------- JSON patch (RFC 6902)

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message):
    return ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                    f"request: {message}")


def _container(doc, parts):
    """The parent of the location ``parts`` (a dict or list) and the last token."""
    node = doc
    for part in parts[:-1]:
        node = _child(node, part)
    return node, parts[-1]


def _child(node, token):
    try:
        if isinstance(node, list):
            return node[int(token)]
        return node[token]
    except (KeyError, IndexError, ValueError, TypeError):
        raise _patch_error(f"path element {token!r} not found") from None


def _get(doc, parts):
    node = doc
    for part in parts:
        node = _child(node, part)
    return node


def _add(doc, parts, value):
    if not parts:
        return value
    parent, token = _container(doc, parts)
    if isinstance(parent, list):
        index = len(parent) if token == "-" else int(token)
        if not 0 <= index <= len(parent):
            raise _patch_error(f"index {token} out of range")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[token] = value
    else:
        raise _patch_error(f"cannot add at {token!r}")
    return doc


def _remove(doc, parts):
    parent, token = _container(doc, parts)
    _child(parent, token)  # raises when missing
    if isinstance(parent, list):
        return parent.pop(int(token))
    return parent.pop(token)


def _replace(doc, parts, value):
    if not parts:
        return value
    parent, token = _container(doc, parts)
    _child(parent, token)  # raises when missing
    parent[int(token) if isinstance(parent, list) else token] = value
    return doc


def json_patch(target, operations):
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise _patch_error("a JSON patch must be a list of operations")
    doc = _clone(target)
    for operation in operations:
        op, parts = operation.get("op"), _pointer(operation.get("path", ""))
        if op == "add":
            doc = _add(doc, parts, _clone(operation.get("value")))
        elif op == "remove":
            _remove(doc, parts)
        elif op == "replace":
            doc = _replace(doc, parts, _clone(operation.get("value")))
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from", ""))
            value = _remove(doc, source) if op == "move" else _clone(_get(doc, source))
            doc = _add(doc, parts, value)
        elif op == "test":
            if _get(doc, parts) != operation.get("value"):
                raise _patch_error(f"testing value {operation.get('path')} failed")
        else:
            raise _patch_error(f"unknown JSON patch operation {op!r}")
    return doc


# ---------------------------------------------------------------- strategic merge

def _merge_key(field, items):
    for key in MERGE_KEYS.get(field, ()):
        if any(isinstance(item, dict) and key in item for item in items):
            return key
    return None


def _merge_keyed_list(field, current, patch_items, merge_value):
    """Merge two lists of maps item by item on the field's merge key."""
    key = _merge_key(field, list(current) + list(patch_items))
    if key is None:
        return _clone([i for i in patch_items if not _is_delete(i)])
    result = list(current)
    for item in patch_items:
        index = next((i for i, old in enumerate(result)
                      if isinstance(old, dict) and old.get(key) == item.get(key)), None)
        if _is_delete(item):
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append(merge_value(None, item))
        else:
            result[index] = merge_value(result[index], item)
    return result


def _is_delete(item):
    return isinstance(item, dict) and item.get("$patch") == "delete"


def strategic_merge(target, patch):
    """Approximate strategic merge patch (see module docstring)."""
    if not isinstance(patch, dict):
        return _clone(patch)
    if patch.get("$patch") == "delete":
        return None
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_keyed_list(key, result[key], value, strategic_merge)
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _strip_directives(value):
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not _is_delete(v)]
    return value


# ---------------------------------------------------------------- server-side apply

def _prune(obj, previous, applied):
    """Remove from ``obj`` what ``previous`` applied and ``applied`` no longer does."""
    if not isinstance(obj, dict) or not isinstance(previous, dict):
        return obj
    applied = applied if isinstance(applied, dict) else {}
    result = dict(obj)
    for key, old_value in previous.items():
        if key not in applied:
            result.pop(key, None)
        elif isinstance(old_value, dict) and key in result:
            result[key] = _prune(result[key], old_value, applied[key])
        elif isinstance(old_value, list) and isinstance(result.get(key), list):
            result[key] = _prune_list(key, result[key], old_value, applied[key])
    return result


def _prune_list(field, current, previous, applied):
    key = _merge_key(field, list(previous) + list(applied or []))
    if key is None or not isinstance(applied, list):
        return current
    applied_by_key = {item.get(key): item for item in applied if isinstance(item, dict)}
    previous_by_key = {item.get(key): item for item in previous if isinstance(item, dict)}
    result = []
    for item in current:
        ident = item.get(key) if isinstance(item, dict) else None
        if ident in previous_by_key and ident not in applied_by_key:
            continue
        if ident in previous_by_key:
            item = _prune(item, previous_by_key[ident], applied_by_key[ident])
        result.append(item)
    return result


def apply_merge(current, applied, previous_applied=None):
    """Merge an applied configuration into ``current`` (approximate server-side apply)."""
    pruned = _prune(current, previous_applied, applied) if previous_applied else current
    return strategic_merge(pruned, _strip_directives(applied))


def canonical(value):
    """A deep copy that is plain JSON (dicts, lists, str, int, float, bool, None)."""
    return json.loads(json.dumps(value))
