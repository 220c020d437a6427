"""Validate rendered Kubernetes objects against the real upstream CRD schemas (and a few core kinds).

The CustomResourceDefinitions are the verbatim upstream files in
``<repo root>/../shared/upstream/**`` (see its README).  They are loaded once per
process; a missing directory or one without CRDs raises ``FileNotFoundError``,
so tests that rely on it fail instead of silently passing.

:func:`validate` / :func:`crd_errors` check a custom resource the way the API
server with strict field validation would:

* the CRD is found by ``apiVersion`` group + ``kind``; the version must be one the
  CRD *serves* (otherwise the error names the served versions);
* ``openAPIV3Schema`` is translated into JSON Schema (:func:`to_json_schema`):
  ``x-kubernetes-int-or-string`` -> integer or string,
  ``x-kubernetes-preserve-unknown-fields`` -> anything allowed there, ``nullable``
  -> null allowed, OpenAPI's boolean ``exclusiveMinimum/Maximum`` -> numeric
  form, ``format`` dropped except ``int32``/``int64`` (range checks), list types
  ``set`` / ``map`` -> uniqueness of items / of the map keys;
* an object schema with ``properties`` (or plain ``type: object``) and no
  ``additionalProperties`` accepts **no unknown fields** (the API server prunes
  them, and ``kubectl``'s strict field validation rejects them: this is what
  catches misspelt keys);
* a ``required`` field whose schema has a ``default`` is not reported missing
  (the API server defaults it before validating);
* ``metadata`` is ObjectMeta (unknown metadata fields rejected); ``metadata.name``
  is required and must be a DNS-1123 subdomain; a namespaced kind needs
  ``metadata.namespace`` (a DNS-1123 label); label and annotation keys/values
  are checked for Kubernetes syntax.

Deliberately stricter than the API server: ``null`` in a non-nullable field is an
error (the API server silently drops it; for rendered objects it is a templating
bug).  Not modelled: CEL rules (``x-kubernetes-validations``), defaulting beyond
the ``required`` rule above, conversion webhooks.

Errors are strings ``"<path>: <message>"`` with paths like
``spec.chart.spec.sourceRef.kind`` or ``spec.containers[0].name``.  When several
CRD files define the same group/version/kind (e.g. two releases of one chart),
the object must be valid against each of them unless ``source=`` picks one; each
error then starts with ``[<file>]``.

:func:`validate_core` does the same for the core kinds the collection renders
(Namespace, ConfigMap, Secret).  :func:`check_values_keys` finds Helm values keys
that a chart's ``values.default.yaml`` does not know.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

__all__ = [
    "SHARED_DIR",
    "UPSTREAM_DIR",
    "CrdCatalog",
    "CrdLookupError",
    "CrdVersion",
    "SchemaValidationError",
    "catalog",
    "check_values_keys",
    "core_errors",
    "crd_errors",
    "to_json_schema",
    "validate",
    "validate_core",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DIR = REPO_ROOT.parent / "shared"
UPSTREAM_DIR = SHARED_DIR / "upstream"

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# -- Kubernetes name syntax ---------------------------------------------------------------

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_ANNOTATIONS_MAX_BYTES = 256 * 1024
_CONFIGMAP_MAX_BYTES = 1024 * 1024


def _dns1123_label_error(value: str) -> str | None:
    if len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        return f"{value!r} is not a DNS-1123 label (lower-case alphanumerics and '-', at most 63 characters)"
    return None


def _dns1123_subdomain_error(value: str) -> str | None:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (f"{value!r} is not a DNS-1123 subdomain (lower-case alphanumerics, '-' and '.', "
                "at most 253 characters)")
    return None


def _qualified_name_error(key: str) -> str | None:
    prefix, dummy, name = key.rpartition("/")
    if "/" in prefix or (key.count("/") == 1 and not prefix):
        return f"{key!r} is not a qualified name ([prefix/]name)"
    if prefix and _dns1123_subdomain_error(prefix):
        return f"{key!r}: prefix {prefix!r} is not a DNS-1123 subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME_PART.fullmatch(name):
        return (f"{key!r}: name part must be at most 63 alphanumerics, '-', '_' or '.', "
                "starting and ending with an alphanumeric")
    return None


# -- errors and paths ---------------------------------------------------------------------

class SchemaValidationError(AssertionError):
    """An object failed validation; ``errors`` lists ``"<path>: <message>"`` strings."""

    def __init__(self, subject: str, errors: list[str]):
        self.subject = subject
        self.errors = list(errors)
        super().__init__(f"{subject} is invalid:\n  " + "\n  ".join(self.errors))


def _format_path(parts) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_$-]+", str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part))}]"
    return out or "(root)"


def _error(parts, message: str) -> str:
    return f"{_format_path(parts)}: {message}"


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


# -- the CRD catalogue --------------------------------------------------------------------

class CrdLookupError(LookupError):
    """No served CRD version matches an object; ``field`` is ``apiVersion`` or ``kind``."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class CrdVersion:
    """One version of one CRD, as found in an upstream file."""

    crd_name: str  # e.g. helmreleases.helm.toolkit.fluxcd.io
    group: str
    kind: str
    version: str
    served: bool
    namespaced: bool
    source: str  # file path relative to the upstream directory
    openapi: dict  # the openAPIV3Schema


