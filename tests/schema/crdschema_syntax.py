"""Part of tests/schema/crdschema.py: where the shared upstream files are, Kubernetes name syntax, and the
errors (``SchemaValidationError``, ``"<path>: <message>"`` strings)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

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
