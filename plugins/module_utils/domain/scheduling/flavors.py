# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The scheduling role's GPU flavors (``scheduling_flavors``) validated into Flavor objects, and the small
validators the rest of the spec shares (names, label values, unknown keys).

Private to the collection: not a public API. Pure: standard library only.
Every bad input is a ParamError naming the role variable (``scheduling_flavors[0].tolerations[1].effect``),
what is wrong, and the fix. Teams are validated in ``domain.scheduling.teams``; ``domain.scheduling.queues.plan``
renders both.

Facts this follows (sources in brackets; nothing copied):

- ResourceFlavor ``spec.tolerations``: at most 8; operator Equal or Exists; no key needs
  Exists; Exists carries no value; tolerationSeconds only with effect NoExecute (CEL rules of
  the CRD, which the schema tests cannot check, so they are checked here).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import fit as mig_fit
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FLAVORS_FIELD = "scheduling_flavors"
FLAVOR_KEYS = ("name", "gpu_product", "node_labels", "tolerations")

GPU_RESOURCE = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MAX_TOLERATIONS = 8  # ResourceFlavor spec.tolerations maxItems


@dataclasses.dataclass(frozen=True)
class Flavor:
    """One validated GPU flavor: a set of nodes with one GPU product."""

    name: str
    gpu_product: str
    node_labels: dict
    tolerations: tuple = ()
    field: str = dataclasses.field(default=FLAVORS_FIELD + "[0]", compare=False)

    @property
    def selector(self):
        """The nodeLabels of the ResourceFlavor (the product label first, then the extra labels by key)."""
        out = {PRODUCT_LABEL: self.gpu_product}
        out.update(sorted(self.node_labels.items()))
        return out


# ---------------------------------------------------------------- small validators

def _unknown_keys(field, raw, known, example):
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ParamError(field, "unknown key(s) %s" % ", ".join(unknown),
                         "use only %s (check the spelling), e.g. %s" % (", ".join(known), example))


def _name(field, value, example):
    """A DNS-1123 label, with an example that fits the field (validate.dns_label's is a namespace)."""
    try:
        return validate.dns_label(field, value)
    except ParamError as err:
        problem = err.msg[len(field) + 2:].split(". Fix: ", 1)[0]
        raise ParamError(field, problem, "use lower-case letters, digits and '-', e.g. %s" % example) from None


def _label_value(field, value, what, example):
    if not isinstance(value, str) or not value:
        raise ParamError(field, "is empty" if value in (None, "") else "%r is not a string" % (value,),
                         "give %s, e.g. %s" % (what, example))
    if len(value) > 63 or not validate.LABEL_VALUE.match(value):
        raise ParamError(field, "%r is not a valid label value (at most 63 letters, digits, '-', '_' and '.', "
                         "starting and ending with a letter or digit)" % (value,),
                         "give %s, e.g. %s" % (what, example))
    return value


# ---------------------------------------------------------------- flavors

def _tolerations(field, value):
    return tuple(taints.tolerations(field, value, MAX_TOLERATIONS, "a Kueue ResourceFlavor"))


def _flavor(raw, index):
    prefix = "%s[%d]" % (FLAVORS_FIELD, index)
    if not isinstance(raw, dict):
        raise ParamError(prefix, "%r is not a flavor (a dictionary)" % (raw,),
                         "give name and gpu_product, e.g. {name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}")
    _unknown_keys(prefix, raw, FLAVOR_KEYS, "{name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}")
    name = _name(prefix + ".name", raw.get("name"), "h100")
    product = _label_value(prefix + ".gpu_product", raw.get("gpu_product"),
                           "the node label value of %s that GPU Feature Discovery sets" % PRODUCT_LABEL,
                           "NVIDIA-H100-80GB-HBM3")
    node_labels = validate.labels(prefix + ".node_labels", raw.get("node_labels"))
    if PRODUCT_LABEL in node_labels:
        raise ParamError(prefix + ".node_labels", "sets %s, which gpu_product already sets" % PRODUCT_LABEL,
                         "remove it from node_labels and give the product as gpu_product")
    tolerations = _tolerations(prefix + ".tolerations", raw.get("tolerations"))
    return Flavor(name=name, gpu_product=product, node_labels=dict(sorted(node_labels.items())),
                  tolerations=tolerations, field=prefix)


