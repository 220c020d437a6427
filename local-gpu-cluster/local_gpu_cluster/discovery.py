"""Discovery documents: ``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/<g>/<v>``.

Only the legacy (unaggregated) discovery format is served; clients asking for aggregated
discovery (``as=APIGroupDiscoveryList``) accept the plain documents.
"""

import re

from .kinds import SUBRESOURCE_VERBS, VERBS

_GIT_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$")


def parse_git_version(git_version):
    """``v1.34.1`` -> (1, 34, 1); ValueError if it is not semver with a ``v``."""
    match = _GIT_VERSION.match(git_version or "")
    if not match:
        raise ValueError(f"git_version must look like v1.34.1, not {git_version!r}")
    return tuple(int(part) for part in match.groups())


def version_info(git_version):
    major, minor = parse_git_version(git_version)[:2]
    return {"major": str(major), "minor": str(minor), "gitVersion": git_version,
            "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc",
            "platform": "linux/amd64"}


def api_versions(server_address):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _group_entry(group, versions):
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry):
    groups = registry.groups()
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_entry(g, vs) for g, vs in sorted(groups.items()) if g]}


def api_group(registry, group):
    versions = registry.groups().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


# Subresources whose kind lives in another group; kubectl drain finds the Eviction API by this.
_SUBRESOURCE_GROUP_VERSION = {"scale": {"group": "autoscaling", "version": "v1"},
                              "eviction": {"group": "policy", "version": "v1"}}


def _resource_entries(rtype):
    entry = {"name": rtype.plural, "singularName": rtype.singular,
             "namespaced": rtype.namespaced, "kind": rtype.kind, "verbs": list(VERBS)}
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    entries = [entry]
    for sub in rtype.subresources:
        kind = {"scale": "Scale", "eviction": "Eviction"}.get(sub, rtype.kind)
        entries.append({"name": f"{rtype.plural}/{sub}", "singularName": "",
                        "namespaced": rtype.namespaced, "kind": kind,
                        "verbs": list(SUBRESOURCE_VERBS[sub]),
                        **_SUBRESOURCE_GROUP_VERSION.get(sub, {})})
    return entries


def api_resource_list(registry, group, version):
    types = registry.types_in(group, version)
    if not types:
        return None
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": [e for t in types for e in _resource_entries(t)]}
