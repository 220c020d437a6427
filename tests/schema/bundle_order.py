"""A static check of a rendered GitOps bundle's order: what a reconciler needs before it can apply each unit.

``order_problems(root)`` reads the bundle as Flux or Argo CD would (the root's kustomization.yaml; with Flux, the
Kustomization objects it lists and the unit folders they point at; with Argo CD, the unit folders and their sync
waves) and returns one line per problem:

* a unit (Flux Kustomization) without ``wait``, a ``dependsOn`` naming no unit, a cycle;
* a namespaced object whose Namespace is neither in its unit nor in a unit applied before it;
* a custom resource whose CRD a chart of the platform installs, in the chart's own unit or in one not applied
  after it (the server-side dry-run of that unit fails with "no matches for kind"); with Argo CD, such a resource
  without ``SkipDryRunOnMissingResource=true``;
* a resource of an API group whose CRD an operator installs itself when it reconciles a custom resource (NV-IPAM's,
  from the NicClusterPolicy: the real Network Operator's chart has no such CRD) not in a unit applied after that
  resource's: its own unit's dry-run fails, so the resource that would make the operator install the CRD is never
  applied;
* a resource of a CRD from outside the platform (the Prometheus Operator's) in a unit another unit waits for; with
  Argo CD, in the root's sync at all (its waves stop there on a cluster without that CRD, so the later ones never
  come);
* Flux: a custom resource whose readiness is ``status.state`` (its CRD's status has a ``state`` with ``ready``), applied
  by a unit or made by its chart (the GPU Operator's ClusterPolicy), that the unit's Kustomization does not judge by
  that field (no ``healthCheckExprs`` for its kind, or, for the chart's, no ``healthChecks`` naming it): Flux would
  count it ready as soon as it exists; and a Kustomization with ``healthChecks`` instead of ``wait`` that leaves one
  of its own objects out;
* a HelmRelease with ``disableWait`` (Flux would call the chart ready before its workloads are), or whose
  ``dependsOn`` names a HelmRelease that is not in the bundle or not in a unit applied before (or with) its own.

"Before" is ``dependsOn`` (transitively) with Flux, a lower sync wave with Argo CD. Which chart brings which API
group is read from the charts' CRD files the local control plane serves (local_gpu_cluster CHART_CRDS).
"""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from local_gpu_cluster.__main__ import CHART_CRDS, _crd_path

EXTERNAL_GROUPS = {"monitoring.coreos.com": "the Prometheus Operator"}
# API group -> the kind whose reconciling makes its operator install the group's CRDs (Network Operator v26.4.0:
# manifests/state-nv-ipam-cni, from the NicClusterPolicy's nvIpam; the local charts' crds/ may carry them, the real
# chart does not).
OPERATOR_GROUPS = {"nv-ipam.nvidia.com": "NicClusterPolicy"}
WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
# The custom resources a chart makes itself, by chart name (the GPU Operator chart's templates/clusterpolicy.yaml).
CHART_MAKES = {"gpu-operator": [("nvidia.com/v1", "ClusterPolicy", "cluster-policy")]}
# Kinds whose readiness is status.state that the bundle does not judge by it, and why (docs/gitops.md, "What ready
# means"): the secondary networks, which the direct mode does not wait for either.
NOT_JUDGED = {("mellanox.com", kind): "a secondary network: not waited for, as in the direct mode"
              for kind in ("IPoIBNetwork", "MacvlanNetwork", "HostDeviceNetwork")}


