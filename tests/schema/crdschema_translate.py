"""Part of tests/schema/crdschema.py: a CRD's ``openAPIV3Schema`` translated into JSON Schema with Kubernetes
semantics (unknown fields, list-map keys, defaulted required fields), ObjectMeta, and the metadata checks."""
from __future__ import annotations

import json
import re

import jsonschema

from tests.schema.crdschema_syntax import (
    _ANNOTATIONS_MAX_BYTES, _LABEL_VALUE, _dns1123_label_error, _error, _qualified_name_error)


# -- JSON Schema keywords for Kubernetes semantics ----------------------------------------

_BASE_VALIDATOR = jsonschema.Draft202012Validator


def _kw_required(validator, required, instance, schema):
    """One error per missing field, at the path of the missing field."""
    if validator.is_type(instance, "object"):
        for name in required:
            if name not in instance:
                yield jsonschema.ValidationError("required field is missing", path=[name])


def _kw_additional_properties(validator, additional, instance, schema):
    """``additionalProperties: false`` -> one ``unknown field`` error per extra key, at its path."""
    if additional is not False:
        yield from _BASE_VALIDATOR.VALIDATORS["additionalProperties"](validator, additional, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    for key in instance:
        if key not in known and not any(re.search(p, key) for p in patterns):
            yield jsonschema.ValidationError("unknown field", path=[key])


def _kw_list_map_keys(validator, keys, instance, schema):
    """``x-kubernetes-list-type: map``: items must be unique by their map keys."""
    if not validator.is_type(instance, "array"):
        return
    seen = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        key = tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)
        if key in seen:
            described = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
            yield jsonschema.ValidationError(
                f"duplicate entry ({described}) also at index {seen[key]}", path=[index])
        else:
            seen[key] = index


_K8S_VALIDATOR = jsonschema.validators.extend(_BASE_VALIDATOR, {
    "required": _kw_required,
    "additionalProperties": _kw_additional_properties,
    "x-k8s-list-map-keys": _kw_list_map_keys,
})
_COPIED_KEYWORDS = ("enum", "pattern", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
                    "minProperties", "maxProperties", "multipleOf", "minimum", "maximum")
_FORMAT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def to_json_schema(node: dict, _in_junctor: bool = False) -> dict:
    """Translate one Kubernetes structural ``openAPIV3Schema`` node into JSON Schema (2020-12).

    See the module docstring for the rules.  Inside ``anyOf``/``allOf``/``oneOf``/
    ``not`` (value validations only, in Kubernetes) no unknown-field rule is added.
    """
    out: dict = {}
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    nullable = bool(node.get("nullable"))

    types = ["integer", "string"] if node.get("x-kubernetes-int-or-string") else (
        [node["type"]] if node.get("type") else [])
    if types:
        out["type"] = types + ["null"] if nullable else (types[0] if len(types) == 1 else types)
    for keyword in _COPIED_KEYWORDS:
        if keyword in node:
            out[keyword] = node[keyword]
    if nullable and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(flag) is True and bound in out:
            out[flag] = out.pop(bound)
    if node.get("format") in _FORMAT_BOUNDS and "integer" in types:
        low, high = _FORMAT_BOUNDS[node["format"]]
        out["minimum"] = max(out.get("minimum", low), low)
        out["maximum"] = min(out.get("maximum", high), high)

    properties = {name: to_json_schema(sub, _in_junctor) for name, sub in node.get("properties", {}).items()}
    if node.get("x-kubernetes-embedded-resource"):
        properties.setdefault("apiVersion", {"type": "string"})
        properties.setdefault("kind", {"type": "string"})
        properties["metadata"] = OBJECT_META_SCHEMA
    if properties:
        out["properties"] = properties
    if node.get("required"):
        # The API server applies defaults before checking required fields.
        required = [r for r in node["required"] if "default" not in node.get("properties", {}).get(r, {})]
        if required:
            out["required"] = required
    if "items" in node and isinstance(node["items"], dict):
        out["items"] = to_json_schema(node["items"], _in_junctor)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = to_json_schema(additional, _in_junctor)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional or preserve
    elif not preserve and not _in_junctor and (node.get("type") == "object" or properties):
        out["additionalProperties"] = False

    list_type = node.get("x-kubernetes-list-type")
    if list_type == "set":
        out["uniqueItems"] = True
    elif list_type == "map" and node.get("x-kubernetes-list-map-keys"):
        out["x-k8s-list-map-keys"] = list(node["x-kubernetes-list-map-keys"])

    for junctor in ("anyOf", "allOf", "oneOf"):
        branches = node.get(junctor)
        if not branches:
            continue
        if node.get("x-kubernetes-int-or-string") and all(set(b) == {"type"} for b in branches):
            continue  # the usual [{type: integer}, {type: string}] spelling: already in "type"
        out[junctor] = [to_json_schema(b, _in_junctor=True) for b in branches]
    if "not" in node:
        out["not"] = to_json_schema(node["not"], _in_junctor=True)
    return out


