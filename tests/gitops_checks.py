"""The pure checks of ``make gitops-test`` (tests/gitops_bundle.py): what the rendered bundle holds, what the cluster's
Flux objects say, and the verdicts drawn from them. No cluster, no subprocess: tests/unit/test_gitops_checks.py
tests each on its own.

* ``ready_condition``, ``is_ready``: a Flux object's Ready condition, and Ready for its current generation.
* ``parse_time``: an RFC 3339 time (a condition's ``lastTransitionTime``) as an aware ``datetime``.
* ``unit_objects``, ``expected_flux_objects``: the bundle's units and the Kustomizations and HelmReleases it makes.
* ``waiting_for``: what is not Ready yet (or not there at all) of what the bundle makes.
* ``missing_crd_kind``: whether a dry-run refusal says that a kind's CRD is missing, and which kind.
* ``ready_times``, ``order_problem``: when each unit last became Ready, and whether a unit became Ready after the one
  it depends on.
* ``ready_summary``: the ``gitops: K/N Kustomizations Ready, H/M HelmReleases Ready`` line, counted from what was
  read from the cluster against what the bundle has, and the problems that fail the run.
* ``nic_repositories``, ``image_problems``: the image repositories a NicClusterPolicy names, and the images read from
  the cluster that are not on the mirror or not there at all.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import yaml

KINDS = ("Kustomization", "HelmRelease")

# -- a Flux object's readiness -------------------------------------------------------------------------------------


def ready_condition(obj):
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return {}


def is_ready(obj):
    return ready_condition(obj).get("status") == "True" and \
        obj["status"].get("observedGeneration") == obj["metadata"]["generation"]


def identity(obj):
    """(kind, namespace, name) of an object as listed or rendered."""
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace") or "", meta["name"]


def describe(key):
    kind, namespace, name = key
    return "%s %s/%s" % (kind, namespace, name) if namespace else "%s %s" % (kind, name)


# -- times ---------------------------------------------------------------------------------------------------------

RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$")


def parse_time(value):
    """An RFC 3339 time (``2026-11-25T12:00:01Z``, fractions and offsets too) as an aware datetime; ValueError for
    anything else, an empty or missing value included (a time without its zone is not RFC 3339)."""
    match = RFC3339.match(value) if isinstance(value, str) else None
    if not match:
        raise ValueError("not an RFC 3339 time: %r" % (value,))
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    offset = timedelta(0) if zulu else (1 if sign == "+" else -1) * timedelta(hours=int(off_h), minutes=int(off_m))
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro,
                    tzinfo=timezone(offset))


# -- the bundle ----------------------------------------------------------------------------------------------------

def unit_objects(folder):
    """{unit: [objects]} of every unit the root's Flux Kustomizations apply."""
    out = {}
    for name in yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]:
        flux = yaml.safe_load((folder / name).read_text())
        unit = flux["spec"]["path"].rsplit("/", 1)[1]
        listed = yaml.safe_load((folder / unit / "kustomization.yaml").read_text())["resources"]
        out[unit] = [doc for file in listed for doc in yaml.safe_load_all((folder / unit / file).read_text()) if doc]
    return out


def expected_flux_objects(folder, root):
    """The Flux objects the bundle at ``folder`` makes on the cluster: {kind: {(kind, namespace, name)}}, with
    ``root`` ((namespace, name) of the Kustomization applied by hand at the bundle's root) among the Kustomizations,
    one per file the root's kustomization.yaml lists, and every HelmRelease of every unit."""
    kustomizations = {("Kustomization",) + tuple(root)}
    for name in yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]:
        for doc in yaml.safe_load_all((folder / name).read_text()):
            if doc and doc.get("kind") == "Kustomization":
                kustomizations.add(identity(doc))
    releases = {identity(o) for objects in unit_objects(folder).values() for o in objects if o["kind"] == "HelmRelease"}
    return {"Kustomization": kustomizations, "HelmRelease": releases}


# -- what the cluster says -----------------------------------------------------------------------------------------

def waiting_for(items, expected, revision=None):
    """One line per object of ``expected`` that is not there or not Ready (with its Ready message), and, with
    ``revision``, per Kustomization that is Ready at another revision. Empty when all are Ready."""
    read = {identity(o): o for o in items if o.get("kind") in KINDS}
    out = []
    for kind in KINDS:
        for key in sorted(expected.get(kind, ())):
            obj = read.get(key)
            if obj is None:
                out.append("%s: not created yet" % describe(key))
            elif not is_ready(obj):
                out.append("%s: %s" % (describe(key), ready_condition(obj).get("message", "no Ready condition yet")[:300]))
            elif revision and kind == "Kustomization" and obj["status"].get("lastAppliedRevision") != revision:
                out.append("%s: at %s, not %s" % (describe(key), obj["status"].get("lastAppliedRevision"), revision))
    return out


