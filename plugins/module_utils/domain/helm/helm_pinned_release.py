# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Pure logic of a pinned Helm release: validation, chart sources, values, and the plan.

Private to the collection: not a public API. Pure: standard library only, no I/O.
The workflow (workflows/helm_pinned_release.py) feeds it what the adapters read; what Helm recorded (release Secrets,
``helm list`` entries) is read in ``domain.helm.records``.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate, version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.records import split_chart_field
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

REPO = "repo"
OCI = "oci"
LOCAL_DIR = "local_dir"
LOCAL_TGZ = "local_tgz"

PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
CHART_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$", re.IGNORECASE)


@dataclass(frozen=True)
class ChartSource:
    """Where the chart comes from. ``name`` is the chart's name as Helm reports it."""

    kind: str
    ref: str
    name: str
    repo_url: str = ""

    @property
    def is_local(self):
        return self.kind in (LOCAL_DIR, LOCAL_TGZ)


@dataclass
class ReleaseRequest:
    """A validated request for one release."""

    name: str
    namespace: str
    state: str
    chart: ChartSource | None
    version: str
    values: dict
    create_namespace: bool = False
    namespace_labels: dict = field(default_factory=dict)
    chart_sha256: str | None = None
    wait: bool = False
    wait_timeout: int = 300
    atomic: bool = False
    render_to: str | None = None
    render_format: str = "flux"
    argocd_namespace: str = "argocd"
    flux_interval: str = "10m"
    plain_http: bool = False
    # Flux: the HelmReleases ((namespace, name)) this one waits for.
    depends_on: tuple = ()


def classify_chart(chart_ref, chart_repo_url, local_kind=None):
    """Classify ``chart_ref``.

    ``local_kind`` is what the caller found on disk at ``chart_ref``: "dir", "tgz" or None.
    A local chart's name is not known here; the workflow reads it from Chart.yaml.
    """
    ref = validate.url_without_credentials("chart_ref", chart_ref)
    url = validate.url_without_credentials("chart_repo_url", chart_repo_url)
    if not ref:
        raise ParamError("chart_ref", "is required for state=present",
                         "give a chart name with chart_repo_url, an oci:// reference, or a local chart path")
    if ref.startswith("oci://"):
        if url:
            raise ParamError("chart_repo_url", "must not be set with an oci:// chart_ref",
                             "drop chart_repo_url; the oci:// reference names the registry")
        path = ref[len("oci://"):].rstrip("/")
        last = path.rsplit("/", 1)[-1]
        if "/" not in path or not last:
            raise ParamError("chart_ref", "%r does not name a registry and a chart" % ref,
                             "use oci://REGISTRY/PATH/CHART, e.g. oci://ghcr.io/nvidia/charts/gpu-operator")
        if ":" in last or "@" in last:
            raise ParamError("chart_ref", "%r carries a tag or digest" % ref,
                             "drop the tag and pin the version with chart_version")
        return ChartSource(OCI, "oci://" + path, last)
    if url:
        _repo_url("chart_repo_url", url)
        if "/" in ref or not CHART_NAME.match(ref):
            raise ParamError("chart_ref", "%r is not a bare chart name, but chart_repo_url is set" % ref,
                             "give only the chart name (e.g. gpu-operator) with chart_repo_url")
        return ChartSource(REPO, ref, ref, url.rstrip("/"))
    if local_kind == "dir":
        return ChartSource(LOCAL_DIR, ref, "")
    if local_kind == "tgz":
        return ChartSource(LOCAL_TGZ, ref, "")
    raise ParamError("chart_ref", "%r is neither an oci:// reference nor an existing local chart "
                     "(directory with Chart.yaml or .tgz), and chart_repo_url is not set" % ref,
                     "set chart_repo_url for a repository chart, or give the path of a local chart")


