"""The GitOps bundle's layout (pure): units, their order, Flux Kustomizations and Argo CD sync waves."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

EVERY = {unit: ["%s.yaml" % unit] for unit in bundle.UNITS}


def paths(units):
    return ["%s/%s" % (unit, name) for unit, names in units.items() for name in names]


def test_each_unit_depends_only_on_what_it_needs_and_absent_units_pass_their_dependencies_on():
    assert bundle.dependencies(list(bundle.UNITS)) == {
        "peermem": [], "network-operator": [], "network-config": ["network-operator"],
        "network-ipam": ["network-config"], "gpu-operator": ["peermem", "network-config"],
        "gpu-sharing": ["gpu-operator"], "dra-driver": ["gpu-operator"], "scheduling": ["gpu-operator"],
        "scheduling-config": ["scheduling"], "monitoring": ["gpu-operator"],
        "smoke": ["network-ipam", "gpu-sharing", "dra-driver", "scheduling-config"]}
    # No network layer and no DRA: the GPU Operator goes first; smoke waits for what is there.
    assert bundle.dependencies(["gpu-operator", "gpu-sharing", "scheduling", "scheduling-config", "smoke"]) == {
        "gpu-operator": [], "gpu-sharing": ["gpu-operator"], "scheduling": ["gpu-operator"],
        "scheduling-config": ["scheduling"], "smoke": ["gpu-sharing", "scheduling-config"]}
    # Only configs: each still waits for what its absent chart unit waited for.
    assert bundle.dependencies(["network-config", "smoke"]) == {"network-config": [], "smoke": ["network-config"]}
    assert bundle.dependencies(["network-config", "network-ipam", "smoke"]) == {
        "network-config": [], "network-ipam": ["network-config"], "smoke": ["network-ipam"]}


def test_the_ippool_comes_after_the_nic_cluster_policy_and_before_what_uses_it():
    """The Network Operator installs NV-IPAM's CRDs when it reconciles the NicClusterPolicy (its chart has none): a
    unit with both fails the reconciler's dry-run, so the IPPool's unit waits for the policy's to be ready."""
    deps = bundle.dependencies(list(bundle.UNITS))
    assert deps["network-ipam"] == ["network-config"] and "network-ipam" in deps["smoke"]
    waves = bundle.waves(list(bundle.UNITS))
    assert waves["network-ipam"] == waves["network-config"] + 1 < waves["smoke"]
    assert bundle.UNITS["network-ipam"][1]  # custom resources: Argo CD skips their dry-run


def test_waves_follow_the_dependencies():
    waves = bundle.waves(list(bundle.UNITS))
    for unit, deps in bundle.dependencies(list(bundle.UNITS)).items():
        assert all(waves[unit] > waves[d] for d in deps), unit
    assert waves["network-operator"] == 0 and waves["smoke"] == max(waves.values())


def test_flux_layout_orders_units_with_depends_on_and_wait():
    out = bundle.layout(paths(EVERY), "flux", "./clusters/prod/gpu-platform",
                        {"kind": "GitRepository", "name": "platform", "namespace": "gitops"}, "5m")
    assert out["kustomization.yaml"]["resources"] == ["gpu-platform-%s.yaml" % u for u in bundle.UNITS]
    config = out["gpu-platform-network-config.yaml"]
    assert config["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1" and config["metadata"]["namespace"] == "flux-system"
    spec = config["spec"]
    assert spec["path"] == "./clusters/prod/gpu-platform/network-config"
    assert spec["dependsOn"] == [{"name": "gpu-platform-network-operator"}]
    assert spec["wait"] is True and spec["prune"] is True and spec["interval"] == "5m" and spec["timeout"]
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": "platform", "namespace": "gitops"}
    assert "dependsOn" not in out["gpu-platform-network-operator.yaml"]["spec"]
    assert out["gpu-platform-smoke.yaml"]["spec"]["force"] is True
    assert "force" not in out["gpu-platform-gpu-operator.yaml"]["spec"]
    assert out["network-config/kustomization.yaml"] == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ["network-config.yaml"]}


def test_argocd_layout_has_waves_and_skips_the_dry_run_only_where_a_crd_comes_from_an_earlier_wave():
    out = bundle.layout(paths(EVERY), "argocd")
    # monitoring is synced on its own (see the next test): the root lists every other unit, in order.
    assert out["kustomization.yaml"]["resources"] == [u for u in bundle.UNITS if u != "monitoring"]
    assert not [k for k in out if k.startswith("gpu-platform-")], "no Flux objects in the Argo CD variant"
    chart = out["network-operator/kustomization.yaml"]["commonAnnotations"]
    config = out["network-config/kustomization.yaml"]["commonAnnotations"]
    assert chart == {"argocd.argoproj.io/sync-wave": "0"}
    assert config == {"argocd.argoproj.io/sync-wave": "1",
                      "argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true,ServerSideApply=true"}
    assert out["network-ipam/kustomization.yaml"]["commonAnnotations"] == {
        "argocd.argoproj.io/sync-wave": "2",
        "argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true,ServerSideApply=true"}


