"""Every role has meta/argument_specs.yml, and its specs and defaults/main.yml agree."""
from __future__ import annotations

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", d)))
TYPES = {"str": str, "bool": bool, "int": int, "float": (int, float), "dict": dict, "list": list, "raw": object}


def load(role, *parts):
    path = os.path.join(ROOT, "roles", role, *parts)
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def test_there_are_roles():
    assert "gpu_operator" in ROLES


@pytest.mark.parametrize("role", ROLES)
def test_specs_and_defaults_agree(role):
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = load(role, "defaults", "main.yml")
    # An option without a default (unset means something, such as the kubeconfig's own context) has none in
    # defaults/main.yml either; every other option has the same default in both.
    with_default = {name for name, spec in options.items() if "default" in spec}
    assert with_default == set(defaults), "defaults and argument specs name different variables"
    for name, spec in options.items():
        assert name.startswith(role + "_"), "%s: public variables carry the role name" % name
        assert spec.get("description"), "%s has no description" % name
        if name not in with_default:
            continue
        assert spec.get("default") == defaults[name], name
        value = defaults[name]
        if not (isinstance(value, str) and "{{" in value):
            assert isinstance(value, TYPES[spec["type"]]), "%s: default %r is not a %s" % (name, value, spec["type"])
        if "choices" in spec and not (isinstance(value, str) and "{{" in value):
            chosen = value if spec["type"] == "list" else [value]
            assert all(v in spec["choices"] for v in chosen), name


def test_role_readmes_are_generated_from_the_specs():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "role_readme.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
