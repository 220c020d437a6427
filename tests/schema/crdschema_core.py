"""Part of tests/schema/crdschema.py: the core kinds checked without a CRD (Namespace, ConfigMap, Secret, ...),
with their size, key and base64 rules."""
from __future__ import annotations

import base64
import binascii
import functools

from tests.schema.crdschema_syntax import (
    SchemaValidationError, _CONFIGMAP_MAX_BYTES, _CONFIG_KEY, _dns1123_label_error, _dns1123_subdomain_error,
    _error)
from tests.schema.crdschema_translate import (
    _K8S_VALIDATOR, _STRING, _STRING_MAP, _metadata_errors, _root_schema, _schema_errors, _subject,
    _type_header_errors)


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
