"""Flux and Argo CD rendering of a pinned release (pure)."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import flux_argocd as gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import helm_pinned_release as d

BASE = {"release_name": "gpu-operator", "release_namespace": "gpu-operator", "chart_ref": "gpu-operator",
        "chart_repo_url": "https://helm.ngc.nvidia.com/nvidia/", "chart_version": "v26.7.0",
        "create_namespace": True, "namespace_labels": {"pod-security.kubernetes.io/enforce": "privileged"},
        "render_to": "/tmp/out"}
VALUES = {"driver": {"enabled": False}}


def request(**over):
    req = d.build_request(dict(BASE, **over))
    req.values = d.merge_values([], VALUES)
    return req


def by_kind(objects):
    return {o["kind"]: o for o in objects}


def test_flux_repository_chart():
    objs = gitops.render(request())
    assert [o["kind"] for o in objs] == ["Namespace", "HelmRepository", "HelmRelease"]
    kinds = by_kind(objs)
    assert kinds["Namespace"]["metadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "privileged"}
    assert kinds["HelmRepository"]["spec"]["url"] == "https://helm.ngc.nvidia.com/nvidia"
    spec = kinds["HelmRelease"]["spec"]
    assert spec["chart"]["spec"]["version"] == "v26.7.0"
    assert spec["chart"]["spec"]["sourceRef"] == {"kind": "HelmRepository", "name": kinds["HelmRepository"]["metadata"]["name"]}
    assert spec["values"] == VALUES
    assert spec["install"]["disableWait"] is True
    assert spec["install"]["remediation"] == {"retries": 3}, "a failed install is retried"
    assert spec["upgrade"]["remediation"] == {"retries": 3, "strategy": "rollback"}, "a failed upgrade rolled back"


def test_flux_wait_atomic_and_timeout():
    spec = by_kind(gitops.render(request(wait=True, atomic=True, wait_timeout="10m")))["HelmRelease"]["spec"]
    assert spec["timeout"] == "600s"
    assert spec["install"]["disableWait"] is False
    assert spec["install"]["remediation"] == {"retries": 3, "remediateLastFailure": True}
    assert spec["upgrade"]["remediation"] == {"retries": 3, "strategy": "rollback", "remediateLastFailure": True}


def test_flux_oci_chart():
    objs = gitops.render(request(chart_ref="oci://ghcr.io/nvidia/charts/gpu-operator", chart_repo_url=""))
    kinds = by_kind(objs)
    assert "HelmRepository" not in kinds
    assert kinds["OCIRepository"]["spec"]["url"] == "oci://ghcr.io/nvidia/charts/gpu-operator"
    assert kinds["OCIRepository"]["spec"]["ref"] == {"tag": "v26.7.0"}
    assert kinds["HelmRelease"]["spec"]["chartRef"] == {"kind": "OCIRepository", "name": "gpu-operator"}
    assert "chart" not in kinds["HelmRelease"]["spec"]


def test_no_namespace_object_unless_created():
    objs = gitops.render(request(create_namespace=False, namespace_labels=None))
    assert "Namespace" not in by_kind(objs)


def test_argocd_application():
    (app,) = gitops.render(request(render_format="argocd", argocd_namespace="gitops"))
    assert app["metadata"]["namespace"] == "gitops"
    assert app["spec"]["source"] == {"repoURL": "https://helm.ngc.nvidia.com/nvidia", "chart": "gpu-operator",
                                     "targetRevision": "v26.7.0",
                                     "helm": {"releaseName": "gpu-operator", "valuesObject": VALUES}}
    assert app["spec"]["destination"]["namespace"] == "gpu-operator"
    assert "CreateNamespace=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert app["spec"]["syncPolicy"]["managedNamespaceMetadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "privileged"}


def test_argocd_oci_uses_helm_oci_form():
    (app,) = gitops.render(request(render_format="argocd", chart_ref="oci://ghcr.io/nvidia/charts/gpu-operator", chart_repo_url=""))
    assert app["spec"]["source"]["repoURL"] == "ghcr.io/nvidia/charts"
    assert app["spec"]["source"]["chart"] == "gpu-operator"


def test_sha256_recorded_as_annotation():
    digest = "b" * 64
    release = by_kind(gitops.render(request(chart_sha256=digest)))["HelmRelease"]
    assert release["metadata"]["annotations"] == {gitops.SHA_ANNOTATION: digest}


@pytest.mark.parametrize("url, name", [
    ("https://helm.ngc.nvidia.com/nvidia", "helm-ngc-nvidia-com-nvidia"),
    ("http://127.0.0.1:8080/", "127-0-0-1-8080"),
    ("https://" + "x" * 80 + ".example", "x" * 63),
])
def test_source_name_is_stable_and_valid(url, name):
    assert gitops.source_name(url) == name


def test_file_names_are_stable_and_cover_both_formats():
    req = request()
    names = {gitops.file_name(o) for o in gitops.render(req)}
    assert names == {"namespace-gpu-operator.yaml", "helmrepository-gpu-operator-helm-ngc-nvidia-com-nvidia.yaml",
                     "helmrelease-gpu-operator-gpu-operator.yaml"}
    assert "helmrelease-gpu-operator-gpu-operator.yaml" in gitops.all_file_names(req)
    assert "application-argocd-gpu-operator.yaml" in gitops.all_file_names(req)


def test_flux_depends_on_other_releases():
    spec = by_kind(gitops.render(request(depends_on=[
        {"name": "network-operator", "namespace": "nvidia-network-operator"}, {"name": "nfd"},
        {"name": "nfd", "namespace": "gpu-operator"}])))["HelmRelease"]["spec"]
    assert spec["dependsOn"] == [{"name": "nfd", "namespace": "gpu-operator"},
                                 {"name": "network-operator", "namespace": "nvidia-network-operator"}], \
        "the namespace defaults to the release's own; duplicates go"
    assert "dependsOn" not in by_kind(gitops.render(request()))["HelmRelease"]["spec"]
    app = gitops.render(request(render_format="argocd", depends_on=[{"name": "network-operator"}]))[0]
    assert "dependsOn" not in str(app), "Argo CD has no such field: the bundle's waves order the units"


@pytest.mark.parametrize("depends_on, field", [
    ("network-operator", "depends_on"),
    ([{"name": "Network_Operator"}], "depends_on[0].name"),
    ([{"name": "a", "namespace": "Bad NS"}], "depends_on[0].namespace"),
    ([{"name": "a", "kind": "HelmRelease"}], "depends_on[0]"),
    ([{"name": "gpu-operator"}], "depends_on"),  # itself
])
def test_bad_depends_on_is_refused(depends_on, field):
    with pytest.raises(d.ParamError) as err:
        request(depends_on=depends_on)
    assert err.value.field == field
