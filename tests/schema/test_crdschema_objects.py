"""Tests of tests/schema/crdschema.py against the real upstream CRDs in ../shared/upstream: the catalogue,
valid objects, invalid objects (each error names its path) and core kinds.

A missing ../shared directory makes these tests fail (never skip)."""
from __future__ import annotations

import base64
import copy

import pytest

from tests.schema import crdschema
from tests.schema.crdschema import (
    UPSTREAM_DIR, CrdCatalog, SchemaValidationError, core_errors, crd_errors, validate, validate_core)

HELM_RELEASE = {
    "apiVersion": "helm.toolkit.fluxcd.io/v2",
    "kind": "HelmRelease",
    "metadata": {"name": "gpu-operator", "namespace": "flux-system",
                 "labels": {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}},
    "spec": {
        "interval": "10m",
        "releaseName": "gpu-operator",
        "targetNamespace": "gpu-operator",
        "chart": {"spec": {"chart": "gpu-operator", "version": "v26.7.0", "interval": "1h",
                           "sourceRef": {"kind": "HelmRepository", "name": "nvidia", "namespace": "flux-system"}}},
        "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
        "values": {"driver": {"enabled": True, "version": "595.91.07"}, "toolkit": {"env": [{"name": "A"}]},
                   "anything": [1, "two", {"three": None}]},
    },
}
HELM_REPOSITORY = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "HelmRepository",
    "metadata": {"name": "nvidia", "namespace": "flux-system"},
    "spec": {"url": "https://helm.ngc.nvidia.com/nvidia", "interval": "1h", "type": "default"},
}
OCI_REPOSITORY = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "OCIRepository",
    "metadata": {"name": "demo-operator", "namespace": "flux-system"},
    "spec": {"url": "oci://127.0.0.1:5000/charts/demo-operator", "interval": "1h", "ref": {"tag": "1.1.0"},
             "layerSelector": {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                               "operation": "copy"}},
}
ARGO_APPLICATION = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "gpu-operator", "namespace": "argocd"},
    "spec": {
        "project": "default",
        "source": {"repoURL": "https://helm.ngc.nvidia.com/nvidia", "chart": "gpu-operator",
                   "targetRevision": "v26.7.0",
                   "helm": {"releaseName": "gpu-operator", "valuesObject": {"driver": {"enabled": False}}}},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "gpu-operator"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}, "syncOptions": ["CreateNamespace=true"],
                       "retry": {"limit": 5, "backoff": {"duration": "5s", "factor": 2}}},
    },
}
CLUSTER_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "gpus"},
    "spec": {"namespaceSelector": {},
             "resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu"], "flavors": [
                 {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8},
                                                {"name": "cpu", "nominalQuota": "64"}]},
                 {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"},
                                                {"name": "cpu", "nominalQuota": "1500m"}]}]}]},
}
VALID_OBJECTS = {"HelmRelease": HELM_RELEASE, "HelmRepository": HELM_REPOSITORY, "OCIRepository": OCI_REPOSITORY,
                 "Application": ARGO_APPLICATION, "ClusterQueue": CLUSTER_QUEUE}