# Why a server-side dry-run refuses an object whose kind the API server does not serve (no CRD), as
# kustomize-controller reports it (fluxcd/pkg/ssa DryRunErr: "<Kind>/[<namespace>/]<name> dry-run failed[ (reason)]:
# <error>", and for a 404 "<id> not found: <error>" or "<id> namespace not specified: <error>"). The REST mapper's
# error names the kind; a 404 from the server for a resource type it does not serve says "the server could not find
# the requested resource" (a missing object would say '<resource> "<name>" not found' instead).
NO_KIND_MATCH = re.compile(r'no matches for kind "(?P<kind>[A-Za-z0-9]+)" in version "(?P<version>[^"]+)"')
NOT_SERVED = re.compile(r"(?:^|\s)(?P<kind>[A-Za-z0-9]+)/[^\s:]+ (?:dry-run failed(?: \([A-Za-z]+\))?|not found|"
                        r"namespace not specified): the server could not find the requested resource")
# API groups Kubernetes serves itself: no CRD is ever missing for their kinds
BUILTIN_GROUP = re.compile(r"^$|^(apps|batch|policy|autoscaling)$|\.k8s\.io$")


def missing_crd_kind(message, kinds):
    """The kind whose CRD ``message`` (a Kustomization's Ready message) says is missing, when it is one of ``kinds``
    ({kind: apiVersion} of the objects applied) and not a kind Kubernetes serves itself; None otherwise (another
    reason, a bare "not found" of anything else, a kind that was not applied)."""
    for pattern in (NO_KIND_MATCH, NOT_SERVED):
        for match in pattern.finditer(message or ""):
            kind = match.group("kind")
            api_version = kinds.get(kind)
            if api_version is None:
                continue
            if "version" in match.groupdict() and match.group("version") != api_version:
                continue
            group = api_version.rpartition("/")[0]
            if not BUILTIN_GROUP.search(group):
                return kind
    return None


def ready_times(items, kind="Kustomization"):
    """{name: when its Ready condition last changed (a datetime), or None when it has none or an unreadable one}."""
    out = {}
    for obj in items:
        if obj.get("kind") != kind:
            continue
        try:
            out[obj["metadata"]["name"]] = parse_time(ready_condition(obj).get("lastTransitionTime"))
        except ValueError:
            out[obj["metadata"]["name"]] = None
    return out


def order_problem(times, first, then):
    """Why ``then`` is not shown to have become Ready after ``first`` (times from ``ready_times``), or None.
    Kubernetes keeps condition times to the second, so the same second is not a reversal; a missing or unreadable
    time, or ``then`` Ready before ``first``, is."""
    for name in (first, then):
        if times.get(name) is None:
            return "%s has no Ready time (lastTransitionTime missing or not RFC 3339)" % name
    if times[then] < times[first]:
        return "%s became Ready at %s, before %s (at %s), which it depends on" % (
            then, times[then].isoformat(), first, times[first].isoformat())
    return None


def ready_summary(items, expected):
    """(line, problems): ``gitops: K/N Kustomizations Ready, H/M HelmReleases Ready``, where K and H count the objects
    of the bundle read from the cluster and Ready, and N and M what the bundle has; problems lists every object of
    the bundle not read or not Ready and every Flux object read that the bundle does not make. The run passes only
    with no problem (then K = N and H = M)."""
    read = {identity(o): o for o in items if o.get("kind") in KINDS}
    counts, problems = [], []
    for kind in KINDS:
        want = expected.get(kind, set())
        present = [key for key in sorted(want) if key in read]
        ready = [key for key in present if is_ready(read[key])]
        counts += [len(ready), len(want)]
        problems += ["%s: not read from the cluster" % describe(key) for key in sorted(want) if key not in read]
        problems += ["%s: not Ready (%s)" % (describe(key), ready_condition(read[key]).get("message", "no Ready condition"))
                     for key in present if key not in ready]
        problems += ["%s: read from the cluster, not made by the bundle" % describe(key)
                     for key in sorted(k for k in read if k[0] == kind and k not in want)]
    line = "gitops: %d/%d Kustomizations Ready, %d/%d HelmReleases Ready" % tuple(counts)
    return line, problems


# -- images ----------------------------------------------------------------------------------------------------------

def nic_repositories(spec):
    """{"nicclusterpolicy <component>": repository} of a NicClusterPolicy spec, secondaryNetwork's components too."""
    out = {}
    for prefix, section in (("", spec or {}), ("secondaryNetwork.", (spec or {}).get("secondaryNetwork") or {})):
        for key, value in sorted(section.items()):
            if isinstance(value, dict) and "repository" in value:
                out["nicclusterpolicy " + prefix + key] = value["repository"]
    return out


def image_problems(found, mirror, expected):
    """One line per image read (``found``: {what: image or repository}) that is not on ``mirror``, empty included,
    and per name of ``expected`` that was not read at all."""
    out = ["%s: %s" % (what, image or "<none>") for what, image in sorted(found.items())
           if not (image or "").startswith(mirror + "/")]
    out += ["%s: not on the cluster" % what for what in sorted(set(expected) - set(found))]
    return out
