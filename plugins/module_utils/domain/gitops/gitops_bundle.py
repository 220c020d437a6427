# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GitOps bundle's layout: one folder per unit, applied in the platform's order.

Private to the collection: not a public API. Pure: standard library only.

A reconciler applies a unit as a whole after a server-side dry-run, so a custom resource cannot share a unit
with the chart that installs its CRD: the operators' charts and their custom resources are separate units, and
a unit depends on the units whose CRDs or workloads it needs. Flux gets one ``Kustomization`` per unit with
``dependsOn`` and ``wait`` (and, for the kinds whose readiness is a status field, ``healthCheckExprs``: see
domain/core/readiness.py); Argo CD gets sync waves (the depth of a unit in the same graph) and, on custom resources whose
CRD arrives in an earlier wave, ``SkipDryRunOnMissingResource=true``. A unit nothing waits for whose kinds come from
outside the platform (``APART``) is, with Argo CD, no part of the root's sync. See docs/gitops.md.
"""

from __future__ import annotations

import posixpath

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import readiness
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

FLUX_KUSTOMIZE = "kustomize.toolkit.fluxcd.io/v1"
KUSTOMIZE = "kustomize.config.k8s.io/v1beta1"
PREFIX = "gpu-platform-"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"

# unit -> (the units it needs, whether it holds custom resources of a CRD installed by an earlier unit, what it
# holds). In the order site.yml runs the layers.
UNITS = {
    "peermem": ((), False, "the nvidia-peermem loader for drivers the cloud's node image brings"),
    "network-operator": ((), False, "the Network Operator chart"),
    "network-config": (("network-operator",), True, "the NicClusterPolicy and secondary network"),
    # The Network Operator installs NV-IPAM's CRDs itself when it reconciles the NicClusterPolicy, not its chart: a
    # reconciler's dry-run of the policy's own unit would fail on the IPPool, so it comes once the policy is ready.
    "network-ipam": (("network-config",), True, "the NV-IPAM IPPool, whose CRD the Network Operator installs "
                                                "when it reconciles the NicClusterPolicy"),
    "gpu-operator": (("network-config", "peermem"), False,
                     "the GPU Operator chart (its RDMA path needs the NicClusterPolicy ready)"),
    "gpu-sharing": (("gpu-operator",), False, "the device plugin's time-slicing and MIG configuration"),
    "dra-driver": (("gpu-operator",), False, "NVIDIA's DRA driver chart"),
    "scheduling": (("gpu-operator",), False, "the gang scheduler and Kueue charts"),
    "scheduling-config": (("scheduling",), True, "team namespaces, flavors and queues"),
    "monitoring": (("gpu-operator",), True, "the DCGM exporter's ServiceMonitor, GPU rules and dashboard "
                                            "(the Prometheus Operator's CRDs come from outside the platform)"),
    "smoke": (("network-ipam", "gpu-sharing", "dra-driver", "scheduling-config"), True,
              "the smoke tests, once every layer is ready"),
}

# Units nothing waits for, whose kinds come from outside the platform (the Prometheus Operator's CRDs): with Flux a
# Kustomization no other depends on; with Argo CD a sync of their own (their own Application), out of the root's
# waves, so that a cluster without those CRDs still reaches the later waves.
APART = ("monitoring",)

# The custom resources a unit's chart makes, which its Kustomization does not apply and so does not wait for: the GPU
# Operator chart's templates/clusterpolicy.yaml (unconditional, always named cluster-policy).
CHART_OBJECTS = {
    "gpu-operator": ({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"},),
}


def unit_dir(root, unit):
    """The folder of ``unit`` in the bundle at ``root`` ('' when nothing is rendered)."""
    if unit not in UNITS:
        raise ParamError("unit", "%r is not a unit of the bundle" % (unit,), "use one of " + ", ".join(UNITS))
    if not root:
        return ""
    return str(root).rstrip("/") + "/" + unit


def dependencies(present):
    """{unit: [the present units it depends on]}: an absent unit is replaced by what it depends on; a dependency
    already implied by another one is left out."""
    present = [u for u in UNITS if u in set(present)]

    def resolve(unit, seen):
        out = []
        for dep in UNITS[unit][0]:
            if dep in seen:
                continue
            seen.add(dep)
            out.extend([dep] if dep in present else resolve(dep, seen))
        return out
    direct = {u: set(resolve(u, set())) for u in present}

    def reachable(unit):
        out = set()
        for dep in direct[unit]:
            out |= {dep} | reachable(dep)
        return out
    # Only what is not already implied through another dependency (a short, readable dependsOn).
    return {u: sorted((d for d in direct[u] if not any(d in reachable(o) for o in direct[u] - {d})),
                      key=list(UNITS).index) for u in present}


def waves(present):
    """{unit: Argo CD sync wave}: one more than the highest wave of what the unit depends on."""
    deps = dependencies(present)
    out = {}
    for unit in deps:  # UNITS is in dependency order
        out[unit] = 1 + max([out[d] for d in deps[unit]] or [-1])
    return out


def flux_path(root, path=None):
    """The bundle's folder inside the Git repository: ``path`` (gpu_platform_flux_path) when given, else
    ``./<the render folder's name>`` (docs/gitops.md)."""
    if path:
        return path
    return "./" + posixpath.basename(posixpath.normpath(str(root or "").replace("\\", "/")))