def _with(obj: dict, path, value=None, delete: bool = False) -> dict:
    """A deep copy of *obj* with *path* (dotted string or tuple of keys) set to *value* (or deleted)."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".") if isinstance(path, str) else path
    node = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if delete:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


# -- the catalogue ------------------------------------------------------------------------

def test_shared_upstream_directory_is_present():
    # Deliberately an assertion, not a skip: without ../shared the schema layer tests nothing.
    assert UPSTREAM_DIR.is_dir(), f"{UPSTREAM_DIR} is missing"


def test_catalog_loads_every_upstream_crd():
    kinds = crdschema.catalog().kinds()
    for expected in [("helm.toolkit.fluxcd.io", "HelmRelease"), ("source.toolkit.fluxcd.io", "HelmRepository"),
                     ("source.toolkit.fluxcd.io", "OCIRepository"), ("argoproj.io", "Application"),
                     ("nvidia.com", "ClusterPolicy"), ("kueue.x-k8s.io", "ClusterQueue"),
                     ("scheduling.volcano.sh", "Queue"), ("scheduling.run.ai", "Queue")]:
        assert expected in kinds
    assert crdschema.catalog() is crdschema.catalog()  # cached per process


def test_missing_upstream_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        CrdCatalog(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no CustomResourceDefinition"):
        CrdCatalog(tmp_path / "empty")


# -- valid objects ------------------------------------------------------------------------

@pytest.mark.parametrize("obj", VALID_OBJECTS.values(), ids=VALID_OBJECTS.keys())
def test_valid_objects_pass(obj):
    assert crd_errors(obj) == []
    validate(obj)


def test_helm_repository_of_type_oci_passes():
    assert crd_errors(_with(HELM_REPOSITORY, "spec", {"type": "oci", "url": "oci://127.0.0.1:5000/charts"})) == []


def test_cluster_scoped_kind_needs_no_namespace():
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
              "spec": {"driver": {"enabled": True}}}
    errors = crd_errors(policy)
    # ClusterPolicy requires many spec sections; none of the errors may be about the namespace.
    assert errors and not any(e.startswith("metadata.namespace") for e in errors)
    assert "spec.operator: required field is missing" in errors


def test_required_field_with_a_default_may_be_omitted():
    # spec.verify.provider is required but defaults to "cosign": the API server fills it in.
    assert crd_errors(_with(OCI_REPOSITORY, "spec.verify", {})) == []
    assert crd_errors(_with(OCI_REPOSITORY, "spec.verify", {"provider": "gpg"})) == [
        "spec.verify.provider: 'gpg' is not one of ['cosign', 'notation']"]


def test_preserve_unknown_fields_accepts_anything_below():
    values = {"deeply": {"nested": [{"any": {"thing": 1.5}}]}, "x": None}
    assert crd_errors(_with(HELM_RELEASE, "spec.values", values)) == []
    assert crd_errors(_with(ARGO_APPLICATION, "spec.source.helm.valuesObject", values)) == []


def test_int_or_string_fields():
    base = "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota"
    assert crd_errors(_with(CLUSTER_QUEUE, base, "10Gi")) == []
    assert crd_errors(_with(CLUSTER_QUEUE, base, 10)) == []
    errors = crd_errors(_with(CLUSTER_QUEUE, base, 1.5))
    assert errors == ["spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: "
                      "1.5 is not of type 'integer', 'string'"]


def test_list_map_keys_must_be_unique():
    obj = _with(CLUSTER_QUEUE, "spec.resourceGroups.0.flavors.1.name", "a100")
    errors = crd_errors(obj)
    assert len(errors) == 1
    assert errors[0].startswith("spec.resourceGroups[0].flavors[1]: duplicate entry (name='a100')")


def test_list_set_items_must_be_unique():
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
               "metadata": {"name": "dcgm", "namespace": "gpu-operator"},
               "spec": {"selector": {}, "endpoints": [{"port": "metrics", "targetPort": 9400}],
                        "scrapeProtocols": ["PrometheusText0.0.4", "PrometheusText0.0.4"]}}
    assert [e.split(":")[0] for e in crd_errors(monitor)] == ["spec.scrapeProtocols"]
    monitor["spec"]["scrapeProtocols"] = ["PrometheusText0.0.4"]
    assert crd_errors(monitor) == []


# -- invalid objects: each error names its path -------------------------------------------

INVALID_CASES = [
    # (object, path, value or _DELETE, expected error)
    (HELM_RELEASE, "spec.chart.spec.chartt", "gpu-operator", "spec.chart.spec.chartt: unknown field"),
    (HELM_RELEASE, "spec.valuez", {}, "spec.valuez: unknown field"),
    (HELM_RELEASE, "spec.chart.spec.sourceRef.nmae", "x", "spec.chart.spec.sourceRef.nmae: unknown field"),
    (HELM_RELEASE, "metadata.labelz", {}, "metadata.labelz: unknown field"),
    (HELM_RELEASE, "spec.interval", 600, "spec.interval: 600 is not of type 'string'"),
    (HELM_RELEASE, "spec.interval", None, "spec.interval: None is not of type 'string'"),
    (HELM_RELEASE, "spec.interval", "10 minutes", "spec.interval: '10 minutes' does not match"),
    (HELM_RELEASE, "spec.install.remediation.retries", "3", "spec.install.remediation.retries: '3' is not of type 'integer'"),
    (HELM_RELEASE, "spec.chart.spec.sourceRef.kind", "OCIRepository", "spec.chart.spec.sourceRef.kind: 'OCIRepository' is not one of"),
    (HELM_RELEASE, "spec.chart.spec.sourceRef.name", "_DELETE", "spec.chart.spec.sourceRef.name: required field is missing"),
    (HELM_RELEASE, "spec.interval", "_DELETE", "spec.interval: required field is missing"),
    (HELM_RELEASE, "spec.chart.spec.chart", "", "spec.chart.spec.chart: '' should be non-empty"),
    (HELM_REPOSITORY, "spec.url", "ftp://example.com", "spec.url: 'ftp://example.com' does not match"),
    (HELM_REPOSITORY, "spec.type", "git", "spec.type: 'git' is not one of ['default', 'oci']"),
    (OCI_REPOSITORY, "spec.url", "https://example.com/x", "spec.url: 'https://example.com/x' does not match"),
    (OCI_REPOSITORY, "spec.ref.tagg", "1.0.0", "spec.ref.tagg: unknown field"),
    (OCI_REPOSITORY, "spec.url", "_DELETE", "spec.url: required field is missing"),
    (ARGO_APPLICATION, "spec.source.helm.valueObject", {}, "spec.source.helm.valueObject: unknown field"),
    (ARGO_APPLICATION, "spec.source.targetRevision", 26, "spec.source.targetRevision: 26 is not of type 'string'"),
    (ARGO_APPLICATION, "spec.project", "_DELETE", "spec.project: required field is missing"),
    (ARGO_APPLICATION, "spec.destination", "_DELETE", "spec.destination: required field is missing"),
    (ARGO_APPLICATION, "spec.source.repoURL", "_DELETE", "spec.source.repoURL: required field is missing"),
    (ARGO_APPLICATION, "spec.syncPolicy.retry.limit", 2**63, "spec.syncPolicy.retry.limit: 9223372036854775808 is greater than the maximum"),
    (HELM_RELEASE, "metadata.name", "_DELETE", "metadata.name: required field is missing"),
    (HELM_RELEASE, "metadata.name", "GPU_Operator", "metadata.name: 'GPU_Operator' is not a DNS-1123 subdomain"),
    (HELM_RELEASE, "metadata.namespace", "_DELETE", "metadata.namespace: required: HelmRelease is a namespaced kind"),
    (HELM_RELEASE, "metadata.namespace", "Flux.System", "metadata.namespace: 'Flux.System' is not a DNS-1123 label"),
    (HELM_RELEASE, "metadata.labels", {"bad key!": "v"}, 'metadata.labels["bad key!"]: invalid label key'),
    (HELM_RELEASE, "metadata.labels", {"ok": "x" * 64}, "metadata.labels.ok: invalid label value"),
    (HELM_RELEASE, "metadata.labels", {"ok": 1}, "metadata.labels.ok: 1 is not of type 'string'"),
    (HELM_RELEASE, "metadata.annotations", {"a/b/c": "v"}, 'metadata.annotations["a/b/c"]: invalid annotation key'),
    (HELM_RELEASE, "apiVersion", "helm.toolkit.fluxcd.io/v2beta1",
     "apiVersion: helm.toolkit.fluxcd.io/v2beta1 HelmRelease is not served by CRD helmreleases.helm.toolkit.fluxcd.io"),
    (OCI_REPOSITORY, "apiVersion", "source.toolkit.fluxcd.io/v1beta2",
     "apiVersion: source.toolkit.fluxcd.io/v1beta2 OCIRepository is not served"),
    (OCI_REPOSITORY, "kind", "OciRepository", "kind: no CRD defines kind 'OciRepository' in group 'source.toolkit.fluxcd.io'"),
    (HELM_RELEASE, "kind", "HelmReleases", "kind: no CRD defines kind 'HelmReleases'"),
    (HELM_RELEASE, "apiVersion", "helm.toolkit.fluxcd.example/v2", "apiVersion: no CRD under"),
    (HELM_RELEASE, "apiVersion", "v1", "apiVersion: 'v1' is a core API version"),
    (HELM_RELEASE, "kind", "_DELETE", "kind: required field is missing"),
]


@pytest.mark.parametrize("obj,path,value,expected", INVALID_CASES,
                         ids=[f"{c[0]['kind']}-{c[1]}-{i}" for i, c in enumerate(INVALID_CASES)])
def test_invalid_object_fails_naming_the_path(obj, path, value, expected):
    bad = _with(obj, path, delete=True) if value == "_DELETE" else _with(obj, path, value)
    errors = crd_errors(bad)
    assert len(errors) == 1 and errors[0].startswith(expected), errors
    with pytest.raises(SchemaValidationError) as info:
        validate(bad)
    assert info.value.errors == errors
    assert expected in str(info.value)


def test_non_served_version_lists_the_served_ones():
    (error,) = crd_errors(_with(OCI_REPOSITORY, "apiVersion", "source.toolkit.fluxcd.io/v1beta2"))
    assert "v1beta2" in error and error.endswith("served versions: v1")


def test_every_error_is_reported_at_once():
    bad = _with(_with(_with(HELM_RELEASE, "spec.chart.spec.chartt", "x"), "spec.interval", 5),
                "spec.chart.spec.sourceRef.name", delete=True)
    with pytest.raises(SchemaValidationError) as info:
        validate(bad)
    assert [e.split(":")[0] for e in info.value.errors] == [
        "spec.chart.spec.chartt", "spec.chart.spec.sourceRef.name", "spec.interval"]
    assert "helm.toolkit.fluxcd.io/v2 HelmRelease flux-system/gpu-operator is invalid" in str(info.value)


def test_not_a_mapping():
    assert crd_errors(["a"]) == ["(root): an object must be a mapping, not list"]


def test_same_kind_in_two_files_is_checked_against_both():
    domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
              "metadata": {"name": "cd", "namespace": "default"},
              "spec": {"channel": {"resourceClaimTemplate": {"name": "cd-channel"}}}}
    # numNodes is required at v25.12.0 and optional (default 0) at v0.4.0.
    assert crd_errors(domain) == [
        "[dra-driver/computedomains.resource.nvidia.com.yaml] spec.numNodes: required field is missing"]
    assert crd_errors(domain, source="computedomains.resource.nvidia.com.v0.4.0") == []
    assert crd_errors({**domain, "spec": {**domain["spec"], "numNodes": 2}}) == []


# -- core kinds ---------------------------------------------------------------------------

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "gpu-operator", "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mig-parted.config", "namespace": "gpu-operator"},
              "data": {"config.yaml": "version: v1\n", "MODE": "all-1g.10gb"},
              "binaryData": {"blob.bin": base64.b64encode(b"\x00\x01").decode()}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ngc", "namespace": "gpu-operator"},
          "type": "kubernetes.io/dockerconfigjson",
          "data": {".dockerconfigjson": base64.b64encode(b"{}").decode()}, "stringData": {"extra": "x"}}


@pytest.mark.parametrize("obj", [NAMESPACE, CONFIG_MAP, SECRET], ids=lambda o: o["kind"])
def test_valid_core_objects(obj):
    assert core_errors(obj) == []
    validate_core(obj)


@pytest.mark.parametrize("obj,path,value,expected", [
    (NAMESPACE, "metadata.name", "gpu.operator", "metadata.name: 'gpu.operator' is not a DNS-1123 label"),
    (NAMESPACE, "metadata.name", "GPU", "metadata.name: 'GPU' is not a DNS-1123 label"),
    (NAMESPACE, "metadata.name", "a" * 64, "metadata.name: 'aaaa"),
    (NAMESPACE, "metadata.name", "_DELETE", "metadata.name: required field is missing"),
    (NAMESPACE, "spec", {"finalizer": []}, "spec.finalizer: unknown field"),
    (NAMESPACE, "metadata.labels", {"example.com/": "x"}, 'metadata.labels["example.com/"]: invalid label key'),
    (NAMESPACE, "metadata.labels", {"Example.com/a": "x"}, 'metadata.labels["Example.com/a"]: invalid label key'),
    (NAMESPACE, "metadata.labels", {"a": "-x"}, "metadata.labels.a: invalid label value '-x'"),
    (NAMESPACE, "apiVersion", "apps/v1", "apiVersion: core kinds here use apiVersion v1"),
    (NAMESPACE, "kind", "Pod", "kind: unsupported core kind 'Pod'"),
    (CONFIG_MAP, "metadata.namespace", "_DELETE", "metadata.namespace: required: ConfigMap is a namespaced kind"),
    (CONFIG_MAP, "metadata.name", "Bad_Name", "metadata.name: 'Bad_Name' is not a DNS-1123 subdomain"),
    (CONFIG_MAP, "data.replicas", 3, "data.replicas: 3 is not of type 'string'"),
    (CONFIG_MAP, "data.enabled", True, "data.enabled: True is not of type 'string'"),
    (CONFIG_MAP, "data.a/b", "x", 'data["a/b"]: invalid key'),
    (CONFIG_MAP, "datas", {}, "datas: unknown field"),
    (CONFIG_MAP, ("binaryData", "blob.bin"), "not base64!", 'binaryData["blob.bin"]: value is not valid base64'),
    (CONFIG_MAP, "binaryData.MODE", "AAE=", "binaryData.MODE: key also present in data"),
    (CONFIG_MAP, "immutable", "yes", "immutable: 'yes' is not of type 'boolean'"),
    (SECRET, ("data", ".dockerconfigjson"), "{}", 'data[".dockerconfigjson"]: value is not valid base64'),
    (SECRET, "type", 5, "type: 5 is not of type 'string'"),
    (SECRET, "stringData.extra", 1, "stringData.extra: 1 is not of type 'string'"),
    (SECRET, "metadata.annotations", {"note": 5}, "metadata.annotations.note: 5 is not of type 'string'"),
])
def test_invalid_core_objects(obj, path, value, expected):
    bad = _with(obj, path, delete=True) if value == "_DELETE" else _with(obj, path, value)
    errors = core_errors(bad)
    assert len(errors) == 1 and errors[0].startswith(expected), errors
    with pytest.raises(SchemaValidationError) as info:
        validate_core(bad)
    assert info.value.errors == errors


def test_tls_secret_reports_both_missing_keys():
    errors = core_errors({**SECRET, "type": "kubernetes.io/tls", "data": {}, "stringData": {}})
    assert errors == ['data["tls.crt"]: required for a Secret of type kubernetes.io/tls',
                      'data["tls.key"]: required for a Secret of type kubernetes.io/tls']
