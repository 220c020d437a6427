"""helm_pinned_release's EXAMPLES work (tests/modules/test_module_docs.py checks the docs of every module)."""
from __future__ import annotations

import os
import tarfile

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.modules import helm_pinned_release as mod
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import helm_pinned_release
from tests.modules.harness import run_module

FQCN = "gpu_platform.cluster.helm_pinned_release"


def examples():
    return yaml.safe_load(mod.EXAMPLES)


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
    request = helm_pinned_release.prepare_request(params)
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
