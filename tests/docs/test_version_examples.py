"""Every GPU Operator and Network Operator version a user would copy from the docs is the one the roles pin
(roles/gpu_operator/defaults: gpu_operator_chart_version, roles/network_operator/defaults:
network_operator_chart_version, both the default release pair's): the variables set in README.md, docs/*.md and the modules' EXAMPLES, the
``chart_version`` of a gpu-operator or network-operator chart in a ```yaml block or an EXAMPLES task, and the versions
README.md names in prose. The version matrix's own rows (docs/versions.md) talk about other releases on purpose and
set none of these."""
from __future__ import annotations

import ast
import glob
import os
import re

import pytest
import yaml
from local_gpu_cluster import pins

from tests.docs.doc_repository import ROOT

SETTING = re.compile(r"\b(gpu_operator_chart_version|network_operator_chart_version|network_operator_version)"
                     r"`?\s*[:=]\s*[\"']?(v?\d+\.\d+\.\d+[\w.\-]*)")
README_PROSE = re.compile(r"\b(GPU Operator|Network Operator) (v?\d+\.\d+\.\d+)\b")
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.S)
OPERATOR_OF = {"gpu_operator_chart_version": "gpu-operator", "network_operator_chart_version": "network-operator",
               "network_operator_version": "network-operator", "GPU Operator": "gpu-operator",
               "Network Operator": "network-operator"}


def _default(role, name):
    """The role's pin as the version it stands for (the release pair's, local_gpu_cluster.pins)."""
    return str(pins.role_defaults(role, ROOT)[name])


PINS = {"gpu-operator": _default("gpu_operator", "gpu_operator_chart_version"),
        "network-operator": _default("network_operator", "network_operator_chart_version")}


def _pinned(chart, version):
    return version.lstrip("v") == PINS[chart].lstrip("v")


def _texts():
    """(name, text, yaml texts) of README.md, docs/*.md and each module's EXAMPLES."""
    out = []
    for path in ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            text = handle.read()
        out.append((os.path.relpath(os.path.join(ROOT, path), ROOT), text, YAML_BLOCK.findall(text)))
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["EXAMPLES"]:
                examples = node.value.value
                out.append((os.path.relpath(path, ROOT) + " EXAMPLES", examples, [examples]))
    return out


def _chart_versions(document):
    """(chart, version) of every mapping in a YAML document with a gpu-operator/network-operator chart_ref or
    chart and a chart_version."""
    try:
        data = yaml.safe_load(document)
    except yaml.YAMLError:
        return []
    found, stack = [], [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = str(node.get("chart_ref", node.get("chart", "")))
            chart = next((c for c in PINS if os.path.basename(ref).startswith(c)), None)
            if chart and "chart_version" in node:
                found.append((chart, str(node["chart_version"])))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def unpinned():
    """'<where>: <what> names <version>, not the pinned <pin>' for each version that is not a pin."""
    wrong = []
    for name, text, documents in _texts():
        for match in SETTING.finditer(text):
            chart = OPERATOR_OF[match.group(1)]
            if not _pinned(chart, match.group(2)):
                wrong.append("%s: %s %s, not the pinned %s" % (name, match.group(1), match.group(2), PINS[chart]))
        for document in documents:
            for chart, version in _chart_versions(document):
                if not _pinned(chart, version):
                    wrong.append("%s: a %s chart_version %s, not the pinned %s" % (name, chart, version, PINS[chart]))
        if name == "README.md":
            for match in README_PROSE.finditer(text):
                chart = OPERATOR_OF[match.group(1)]
                if not _pinned(chart, match.group(2)):
                    wrong.append("%s: %s %s, not the pinned %s" % (name, match.group(1), match.group(2), PINS[chart]))
    return wrong


def test_every_operator_version_to_copy_is_a_pin():
    assert unpinned() == []


def test_the_check_sees_each_kind_of_unpinned_version(monkeypatch):
    """The three ways a stale version showed up (issue 33): an install example, a variable, README's prose."""
    # another release pair's versions (aks-guide's): the docs show the default pair's, and name the others
    readme = ("GPU Operator v26.3.3 is installed.\n\n```yaml\n- gpu_platform.cluster.helm_pinned_release:\n"
              "    chart_ref: gpu-operator\n    chart_version: v26.3.3\n```\n`network_operator_chart_version: 26.4.0`\n")
    monkeypatch.setitem(globals(), "_texts", lambda: [("README.md", readme, YAML_BLOCK.findall(readme))])
    assert sorted(unpinned()) == sorted([
        "README.md: network_operator_chart_version 26.4.0, not the pinned %s" % PINS["network-operator"],
        "README.md: a gpu-operator chart_version v26.3.3, not the pinned %s" % PINS["gpu-operator"],
        "README.md: GPU Operator v26.3.3, not the pinned %s" % PINS["gpu-operator"]])


@pytest.mark.parametrize("chart", sorted(PINS))
def test_the_pins_are_read(chart):
    assert re.fullmatch(r"v?\d+\.\d+\.\d+", PINS[chart])
