# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The fabric test's floors per node type and link type, with their sources, and the user's overrides.

Private to the collection: not a public API. Pure: standard library only, no I/O.

The numbers live in the one node-type table, ``domain.network.node_types`` (LINK_TYPES: per-port ib_write_bw;
NODE_TYPES: two-node NCCL Ring busbw). ``floors`` gives one node type's floors; ``overrides`` is a dict keyed by a
node type (short name or VM size) or a link type (NDR, HDR), each a dict of ``ib_write_bw_gbps`` and, for a node
type, ``busbw_gbps``. An override replaces the floor and becomes its source.
"""

from __future__ import annotations

import math

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import node_types
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELD = "fabric_thresholds"
NODE_KEYS = ("ib_write_bw_gbps", "busbw_gbps")
LINK_KEYS = ("ib_write_bw_gbps",)


def bandwidth(field, value, example="380"):
    """``value`` as a bandwidth (a number of 0 or more, not NaN); a ParamError naming ``field`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ParamError(field, "%r is not a bandwidth" % (value,), "give a number of 0 or more, such as %s" % example)
    return float(value)


def check_overrides(overrides):
    """``overrides`` checked: ``{"nodes": {type: {key: float}}, "links": {link: {key: float}}}``."""
    out = {"nodes": {}, "links": {}}
    if overrides in (None, ""):
        return out
    if not isinstance(overrides, dict):
        raise ParamError(FIELD, "%r is not a dict" % (overrides,),
                         "give a dict such as {nd-h100-v5: {busbw_gbps: 300}, NDR: {ib_write_bw_gbps: 370}}")
    for key in sorted(overrides, key=str):
        field = "%s.%s" % (FIELD, key)
        link = str(key).upper()
        if link in node_types.LINK_TYPES:
            kind, name, allowed = "links", link, LINK_KEYS
        else:
            try:
                name, _facts = node_types.lookup(field, key if isinstance(key, str) else repr(key), required=True)
            except ParamError:
                raise ParamError(field, "%r is neither a known node type nor a link type" % (key,),
                                 "use one of %s, or a link type (%s)" % (
                                     ", ".join(node_types.known()), ", ".join(sorted(node_types.LINK_TYPES))))
            kind, allowed = "nodes", NODE_KEYS
        values = overrides[key]
        if not isinstance(values, dict):
            raise ParamError(field, "%r is not a dict" % (values,), "give {%s: <number>}" % allowed[0])
        for item in sorted(values, key=str):
            if item not in allowed:
                raise ParamError("%s.%s" % (field, item), "is not a floor of a %s" % kind[:-1],
                                 "use %s" % " or ".join(allowed))
            out[kind].setdefault(name, {})[item] = bandwidth("%s.%s" % (field, item), values[item])
    return out


def floors(node_type, overrides=None, field="node_type"):
    """One node type's floors: ``{node_type, link, nics, ib_write_bw_gbps, ib_write_bw_source, busbw_gbps,
    busbw_source}``, with ``overrides`` (as ``check_overrides`` takes them) applied; an unknown type is a ParamError
    naming ``field``."""
    checked = check_overrides(overrides)
    name, facts = node_types.lookup(field, node_type, required=True)
    link = facts["link"]
    out = {"node_type": name, "link": link, "nics": facts["nics"],
           "ib_write_bw_gbps": node_types.LINK_TYPES[link]["ib_write_bw_gbps"],
           "ib_write_bw_source": node_types.LINK_TYPES[link]["source"],
           "busbw_gbps": facts["fabric_busbw_gbps"], "busbw_source": facts["fabric_busbw_source"]}
    for kind, key in (("links", link), ("nodes", name)):
        for item, value in checked[kind].get(key, {}).items():
            out[item] = value
            out[item.replace("_gbps", "_source")] = "override: %s.%s.%s" % (FIELD, key, item)
    return out


def table(overrides=None):
    """Every node type's floors, by name."""
    return {name: floors(name, overrides) for name in node_types.known()}
