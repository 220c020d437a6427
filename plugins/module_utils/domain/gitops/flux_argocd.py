# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GitOps objects for a pinned Helm release: Flux or Argo CD.

Private to the collection: not a public API. Pure: standard library only.
API versions follow the CRDs in shared/upstream: HelmRelease helm.toolkit.fluxcd.io/v2
(helm-controller v1.6), HelmRepository and OCIRepository source.toolkit.fluxcd.io/v1
(source-controller v1.9; OCIRepository v1beta2 is no longer served), Application
argoproj.io/v1alpha1 (Argo CD v3.5).
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.helm_pinned_release import OCI, REPO
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

FLUX_HELM = "helm.toolkit.fluxcd.io/v2"
FLUX_SOURCE = "source.toolkit.fluxcd.io/v1"
ARGO = "argoproj.io/v1alpha1"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
SHA_ANNOTATION = "gpu-platform.io/chart-sha256"


def source_name(url):
    """A stable object name for a chart repository, shared by releases that use the same URL."""
    text = re.sub(r"^[a-z]+://", "", url.lower())
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return (text[:63].rstrip("-")) or "charts"


def namespace_object(request):
    return {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": request.namespace, "labels": dict(sorted(request.namespace_labels.items()))},
    }


def _meta(name, namespace, request):
    meta = {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}
    if request.chart_sha256:
        meta["annotations"] = {SHA_ANNOTATION: request.chart_sha256}
    return meta


def render_flux(request):
    """Namespace (when created), the chart source and the HelmRelease, in apply order."""
    chart = request.chart
    objects = [namespace_object(request)] if request.create_namespace else []
    spec = {
        "interval": request.flux_interval,
        "releaseName": request.name,
        "timeout": "%ds" % request.wait_timeout,
        "install": {"crds": "CreateReplace", "disableWait": not request.wait},
        "upgrade": {"crds": "CreateReplace", "disableWait": not request.wait},
        "values": request.values,
    }
    # A failed install is uninstalled and retried, a failed upgrade rolled back and retried; atomic also undoes
    # the last failed attempt (Flux leaves it in place by default), as helm --atomic would.
    spec["install"]["remediation"] = {"retries": 3}
    spec["upgrade"]["remediation"] = {"retries": 3, "strategy": "rollback"}
    if request.depends_on:
        spec["dependsOn"] = [{"name": name, "namespace": namespace} for namespace, name in request.depends_on]
    if request.atomic:
        spec["install"]["remediation"]["remediateLastFailure"] = True
        spec["upgrade"]["remediation"]["remediateLastFailure"] = True
    if chart.kind == OCI:
        source = {
            "apiVersion": FLUX_SOURCE, "kind": "OCIRepository",
            "metadata": {"name": request.name, "namespace": request.namespace, "labels": dict(MANAGED_BY)},
            "spec": {
                "interval": request.flux_interval, "url": chart.ref, "ref": {"tag": request.version},
                "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
            },
        }
        if request.plain_http:
            source["spec"]["insecure"] = True
        spec["chartRef"] = {"kind": "OCIRepository", "name": request.name}
    elif chart.kind == REPO:
        source = {
            "apiVersion": FLUX_SOURCE, "kind": "HelmRepository",
            "metadata": {"name": source_name(chart.repo_url), "namespace": request.namespace,
                         "labels": dict(MANAGED_BY)},
            "spec": {"interval": "1h", "url": chart.repo_url},
        }
        spec["chart"] = {"spec": {
            "chart": chart.name, "version": request.version, "reconcileStrategy": "ChartVersion",
            "sourceRef": {"kind": "HelmRepository", "name": source["metadata"]["name"]},
        }}
    else:  # build_request refuses local charts with render_to
        raise ValueError("local charts cannot be rendered")
    release = {"apiVersion": FLUX_HELM, "kind": "HelmRelease",
               "metadata": _meta(request.name, request.namespace, request), "spec": spec}
    return objects + [source, release]


def render_argocd(request):
    """One Argo CD Application; Argo CD creates and labels the namespace itself."""
    chart = request.chart
    if chart.kind == OCI:
        # Argo CD's Helm OCI form: registry/path without the scheme, chart name apart.
        repo_url, dummy, chart_name = chart.ref[len("oci://"):].rpartition("/")
    else:
        repo_url, chart_name = chart.repo_url, chart.name
    sync = {
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": ["ServerSideApply=true"],
        "retry": {"limit": 5 if request.atomic else 2},
    }
    if request.create_namespace:
        sync["syncOptions"].insert(0, "CreateNamespace=true")
        if request.namespace_labels:
            sync["managedNamespaceMetadata"] = {"labels": dict(sorted(request.namespace_labels.items()))}
    app = {
        "apiVersion": ARGO, "kind": "Application",
        "metadata": _meta(request.name, request.argocd_namespace, request),
        "spec": {
            "project": "default",
            "source": {
                "repoURL": repo_url, "chart": chart_name, "targetRevision": request.version,
                "helm": {"releaseName": request.name, "valuesObject": request.values},
            },
            "destination": {"server": "https://kubernetes.default.svc", "namespace": request.namespace},
            "syncPolicy": sync,
        },
    }
    return [app]


def render(request):
    return render_argocd(request) if request.render_format == "argocd" else render_flux(request)


MAX_FILE_NAME = 255  # bytes, the limit of ext4, XFS and most file systems


def file_name(obj):
    """A stable file name per object: kind-namespace-name.yaml (cluster-scoped: kind-name.yaml). A name too long
    for a file system (a 253-character object name in a 63-character namespace) keeps its start and gets a
    digest of the whole, so it stays stable and unique."""
    meta = obj["metadata"]
    parts = [obj["kind"].lower()] + ([meta["namespace"]] if meta.get("namespace") else []) + [meta["name"]]
    stem = "-".join(parts)
    if len(stem.encode("utf-8")) + len(".yaml") > MAX_FILE_NAME:
        digest = hashlib.sha256(stem.encode("utf-8")).hexdigest()[:16]
        stem = stem.encode("utf-8")[:MAX_FILE_NAME - len(".yaml") - 17].decode("utf-8", "ignore") + "-" + digest
    return stem + ".yaml"


def all_file_names(request):
    """Every file this release could own in either format (to clean up a format switch or state=absent)."""
    names = {
        "helmrelease-%s-%s.yaml" % (request.namespace, request.name),
        "ocirepository-%s-%s.yaml" % (request.namespace, request.name),
        "application-%s-%s.yaml" % (request.argocd_namespace, request.name),
    }
    return names
