# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG layouts: the product catalog, the standard layout names, mig-parted configs, expected resources.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Used by the mig_profile module and the gpu_sharing role. The per-GPU facts (CATALOG) are data in
catalog*.py, each product with the URL it was taken from; nothing there is guessed. What NVIDIA
does not document is left out or handled by a stated fallback rule (see _fits_by_count).

Vocabulary
- product: a CATALOG key such as ``A100-80GB``; product_for_label maps the GFD node label
  ``nvidia.com/gpu.product`` (``NVIDIA-A100-SXM4-80GB``) to it.
- layout entries: the list of ``{devices, mig-enabled, mig-devices[, device-filter]}`` dictionaries
  that one named config of a mig-parted config holds (format v1, mig-parted api/spec/v1/spec.go:
  https://github.com/NVIDIA/mig-parted/blob/main/api/spec/v1/spec.go).
- slices: compute slices (the ``<n>g`` of a profile name). Memory is counted in memory slices: a
  7-slice GPU has 8 of them, a 4-slice GPU 4; NVIDIA's placement tables are on that axis.

Standard layout names are the ones the GPU Operator's MIG manager offers on a node. Older GPU
Operator releases shipped them as a static ConfigMap, default-mig-parted-config
(https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-mig-manager/0400_configmap.yaml);
gpu-operator#2043 with mig-parted#295 (merged 2026) replaced it with a config the MIG manager
generates from the hardware of each node (the v26.7.0 chart values: "MIG manager automatically
generates configuration from hardware"). Both give the same names: ``all-disabled``,
``all-enabled``, ``all-<profile>`` (``+`` written as ``.``, e.g. ``all-1g.10gb.me``) with the
profile's maximum count, and ``all-balanced``.
"""

from __future__ import annotations

import copy
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog import (
    CATALOG, MIN_DRIVER, NOT_IN_CATALOG)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog_common import (
    MIG_GUIDE_GPUS, MIG_GUIDE_PLACEMENTS, MIG_GUIDE_PROFILES, MIG_PARTED_BALANCED, OPERATOR_DEFAULT_CONFIG,
    PROFILE_NAME, alternate_names)
# The product and fit checks live in fit.py; re-exported so callers keep using mig.<name>.
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.fit import (
    _check_counts, _check_layout, _describe, _fits_by_count, _has_placements, _others_with, _place, _spec,
    accepted_names, product_for_label, profile_names, validate_layout)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# Names other modules and the tests read as mig.<name>.
REEXPORTED = (MIN_DRIVER, NOT_IN_CATALOG, MIG_GUIDE_GPUS, MIG_GUIDE_PLACEMENTS, MIG_GUIDE_PROFILES, MIG_PARTED_BALANCED,
              OPERATOR_DEFAULT_CONFIG, _describe, _fits_by_count, _has_placements, _others_with, _place, profile_names,
              validate_layout, accepted_names)

STRATEGIES = ("none", "single", "mixed")
CONFIG_VERSION = "v1"
ENTRY_KEYS = ("devices", "mig-enabled", "mig-devices", "device-filter")
RESOURCE_PREFIX = "nvidia.com/"

DEVICE_ID = re.compile(r"^0x[0-9A-Fa-f]{8}$")


# --- layouts -------------------------------------------------------------------------------------

def _layout_name(profile):
    # Node label values may not hold '+': mig-parted names the config all-1g.10gb.me.
    return "all-" + profile.replace("+", ".")


def _layouts(spec):
    out = {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
        "all-balanced": [{"devices": "all", "mig-enabled": True, "mig-devices": dict(spec["balanced"])}],
    }
    for name, profile in spec["profiles"].items():
        out[_layout_name(name)] = [{"devices": "all", "mig-enabled": True,
                                    "mig-devices": {name: profile["max_instances"]}}]
    # The other spellings of driver-dependent names (GB200's all-3g.95gb beside all-3g.93gb): the operator's
    # default config offers both, and the node's driver decides which one mig-parted can apply.
    for other, first in alternate_names(spec).items():
        out[_layout_name(other)] = [{"devices": "all", "mig-enabled": True,
                                     "mig-devices": {other: spec["profiles"][first]["max_instances"]}}]
    return out


def layout_names(product):
    """The standard layout names a product has: all-disabled, all-enabled, all-balanced, all-<profile>."""
    return list(_layouts(_spec(product)))


def named_layout(name, product):
    """The mig-parted entries of a standard layout name on a product (a new list each call).

    ``all-1g.10gb`` on A100-80GB -> ``[{"devices": "all", "mig-enabled": True,
    "mig-devices": {"1g.10gb": 7}}]``. An unknown name, or ``all-<profile>`` for a profile the
    product does not have, raises ParamError naming the field ``profile``.
    """
    spec = _spec(product)
    layouts = _layouts(spec)
    if isinstance(name, str) and name in layouts:
        return copy.deepcopy(layouts[name])
    known = ", ".join(layouts)
    text = name if isinstance(name, str) else repr(name)
    wanted = re.sub(r"\.me$", "+me", text[4:]) if text.startswith("all-") else ""
    if wanted and PROFILE_NAME.match(wanted):
        owners = _others_with(wanted)
        where = (" (%s %s it)" % (", ".join(owners), "has" if len(owners) == 1 else "have")) if owners else ""
        raise ParamError("profile", "%s needs the MIG profile %s, which %s does not have%s"
                         % (text, wanted, spec["product"], where),
                         "use one of the layouts of %s: %s" % (spec["product"], known))
    raise ParamError("profile", "%r is not a standard MIG layout name for %s" % (text, spec["product"]),
                     "use one of %s, or give a custom mig-parted config (mig_config) that defines it" % known)


def check_layout_name(field, name, product=None):
    """A standard layout name checked without a cluster: against ``product`` (a catalog key or GFD's
    nvidia.com/gpu.product value) when given, else against every GPU of the catalog. Returns the product's key
    (or None). Raises ParamError naming ``field`` (``<field-of-product>`` for an unknown product is the caller's)."""
    if not isinstance(name, str) or not name or len(name) > 63 or not validate.LABEL_VALUE.match(name):
        raise ParamError(field, "%r is not a MIG layout name (it becomes the nvidia.com/mig.config label value)"
                         % (str(name)[:100],), "use a name such as all-1g.10gb or all-balanced")
    if product is not None:
        key = product if product in CATALOG else product_for_label(product)
        if key is None:
            raise ParamError("gpu_product", "%r is not a MIG-capable GPU of the catalog" % (product,),
                             "use one of %s, or GFD's nvidia.com/gpu.product value such as NVIDIA-A100-SXM4-80GB"
                             % ", ".join(CATALOG))
        try:
            named_layout(name, key)
        except ParamError as exc:
            raise ParamError(field, exc.msg[len(exc.field) + 2:].split(". Fix: ")[0], exc.msg.split(". Fix: ", 1)[1])
        return key
    if not any(name in layout_names(key) for key in CATALOG):
        raise ParamError(field, "%r is not a MIG layout of any GPU the catalog knows (%s)" % (name, ", ".join(CATALOG)),
                         "use all-balanced or all-<profile> with a profile of the pool's GPU, e.g. all-1g.10gb on "
                         "A100-80GB; name the GPU as gpu_product to have the layout checked against it")
    return None


# --- mig-parted configs ----------------------------------------------------------------------------

def _check_entry(entry, field, path):
    """Structure of one entry as mig-parted's spec v1 reads it (api/spec/v1/spec.go)."""
    if not isinstance(entry, dict):
        raise ParamError(field, "%s must be a dictionary with devices and mig-enabled, not %r" % (path, entry),
                         "write it as {devices: all, mig-enabled: true, mig-devices: {\"1g.10gb\": 7}}")
    for key in entry:
        if key not in ENTRY_KEYS:
            raise ParamError(field, "%s.%s is not a field mig-parted knows (it refuses unexpected fields)"
                             % (path, key), "use only %s" % ", ".join(ENTRY_KEYS))
    for key in ("devices", "mig-enabled"):
        if key not in entry:
            raise ParamError(field, "%s has no %s (mig-parted requires it)" % (path, key),
                             "add %s" % ("devices: all (or a list of GPU indices)" if key == "devices"
                                         else "mig-enabled: true or false"))
    devices = entry["devices"]
    if devices != "all":
        if (not isinstance(devices, list) or not devices
                or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in devices)):
            raise ParamError(field, "%s.devices is %r; it must be \"all\" or a list of GPU indices" % (path, devices),
                             "write devices: all, or devices: [0, 1] with the indices nvidia-smi -L prints")
        if len(set(devices)) != len(devices):
            raise ParamError(field, "%s.devices lists a GPU index twice: %r" % (path, devices),
                             "list each GPU index once")
    if not isinstance(entry["mig-enabled"], bool):
        raise ParamError(field, "%s.mig-enabled is %r, not true or false" % (path, entry["mig-enabled"]),
                         "write mig-enabled: true or mig-enabled: false (unquoted)")
    if "device-filter" in entry:
        filt = entry["device-filter"]
        items = [filt] if isinstance(filt, str) else filt
        if not isinstance(items, list) or not items or not all(isinstance(i, str) and DEVICE_ID.match(i)
                                                               for i in items):
            raise ParamError(field, "%s.device-filter is %r; it must be a PCI device ID or a list of them"
                             % (path, filt), "write device IDs as mig-parted does, such as \"0x20B210DE\"")
    if entry["mig-enabled"]:
        if entry.get("mig-devices") is None:
            raise ParamError(field, "%s has mig-enabled: true but no mig-devices (mig-parted requires it)" % path,
                             "add mig-devices: {} to only enable MIG, or the instances, such as {\"1g.10gb\": 7}")
        if entry["mig-devices"] or not isinstance(entry["mig-devices"], dict):
            _check_counts(entry["mig-devices"], field, "%s.mig-devices: " % path)
    elif entry.get("mig-devices"):
        raise ParamError(field, "%s has mig-enabled: false but lists mig-devices (mig-parted refuses that)" % path,
                         "drop mig-devices or set mig-enabled: true")


def _filter_ids(entry):
    filt = entry.get("device-filter")
    if filt is None:
        return None
    return [i.upper() for i in ([filt] if isinstance(filt, str) else filt)]


def _applies_to(spec, entry):
    ids = _filter_ids(entry)
    return ids is None or any(i.upper() in ids for i in spec["device_ids"])


def _check_overlap(entries, field, path):
    """Within the entries that apply to one product, each GPU index belongs to one entry."""
    seen = {}
    has_all = None
    for index, entry in entries:
        if entry["devices"] == "all":
            if has_all is not None or seen:
                other = has_all if has_all is not None else next(iter(seen.values()))
                raise ParamError(field, "%s[%d] (devices: all) and %s[%d] both set the same GPUs"
                                 % (path, index, path, other), "give each GPU index to exactly one entry")
            has_all = index
            continue
        if has_all is not None:
            raise ParamError(field, "%s[%d] and %s[%d] (devices: all) both set GPU %d"
                             % (path, index, path, has_all, entry["devices"][0]),
                             "give each GPU index to exactly one entry")
        for gpu in entry["devices"]:
            if gpu in seen:
                raise ParamError(field, "%s[%d] and %s[%d] both set GPU %d" % (path, seen[gpu], path, index, gpu),
                                 "give each GPU index to exactly one entry")
            seen[gpu] = index


def _resolve_nodes(product_by_node, field):
    """{product key: [node, ...]} from {node: product key or nvidia.com/gpu.product label}."""
    if not isinstance(product_by_node, dict):
        raise ParamError(field, "the products by node must be a dictionary of node name to GPU product",
                         "give {node: nvidia.com/gpu.product label}")
    out = {}
    for node, value in sorted(product_by_node.items()):
        key = value if isinstance(value, str) and value in CATALOG else product_for_label(value)
        if key is None:
            raise ParamError(field, "node %s has GPU %r, which does not support MIG (or is not in this "
                             "collection's catalog)" % (node, value),
                             "leave node %s out of the MIG layout, or use time-slicing there (gpu_sharing)" % node)
        out.setdefault(key, []).append(node)
    return out


def validate_mig_parted_config(config, product_by_node=None, profile=None):
    """Check a custom mig-parted config (the ``config.yaml`` of the MIG manager's ConfigMap).

    ``config`` is the parsed ``{"version": "v1", "mig-configs": {name: [entries]}}``. Structure is
    checked as mig-parted's spec v1 reads it, plus: names must be valid label values (nodes select
    one with the label ``nvidia.com/mig.config=<name>``) and counts must be positive.
    ``product_by_node`` ({node: product key or nvidia.com/gpu.product label}) adds, for each config
    (only ``profile`` when given), that at least one entry applies to each product (device-filter),
    that no GPU index is set twice, and that each entry's mig-devices fits the product.
    Returns the config names in the file's order. Raises ParamError (field ``mig_config``) whose
    message starts with the path of what is wrong, such as ``mig-configs.custom-1[0].mig-devices``.
    """
    field = "mig_config"
    if not isinstance(config, dict):
        raise ParamError(field, "must be a mig-parted config: a dictionary with version and mig-configs",
                         "give {version: v1, mig-configs: {name: [entries]}}")
    for key in config:
        if key not in ("version", "mig-configs"):
            raise ParamError(field, "%s is not a field of a mig-parted config (it refuses unexpected fields)" % key,
                             "keep only version and mig-configs")
    if config.get("version") != CONFIG_VERSION:
        raise ParamError(field, "version is %r; mig-parted reads only version v1" % (config.get("version"),),
                         "set version: v1")
    configs = config.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise ParamError(field, "mig-configs must be a non-empty dictionary of config name to entries",
                         "add at least one config, such as all-disabled: [{devices: all, mig-enabled: false}]")
    for name, entries in configs.items():
        path = "mig-configs.%s" % name
        if (not isinstance(name, str) or not name or len(name) > 63
                or not validate.LABEL_VALUE.match(name)):
            raise ParamError(field, "%s: %r is not usable as the value of the nvidia.com/mig.config label"
                             % (path, name), "use at most 63 letters, digits, '-', '_' and '.', such as custom-1")
        if not isinstance(entries, list) or not entries:
            raise ParamError(field, "%s must be a non-empty list of entries" % path,
                             "give at least one entry, such as [{devices: all, mig-enabled: false}]")
        for index, entry in enumerate(entries):
            _check_entry(entry, field, "%s[%d]" % (path, index))
    if profile is not None and profile not in configs:
        raise ParamError(field, "has no config named %r" % (profile,),
                         "use one of %s, or add %r to mig-configs" % (", ".join(configs), profile))
    if product_by_node:
        nodes_by_product = _resolve_nodes(product_by_node, field)
        for name in ([profile] if profile is not None else list(configs)):
            path = "mig-configs.%s" % name
            for product, nodes in nodes_by_product.items():
                spec = CATALOG[product]
                on = " (for %s on %s)" % (product, ", ".join(nodes))
                applying = [(i, e) for i, e in enumerate(configs[name]) if _applies_to(spec, e)]
                if not applying:
                    raise ParamError(field, "%s has no entry for %s: every entry's device-filter names other GPUs%s"
                                     % (path, product, on),
                                     "add an entry without device-filter, or with one of %s"
                                     % ", ".join(spec["device_ids"]))
                _check_overlap(applying, field, path)
                for index, entry in applying:
                    if entry["mig-enabled"] and entry["mig-devices"]:
                        _check_layout(spec, entry["mig-devices"], field,
                                      "%s[%d].mig-devices%s: " % (path, index, on))
    return list(configs)


# --- expected resources ----------------------------------------------------------------------------

def _resource_profile(name):
    # The device plugin names a +me instance after its base profile: two A100-80GB GPUs with
    # 5 x 1g.10gb + 1 x 1g.10gb+me each show nvidia.com/mig-1g.10gb: 12
    # (https://github.com/NVIDIA/k8s-device-plugin/issues/1462).
    return name.split("+", 1)[0]


def resources(product, layout_entries, strategy, gpus):
    """The node allocatable the device plugin should show once the layout is applied.

    ``layout_entries``: the entries of one config (named_layout, or one config of a custom
    mig-parted config); entries whose device-filter names other GPUs are skipped. ``strategy``: the
    GPU Operator's mig.strategy. ``gpus``: GPUs of ``product`` on the node (indices 0..gpus-1).
    - no GPU in MIG mode: {"nvidia.com/gpu": gpus}, whatever the strategy;
    - single: MIG on every GPU, one profile on all (the GPU Operator: use mixed "when MIG mode is
      not enabled on all GPUs on a node"): {"nvidia.com/gpu": instances};
    - mixed: {"nvidia.com/mig-<profile>": instances, ...} plus nvidia.com/gpu for GPUs left whole;
    - none with MIG on: refused (field ``strategy``).
    Zero counts are left out: a node may show them as 0 or not at all.
    """
    spec = _spec(product)
    if strategy not in STRATEGIES:
        raise ParamError("strategy", "%r is not a MIG strategy" % (strategy,), "use one of %s" % ", ".join(STRATEGIES))
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ParamError("gpus", "%r is not a number of GPUs" % (gpus,), "give the node's GPU count, such as 8")
    if not isinstance(layout_entries, list) or not layout_entries:
        raise ParamError("mig_config", "the layout must be a non-empty list of mig-parted entries",
                         "use named_layout(name, product) or one config of a mig-parted config")
    applying = []
    for index, entry in enumerate(layout_entries):
        path = "layout[%d]" % index
        _check_entry(entry, "mig_config", path)
        if not _applies_to(spec, entry):
            continue
        if entry["devices"] != "all":
            beyond = [d for d in entry["devices"] if d >= gpus]
            if beyond:
                raise ParamError("mig_config", "%s.devices names GPU %d but the node has %d GPUs (0..%d)"
                                 % (path, beyond[0], gpus, gpus - 1), "list only GPU indices below %d" % gpus)
        if entry["mig-enabled"] and entry["mig-devices"]:
            _check_layout(spec, entry["mig-devices"], "mig_config", "%s.mig-devices: " % path)
        applying.append((index, entry))
    _check_overlap(applying, "mig_config", "layout")
    per_gpu = []
    for gpu in range(gpus):
        match = [pair[1] for pair in applying if pair[1]["devices"] == "all" or gpu in pair[1]["devices"]]
        if not match:
            raise ParamError("mig_config", "no entry of the layout sets GPU %d, so its MIG state is left as it is"
                             % gpu, "add an entry for GPU %d or use devices: all" % gpu)
        entry = match[0]
        per_gpu.append((entry["mig-enabled"], entry.get("mig-devices") or {}))
    enabled = [devices for on, devices in per_gpu if on]
    if not enabled:
        return {RESOURCE_PREFIX + "gpu": gpus}
    if strategy == "none":
        raise ParamError("strategy", "is none, but the layout turns MIG on; the device plugin then "
                         "advertises no MIG devices", "set the GPU Operator's mig.strategy to single or mixed")
    if strategy == "single":
        if len(enabled) != gpus:
            raise ParamError("strategy", "is single, but the layout leaves %d of %d GPUs without MIG"
                             % (gpus - len(enabled), gpus),
                             "use the mixed strategy, or turn MIG on for every GPU of the node")
        kinds = sorted({_resource_profile(p) for devices in enabled for p in devices})
        if len(kinds) > 1:
            raise ParamError("strategy", "is single, but the layout mixes MIG profiles (%s); single "
                             "advertises one kind of device as nvidia.com/gpu" % ", ".join(kinds),
                             "use the mixed strategy (pods ask nvidia.com/mig-<profile>) or a layout with one "
                             "profile, such as %s" % _layout_name(next(iter(spec["profiles"]))))
        return {RESOURCE_PREFIX + "gpu": sum(sum(devices.values()) for devices in enabled)}
    out = {}
    whole = gpus - len(enabled)
    if whole:
        out[RESOURCE_PREFIX + "gpu"] = whole
    for devices in enabled:
        for name, count in devices.items():
            key = RESOURCE_PREFIX + "mig-" + _resource_profile(name)
            out[key] = out.get(key, 0) + count
    return out


def reboot_may_be_needed(from_enabled, to_enabled):
    """True when the layout turns MIG mode on or off.

    Changing the MIG mode needs a GPU reset; when the reset is refused (GPU in use, a hypervisor
    that forbids it, nvidia_drm loaded: mig-parted#181) the mode stays pending until the node
    reboots (gpu-operator#668: "Mode change pending: true" after disabling MIG on A100 on GKE; the
    maintainers point at migManager env WITH_REBOOT=true). Changing profiles with MIG already on
    needs no reset.
    """
    return bool(from_enabled) != bool(to_enabled)


def boards_from_labels(product_label, count, per_gpu):
    """The node's GPUs from GPU Feature Discovery's ``nvidia.com/gpu.count`` label. Once a MIG layout is applied under
    the single strategy, GFD names the product ``<board>-MIG-<profile>`` and counts the MIG devices, not the boards:
    the count is divided by the devices one GPU gives (``per_gpu()``, the layout's resources for one GPU). None when
    that does not divide evenly (the label is not this layout's)."""
    if "-MIG-" not in (product_label or "").upper():
        return count
    devices = sum(int(v) for v in per_gpu().values() if str(v).isdigit())
    if not devices or count % devices:
        return None
    return count // devices
