"""Part of tests/schema/crdschema.py: Helm values checked against a chart's default values (unknown keys)."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from tests.schema.crdschema_syntax import _YAML_LOADER


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
