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


def test_argocd_lists_the_unit_folders_but_monitoring_which_syncs_on_its_own(tmp_path):
    # monitoring left the root's list (issue 30): the Prometheus Operator's kinds, in the root's sync, stopped its waves
    # on a cluster without those CRDs. Its folder keeps a kustomization.yaml for an Application of its own.
    root = bundle(tmp_path, units=("monitoring", "gpu-operator"))
    failed, result = run(root, render_format="argocd")
    assert not failed, result.get("msg")
    assert load(root / "kustomization.yaml")["resources"] == ["gpu-operator"]
    monitoring = load(root / "monitoring" / "kustomization.yaml")
    assert monitoring["resources"] == ["namespace-demo.yaml"]
    assert "argocd.argoproj.io/sync-wave" not in monitoring["commonAnnotations"], "no wave: no part of the root's sync"
    assert not list(root.glob("gpu-platform-*.yaml")), "no Flux Kustomization for Argo CD"


NIC_POLICY = ("---\napiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\n"
              "spec: {}\n")
RELEASE = ("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu-operator\n"
           "  namespace: gpu-operator\nspec: {}\n")


def test_flux_units_are_ready_only_when_their_policies_report_ready(tmp_path):
    """The NicClusterPolicy's unit reads its status.state; the GPU Operator's names the ClusterPolicy its chart makes."""
    root = bundle(tmp_path, units=("network-config", "gpu-operator"))
    (root / "network-config" / "nicclusterpolicy-nic-cluster-policy.yaml").write_text(NIC_POLICY)
    (root / "gpu-operator" / "helmrelease-gpu-operator-gpu-operator.yaml").write_text(RELEASE)
    failed, result = run(root)
    assert not failed, result.get("msg")
    config = load(root / "gpu-platform-network-config.yaml")["spec"]
    assert config["wait"] is True
    assert config["healthCheckExprs"] == [{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                                           "current": "status.state == 'ready'",
                                           "failed": "status.state in ['error', 'ignore']"}]
    operator = load(root / "gpu-platform-gpu-operator.yaml")["spec"]
    assert operator["healthChecks"] == [
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "gpu-operator",
         "namespace": "gpu-operator"},
        {"apiVersion": "v1", "kind": "Namespace", "name": "demo"},
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"}]
    assert [e["kind"] for e in operator["healthCheckExprs"]] == ["ClusterPolicy"] and "wait" not in operator
    failed, again = run(root)
    assert not failed and again["changed"] is False


def test_a_unit_file_that_is_not_an_object_fails_naming_it(tmp_path):
    root = bundle(tmp_path, units=("gpu-operator",))
    (root / "gpu-operator" / "broken.yaml").write_text("kind: [unclosed\n")
    failed, result = run(root)
    assert failed and "broken.yaml" in result["msg"] and "Fix:" in result["msg"]
    assert not (root / "kustomization.yaml").exists(), "nothing written"
    failed, result = run(root, render_format="argocd")  # Argo CD does not read the objects
    assert not failed, result.get("msg")


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
