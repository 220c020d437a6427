# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The allocatable smoke test: what each node should advertise (exact counts, per-GPU counts times the node's
GPUs, or what a MIG layout gives) and the verdict on what it does. Used by ``workflows.smoke_test``.

Private to the collection: not a public API. Pure: the caller reads the Node objects and polls.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import checks as smoke_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def _per_gpu(value):
    """``expected_per_gpu`` as {resource: whole count}; numeric strings (from Jinja) are accepted."""
    if not isinstance(value, dict) or not value:
        raise ParamError("expected_per_gpu", "must map resources to a count per physical GPU",
                         "e.g. {nvidia.com/gpu: 4} for 4 time-slicing replicas")
    out = {}
    for resource, count in value.items():
        number = smoke_checks.allocatable_count(count)
        if number is None:
            raise ParamError("expected_per_gpu", "%s: %r is not a whole count" % (resource, count),
                             "give whole numbers such as 4")
        out[str(resource)] = number
    return out


def expected_from_labels(nodes, expected_per_gpu):
    """node -> {resource: per-GPU count x the node's ``nvidia.com/gpu.count``}; nodes without the label get
    None (GPU Feature Discovery has not labelled them)."""
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        count = smoke_checks.allocatable_count((meta.get("labels") or {}).get(GPU_COUNT_LABEL))
        out[meta.get("name")] = None if count is None else {
            resource: per_gpu * count for resource, per_gpu in expected_per_gpu.items()}
    return out


def expected_from_mig_layout(nodes, layout, strategy, config=None):
    """node -> what the device plugin advertises once the MIG ``layout`` (a standard name such as
    ``all-1g.10gb``, or a config of the custom mig-parted ``config``) is applied on the node's GPUs (GFD's
    product and count labels); None for a node whose labels say too little. A board without that layout
    raises ParamError."""
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        count = smoke_checks.allocatable_count(labels.get(GPU_COUNT_LABEL))
        product = mig.product_for_label(labels.get(GPU_PRODUCT_LABEL))
        if not count or product is None:
            out[meta.get("name")] = None
            continue
        try:
            entries = config["mig-configs"][layout] if config else mig.named_layout(layout, product)
            count = mig.boards_from_labels(labels.get(GPU_PRODUCT_LABEL), count,
                                           lambda: mig.resources(product, entries, strategy, 1))
            out[meta.get("name")] = None if count is None else mig.resources(product, entries, strategy, count)
        except ParamError as exc:
            raise ParamError("mig_layout", "node %s (%s): %s" % (meta.get("name"), product, exc.msg),
                             "name a layout the pool's GPUs have") from None
    return out


def allocatable_verdict(nodes, expected=None, per_gpu=None, selector=None, mig_layout=None):
    """Judge Node objects against exact counts per node, per-GPU counts times each node's GPU count, or what a
    MIG layout gives (``(layout, strategy)``)."""
    if expected:
        return smoke_checks.check_allocatable(expected, nodes)
    if not nodes:
        return smoke_checks.check_result(False, "no node matches %s" % (selector or "(all nodes)"), [])
    wanted = expected_from_mig_layout(nodes, *mig_layout) if mig_layout else expected_from_labels(nodes, per_gpu)
    unlabelled = sorted(name for name, value in wanted.items() if value is None)
    if unlabelled:
        return smoke_checks.check_result(False, "no %s label on %s (GPU Feature Discovery has not labelled them)"
                                         % (GPU_PRODUCT_LABEL + " or " + GPU_COUNT_LABEL if mig_layout
                                            else GPU_COUNT_LABEL, ", ".join(unlabelled)), unlabelled)
    return smoke_checks.check_allocatable(wanted, nodes)


def label_selector(labels):
    """``{a: b, c: d}`` -> ``"a=b,c=d"`` (None for no labels: every node)."""
    checked = validate.labels("node_selector", labels)
    return ",".join("%s=%s" % pair for pair in sorted(checked.items())) or None


def allocatable_inputs(params):
    """(expected, per_gpu, (mig_layout, mig_strategy)) from the parameters, refused before anything is read when
    none is usable."""
    expected, per_gpu, layout = params.get("expected_allocatable"), params.get("expected_per_gpu"), params.get("mig_layout")
    if expected:
        smoke_checks.check_allocatable(expected, {})  # validates the counts; the verdict is thrown away
        return expected, None, None
    if layout:
        strategy = params.get("mig_strategy") or "single"
        if strategy not in ("single", "mixed"):
            raise ParamError("mig_strategy", "%r is not a MIG strategy of a MIG pool" % (strategy,), "use single or mixed")
        config = params.get("mig_config") or None
        if config is not None:
            mig.validate_mig_parted_config(config)
            if layout not in config["mig-configs"]:
                raise ParamError("mig_layout", "%r is not a config of mig_config" % (layout,),
                                 "name one of %s" % ", ".join(sorted(config["mig-configs"])))
        elif not isinstance(layout, str) or not layout.startswith("all-"):
            raise ParamError("mig_layout", "%r is not a standard layout name" % (layout,),
                             "use all-<profile> (all-1g.10gb), all-balanced or all-enabled, or give the custom "
                             "mig-parted config that defines it (mig_config)")
        return None, None, (layout, strategy, config)
    if per_gpu is None:
        raise ParamError("expected_per_gpu", "nothing to check: none of expected_per_gpu, mig_layout or "
                         "expected_allocatable is given", "give expected_per_gpu or mig_layout (with node_selector), "
                         "or expected_allocatable per node")
    return None, _per_gpu(per_gpu), None
