# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> plan -> apply -> result for node_labels.

Private to the collection: not a public API. One LIST per selector (its count does not grow with the
nodes), the plan from domain/nodes/node_labels.py, then one server-side apply of a label-only Node for each
node whose labels differ (and a merge patch for the labels it removes); nodes that already carry the labels cost no
request.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels as domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects as domain_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def request(params):
    """The module's label requests, and with ``render_to`` its file name: every check that needs no cluster. The
    module runs it first; the preflight (playbooks/checks.yml) runs it before anything is written."""
    requests = domain.check_requests(params.get("nodes"))
    if params.get("render_to"):
        _file_name(params.get("render_name"))
    return requests


def _file_name(name):
    if not name or "/" in name or name.startswith("."):
        raise ParamError("render_name", "%r cannot name the file with render_to" % (name,),
                         "give the unit's name, e.g. gpu-sharing (the file is <render_name>-node-labels.yaml)")
    return "%s-node-labels.yaml" % name


def run(params, kube_factory, check_mode=False):
    """The node_labels module: label the nodes each selector picks, writing only the nodes that differ."""
    requests = request(params)
    if params.get("render_to"):
        return run_render(params, requests, check_mode)
    kube = kube_factory()
    selected = [kube.list("v1", "Node", label_selector=request.selector) for request in requests]
    report, changes = domain.plan(requests, selected)
    empty = domain.unmatched(report)
    if empty and params.get("require_match", True):
        error = ParamError("nodes", "%s picks no node, so nothing was labelled"
                           % " and ".join("%s (selector %s)" % (e["name"], e["selector"]) for e in empty),
                           "give the selector of existing nodes (kubectl get nodes -l '<selector>'), or set "
                           "require_match: false where an empty pool is expected")
        error.details["selected"] = report
        raise error
    for node_name, labels, dummy in changes:
        kept = {key: value for key, value in labels.items() if value is not None}
        if kept:
            kube.apply(domain_objects.node_label_objects([node_name], kept)[0], dry_run=check_mode)
        if len(kept) < len(labels):  # a merge patch removes a label whoever set it (an apply cannot)
            kube.patch_labels("v1", "Node", node_name, {key: None for key in labels if key not in kept},
                              dry_run=check_mode)
    return {
        "changed": bool(changes), "selected": report, "changed_nodes": [name for name, dummy, dummy2 in changes],
        "diff": [{"before_header": "Node %s labels" % name, "after_header": "Node %s labels" % name,
                  "before": "".join("%s: %s\n" % (k, before[k]) for k in sorted(before) if before[k] is not None),
                  "after": "".join("%s: %s\n" % (k, labels[k]) for k in sorted(labels) if labels[k] is not None)}
                 for name, labels, before in changes],
    }


def run_render(params, requests, check_mode):
    """With render_to: the requests as a NodeLabelPatchList file in the bundle, for kubectl label; no cluster read."""
    name = params.get("render_name")
    file_name = _file_name(name)
    files = {file_name: render.to_yaml(domain.patch_list(requests), "%s (apply with kubectl label)" % name)}
    changed, diffs = render.write_files(params["render_to"], files, check_mode)
    return {"changed": bool(changed), "diff": diffs, "selected": [],
            "changed_nodes": [], "rendered": {"directory": params["render_to"], "files": [file_name],
                                              "changed_files": changed}}
