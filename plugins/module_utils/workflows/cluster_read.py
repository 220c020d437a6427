# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> reads -> result for cluster_read.

Private to the collection: not a public API. The server's version from discovery (no extra request when the
discovery cache is warm), helm's releases from its release Secrets (what ``helm list`` shows, no values), and
objects by name or by one list with selectors; a kind the cluster does not serve is
an empty answer with ``api_found: false``, as kubernetes.core.k8s_info gives it. A list answered 404 is such a kind
too: the discovery cache still named a kind whose CRD has since been deleted (an uninstall run again).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import records
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError


def run(params, kube_factory):
    """The cluster_read module: nothing is written, so check mode reads the same."""
    kind = params.get("kind")
    if not kind and not params.get("version") and not params.get("helm_releases"):
        raise ParamError("kind", "is not set and version and helm_releases are false, so there is nothing to read",
                         "give the kind of the objects to read, or version: true, or helm_releases: true")
    if params.get("name") and (params.get("label_selectors") or params.get("field_selectors")):
        raise ParamError("name", "is set together with selectors", "read one object by name, or a list by selectors")
    kube = kube_factory()
    result = {"changed": False}
    if params.get("version"):
        result["version"] = {"server": {"kubernetes": kube.version()}}
    if params.get("helm_releases"):
        # helm's own records (the release Secrets it reads for helm list); only what helm list shows is returned,
        # never a release's values (they may hold what its user set, credentials included)
        secrets = kube.list("v1", "Secret", namespace=params.get("namespace"), label_selector="owner=helm")
        try:
            result["helm_releases"] = records.releases_from_secrets(secrets)[0]
        except records.BadReleaseRecord as exc:
            raise ToolError("a helm release Secret cannot be read: %s" % exc) from None
    if kind:
        api_version = params.get("api_version") or "v1"
        if not kube.serves(api_version, kind):
            result.update(api_found=False, resources=[])
            return result
        if params.get("name"):
            found = kube.get(api_version, kind, params["name"], namespace=params.get("namespace"))
            resources = [found] if found else []
        else:
            try:
                resources = kube.list(api_version, kind, namespace=params.get("namespace"),
                                      label_selector=",".join(params.get("label_selectors") or []) or None,
                                      field_selector=",".join(params.get("field_selectors") or []) or None)
            except ToolError as exc:
                if exc.details.get("status") != 404:
                    raise
                result.update(api_found=False, resources=[])
                return result
        result.update(api_found=True, resources=resources)
    return result
