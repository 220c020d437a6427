"""The chart pins of the project's roles, read from their ``defaults/main.yml`` as files, as a user reads them.

A pin is a version as written there (``v26.3.3``, ``0.19.2``), or the GPU Operator's and Network Operator's
reference to the platform's release pair (``{{ gpu_platform_release_pairs[gpu_platform_release_pair].gpu_operator }}``,
roles/gpu_platform/defaults/main.yml): the chosen pair's version, read from the same file. Anything else templated is
an error naming the variable: the local cluster serves and builds exact versions only.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from . import ClusterError
from .paths import PROJECT

PAIR_REFERENCE = re.compile(r"^\{\{\s*gpu_platform_release_pairs\[gpu_platform_release_pair\]\.(\w+)\s*\}\}$")


def _load(path):
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, ValueError) as exc:
        raise ClusterError("cannot read %s: %s" % (path, exc)) from None


def _platform_defaults(project=None):
    path = Path(project or PROJECT) / "roles" / "gpu_platform" / "defaults" / "main.yml"
    return path, _load(path)


def release_pairs(project=None):
    """{name: {gpu_operator, network_operator}}: every named release pair (gpu_platform_release_pairs)."""
    return dict(_platform_defaults(project)[1].get("gpu_platform_release_pairs") or {})


def release_pair(project=None):
    """(name, {gpu_operator, network_operator}) of the platform's default release pair."""
    path, defaults = _platform_defaults(project)
    name = defaults.get("gpu_platform_release_pair")
    pairs = defaults.get("gpu_platform_release_pairs") or {}
    if name not in pairs:
        raise ClusterError("%s: gpu_platform_release_pair %r is not one of gpu_platform_release_pairs (%s)"
                           % (path, name, ", ".join(sorted(pairs)) or "none"))
    return name, pairs[name]


def resolve(variable, value, project=None):
    """A role default's value as the version it stands for (see the module's docstring)."""
    text = str(value)
    if "{{" not in text:
        return text
    found = PAIR_REFERENCE.match(text.strip())
    if not found:
        raise ClusterError("%s is %r: the local cluster reads exact chart versions, or the release pair's "
                           "(gpu_platform_release_pairs[gpu_platform_release_pair].<operator>)" % (variable, text))
    name, pair = release_pair(project)
    if found.group(1) not in pair:
        raise ClusterError("%s reads the release pair's %s, which pair %s does not name"
                           % (variable, found.group(1), name))
    return str(pair[found.group(1)])


def role_defaults(role_or_path, project=None):
    """A role's defaults (``roles/<role>/defaults/main.yml``, or that file's path), every ``*_chart_version``
    resolved to the version it stands for."""
    path = Path(role_or_path)
    if not path.suffix:
        path = Path(project or PROJECT) / "roles" / str(role_or_path) / "defaults" / "main.yml"
    defaults = _load(path)
    return {key: resolve(key, value, project) if key.endswith("_chart_version") else value
            for key, value in defaults.items()}
