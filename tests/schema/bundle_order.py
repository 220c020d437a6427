"""A static check of a rendered GitOps bundle's order: what a reconciler needs before it can apply each unit.

``order_problems(root)`` reads the bundle as Flux or Argo CD would (the root's kustomization.yaml; with Flux, the
Kustomization objects it lists and the unit folders they point at; with Argo CD, the unit folders and their sync
waves) and returns one line per problem:

* a unit (Flux Kustomization) without ``wait``, a ``dependsOn`` naming no unit, a cycle;
* a namespaced object whose Namespace is neither in its unit nor in a unit applied before it;
* a custom resource whose CRD a chart of the platform installs, in the chart's own unit or in one not applied
  after it (the server-side dry-run of that unit fails with "no matches for kind"); with Argo CD, such a resource
  without ``SkipDryRunOnMissingResource=true``;
* a resource of a CRD from outside the platform (the Prometheus Operator's) in a unit another unit waits for;
* a HelmRelease with ``disableWait`` (Flux would call the chart ready before its workloads are), or whose
  ``dependsOn`` names a HelmRelease that is not in the bundle or not in a unit applied before (or with) its own.

"Before" is ``dependsOn`` (transitively) with Flux, a lower sync wave with Argo CD. Which chart brings which API
group is read from the charts' CRD files the local control plane serves (scripts/local_cluster CHART_CRDS).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from scripts.local_cluster.__main__ import CHART_CRDS, _crd_path

EXTERNAL_GROUPS = {"monitoring.coreos.com": "the Prometheus Operator"}
WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"


def chart_groups():
    """{API group: the chart (release) whose crds/ installs it}."""
    out = {}
    for chart, files in CHART_CRDS.items():
        for relative in files:
            for doc in yaml.safe_load_all(_crd_path(relative).read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    out[doc["spec"]["group"]] = chart
    return out


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
            if group in EXTERNAL_GROUPS and unit in waited_for:
                problems.append("%s: its CRD comes from %s, outside the platform, and other units wait for %s"
                                % (what, EXTERNAL_GROUPS[group], unit))
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