class CrdCatalog:
    """Every CRD version in an upstream directory, with compiled validators (built on first use)."""

    def __init__(self, upstream_dir: Path):
        self.upstream_dir = Path(upstream_dir)
        if not self.upstream_dir.is_dir():
            raise FileNotFoundError(
                f"upstream CRD directory {self.upstream_dir} is missing: the shared data directory must sit "
                "beside the repository (../shared/upstream, see its README.md)")
        self._versions: dict[tuple[str, str], list[CrdVersion]] = {}  # (group, kind) -> versions
        for path in sorted(self.upstream_dir.rglob("*.y*ml")):
            if path.name.startswith("values"):
                continue  # Helm default values, not CRDs
            with open(path, encoding="utf-8") as fh:
                for doc in yaml.load_all(fh, Loader=_YAML_LOADER):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        self._add(doc, str(path.relative_to(self.upstream_dir)))
        if not self._versions:
            raise FileNotFoundError(f"no CustomResourceDefinition found under {self.upstream_dir}")
        self._validators: dict[int, object] = {}

    def _add(self, crd: dict, source: str):
        spec = crd["spec"]
        for version in spec["versions"]:
            self._versions.setdefault((spec["group"], spec["names"]["kind"]), []).append(CrdVersion(
                crd_name=crd["metadata"]["name"], group=spec["group"], kind=spec["names"]["kind"],
                version=version["name"], served=bool(version.get("served")),
                namespaced=spec.get("scope") == "Namespaced", source=source,
                openapi=(version.get("schema") or {}).get("openAPIV3Schema") or {}))

    def kinds(self) -> list[tuple[str, str]]:
        """Every (group, kind) known, sorted."""
        return sorted(self._versions)

    def lookup(self, api_version: str, kind: str, source: str | None = None) -> list[CrdVersion]:
        """The served CRD versions matching *api_version* and *kind* (one per defining file).

        Raises :class:`CrdLookupError` naming what is missing (the group, the kind,
        or a served version, listing the served ones) and the field to blame.
        """
        group, dummy, version = api_version.rpartition("/")
        if not group:
            raise CrdLookupError("apiVersion", f"{api_version!r} is a core API version: no CRD defines it "
                                               "(use validate_core)")
        if not any(pair[0] == group for pair in self._versions):
            raise CrdLookupError("apiVersion", f"no CRD under {self.upstream_dir} defines API group {group!r}")
        candidates = self._versions.get((group, kind))
        if not candidates:
            known = sorted(k for g, k in self._versions if g == group)
            raise CrdLookupError("kind", f"no CRD defines kind {kind!r} in group {group!r} "
                                         f"(known kinds: {', '.join(known)})")
        if source is not None:
            candidates = [c for c in candidates if source in c.source]
            if not candidates:
                raise CrdLookupError("apiVersion", f"no CRD file matching {source!r} defines {group}/{kind}")
        matches = [c for c in candidates if c.version == version and c.served]
        if not matches:
            crd = candidates[0]
            served = sorted({c.version for c in candidates if c.served})
            why = "served: false" if any(c.version == version for c in candidates) else "version not defined"
            raise CrdLookupError("apiVersion", f"{api_version} {kind} is not served by CRD {crd.crd_name} "
                                               f"({crd.source}; {why}); served versions: {', '.join(served) or 'none'}")
        return matches

    def validator(self, crd_version: CrdVersion):
        key = id(crd_version)
        if key not in self._validators:
            self._validators[key] = _K8S_VALIDATOR(_crd_root_schema(crd_version.openapi))
        return self._validators[key]


