"""gitops_bundle: the kustomizations that tie a rendered bundle's units together, in the platform's order; written
only when they change; check and diff mode; node label patch lists and stray files left out; bad options named."""
from __future__ import annotations

import yaml

from tests.modules.harness import run_module
from tests.modules.test_controller_execution import play

MANIFEST = "# a unit's object\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n"


def bundle(tmp_path, units=("gpu-operator", "network-operator", "monitoring")):
    root = tmp_path / "platform"
    for unit in units:
        (root / unit).mkdir(parents=True)
        (root / unit / "namespace-demo.yaml").write_text(MANIFEST)
    return root


def run(root, check_mode=False, diff=False, **params):
    return run_module("gitops_bundle", dict({"render_to": str(root)}, **params), check_mode=check_mode, diff=diff)


def load(path):
    return yaml.safe_load(path.read_text())


def test_flux_units_in_the_platforms_order_then_nothing_changes(tmp_path):
    root = bundle(tmp_path)
    (root / "gpu-sharing").mkdir()
    (root / "gpu-sharing" / "pool-a-node-labels.yaml").write_text("[]\n")  # kubectl label input, not an object
    (root / "notes.yaml").write_text("kind: Stray\n")
    failed, result = run(root)
    assert not failed, result.get("msg")
    assert result["units"] == ["network-operator", "gpu-operator", "monitoring"]
    assert result["changed"] is True and sorted(result["changed_files"]) == result["files"]
    root_kustomization = load(root / "kustomization.yaml")
    assert root_kustomization["resources"] == ["gpu-platform-network-operator.yaml", "gpu-platform-gpu-operator.yaml",
                                               "gpu-platform-monitoring.yaml"]
    flux = load(root / "gpu-platform-gpu-operator.yaml")
    assert flux["kind"] == "Kustomization" and flux["spec"]["path"] == "./platform/gpu-operator"
    assert {"name": "gpu-platform-network-operator"} in flux["spec"]["dependsOn"]
    assert load(root / "gpu-operator" / "kustomization.yaml")["resources"] == ["namespace-demo.yaml"]
    assert not (root / "gpu-sharing" / "kustomization.yaml").exists(), "a folder of label patches is no unit"
    before = {p: p.read_text() for p in root.rglob("*.yaml")}
    failed, again = run(root)
    assert not failed and again["changed"] is False and again["changed_files"] == []
    assert {p: p.read_text() for p in root.rglob("*.yaml")} == before


def test_check_mode_writes_nothing_and_diff_shows_each_file(tmp_path):
    root = bundle(tmp_path, units=("gpu-operator",))
    failed, result = run(root, check_mode=True, diff=True)
    assert not failed and result["changed"] is True
    assert sorted(result["changed_files"]) == ["gpu-operator/kustomization.yaml", "gpu-platform-gpu-operator.yaml",
                                               "kustomization.yaml"]
    assert not (root / "kustomization.yaml").exists()
    assert [d["before"] for d in result["diff"]] == ["", "", ""]
    assert any("gpu-platform-gpu-operator.yaml" in d["after"] for d in result["diff"])


def test_argocd_lists_the_unit_folders(tmp_path):
    root = bundle(tmp_path, units=("monitoring", "gpu-operator"))
    failed, result = run(root, render_format="argocd")
    assert not failed, result.get("msg")
    assert load(root / "kustomization.yaml")["resources"] == ["gpu-operator", "monitoring"]
    assert not list(root.glob("gpu-platform-*.yaml")), "no Flux Kustomization for Argo CD"


def test_the_flux_path_and_source_are_checked_naming_the_field(tmp_path):
    root = bundle(tmp_path, units=("gpu-operator",))
    failed, result = run(root, flux_path="clusters/prod")
    assert failed and result["msg"].startswith("flux_path: 'clusters/prod' is not a folder inside the Git repository")
    assert "Fix:" in result["msg"] and "Traceback" not in result["msg"]
    assert not (root / "kustomization.yaml").exists(), "nothing written"
    failed, result = run(root, flux_source={"kind": "Bucket"})
    assert failed and result["msg"].startswith("flux_source: ")
    failed, result = run(root, flux_path="./clusters/prod", flux_source={"kind": "GitRepository", "name": "fleet"})
    assert not failed, result.get("msg")
    spec = load(root / "gpu-platform-gpu-operator.yaml")["spec"]
    assert spec["path"] == "./clusters/prod/gpu-operator" and spec["sourceRef"]["name"] == "fleet"


def test_a_missing_folder_has_no_units_and_a_bad_format_is_refused(tmp_path):
    failed, result = run(tmp_path / "nothing-here", render_format="kustomize")
    assert failed and "render_format" in result["msg"]


def test_it_runs_in_the_controller_process(tmp_path):
    root = bundle(tmp_path, units=("gpu-operator",))
    results, stdout = play(tmp_path, [{"gpu_platform.cluster.gitops_bundle": {"render_to": str(root)}}], "-vvv")
    assert results[0]["changed"] is True and results[0]["units"] == ["gpu-operator"]
    assert "AnsiballZ_gitops_bundle" not in stdout
