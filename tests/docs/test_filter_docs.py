"""Every filter the collection exports has documentation that ansible-doc renders, true to the filter.

The filters are read from every ``FilterModule.filters()`` of plugins/filter/*.py (what Ansible loads), not from
the .yml files, so a filter added without its documentation fails here: ansible-doc must render each one without
an error or a warning, with a short description, a description, EXAMPLES that use it and RETURN; its options
must be the function's arguments (``_input`` for the first), and ``positional`` their order.
"""
from __future__ import annotations

import glob
import importlib
import inspect
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER_DIR = os.path.join(ROOT, "plugins", "filter")
PREFIX = "gpu_platform.cluster."


def exported_filters():
    """{name: function} over every filter plugin file's FilterModule.filters()."""
    found = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, "*.py"))):
        module = importlib.import_module("ansible_collections.gpu_platform.cluster.plugins.filter."
                                         + os.path.basename(path)[:-3])
        for name, func in module.FilterModule().filters().items():
            assert name not in found, "%s is exported twice (%s)" % (name, path)
            found[name] = func
    return found


FILTERS = exported_filters()


def ansible_doc(*args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", "filter"] + list(args),
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False)


def render(names):
    """({fqcn: ansible-doc's JSON}, stderr) for ``names``; ({}, stderr) when ansible-doc fails on any of them."""
    proc = ansible_doc("--json", *(PREFIX + name for name in names))
    return (json.loads(proc.stdout) if proc.returncode == 0 else {}), proc.stderr.strip()


@pytest.fixture(scope="module")
def rendered():
    """{fqcn: ansible-doc's JSON, or the errors and warnings it printed about that filter}.

    One run for every filter. ansible-doc prints nothing when it cannot document one of them, so the filters its
    messages name are set aside with those messages and the others are run again.
    """
    out, names = {}, sorted(FILTERS)
    while names:
        docs, errors = render(names)
        if docs and not errors:
            out.update(docs)
            break
        lines = errors.splitlines() or ["ansible-doc failed and said nothing"]
        named = {name: [line for line in lines if re.search(re.escape(PREFIX + name) + r"(?![\w.])", line)]
                 for name in names}
        named = {name: found for name, found in named.items() if found}
        if not named:  # a message that names no filter: it is every filter's
            out.update({PREFIX + name: errors or lines[0] for name in names})
            break
        out.update({PREFIX + name: "\n".join(found) for name, found in named.items()})
        names = [name for name in names if name not in named]
    return out


def test_the_filters_are_found():
    assert {"gpu_sharing_plan", "gpu_sharing_shortfall", "gpu_resource_shortfall", "smoke_tests_collect",
            "version_matrix_check", "platform_support_check", "node_label_patches"} <= set(FILTERS)


def test_every_documentation_file_belongs_to_an_exported_filter():
    files = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(FILTER_DIR, "*.yml"))}
    assert sorted(files - set(FILTERS)) == [], "documentation of no filter"
    assert sorted(set(FILTERS) - files) == [], "filters without their plugins/filter/<name>.yml"


def test_ansible_doc_lists_every_filter_documented():
    proc = ansible_doc("-l", "--json", "gpu_platform.cluster")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert sorted(listed) == sorted(PREFIX + name for name in FILTERS)
    assert [name for name, short in listed.items() if not short or short == "UNDOCUMENTED"] == []


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_ansible_doc_renders_the_filter_true_to_its_function(rendered, name):
    entry = rendered[PREFIX + name]
    assert not isinstance(entry, str), "ansible-doc: %s" % entry
    doc = entry["doc"]
    assert doc["name"] == name
    assert doc.get("short_description", "").strip(), "no short_description"
    assert doc.get("description"), "no description"
    params = list(inspect.signature(FILTERS[name]).parameters)
    assert list(doc.get("options") or {}) and set(doc["options"]) == {"_input"} | set(params[1:]), \
        "options %s, the function takes %s" % (sorted(doc.get("options") or {}), params)
    assert doc.get("positional") == ", ".join(["_input"] + params[1:])
    assert "_value" in (entry.get("return") or {}), "RETURN has no _value"
    assert (entry.get("examples") or "").strip(), "no EXAMPLES"


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_the_examples_are_tasks_that_use_the_filter(rendered, name):
    assert not isinstance(rendered[PREFIX + name], str), "ansible-doc: %s" % rendered[PREFIX + name]
    examples = rendered[PREFIX + name]["examples"] or ""
    assert examples.strip(), "no EXAMPLES"
    tasks = yaml.safe_load(examples)
    assert isinstance(tasks, list) and all(isinstance(t, dict) and t.get("name") for t in tasks), \
        "EXAMPLES must be a list of named tasks"
    assert "| " + PREFIX + name in examples, "no example calls the filter by its FQCN"
