"""Part of tests/schema/crdschema.py: the catalogue of upstream CRDs (served versions, one or several files per
kind) and the validation of a custom resource against it."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.schema.crdschema_syntax import (
    SchemaValidationError, UPSTREAM_DIR, _YAML_LOADER, _dns1123_subdomain_error, _error)
from tests.schema.crdschema_translate import (
    _K8S_VALIDATOR, _crd_root_schema, _metadata_errors, _schema_errors, _subject, _type_header_errors)


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