def deep_merge(base, override):
    """Helm's coalescing of user values: maps merge recursively, anything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_values(files_values, release_values):
    """User values as Helm stores them: values files in order, then ``release_values``."""
    merged = {}
    for index, doc in enumerate(files_values):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ParamError("values_files", "file %d does not hold a mapping of values" % (index + 1),
                             "each values file must be a YAML mapping")
        merged = deep_merge(merged, doc)
    if release_values is not None and not isinstance(release_values, dict):
        raise ParamError("release_values", "must be a dictionary", "give structured values, not a --set string")
    return normalize(deep_merge(merged, release_values or {}))


def normalize(values):
    """The JSON form of values, so YAML ints, floats and strings compare as Helm stores them."""
    return json.loads(json.dumps(values or {}, sort_keys=True))


CHART_SETTING = re.compile(r"_chart_(ref|repo_url|version)$")


def check_chart_settings(named):
    """The chart settings an inventory overrides ({variable: value} for ``*_chart_ref``, ``*_chart_repo_url`` and
    ``*_chart_version``), each checked as helm_pinned_release will check it, all reported at once: before the
    first layer writes, a later layer's bad chart source or version cannot be found out half way."""
    checks = []
    for name in sorted(named):
        kind = CHART_SETTING.search(name)
        value = named[name]
        if kind is None:
            continue
        if kind.group(1) == "version":
            checks.append(lambda n=name, v=value: validate.exact_version(n, v))
        elif kind.group(1) == "repo_url":
            checks.append(lambda n=name, v=value: _repo_url(n, v))
        else:
            checks.append(lambda n=name, v=value: validate.url_without_credentials(n, v))
    return validate.every(checks, "chart settings")


def _repo_url(field_name, value):
    url = validate.url_without_credentials(field_name, value)
    if url and not re.match(r"^(https?|file)://", url):
        raise ParamError(field_name, "%r is not an http(s) URL" % url,
                         "give the repository URL, e.g. https://helm.ngc.nvidia.com/nvidia, or leave it empty for "
                         "an oci:// chart reference")
    return url


def depends_on(value, namespace):
    """The releases a rendered HelmRelease waits for: a list of {name, namespace} (namespace defaults to the
    release's own), as sorted (namespace, name) pairs without duplicates."""
    if value in (None, ""):
        return ()
    if not isinstance(value, (list, tuple)):
        raise ParamError("depends_on", "%r is not a list of releases" % (value,),
                         "give a list such as [{name: network-operator, namespace: nvidia-network-operator}]")
    out = set()
    for index, item in enumerate(value):
        field_name = "depends_on[%d]" % index
        if not isinstance(item, dict) or set(item) - {"name", "namespace"}:
            raise ParamError(field_name, "%r is not {name, namespace}" % (item,),
                             "give the release's name and, if it is in another namespace, its namespace")
        out.add((validate.dns_label(field_name + ".namespace", item.get("namespace") or namespace),
                 validate.release_name(field_name + ".name", item.get("name"))))
    return tuple(sorted(out))


def _render_format(value):
    render_format = value or "flux"
    if render_format not in ("flux", "argocd"):
        raise ParamError("render_format", "%r is not supported" % render_format, "use flux or argocd")
    return render_format


def _namespace_labels(params):
    labels = validate.labels("namespace_labels", params.get("namespace_labels"))
    if labels and not params.get("create_namespace"):
        raise ParamError("namespace_labels", "is set but create_namespace is false",
                         "set create_namespace: true so the namespace is created and labelled")
    return labels


def _chart_checks(name, namespace, needs, chart, digest, render_to):
    if digest and chart.kind == LOCAL_DIR:
        raise ParamError("chart_sha256", "cannot be checked for a chart directory",
                         "package the chart (helm package) and give the .tgz, or drop chart_sha256")
    if name and (namespace, name) in needs:
        raise ParamError("depends_on", "names the release itself (%s/%s)" % (namespace, name),
                         "list only the releases this one needs")
    if render_to and chart.is_local:
        raise ParamError("chart_ref", "a local chart cannot be delivered through GitOps (render_to)",
                         "publish the chart to a repository or OCI registry and reference it there")


def build_request(params, local_kind=None):
    """Validate module parameters into a ReleaseRequest (without values files, which need I/O). Every option is
    checked (a check that needs an option found wrong is left out) and every mistake reported, one ParamError
    naming the option, or one naming them all."""
    found = validate.Mistakes("helm_pinned_release options")
    name = found.check(lambda: validate.release_name("release_name", params.get("release_name")))
    namespace = found.check(lambda: validate.dns_label("release_namespace", params.get("release_namespace")))
    state = params.get("release_state") or "present"
    render_format = found.check(lambda: _render_format(params.get("render_format")))
    labels = found.check(lambda: _namespace_labels(params))
    timeout = found.check(lambda: validate.duration_seconds("wait_timeout", params.get("wait_timeout") or 300))
    argocd_namespace = found.check(lambda: validate.dns_label("argocd_namespace",
                                                              params.get("argocd_namespace") or "argocd"))
    needs = found.check(lambda: depends_on(params.get("depends_on"), namespace), fallback=[]) \
        if namespace is not None else []
    interval = found.check(lambda: validate.go_duration("flux_interval", params.get("flux_interval") or "10m",
                                                        minimum=10))
    version = chart = digest = None
    if state != "absent":
        version = found.check(lambda: validate.exact_version("chart_version", params.get("chart_version")))
        chart = found.check(lambda: classify_chart(params.get("chart_ref"), params.get("chart_repo_url"), local_kind))
        digest = found.check(lambda: validate.sha256_hex("chart_sha256", params.get("chart_sha256")))
        if chart is not None:
            found.check(lambda: _chart_checks(name, namespace, needs, chart, digest, params.get("render_to")))
    found.raise_any()
    common = dict(
        name=name, namespace=namespace, state=state,
        create_namespace=bool(params.get("create_namespace")), namespace_labels=labels,
        wait=bool(params.get("wait")), wait_timeout=timeout, atomic=bool(params.get("atomic")),
        render_to=params.get("render_to") or None, render_format=render_format,
        argocd_namespace=argocd_namespace, plain_http=bool(params.get("plain_http")),
        depends_on=needs, flux_interval=interval,
    )
    if state == "absent":
        return ReleaseRequest(chart=None, version="", values={}, **common)
    return ReleaseRequest(chart=chart, version=version, chart_sha256=digest, values={}, **common)