def test_argocd_syncs_monitoring_on_its_own_and_the_other_waves_do_not_change():
    """The Prometheus Operator's kinds come from outside the platform: in the root's sync, a cluster without their CRDs
    would stop at their wave and never reach the scheduling config and the smoke tests."""
    out = bundle.layout(paths(EVERY), "argocd")
    assert "monitoring" not in out["kustomization.yaml"]["resources"]
    assert out["monitoring/kustomization.yaml"] == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ["monitoring.yaml"],
        "commonAnnotations": {"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true,ServerSideApply=true"}}
    waves = {u: out["%s/kustomization.yaml" % u]["commonAnnotations"][bundle.SYNC_WAVE]
             for u in out["kustomization.yaml"]["resources"]}
    assert waves == {u: str(w) for u, w in bundle.waves(list(bundle.UNITS)).items() if u != "monitoring"}
    assert waves["scheduling-config"] == "4" and waves["smoke"] == "5"
    # Nothing may wait for a unit apart: Flux's dependsOn and Argo CD's waves would both wait for it.
    assert not [u for u, (deps, dummy, dummy2) in bundle.UNITS.items() if set(deps) & set(bundle.APART)]
    # Flux keeps its Kustomization, which nothing depends on.
    flux = bundle.layout(paths(EVERY), "flux")
    assert "gpu-platform-monitoring.yaml" in flux["kustomization.yaml"]["resources"]
    assert not [k for k, v in flux.items() if {"name": "gpu-platform-monitoring"} in (v.get("spec") or {}).get(
        "dependsOn", [])]


NIC = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "name": "nic-cluster-policy"}
POOL = {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "name": "rdma", "namespace": "nvidia-network-operator"}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "name": "gpu-operator", "namespace": ""}
REPOSITORY = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository", "name": "ngc", "namespace": "gpu-operator"}
RELEASE = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "gpu-operator",
           "namespace": "gpu-operator"}
POLICY_EXPRS = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "current": "status.state == 'ready'",
                "failed": "status.state == 'ignored'"}
NIC_EXPRS = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "current": "status.state == 'ready'",
             "failed": "status.state in ['error', 'ignore']"}


@pytest.mark.parametrize("unit, objects, expected", [
    # The NicClusterPolicy's unit applies it: wait, and the expression that reads its status.state.
    ("network-config", [NIC], {"wait": True, "healthCheckExprs": [NIC_EXPRS]}),
    ("network-ipam", [POOL], {"wait": True}),
    # The GPU Operator's unit applies a HelmRelease; the chart makes the ClusterPolicy, which wait would not see.
    ("gpu-operator", [NAMESPACE, REPOSITORY, RELEASE], {
        "healthChecks": [{"apiVersion": "v1", "kind": "Namespace", "name": "gpu-operator"},
                         dict(REPOSITORY), dict(RELEASE),
                         {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"}],
        "healthCheckExprs": [POLICY_EXPRS]}),
    # No HelmRelease (an Argo CD Application, or nothing of the chart): nothing made, only wait.
    ("gpu-operator", [NAMESPACE], {"wait": True}),
    # Kinds without a status field to read, and a ClusterPolicy applied by hand in another unit: read where applied.
    ("scheduling-config", [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "name": "a"}], {"wait": True}),
    ("gpu-sharing", [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "mine"}],
     {"wait": True, "healthCheckExprs": [POLICY_EXPRS]}),
    ("smoke", [], {"wait": True}),
    ("network-config", None, {"wait": True}),  # objects not known (the filter without objects): wait alone
])
def test_flux_health_judges_by_status_only_the_kinds_a_unit_holds(unit, objects, expected):
    assert bundle.flux_health(unit, objects) == expected