def _check_path(path):
    if not isinstance(path, str) or not path.startswith("./") or ".." in path.split("/"):
        raise ParamError("gpu_platform_flux_path", "%r is not a folder inside the Git repository" % (path,),
                         "give the bundle's folder relative to the repository's root, starting with ./ "
                         "(for example ./clusters/prod/gpu-platform)")
    return path.rstrip("/")


def _check_source(source):
    if not isinstance(source, dict) or not isinstance(source.get("name"), str) or not source["name"] \
            or set(source) - {"kind", "name", "namespace"} \
            or source.get("kind", "GitRepository") not in ("GitRepository", "OCIRepository", "Bucket"):
        raise ParamError("gpu_platform_flux_source", "%r is not a Flux source reference" % (source,),
                         "give {kind: GitRepository, name: <its name>, namespace: <optional>} (kind GitRepository, "
                         "OCIRepository or Bucket), for example the flux-system GitRepository flux bootstrap made")
    return source


def _reference(obj):
    """A Flux health check's reference to ``obj`` ({apiVersion, kind, name, namespace})."""
    if not isinstance(obj, dict) or not obj.get("name"):
        raise ParamError("objects", "%r is not an object's apiVersion, kind and name" % (obj,),
                         "give each object of the unit as {apiVersion, kind, name, namespace}")
    readiness.group_kind(obj.get("apiVersion"), obj.get("kind"))
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["name"]}
    if obj.get("namespace"):
        out["namespace"] = obj["namespace"]
    return out


def flux_health(unit, objects=None):
    """How the unit's Kustomization tells that the unit is ready, as spec fields.

    ``wait: true``: every object it applied is ready. Where the unit's chart (its HelmRelease) makes a custom resource
    whose readiness matters (``CHART_OBJECTS``), ``wait`` would not see it: ``healthChecks`` then names the objects
    of the unit and that resource. Either way with ``healthCheckExprs`` for the kinds among them whose readiness is a
    status field. ``objects``: the unit's objects ({apiVersion, kind, name, namespace}); None when not known (only
    ``wait``).
    """
    if objects is None:
        return {"wait": True}
    refs = [_reference(obj) for obj in objects]
    made = [dict(obj) for obj in CHART_OBJECTS.get(unit, ()) if any(r["kind"] == "HelmRelease" for r in refs)]
    out = {"healthChecks": refs + made} if made else {"wait": True}
    exprs = readiness.health_check_exprs([(r["apiVersion"], r["kind"]) for r in refs + made])
    if exprs:
        out["healthCheckExprs"] = exprs
    return out


