# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One GPU sharing pool of the gpu_sharing role: the Pool it becomes and the checks of its fields.

Private to the collection: not a public API. Pure: standard library only.
A pool is whole GPUs (``none``), time-slicing or MIG on the nodes its ``node_selector`` picks. ``_pool`` checks
one entry of ``gpu_platform_node_pools``; ``domain.sharing.pools.validate_pools`` checks the list (names, selectors and MIG
strategies that must not clash) and renders what the GPU Operator needs (the facts are in its docstring).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import (
    layouts as mig, custom as mig_custom)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELD = "gpu_platform_node_pools"
NONE = "none"
TIME_SLICING = "time-slicing"
MIG = "mig"
SHARING_MODES = (NONE, TIME_SLICING, MIG)
MIG_POOL_STRATEGIES = ("single", "mixed")
MIG_CONFIG_FIELD = mig_custom.FIELD

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
DEFAULT_CONFIG = "default"

MIN_REPLICAS = 2  # the plugin's own floor (api/config/v1/replicas.go: "must be >= 2")
# Our ceiling, not the plugin's (it has none; k8s-device-plugin#1433 runs 16384). Every replica
# gets an equal time share and its own CUDA context in the one frame buffer: in NVIDIA's own
# example (gpu-sharing.rst, 2022 edition) each process held 315 MiB of a 15 GiB T4, so 64
# replicas need ~20 GiB before doing any work. Past 64 a value is far more likely a typo (40 for
# 4) than a plan; raise MAX_REPLICAS here if a real workload needs more.
MAX_REPLICAS = 64

POOL_KEYS = ("name", "node_selector", "sharing", "replicas", "rename_by_default", "fail_requests_greater_than_one",
             "multi_tenant", "mig_profile", "mig_strategy", "gpu_product")
# Keys that only mean something for one sharing mode, with the default that is tolerated elsewhere
# (so a role may combine every pool with the same defaults dict).
TIME_SLICING_ONLY = {"replicas": None, "rename_by_default": False, "fail_requests_greater_than_one": True}
MIG_ONLY = {"mig_profile": None, "mig_strategy": "single", "gpu_product": None}


@dataclasses.dataclass(frozen=True)
class Pool:
    """One validated node pool. ``field`` (e.g. ``gpu_platform_node_pools[2]``) names it in errors."""

    name: str
    node_selector: dict
    sharing: str
    replicas: int | None = None
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = True
    multi_tenant: bool = False
    mig_profile: str | None = None
    mig_strategy: str | None = None
    gpu_product: str | None = None
    field: str = dataclasses.field(default=FIELD + "[0]", compare=False)

    @property
    def time_slicing(self):
        return self.sharing == TIME_SLICING

    @property
    def resource_name(self):
        """The extended resource that pods on this pool request (MIG pools: see the MIG catalog)."""
        if self.time_slicing and self.rename_by_default:
            return GPU_RESOURCE + SHARED_SUFFIX
        return GPU_RESOURCE

    def to_dict(self):
        out = dataclasses.asdict(self)
        out.pop("field")
        return out


def _bool(field, value, default):
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ParamError(field, "%r is not true or false" % (value,), "set it to true or false (unquoted)")
    return value


def _name(field, value, index):
    validate.dns_label(field, value)
    if value == DEFAULT_CONFIG:
        raise ParamError(field, "%r is reserved: the ConfigMap key %r holds the no-sharing config for unlabelled "
                         "nodes" % (value, DEFAULT_CONFIG), "rename pool %d, e.g. to general" % index)
    return value


def _node_selector(field, value):
    if value is None or value == {}:
        raise ParamError(field, "is required and empty: a pool without a selector would relabel every node",
                         "give the labels that pick this pool's nodes, e.g. {nodepool: training}")
    return dict(sorted(validate.labels(field, value).items()))


def _replicas(field, value):
    if value is None:
        raise ParamError(field, "is required when sharing is time-slicing",
                         "give how many pods may share each GPU, a whole number from %d to %d, e.g. 4"
                         % (MIN_REPLICAS, MAX_REPLICAS))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(field, "%r is not a whole number" % (value,),
                         "give an unquoted whole number from %d to %d, e.g. 4" % (MIN_REPLICAS, MAX_REPLICAS))
    if value < MIN_REPLICAS:
        raise ParamError(field, "%d is below %d, the device plugin's minimum (1 replica is no sharing)" % (
            value, MIN_REPLICAS), "use sharing: none for whole GPUs, or give %d to %d" % (MIN_REPLICAS, MAX_REPLICAS))
    if value > MAX_REPLICAS:
        raise ParamError(field, "%d is above %d pods per GPU: every replica holds its own CUDA context in the same GPU "
                         "memory and gets an equal time share" % (value, MAX_REPLICAS),
                         "give at most %d (check for a typo such as 40 for 4)" % MAX_REPLICAS)
    return value


def _mig_profile(field, value):
    if value is None or value == "":
        raise ParamError(field, "is required when sharing is mig",
                         "name a MIG configuration of the mig-manager catalog, e.g. all-1g.10gb")
    if not isinstance(value, str) or len(value) > 63 or not validate.LABEL_VALUE.match(value):
        raise ParamError(field, "%r is not a MIG configuration name (it becomes the nvidia.com/mig.config label "
                         "value)" % (value,), "use a name such as all-1g.10gb or all-balanced")
    if value == "all-disabled":
        raise ParamError(field, "all-disabled turns MIG off, which contradicts sharing: mig",
                         "use sharing: none for whole GPUs, or pick a MIG layout such as all-1g.10gb")
    return value