def validate_flavors(flavors):
    """``scheduling_flavors`` as a list of Flavor, or ParamError naming the first bad field."""
    if flavors is None:
        return []
    if not isinstance(flavors, list):
        raise ParamError(FLAVORS_FIELD, "must be a list of flavors, not %s" % type(flavors).__name__,
                         "give a list, e.g. [{name: h100, gpu_product: NVIDIA-H100-80GB-HBM3}]")
    out = [_flavor(raw, index) for index, raw in enumerate(flavors)]
    names, selectors = {}, {}
    for index, flavor in enumerate(out):
        if flavor.name in names:
            raise ParamError(flavor.field + ".name", "%r is also the name of %s[%d]" % (
                flavor.name, FLAVORS_FIELD, names[flavor.name]), "give each flavor its own name")
        names[flavor.name] = index
        selector = tuple(flavor.selector.items())
        if selector in selectors:
            raise ParamError(flavor.field, "selects the same nodes as %s[%d] (%s)" % (
                FLAVORS_FIELD, selectors[selector], _selector_text(flavor.selector)),
                "give the flavors different node_labels (e.g. the node pool), or merge them into one")
        selectors[selector] = index
    return out


def _selector_text(selector):
    return ", ".join("%s=%s" % item for item in selector.items())


# ---------------------------------------------------------------- flavors against the nodes

def _matches(selector, labels):
    return all(labels.get(key) == value for key, value in selector.items())


def unmatched_flavors(flavor_objects, nodes):
    """One line per ResourceFlavor whose ``spec.nodeLabels`` no node carries: Kueue admits a workload into it, and its
    pods, given those labels as a node selector, stay Pending. When nodes carry the flavor's product as GPU Feature
    Discovery renames it (``-MIG-<profile>`` under the MIG single strategy, ``-SHARED`` on a time-sliced GPU not
    renamed: ``mig_fit.base_label``), the line names the value to use instead.

    ``flavor_objects``: the ResourceFlavors the scheduling plan renders; ``nodes``: the Node objects (as
    cluster_read returns them). A flavor without nodeLabels matches every node."""
    node_labels = [((n or {}).get("metadata") or {}).get("labels") or {} for n in nodes or []]
    lines = []
    for flavor in flavor_objects or []:
        if (flavor or {}).get("kind") != "ResourceFlavor":
            continue
        selector = (flavor.get("spec") or {}).get("nodeLabels") or {}
        if not selector or any(_matches(selector, labels) for labels in node_labels):
            continue
        name = flavor["metadata"]["name"]
        product = selector.get(PRODUCT_LABEL)
        rest = {k: v for k, v in selector.items() if k != PRODUCT_LABEL}
        renamed = sorted({labels[PRODUCT_LABEL] for labels in node_labels
                          if product and _matches(rest, labels) and labels.get(PRODUCT_LABEL, product) != product
                          and mig_fit.base_label(labels[PRODUCT_LABEL]) == product})
        wanted = ", ".join("%s=%s" % item for item in sorted(selector.items()))
        if renamed:
            lines.append("ResourceFlavor %s: no node has %s; GPU Feature Discovery renamed the product on MIG or "
                         "time-sliced nodes to %s. Fix: give that flavor gpu_product: %s (one flavor per renamed "
                         "product), or select those nodes by a label of their pool in node_labels"
                         % (name, wanted, ", ".join(renamed), renamed[0]))
        else:
            lines.append("ResourceFlavor %s: no node has %s, so workloads Kueue admits into it stay Pending. Fix: "
                         "check gpu_product against the nodes' %s labels (kubectl get nodes -L %s), or ignore this "
                         "while that node pool is scaled to zero" % (name, wanted, PRODUCT_LABEL, PRODUCT_LABEL))
    return lines