_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
OBJECT_META_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": _STRING, "generateName": _STRING, "namespace": _STRING, "uid": _STRING,
        "resourceVersion": _STRING, "selfLink": _STRING, "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]}, "deletionTimestamp": _STRING,
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRING_MAP, "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": _STRING},
        "managedFields": {"type": "array", "items": {"type": "object"}},
        "ownerReferences": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {"apiVersion": _STRING, "kind": _STRING, "name": _STRING, "uid": _STRING,
                           "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}},
        }},
    },
}


def _root_schema(body: dict, metadata_schema: dict | None = None) -> dict:
    """A top-level object schema: apiVersion/kind/metadata plus the kind's own fields."""
    schema = dict(body)
    schema["type"] = "object"
    schema["properties"] = {**schema.get("properties", {}), "apiVersion": _STRING, "kind": _STRING,
                            "metadata": metadata_schema or OBJECT_META_SCHEMA}
    schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", [])})
    schema.setdefault("additionalProperties", False)
    return schema


def _crd_root_schema(openapi: dict) -> dict:
    translated = to_json_schema(openapi)
    meta = OBJECT_META_SCHEMA
    crd_meta = (openapi.get("properties") or {}).get("metadata") or {}
    name_rules = {k: to_json_schema(v) for k, v in (crd_meta.get("properties") or {}).items()
                  if k in ("name", "generateName")}  # the only metadata a CRD schema may restrict
    if name_rules:
        meta = {**meta, "properties": {**meta["properties"],
                                       **{k: {**meta["properties"][k], **v} for k, v in name_rules.items()}}}
    return _root_schema(translated, meta)


def _schema_errors(validator, obj) -> list[str]:
    return sorted({_error(e.absolute_path, e.message) for e in validator.iter_errors(obj)})


def _metadata_errors(obj: dict, kind: str, namespaced: bool, name_check) -> list[str]:
    """Name, namespace, label and annotation rules of ObjectMeta."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []  # reported by the schema
    errors = []
    name = meta.get("name")
    if not name:
        errors.append(_error(["metadata", "name"], "required field is missing"))
    elif isinstance(name, str) and (problem := name_check(name)):
        errors.append(_error(["metadata", "name"], problem))
    namespace = meta.get("namespace")
    if namespaced and not namespace:
        errors.append(_error(["metadata", "namespace"], f"required: {kind} is a namespaced kind"))
    elif namespace and isinstance(namespace, str) and (problem := _dns1123_label_error(namespace)):
        errors.append(_error(["metadata", "namespace"], problem))
    labels = meta.get("labels")
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        if problem := _qualified_name_error(str(key)):
            errors.append(_error(["metadata", "labels", key], f"invalid label key: {problem}"))
        if isinstance(value, str) and (len(value) > 63 or not _LABEL_VALUE.fullmatch(value)):
            errors.append(_error(["metadata", "labels", key],
                                 f"invalid label value {value!r} (at most 63 alphanumerics, '-', '_', '.', "
                                 "starting and ending with an alphanumeric)"))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            if problem := _qualified_name_error(str(key)):
                errors.append(_error(["metadata", "annotations", key], f"invalid annotation key: {problem}"))
        size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
        if size > _ANNOTATIONS_MAX_BYTES:
            errors.append(_error(["metadata", "annotations"], f"total size {size} exceeds {_ANNOTATIONS_MAX_BYTES}"))
    return errors


def _subject(obj) -> str:
    if not isinstance(obj, dict):
        return repr(obj)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    where = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where or '(unnamed)'}"


def _type_header_errors(obj) -> list[str]:
    if not isinstance(obj, dict):
        return [_error([], f"an object must be a mapping, not {type(obj).__name__}")]
    return [_error([field], "required field is missing (a non-empty string)")
            for field in ("apiVersion", "kind") if not isinstance(obj.get(field), str) or not obj.get(field)]
