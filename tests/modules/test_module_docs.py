"""Every module: ansible-doc renders it, documents exactly its argument spec, and its EXAMPLES use real options."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py"))


def load(name):
    return importlib.import_module("ansible_collections.gpu_platform.cluster.plugins.modules." + name)


def test_modules_found():
    assert {"helm_pinned_release", "nic_cluster_policy"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_ansible_doc_matches_the_argument_spec(name):
    fqcn = "gpu_platform.cluster." + name
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "--json", fqcn],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    options = json.loads(proc.stdout)[fqcn]["doc"]["options"]
    spec = load(name).ARGUMENT_SPEC
    assert set(options) == set(spec)
    for option, entry in spec.items():
        assert sorted(options[option].get("aliases", [])) == sorted(entry.get("aliases", [])), option
        if "options" in entry:
            assert set(options[option]["suboptions"]) == set(entry["options"]), option


@pytest.mark.parametrize("name", MODULES)
def test_examples_use_only_real_options(name):
    module = load(name)
    known = set(module.ARGUMENT_SPEC)
    for entry in module.ARGUMENT_SPEC.values():
        known.update(entry.get("aliases", []))
    tasks = [t for t in yaml.safe_load(module.EXAMPLES) if "gpu_platform.cluster." + name in t]
    assert tasks
    for task in tasks:
        assert set(task["gpu_platform.cluster." + name]) <= known, task["name"]