def flux_kustomization(unit, deps, path, source, interval="10m", timeout="20m", objects=None):
    """The Flux Kustomization that applies ``unit`` once the units in ``deps`` are ready (``objects``: the unit's,
    see flux_health)."""
    spec = {
        "interval": interval, "retryInterval": "1m", "timeout": timeout,
        "path": "%s/%s" % (_check_path(path), unit), "prune": True,
    }
    spec.update(flux_health(unit, objects))
    spec["sourceRef"] = {"kind": source.get("kind", "GitRepository"), "name": source["name"]}
    if source.get("namespace"):
        spec["sourceRef"]["namespace"] = source["namespace"]
    if deps:
        spec["dependsOn"] = [{"name": PREFIX + d} for d in deps]
    if unit == "smoke":
        spec["force"] = True  # a Job's pod template cannot change: a new smoke test replaces the old Job
    return {"apiVersion": FLUX_KUSTOMIZE, "kind": "Kustomization",
            "metadata": {"name": PREFIX + unit, "namespace": "flux-system", "labels": dict(MANAGED_BY)},
            "spec": spec}


def unit_kustomization(unit, files, fmt, wave=0):
    """The unit folder's kustomization.yaml (Argo CD: with its sync wave, none for a sync of its own (``wave``
    None), and sync options)."""
    out = {"apiVersion": KUSTOMIZE, "kind": "Kustomization", "resources": sorted(files)}
    if fmt == "argocd":
        annotations = {} if wave is None else {SYNC_WAVE: str(wave)}
        if UNITS[unit][1]:
            annotations[SYNC_OPTIONS] = "SkipDryRunOnMissingResource=true,ServerSideApply=true"
        out["commonAnnotations"] = annotations
    return out


def unit_files(paths):
    """{unit: [file names]} from the bundle's files (paths relative to its root); files outside a unit's folder
    (a dashboard's JSON, files of an older flat layout) are not part of any unit."""
    out = {}
    for path in paths:
        parts = str(path).strip("/").split("/")
        if len(parts) == 2 and parts[0] in UNITS and parts[1] != "kustomization.yaml":
            out.setdefault(parts[0], []).append(parts[1])
    return out


def layout(files, fmt="flux", path="./platform", source=None, interval="10m", objects=None):
    """Every file of the bundle's layout, {relative path: object}, for the units that have files.

    ``files``: the manifests' paths relative to the bundle's root (``<unit>/<file>``). Flux: the root's
    kustomization.yaml lists one Flux Kustomization per unit (``gpu-platform-<unit>.yaml``), which waits for what the
    unit holds (``objects``: {path: [the file's objects as {apiVersion, kind, name, namespace}]}, for the health
    checks; without it, ``wait`` alone). Argo CD: it lists the unit folders but the ``APART`` ones, whose objects
    carry their sync wave; an ``APART`` unit is synced on its own (its own Application, docs/gitops.md).
    """
    if fmt not in ("flux", "argocd"):
        raise ParamError("gpu_platform_render_format", "%r is not a GitOps format" % (fmt,), "use flux or argocd")
    if fmt == "flux":
        path = _check_path(path)
        source = _check_source(source or {"kind": "GitRepository", "name": "flux-system"})
    by_unit = unit_files(files)
    present = [u for u in UNITS if by_unit.get(u)]
    synced = [u for u in present if fmt == "flux" or u not in APART]  # in the root's sync
    deps, wave = dependencies(present), waves(synced)
    out = {}
    for unit in present:
        out["%s/kustomization.yaml" % unit] = unit_kustomization(unit, by_unit[unit], fmt, wave.get(unit))
    if fmt == "argocd":
        out["kustomization.yaml"] = {"apiVersion": KUSTOMIZE, "kind": "Kustomization", "resources": synced}
        return out
    for unit in present:
        unit_objects = None if objects is None else [
            obj for name in sorted(by_unit[unit]) for obj in objects.get("%s/%s" % (unit, name)) or []]
        out[PREFIX + unit + ".yaml"] = flux_kustomization(unit, deps[unit], path, source, interval,
                                                          objects=unit_objects)
    out["kustomization.yaml"] = {"apiVersion": KUSTOMIZE, "kind": "Kustomization",
                                 "resources": [PREFIX + u + ".yaml" for u in present]}
    return out
