# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What an upgrade does to the releases already on the cluster, decided before it writes anything (pure).

Private to the collection: not a public API. Pure: standard library only, no I/O.

``plan`` compares the deployed releases (``helm list`` entries, as ``cluster_read``'s ``helm_releases`` reads them
from helm's release Secrets) with the releases the platform now pins:

* a pinned chart older than the deployed one of the same name (the same release) is a downgrade: refused, naming
  the release, both versions and the fix. Helm would install it, but the operators' CRDs and stored objects would
  be newer than the controller that reads them, and KAI Scheduler does not support going back (its SUPPORT.md:
  helm rollback is not supported);
* a release of a chart the platform no longer installs under that name (``MOVES``: NVIDIA's nvidia-dra-driver-gpu,
  renamed dra-driver-nvidia-gpu at 0.4.0 when the project moved to kubernetes-sigs) is removed before the new one
  is installed, as the new project's docs have it (no in-place path between the two charts). Its DeviceClasses and
  kubelet plugin go with it, so the move is refused while a ResourceClaim is allocated by its driver: the claims
  are named, with the fix (let those workloads finish, or delete them, then run again).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.records import split_chart_field
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

# chart name the platform installed before -> (the chart it installs now, the DRA drivers whose claims it serves)
MOVES = {
    "nvidia-dra-driver-gpu": ("dra-driver-nvidia-gpu", ("gpu.nvidia.com", "compute-domain.nvidia.com")),
}


def _parts(version):
    """The release's numbers, for ordering (a pre-release sorts before its release); None when not a version."""
    text = str(version or "").lstrip("v")
    core, _sep, pre = text.partition("-")
    numbers = []
    for part in core.split(".")[:3]:
        if not part.isdigit():
            return None
        numbers.append(int(part))
    return tuple(numbers) + ((0,) if pre else (1,))


def _wanted(wanted, fields):
    """Each pinned release as {release, namespace, chart, version, field}, from the options a layer gives
    helm_pinned_release (``release_name``, ``release_namespace``, ``chart_ref``, ``chart_version``) and the variable
    that pins its chart (``fields``: chart name -> variable)."""
    if not isinstance(wanted, list) or not all(isinstance(item, dict) for item in wanted):
        raise ParamError("wanted", "is not a list of release options", "give each layer's helm_pinned_release options")
    out = []
    for item in wanted:
        chart = str(item.get("chart_ref") or "").rstrip("/").rsplit("/", 1)[-1]
        if not (item.get("release_name") and item.get("release_namespace") and chart and item.get("chart_version")):
            raise ParamError("wanted", "%r lacks a release name, namespace, chart or version" % (item,),
                             "give each layer's helm_pinned_release options")
        out.append({"release": str(item["release_name"]), "namespace": str(item["release_namespace"]),
                    "chart": chart, "version": str(item["chart_version"]),
                    "field": str((fields or {}).get(chart) or "the %s chart version" % chart)})
    return out


def _claims_of(claims, drivers):
    """``namespace/name`` of each allocated ResourceClaim with a device of one of ``drivers``."""
    found = []
    for claim in claims or []:
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        if any(result.get("driver") in drivers for result in results):
            meta = claim.get("metadata") or {}
            found.append("%s/%s" % (meta.get("namespace", ""), meta.get("name", "")))
    return sorted(found)


def plan(deployed, wanted, fields=None, claims=None):
    """{"removals": [{release, namespace, chart, version, replaced_by}], "lines": [...]}: the
    releases to remove before their successors install, and what to say; a downgrade or a move that would take
    allocated devices away raises Refusal, every problem in one message."""
    wanted = _wanted(wanted, fields)
    by_release = {(entry.get("namespace"), entry.get("name")): entry for entry in deployed or []}
    problems, removals, lines = [], [], []
    for item in wanted:
        entry = by_release.get((item["namespace"], item["release"]))
        if entry is None:
            continue
        chart, version = split_chart_field(entry.get("chart"))
        old, new = _parts(version), _parts(item["version"])
        if chart == item["chart"] and old and new and new < old:
            problems.append("%s/%s runs %s %s, and %s pins the older %s: a downgrade is not supported (the CRDs and "
                            "objects on the cluster are the newer release's). Fix: pin %s or newer in %s, or remove "
                            "the release first (playbooks/uninstall.yml)"
                            % (item["namespace"], item["release"], chart, version, item["field"], item["version"],
                               version, item["field"]))
    installed = {item["chart"] for item in wanted}
    for entry in sorted(deployed or [], key=lambda e: (e.get("namespace", ""), e.get("name", ""))):
        chart, version = split_chart_field(entry.get("chart"))
        if chart not in MOVES or MOVES[chart][0] not in installed:
            continue
        successor, drivers = MOVES[chart]
        held = _claims_of(claims, drivers)
        if held:
            problems.append("%s/%s (%s %s) is replaced by the renamed chart %s, which removes it first, but %d "
                            "ResourceClaim(s) hold its devices: %s. Fix: let those workloads finish or delete them, "
                            "then run again" % (entry.get("namespace"), entry.get("name"), chart, version, successor,
                                                len(held), ", ".join(held)))
            continue
        removals.append({"release": entry.get("name"), "namespace": entry.get("namespace"), "chart": chart,
                         "version": version, "replaced_by": successor})
        lines.append("%s/%s (%s %s) is removed, then %s is installed in its place (the chart was renamed)"
                     % (entry.get("namespace"), entry.get("name"), chart, version, successor))
    if problems:
        raise Refusal("%d release(s) cannot move to the pins: %s. Nothing was changed."
                      % (len(problems), "; ".join(problems)))
    for item in wanted:
        entry = by_release.get((item["namespace"], item["release"]))
        if entry is not None:
            chart, version = split_chart_field(entry.get("chart"))
            if chart == item["chart"] and not version_parse.same_chart_version(version, item["version"]):
                lines.append("%s/%s: %s %s -> %s" % (item["namespace"], item["release"], chart, version,
                                                     item["version"]))
    return {"removals": removals, "lines": lines}