@functools.lru_cache(maxsize=None)
def catalog(upstream_dir: str | Path = UPSTREAM_DIR) -> CrdCatalog:
    """The (per-process cached) catalogue of CRDs under *upstream_dir*."""
    return CrdCatalog(Path(upstream_dir))


def crd_errors(obj, source: str | None = None, upstream_dir: str | Path = UPSTREAM_DIR) -> list[str]:
    """All problems of the custom resource *obj* (empty when valid); see the module docstring."""
    errors = _type_header_errors(obj)
    if errors:
        return errors
    try:
        versions = catalog(upstream_dir).lookup(obj["apiVersion"], obj["kind"], source)
    except CrdLookupError as exc:
        return [_error([exc.field], str(exc))]
    result = []
    for crd_version in versions:
        found = _schema_errors(catalog(upstream_dir).validator(crd_version), obj)
        found += _metadata_errors(obj, obj["kind"], crd_version.namespaced, _dns1123_subdomain_error)
        prefix = f"[{crd_version.source}] " if len(versions) > 1 else ""
        result += [prefix + e for e in sorted(set(found))]
    return result


def validate(obj, source: str | None = None, upstream_dir: str | Path = UPSTREAM_DIR) -> None:
    """Raise :class:`SchemaValidationError` listing every problem of the custom resource *obj*."""
    errors = crd_errors(obj, source, upstream_dir)
    if errors:
        raise SchemaValidationError(_subject(obj), errors)


# -- core kinds ---------------------------------------------------------------------------

_CORE_KINDS = {
    # kind: (namespaced, name rule, kind-specific top-level fields)
    "Namespace": (False, _dns1123_label_error, {
        "spec": {"type": "object", "additionalProperties": False,
                 "properties": {"finalizers": {"type": "array", "items": _STRING}}},
        "status": {"type": "object"},
    }),
    "ConfigMap": (True, _dns1123_subdomain_error, {
        "data": _STRING_MAP, "binaryData": _STRING_MAP, "immutable": {"type": "boolean"},
    }),
    "Secret": (True, _dns1123_subdomain_error, {
        "data": _STRING_MAP, "stringData": _STRING_MAP, "type": _STRING, "immutable": {"type": "boolean"},
    }),
}
_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/basic-auth": (),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


@functools.lru_cache(maxsize=None)
def _core_validator(kind: str):
    return _K8S_VALIDATOR(_root_schema({"properties": _CORE_KINDS[kind][2]}))


def _config_key_errors(obj: dict, field: str) -> list[str]:
    data = obj.get(field)
    errors = []
    for key in (data if isinstance(data, dict) else ()):
        key = str(key)
        if len(key) > 253 or not _CONFIG_KEY.fullmatch(key) or key in (".", "..") or key.startswith(".."):
            errors.append(_error([field, key], "invalid key (alphanumerics, '-', '_', '.'; not '.', '..' or '..*')"))
    return errors


def _base64_errors(obj: dict, field: str) -> list[str]:
    data = obj.get(field)
    errors = []
    for key, value in (data.items() if isinstance(data, dict) else ()):
        if isinstance(value, str):
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                errors.append(_error([field, key], "value is not valid base64"))
    return errors