@functools.lru_cache(maxsize=None)
def _chart_crds():
    """((chart, CRD), ...) of the charts' crds/ (read once per process: the files are large)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple((chart, doc) for chart, files in CHART_CRDS.items() for relative in files
                 for doc in yaml.load_all(_crd_path(relative).read_text(), Loader=loader)
                 if doc and doc.get("kind") == "CustomResourceDefinition")


def chart_groups():
    """{API group: the chart (release) whose crds/ installs it}."""
    return {doc["spec"]["group"]: chart for chart, doc in _chart_crds()}


@functools.lru_cache(maxsize=None)
def status_state_kinds():
    """{(API group, kind)} of the charts' CRDs whose status reports readiness in ``state`` (an enum with ``ready``)."""
    out = set()
    for dummy, doc in _chart_crds():
        for version in doc["spec"]["versions"]:
            status = (((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("status")
            state = ((status or {}).get("properties") or {}).get("state") or {}
            if "ready" in (state.get("enum") or []):
                out.add((doc["spec"]["group"], doc["spec"]["names"]["kind"]))
    return out


def _group_kind(api_version, kind):
    return api_version.rpartition("/")[0], kind


def chart_name(release, objects):
    """The chart a HelmRelease installs: its chart spec's name, or its OCIRepository's last path element."""
    spec = release.get("spec") or {}
    if (spec.get("chart") or {}).get("spec", {}).get("chart"):
        return spec["chart"]["spec"]["chart"]
    ref = spec.get("chartRef") or {}
    for obj in objects:
        if obj["kind"] == ref.get("kind") and obj["metadata"]["name"] == ref.get("name"):
            return obj["spec"]["url"].rstrip("/").rsplit("/", 1)[-1]
    return ""


def readiness_problems(name, doc, objects):
    """Flux: what the Kustomization ``name`` (``doc``), which applies ``objects``, would count ready too early."""
    spec, problems = doc["spec"], []
    judged = {_group_kind(e.get("apiVersion", ""), e.get("kind", "")) for e in spec.get("healthCheckExprs") or []}
    named = {(c.get("apiVersion"), c.get("kind"), c.get("name"), c.get("namespace") or "")
             for c in spec.get("healthChecks") or []}
    kinds = status_state_kinds()
    for obj in objects:
        key = _group_kind(obj["apiVersion"], obj["kind"])
        if key in kinds and key not in NOT_JUDGED and key not in judged:
            problems.append("%s: applies %s %s, whose readiness is status.state, without a healthCheckExprs entry for "
                            "its kind: Flux counts it ready once it exists" % (name, obj["kind"], obj["metadata"]["name"]))
        ref = (obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace") or "")
        if spec.get("wait") is not True and named and ref not in named:
            problems.append("%s: healthChecks instead of wait, without its own %s %s" % (name, obj["kind"], ref[2]))
    for release in (o for o in objects if o["kind"] == "HelmRelease"):
        for api_version, kind, made in CHART_MAKES.get(chart_name(release, objects), ()):
            if (api_version, kind, made, "") not in named or _group_kind(api_version, kind) not in judged:
                problems.append("%s: its chart %s makes the %s %s, which it does not judge by status.state "
                                "(healthChecks naming it and a healthCheckExprs entry): Flux counts the unit ready "
                                "before it is" % (name, chart_name(release, objects), kind, made))
    return problems


def _docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]


def _unit_objects(folder):
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())
    return listed, [doc for name in listed.get("resources") or [] for doc in _docs(folder / name)]


def read(root):
    """(format, {unit: objects}, {unit: units it comes after}, {unit: its kustomization}, [problems of the units])."""
    root = Path(root)
    listed = yaml.safe_load((root / "kustomization.yaml").read_text())["resources"]
    units, after, kustomizations, problems = {}, {}, {}, []
    if all((root / name).is_dir() for name in listed):
        fmt = "argocd"
        for unit in listed:
            kustomizations[unit], units[unit] = _unit_objects(root / unit)
        waves = {u: int((k.get("commonAnnotations") or {}).get(WAVE, "0")) for u, k in kustomizations.items()}
        after = {u: {o for o in units if waves[o] < waves[u]} for u in units}
        return fmt, units, after, kustomizations, problems
    fmt = "flux"
    flux = {doc["metadata"]["name"]: doc for name in listed for doc in _docs(root / name)
            if doc["kind"] == "Kustomization"}
    unit_of = {name: doc["spec"]["path"].rstrip("/").rsplit("/", 1)[1] for name, doc in flux.items()}
    direct = {}
    for name, doc in flux.items():
        unit = unit_of[name]
        kustomizations[unit], units[unit] = _unit_objects(root / unit)
        if doc["spec"].get("wait") is not True and not doc["spec"].get("healthChecks"):
            problems.append("%s: neither wait nor health checks: what depends on it would not wait for it" % name)
        problems += readiness_problems(name, doc, units[unit])
        deps = [d["name"] for d in doc["spec"].get("dependsOn") or []]
        problems += ["%s: dependsOn %s, which is not in the bundle" % (name, d) for d in deps if d not in flux]
        direct[unit] = {unit_of[d] for d in deps if d in flux}
    for unit in units:
        seen, todo = set(), list(direct[unit])
        while todo:
            dep = todo.pop()
            if dep not in seen:
                seen.add(dep)
                todo.extend(direct.get(dep, ()))
        if unit in seen:
            problems.append("%s: its dependsOn comes back to it (a cycle: Flux never applies it)" % unit)
        after[unit] = seen - {unit}
    return fmt, units, after, kustomizations, problems


def order_problems(root):
    """Every ordering problem of the bundle at ``root`` (empty when a reconciler can apply it in order)."""
    fmt, units, after, kustomizations, problems = read(root)
    groups = chart_groups()
    chart_unit = {obj["metadata"]["name"]: unit for unit, objs in units.items() for obj in objs
                  if obj["kind"] in ("HelmRelease", "Application")}
    namespace_unit = {obj["metadata"]["name"]: unit for unit, objs in units.items() for obj in objs
                      if obj["kind"] == "Namespace"}
    release_unit = {(obj["metadata"].get("namespace"), obj["metadata"]["name"]): unit for unit, objs in units.items()
                    for obj in objs if obj["kind"] == "HelmRelease"}
    waited_for = {dep for unit in units for dep in after[unit]} if fmt == "flux" else set()
    for unit, objs in units.items():
        for obj in objs:
            what = "%s/%s %s/%s" % (unit, obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            namespace = obj["metadata"].get("namespace")
            if namespace and namespace_unit.get(namespace) not in {unit} | after[unit] and not (
                    fmt == "argocd" and namespace_unit.get(namespace) is None):
                problems.append("%s: its Namespace %s is not applied before it (in %s)"
                                % (what, namespace, namespace_unit.get(namespace, "no unit")))
            group = obj.get("apiVersion", "").rpartition("/")[0]
            if group in groups:
                chart = groups[group]
                if chart_unit.get(chart) not in after[unit]:
                    problems.append("%s: its CRD comes with the %s chart (%s), which is not applied before it"
                                    % (what, chart, chart_unit.get(chart, "no unit")))
                options = (kustomizations[unit].get("commonAnnotations") or {}).get(SYNC_OPTIONS, "")
                if fmt == "argocd" and "SkipDryRunOnMissingResource=true" not in options:
                    problems.append("%s: no SkipDryRunOnMissingResource=true although its CRD arrives in an earlier "
                                    "wave" % what)
            if group in OPERATOR_GROUPS:
                owner = {u for u, others in units.items() for o in others if o["kind"] == OPERATOR_GROUPS[group]}
                if owner and not owner <= after[unit]:
                    problems.append("%s: its CRD is installed by the operator once it reconciles the %s (%s), which "
                                    "is not applied before it"
                                    % (what, OPERATOR_GROUPS[group], ", ".join(sorted(owner))))
                options = (kustomizations[unit].get("commonAnnotations") or {}).get(SYNC_OPTIONS, "")
                if fmt == "argocd" and "SkipDryRunOnMissingResource=true" not in options:
                    problems.append("%s: no SkipDryRunOnMissingResource=true although its CRD is installed in an "
                                    "earlier wave" % what)
            if group in EXTERNAL_GROUPS and unit in waited_for:
                problems.append("%s: its CRD comes from %s, outside the platform, and other units wait for %s"
                                % (what, EXTERNAL_GROUPS[group], unit))
            if group in EXTERNAL_GROUPS and fmt == "argocd":
                problems.append("%s: its CRD comes from %s, outside the platform, and it is in the root's sync: "
                                "without that CRD the waves stop at %s's" % (what, EXTERNAL_GROUPS[group], unit))
            for dep in (obj["spec"].get("dependsOn") or []) if obj["kind"] == "HelmRelease" else []:
                key = (dep.get("namespace") or namespace, dep["name"])
                if key not in release_unit:
                    problems.append("%s: dependsOn the HelmRelease %s/%s, which is not in the bundle (Flux would "
                                    "wait for it forever)" % ((what,) + key))
                elif release_unit[key] not in {unit} | after[unit]:
                    problems.append("%s: dependsOn the HelmRelease %s/%s of %s, which is not applied before it"
                                    % ((what,) + key + (release_unit[key],)))
            if obj["kind"] == "HelmRelease" and any((obj["spec"].get(k) or {}).get("disableWait")
                                                    for k in ("install", "upgrade")):
                problems.append("%s: disableWait: Flux would count it ready before its workloads are" % what)
    return problems