def check_other_namespaces(releases, request):
    """Refuse a second release of the same chart in another namespace."""
    others = []
    for rel in releases:
        chart_name = split_chart_field(rel.get("chart"))[0]
        if chart_name == request.chart.name and rel.get("namespace") != request.namespace:
            others.append("%s/%s (%s, %s)" % (rel.get("namespace"), rel.get("name"), rel.get("chart"), rel.get("status")))
    if others:
        raise Refusal(
            "chart %s is already released elsewhere: %s. Two releases of the same chart fight over the same "
            "cluster-wide objects (for the GPU Operator: two ClusterPolicy controllers). Fix: manage the existing "
            "release (set release_name/release_namespace to it), or uninstall it first."
            % (request.chart.name, ", ".join(sorted(others))), existing=sorted(others))


@dataclass
class Plan:
    """What to do with a release, and why."""

    action: str  # none | install | upgrade | repair | uninstall
    reasons: list = field(default_factory=list)
    repair: str | None = None  # rollback | uninstall | upgrade (for a failed release)
    rollback_to: int | None = None
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)

    @property
    def changed(self):
        return self.action != "none"


def describe(chart_name, version, status, values):
    return {"chart": chart_name, "version": version, "status": status, "values": values}


def last_deployed_revision(history):
    revisions = [int(h.get("revision", 0)) for h in history if h.get("status") in ("deployed", "superseded")]
    return max(revisions) if revisions else None


def plan_present(request, deployed, deployed_values, history=None):
    """Compare the deployed release (a ``helm list`` entry or None) with the request."""
    after = describe(request.chart.name, request.version, "deployed", request.values)
    if deployed is None:
        return Plan("install", ["release %s/%s does not exist" % (request.namespace, request.name)], before={}, after=after)
    chart_name, version = split_chart_field(deployed.get("chart"))
    status = deployed.get("status") or "unknown"
    current = normalize(deployed_values)
    before = describe(chart_name, version, status, current)
    reasons = []
    if chart_name != request.chart.name:
        reasons.append("chart %s -> %s" % (chart_name, request.chart.name))
    if not version_parse.same_chart_version(version, request.version):
        reasons.append("version %s -> %s" % (version, request.version))
    if current != request.values:
        reasons.append("values differ")
    if status == "deployed":
        return Plan("upgrade" if reasons else "none", reasons, before=before, after=after)
    if status == "failed":
        # A failed release with an earlier good revision is upgraded in place; a failed first
        # install has nothing to upgrade from and is reinstalled.
        prior = last_deployed_revision(history or [])
        repair = "upgrade" if prior else "uninstall"
        return Plan("repair", ["release is failed"] + reasons, repair=repair, before=before, after=after)
    if status in PENDING or status == "uninstalling":
        prior = last_deployed_revision(history or [])
        if status != "pending-install" and prior:
            return Plan("repair", ["release is stuck in %s" % status] + reasons, repair="rollback",
                        rollback_to=prior, before=before, after=after)
        return Plan("repair", ["release is stuck in %s with no good revision" % status] + reasons,
                    repair="uninstall", before=before, after=after)
    return Plan("repair", ["release has status %s" % status] + reasons, repair="uninstall", before=before, after=after)


def plan_absent(deployed):
    if deployed is None:
        return Plan("none", ["release does not exist"])
    chart_name, version = split_chart_field(deployed.get("chart"))
    return Plan("uninstall", ["release exists"], before=describe(chart_name, version, deployed.get("status"), None), after={})