def _configmap_errors(obj: dict) -> list[str]:
    errors = _config_key_errors(obj, "data") + _config_key_errors(obj, "binaryData") + _base64_errors(obj, "binaryData")
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    if isinstance(data, dict) and isinstance(binary, dict):
        errors += [_error(["binaryData", k], "key also present in data") for k in sorted(set(data) & set(binary))]
        size = sum(len(str(k)) + len(str(v)) for part in (data, binary) for k, v in part.items())
        if size > _CONFIGMAP_MAX_BYTES:
            errors.append(_error(["data"], f"total size {size} exceeds {_CONFIGMAP_MAX_BYTES} bytes"))
    return errors


def _secret_errors(obj: dict) -> list[str]:
    errors = (_config_key_errors(obj, "data") + _config_key_errors(obj, "stringData")
              + _base64_errors(obj, "data"))
    present = set(obj.get("data") or {}) | set(obj.get("stringData") or {})
    for key in _SECRET_REQUIRED_KEYS.get(obj.get("type"), ()):
        if key not in present:
            errors.append(_error(["data", key], f"required for a Secret of type {obj['type']}"))
    return errors


_CORE_EXTRA_CHECKS = {"Namespace": lambda obj: [], "ConfigMap": _configmap_errors, "Secret": _secret_errors}


def core_errors(obj) -> list[str]:
    """All problems of a core ``v1`` Namespace, ConfigMap or Secret (empty when valid)."""
    errors = _type_header_errors(obj)
    if errors:
        return errors
    if obj["apiVersion"] != "v1":
        return [_error(["apiVersion"], f"core kinds here use apiVersion v1, not {obj['apiVersion']!r}")]
    kind = obj["kind"]
    if kind not in _CORE_KINDS:
        return [_error(["kind"], f"unsupported core kind {kind!r} (supported: {', '.join(sorted(_CORE_KINDS))})")]
    namespaced, name_check = _CORE_KINDS[kind][:2]
    errors = _schema_errors(_core_validator(kind), obj) + _metadata_errors(obj, kind, namespaced, name_check)
    return sorted(set(errors + _CORE_EXTRA_CHECKS[kind](obj)))


def validate_core(obj) -> None:
    """Raise :class:`SchemaValidationError` listing every problem of a core Namespace/ConfigMap/Secret."""
    errors = core_errors(obj)
    if errors:
        raise SchemaValidationError(_subject(obj), errors)


# -- Helm values vs a chart's default values ----------------------------------------------

@functools.lru_cache(maxsize=32)
def _load_defaults(path: str, mtime: float):
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_YAML_LOADER) or {}


def _is_allowed(parts: list[str], allow: list[list[str]]) -> bool:
    """True when *parts* equals or lies below a pattern (``*`` matches one key)."""
    return any(len(parts) >= len(p) and all(a in ("*", b) for a, b in zip(p, parts)) for p in allow)


def check_values_keys(values: dict, defaults_yaml_path, allow=()) -> list[str]:
    """Dotted paths of keys in *values* that the chart's default values do not have.

    Below a default that is ``{}``, ``null`` or a list (e.g. ``toolkit.env: []``)
    anything is accepted (free-form).  *allow* lists further dotted paths
    documented as accepted/free-form although absent from the defaults (``*``
    matches any one key), e.g. ``["daemonsets.annotations", "*.resources"]``.
    A mapping given where the default is a scalar has all its keys reported.
    """
    path = Path(defaults_yaml_path)
    defaults = _load_defaults(str(path), path.stat().st_mtime)
    patterns = [p.split(".") for p in allow]
    unknown: list[str] = []

    def walk(given, known, parts):
        for key, value in given.items():
            here = [*parts, str(key)]
            if _is_allowed(here, patterns):
                continue
            if not isinstance(known, dict) or key not in known:
                unknown.append(".".join(here))
                continue
            default = known[key]
            if default is None or default == {} or isinstance(default, list):
                continue  # free-form below this point
            if isinstance(value, dict):
                walk(value, default, here)

    if not isinstance(values, dict):
        raise TypeError(f"values must be a mapping, not {type(values).__name__}")
    walk(values, defaults, [])
    return unknown
