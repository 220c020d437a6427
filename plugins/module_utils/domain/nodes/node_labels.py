# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Labels for the nodes that label selectors pick: the requests checked, and which nodes must change.

Private to the collection: not a public API. Pure: standard library only, no I/O.
The workflow (workflows/node_labels.py) lists each selector's nodes and applies what this plans.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


@dataclass(frozen=True)
class LabelRequest:
    """One entry of the module's ``nodes``: the nodes a selector picks get these labels (a value of None: the label
    is removed)."""

    name: str
    selector: str
    labels: dict


def check_requests(entries, field="nodes"):
    """The module's ``nodes`` entries as LabelRequests; a bad selector, key or value names its place."""
    if not isinstance(entries, list) or not entries:
        raise ParamError(field, "must be a non-empty list of {selector, labels}",
                         "give at least one entry, e.g. [{selector: nodepool=dra, labels: {key: value}}]")
    requests, names = [], set()
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (field, index)
        if not isinstance(entry, dict):
            raise ParamError(where, "%r is not a dictionary" % (entry,), "give {selector: ..., labels: {...}}")
        selector = entry.get("selector")
        if not isinstance(selector, str) or not selector.strip():
            raise ParamError(where + ".selector", "is missing",
                             "give the label selector of the nodes, as kubectl -l takes it (e.g. nodepool=dra); "
                             "an empty selector would label every node")
        validate.parse_selector(where + ".selector", selector)
        labels = entry.get("labels")
        if not isinstance(labels, dict) or not labels:
            raise ParamError(where + ".labels", "must be a non-empty dictionary of label: value",
                             "give the labels these nodes get")
        removed = sorted(str(key) for key, value in labels.items() if value is None)
        for key in removed:
            validate.label_key(where + ".labels", key)
        checked = validate.labels(where + ".labels", {k: v for k, v in labels.items() if v is not None})
        checked.update((key, None) for key in removed)
        name = str(entry.get("name") or selector)
        if name in names:
            raise ParamError(where + ".name", "%r names two entries" % name, "give each entry its own name")
        names.add(name)
        requests.append(LabelRequest(name, selector.strip(), checked))
    return requests


def plan(requests, selected):
    """Which nodes change, from ``selected`` (one list of Node objects per request, in order).

    Returns (per request {name, selector, nodes}, [(node name, labels to set (None: to remove), their values
    before)]) for the nodes whose labels differ. A node that two requests pick with different values for one key is refused,
    naming both, before anything is written.
    """
    wanted, current, owner = {}, {}, {}
    report = []
    for request, nodes in zip(requests, selected):
        names = []
        for node in nodes:
            meta = node.get("metadata") or {}
            node_name = meta.get("name")
            names.append(node_name)
            current[node_name] = meta.get("labels") or {}
            for key, value in request.labels.items():
                seen = owner.get((node_name, key))
                if seen is not None and wanted[node_name][key] != value:
                    raise ParamError("nodes", "node %s is picked by %s (%s=%s) and by %s (%s=%s)"
                                     % (node_name, seen, key, wanted[node_name][key], request.name, key, value),
                                     "make the selectors pick disjoint nodes (a node belongs to one pool)")
                owner[(node_name, key)] = request.name
                wanted.setdefault(node_name, {})[key] = value
        report.append({"name": request.name, "selector": request.selector, "nodes": sorted(names)})
    changes = []
    for node_name in sorted(wanted):
        labels = wanted[node_name]
        if any(current[node_name].get(key) != value for key, value in labels.items()):
            changes.append((node_name, dict(labels), {key: current[node_name].get(key) for key in labels}))
    return report, changes


def unmatched(report):
    """The requests whose selector picked no node."""
    return [entry for entry in report if not entry["nodes"]]


PATCH_LIST = "NodeLabelPatchList"


def patch_list(requests):
    """The NodeLabelPatchList a GitOps bundle carries for ``requests`` (from check_requests): one patch per request,
    applied with ``kubectl label`` (docs/gitops.md), and read back by from_patch_lists."""
    return {"kind": PATCH_LIST, "patches": [{"selector": r.selector, "labels": dict(r.labels)} for r in requests]}


HOSTNAME_LABEL = "kubernetes.io/hostname"


def from_patch_lists(files):
    """The ``nodes`` entries of the node label patch lists a GitOps bundle carries (``*-node-labels.yaml``:
    ``{kind: NodeLabelPatchList, patches: [{selector | node, labels}]}``), from ``files``: [(name, [documents])].

    A patch names its nodes by ``selector`` (as kubectl -l takes it) or by ``node`` (one node, picked by its
    ``kubernetes.io/hostname`` label). Each entry is named ``<file>#<n>``. Raises ParamError naming the file
    and patch for anything else.
    """
    entries = []
    for file_name, documents in files:
        for doc in documents:
            if doc is None:
                continue
            if not isinstance(doc, dict) or doc.get("kind") != PATCH_LIST or not isinstance(doc.get("patches"), list):
                raise ParamError(file_name, "is not a %s ({kind: %s, patches: [...]})" % (PATCH_LIST, PATCH_LIST),
                                 "point at the bundle site.yml rendered, whose *-node-labels.yaml files hold them")
            for index, patch in enumerate(doc["patches"]):
                where = "%s#%d" % (file_name, index + 1)
                if not isinstance(patch, dict) or bool(patch.get("selector")) == bool(patch.get("node")):
                    raise ParamError(where, "%r has not exactly one of selector and node" % (patch,),
                                     "render the bundle again with site.yml instead of editing it")
                selector = patch.get("selector") or "%s=%s" % (HOSTNAME_LABEL, patch["node"])
                entry = {"name": where, "selector": selector, "labels": patch.get("labels")}
                check_requests([entry], where)
                entries.append(entry)
    return entries
