"""Role coupling: the variables each role reads that another role defines.

A role should read its own variables and the platform's (``gpu_platform_*``, the contract every layer shares),
nothing else. This prints, per role, the other roles' variables it reads and where, and the total.

Defined by a role: the keys of its defaults/ and vars/, the options of its meta/argument_specs.yml, and the
names its tasks set (set_fact, register). Read by a role: every name in the string values of its YAML files
(Jinja expressions, when/until/that conditions, loops), task names and comments left out.

    python scripts/role_coupling.py            # the table and the total
    python scripts/role_coupling.py --json     # the same as JSON
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLATFORM_PREFIX = "gpu_platform_"
PROSE_KEYS = {"name", "description", "short_description", "msg_prose"}


def _yaml_files(role_dir):
    for sub in ("defaults", "vars", "tasks", "handlers", "meta"):
        folder = role_dir / sub
        if folder.is_dir():
            yield from sorted(folder.rglob("*.yml"))


def _load(path):
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        return {}


def _walk(node, on_key=None, on_value=None, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            if on_key:
                on_key(str(k), v)
            _walk(v, on_key, on_value, str(k))
    elif isinstance(node, list):
        for item in node:
            _walk(item, on_key, on_value, key)
    elif isinstance(node, str) and on_value and key not in PROSE_KEYS:
        on_value(node)


def defined(role_dir):
    """The variables a role defines."""
    names = set()
    for sub in ("defaults", "vars"):
        for path in sorted((role_dir / sub).glob("*.yml")) if (role_dir / sub).is_dir() else []:
            data = _load(path)
            if isinstance(data, dict):
                names.update(str(k) for k in data)
    specs = _load(role_dir / "meta" / "argument_specs.yml") if (role_dir / "meta" / "argument_specs.yml").exists() else {}
    for spec in (specs.get("argument_specs") or {}).values():
        names.update(str(k) for k in (spec.get("options") or {}))

    def on_key(key, value):
        if key in ("ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
            names.update(str(k) for k in value if k != "cacheable")
        if key == "register" and isinstance(value, str):
            names.add(value)
    for path in sorted((role_dir / "tasks").rglob("*.yml")) if (role_dir / "tasks").is_dir() else []:
        _walk(_load(path), on_key=on_key)
    return names


def reads(role_dir):
    """{name: [files]} of every name used in the role's string values."""
    found = {}
    for path in _yaml_files(role_dir):
        if path.parent.name == "meta":
            continue

        def on_value(text, path=path):
            for name in NAME.findall(text):
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
        _walk(_load(path), on_value=on_value)
    return found


def coupling(roles_dir):
    roles = sorted(p for p in roles_dir.iterdir() if (p / "tasks").is_dir())
    owners = {}
    for role in roles:
        for name in defined(role):
            owners.setdefault(name, set()).add(role.name)
    out = {}
    for role in roles:
        own = defined(role)
        used = reads(role)
        foreign = {name: {"defined_by": sorted(owners[name] - {role.name}), "read_in": sorted(files)}
                   for name, files in used.items()
                   if name in owners and name not in own and not name.startswith(PLATFORM_PREFIX)
                   and role.name not in owners[name]}
        out[role.name] = dict(sorted(foreign.items()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--roles", default=str(ROOT / "roles"))
    args = parser.parse_args()
    table = coupling(Path(args.roles))
    total = sum(len(v) for v in table.values())
    if args.json:
        print(json.dumps({"roles": table, "total": total}, indent=2))
        return 0
    for role, foreign in table.items():
        print("%-18s %2d  %s" % (role, len(foreign), ", ".join("%s (%s)" % (n, "/".join(v["defined_by"]))
                                                               for n, v in foreign.items())))
    coupled = sum(1 for v in table.values() if v)
    print("role coupling: %d variables read from other roles, in %d of %d roles" % (total, coupled, len(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