def _refuse_foreign(prefix, raw, sharing, keys, mode):
    for key, tolerated in keys.items():
        value = raw.get(key)
        if value is None or (value == tolerated and isinstance(value, type(tolerated))):
            continue
        raise ParamError("%s.%s" % (prefix, key), "applies only to sharing: %s, but this pool uses %s" % (mode, sharing),
                         "remove %s from this pool, or set sharing: %s" % (key, mode))


def _pool(raw, index, mig_config=None):
    prefix = "%s[%d]" % (FIELD, index)
    if not isinstance(raw, dict):
        raise ParamError(prefix, "%r is not a pool (a dictionary)" % (raw,),
                         "give name, node_selector and sharing, e.g. {name: training, node_selector: "
                         "{nodepool: training}, sharing: none}")
    unknown = sorted(str(k) for k in raw if k not in POOL_KEYS)
    if unknown:
        raise ParamError(prefix, "unknown key(s) %s" % ", ".join(unknown),
                         "use only %s (check the spelling)" % ", ".join(POOL_KEYS))
    name = _name(prefix + ".name", raw.get("name"), index)
    sharing = raw.get("sharing")
    if sharing not in SHARING_MODES:
        raise ParamError(prefix + ".sharing", "%r is not a sharing mode" % (sharing,),
                         "use one of %s" % ", ".join(SHARING_MODES))
    selector = _node_selector(prefix + ".node_selector", raw.get("node_selector"))
    multi_tenant = _bool(prefix + ".multi_tenant", raw.get("multi_tenant"), False)
    if sharing != TIME_SLICING:
        _refuse_foreign(prefix, raw, sharing, TIME_SLICING_ONLY, TIME_SLICING)
    if sharing != MIG:
        _refuse_foreign(prefix, raw, sharing, MIG_ONLY, MIG)
    fields = {"name": name, "node_selector": selector, "sharing": sharing, "multi_tenant": multi_tenant,
              "field": prefix}
    if sharing == TIME_SLICING:
        fields["replicas"] = _replicas(prefix + ".replicas", raw.get("replicas"))
        fields["rename_by_default"] = _bool(prefix + ".rename_by_default", raw.get("rename_by_default"), False)
        fields["fail_requests_greater_than_one"] = _bool(
            prefix + ".fail_requests_greater_than_one", raw.get("fail_requests_greater_than_one"), True)
    elif sharing == MIG:
        fields["mig_profile"] = _mig_profile(prefix + ".mig_profile", raw.get("mig_profile"))
        strategy = raw.get("mig_strategy")
        strategy = MIG_ONLY["mig_strategy"] if strategy is None else strategy
        if strategy not in MIG_POOL_STRATEGIES:
            raise ParamError(prefix + ".mig_strategy", "%r is not a MIG strategy for a MIG pool" % (strategy,),
                             "use single (one MIG size per node, requested as nvidia.com/gpu) or mixed "
                             "(nvidia.com/mig-<size> resources)")
        fields["mig_strategy"] = strategy
        fields["gpu_product"] = _mig_layout(prefix, fields["mig_profile"], raw.get("gpu_product"), mig_config)
    return Pool(**fields)


def _product_key(prefix, product):
    key = product if product in mig.CATALOG else mig.product_for_label(product)
    if key is None:
        raise ParamError(prefix + ".gpu_product", "%r is not a MIG-capable GPU of the catalog" % (product,),
                         "use one of %s, or GFD's nvidia.com/gpu.product value such as NVIDIA-A100-SXM4-80GB"
                         % ", ".join(mig.CATALOG))
    return key


def _mig_layout(prefix, layout, product, mig_config=None):
    """The pool's MIG layout checked against the MIG catalog, also where no cluster is read (GitOps rendering):
    on ``gpu_product`` when the pool names it, else on every GPU the catalog knows. With a custom mig-parted
    config (``gpu_platform_mig_config``) the layout must be one of its configs: the MIG manager then reads only
    that file. Returns the product's key."""
    if mig_config:
        configs = mig_config["mig-configs"]
        if layout not in configs:
            raise ParamError(prefix + ".mig_profile", "%r is not a config of %s; with a custom config the MIG manager "
                             "knows only its configs" % (layout, MIG_CONFIG_FIELD),
                             "use one of %s, or add %r to %s.mig-configs" % (", ".join(configs), layout, MIG_CONFIG_FIELD))
        if not any(entry["mig-enabled"] for entry in configs[layout]):
            raise ParamError(prefix + ".mig_profile", "%s turns MIG off on every GPU, which contradicts sharing: mig"
                             % layout, "use sharing: none for whole GPUs, or name a config that enables MIG")
        if product is None:
            return None
        key = _product_key(prefix, product)
        try:
            mig.validate_mig_parted_config(mig_config, {prefix: key}, profile=layout)
        except ParamError as exc:
            raise mig_custom.config_error(exc)
        return key
    try:
        return mig.check_layout_name(prefix + ".mig_profile", layout, product)
    except ParamError as exc:
        if exc.field == "gpu_product":
            raise ParamError(prefix + ".gpu_product", exc.msg[len("gpu_product: "):].split(". Fix: ")[0],
                             exc.msg.split(". Fix: ", 1)[1])
        raise
