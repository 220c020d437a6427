"""ansible-doc renders helm_pinned_release, its options match the argument spec, and its EXAMPLES work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.modules import helm_pinned_release as mod
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import helm_release
from tests.modules.harness import run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FQCN = "gpu_platform.cluster.helm_pinned_release"


@pytest.fixture(scope="module")
def doc():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"))
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    proc = subprocess.run([ansible_doc, "--json", FQCN], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)[FQCN]


def test_ansible_doc_renders_every_option(doc):
    documented = set(doc["doc"]["options"])
    assert documented == set(mod.ARGUMENT_SPEC)
    for name, spec in mod.ARGUMENT_SPEC.items():
        assert sorted(doc["doc"]["options"][name].get("aliases", [])) == sorted(spec.get("aliases", [])), name


def examples():
    return yaml.safe_load(mod.EXAMPLES)


def test_examples_use_only_real_options():
    known = set(mod.ARGUMENT_SPEC)
    for spec in mod.ARGUMENT_SPEC.values():
        known.update(spec.get("aliases", []))
    for task in examples():
        assert set(task[FQCN]) <= known, task["name"]


def local_archive(tmp_path, file_name, version):
    """A packaged chart named like the example's, so the air-gapped example is checked for real."""
    chart = tmp_path / "gpu-operator"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: gpu-operator\nversion: %s\n" % version)
    archive = tmp_path / file_name
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(chart, arcname="gpu-operator")
    return str(archive)


def canonical(params):
    """Example params with aliases resolved to option names."""
    alias_of = {a: name for name, spec in mod.ARGUMENT_SPEC.items() for a in spec.get("aliases", [])}
    return {alias_of.get(k, k): v for k, v in params.items()}


@pytest.mark.parametrize("task", examples(), ids=lambda t: t["name"])
def test_examples_pass_validation(task, tmp_path):
    params = canonical(task[FQCN])
    if "values_files" in params:
        params["values_files"] = []
    if "chart_ref" in params and params["chart_ref"].startswith("/"):
        params["chart_ref"] = local_archive(tmp_path, os.path.basename(params["chart_ref"]), params["chart_version"])
    if "render_to" in params:
        params["render_to"] = str(tmp_path / "out")
    request = helm_release.prepare_request(params)
    assert request.name == params["release_name"]


@pytest.mark.parametrize("task", [t for t in examples() if "render_to" in t[FQCN]], ids=lambda t: t["name"])
def test_render_examples_run(task, tmp_path, shared_dir):
    from tests.schema import crdschema
    params = dict(task[FQCN], render_to=str(tmp_path / "out"))
    failed, result = run_module("helm_pinned_release", params)
    assert not failed, result
    for obj in result["objects"]:
        if obj["kind"] != "Namespace":
            crdschema.validate(obj)
