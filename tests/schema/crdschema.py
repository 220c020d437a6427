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

The code is in five parts, re-exported here: ``crdschema_syntax`` (paths, name syntax, errors),
``crdschema_translate`` (openAPIV3Schema to JSON Schema, ObjectMeta, metadata checks), ``crdschema_catalog``
(the CRD catalogue, :func:`validate`), ``crdschema_core`` (core kinds) and ``crdschema_values`` (Helm values).
"""

from __future__ import annotations

from tests.schema.crdschema_catalog import CrdCatalog, CrdLookupError, CrdVersion, catalog, crd_errors, validate
from tests.schema.crdschema_core import core_errors, validate_core
from tests.schema.crdschema_syntax import SHARED_DIR, UPSTREAM_DIR, SchemaValidationError
from tests.schema.crdschema_translate import OBJECT_META_SCHEMA, to_json_schema
from tests.schema.crdschema_values import check_values_keys

__all__ = [
    "SHARED_DIR",
    "UPSTREAM_DIR",
    "CrdCatalog",
    "CrdLookupError",
    "CrdVersion",
    "OBJECT_META_SCHEMA",
    "SchemaValidationError",
    "catalog",
    "check_values_keys",
    "core_errors",
    "crd_errors",
    "to_json_schema",
    "validate",
    "validate_core",
]