def test_flux_layout_gives_the_health_checks_of_each_units_objects():
    files = ["network-ipam/ippool.yaml", "network-config/nicclusterpolicy.yaml", "gpu-operator/namespace.yaml",
             "gpu-operator/helmrelease.yaml", "monitoring/configmap.yaml"]
    objects = {files[0]: [POOL], files[1]: [NIC], files[2]: [NAMESPACE], files[3]: [RELEASE],
               files[4]: [{"apiVersion": "v1", "kind": "ConfigMap", "name": "dashboard", "namespace": "gpu-operator"}]}
    out = bundle.layout(files, "flux", objects=objects)
    config = out["gpu-platform-network-config.yaml"]["spec"]
    assert config["wait"] is True and config["healthCheckExprs"] == [NIC_EXPRS]
    ipam = out["gpu-platform-network-ipam.yaml"]["spec"]
    assert ipam["wait"] is True and "healthCheckExprs" not in ipam
    assert ipam["dependsOn"] == [{"name": "gpu-platform-network-config"}]
    operator = out["gpu-platform-gpu-operator.yaml"]["spec"]
    assert "wait" not in operator and operator["healthCheckExprs"] == [POLICY_EXPRS]
    assert [c["kind"] for c in operator["healthChecks"]] == ["HelmRelease", "Namespace", "ClusterPolicy"]  # file order
    assert operator["dependsOn"] == [{"name": "gpu-platform-network-config"}]
    assert "healthCheckExprs" not in out["gpu-platform-monitoring.yaml"]["spec"]
    assert out["gpu-platform-monitoring.yaml"]["spec"]["wait"] is True
    # Without the NicClusterPolicy, no expression for it: only the kinds a unit holds.
    out = bundle.layout(files[:1] + files[2:], "flux", objects=objects)
    assert "gpu-platform-network-config.yaml" not in out
    assert not [k for k, v in out.items() if "healthCheckExprs" in (v.get("spec") or {}) and "network" in k]
    # Argo CD reads health from argocd-cm: no objects needed, no health checks in the bundle.
    assert bundle.layout(files, "argocd", objects=objects) == bundle.layout(files, "argocd")


@pytest.mark.parametrize("objects", [[{"apiVersion": "v1", "kind": "Namespace"}], [{"kind": "Namespace", "name": "x"}],
                                     ["namespace-x.yaml"], [{"apiVersion": "", "kind": "Namespace", "name": "x"}]])
def test_an_object_without_apiversion_kind_or_name_is_refused(objects):
    with pytest.raises(ParamError) as err:
        bundle.flux_health("gpu-operator", objects)
    assert err.value.field == "objects"


def test_only_units_with_files_are_laid_out_and_other_files_are_left_alone():
    out = bundle.layout(["gpu-operator/helmrelease.yaml", "gpu-operator/kustomization.yaml", "dashboards/gpu.json",
                         "helmrelease-old-flat-layout.yaml", "smoke/job.yaml"], "flux")
    assert sorted(out) == ["gpu-operator/kustomization.yaml", "gpu-platform-gpu-operator.yaml", "gpu-platform-smoke.yaml",
                           "kustomization.yaml", "smoke/kustomization.yaml"]
    assert out["gpu-operator/kustomization.yaml"]["resources"] == ["helmrelease.yaml"]
    assert out["gpu-platform-smoke.yaml"]["spec"]["dependsOn"] == [{"name": "gpu-platform-gpu-operator"}]
    assert out["gpu-platform-gpu-operator.yaml"]["spec"]["path"] == "./platform/gpu-operator"
    assert bundle.layout([], "flux") == {"kustomization.yaml": {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": []}}


@pytest.mark.parametrize("path", ["platform", "/srv/platform", "./a/../../b", "", None])
def test_a_flux_path_outside_the_repository_is_refused_naming_the_variable(path):
    with pytest.raises(ParamError) as err:
        bundle.layout([], "flux", path)
    assert err.value.field == "gpu_platform_flux_path" and "starting with ./" in err.value.msg


@pytest.mark.parametrize("root, path, expected", [
    ("/srv/git/platform", None, "./platform"), ("build/platform/", "", "./platform"),
    ("/srv/git/platform", "./clusters/prod/gpu", "./clusters/prod/gpu")])
def test_the_flux_path_defaults_to_the_render_folders_name(root, path, expected):
    assert bundle.flux_path(root, path) == expected


@pytest.mark.parametrize("source", [{"name": ""}, {"kind": "HelmRepository", "name": "x"}, {"name": "x", "ref": "y"},
                                    "flux-system"])
def test_a_bad_flux_source_is_refused_naming_the_variable(source):
    with pytest.raises(ParamError) as err:
        bundle.layout([], "flux", "./platform", source)
    assert err.value.field == "gpu_platform_flux_source"


def test_unknown_unit_and_format_are_refused():
    with pytest.raises(ParamError) as err:
        bundle.unit_dir("/srv/platform", "operators")
    assert "network-operator" in err.value.msg
    assert bundle.unit_dir("", "gpu-operator") == ""
    assert bundle.unit_dir("/srv/platform/", "gpu-operator") == "/srv/platform/gpu-operator"
    with pytest.raises(ParamError) as err:
        bundle.layout([], "helmfile")
    assert err.value.field == "gpu_platform_render_format"
