# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG: which catalog product a GPU label is, and whether a set of MIG instances fits one GPU.

Private to the collection: not a public API. Pure: standard library only, no I/O. The facts are the
data of catalog.py; layouts.py (layouts, mig-parted configs, expected resources) re-exports these
functions, so callers keep using ``mig.product_for_label``, ``mig.validate_layout`` and so on.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog import CATALOG
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog_common import (
    PROFILE_NAME, alternate_names)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


# --- products and labels ---------------------------------------------------------------------------

def base_label(label):
    """A GFD product label without the suffixes GFD adds: ``-SHARED`` (time-slicing/MPS with
    renameByDefault=false) and ``-MIG-<profile>`` (MIG strategy single), per the device plugin's
    README ("nvidia.com/gpu.product = A100-SXM4-40GB-MIG-1g.5gb-SHARED")."""
    text = str(label or "").strip()
    if text.upper().endswith("-SHARED"):
        text = text[:-len("-SHARED")]
    index = text.upper().find("-MIG-")
    if index > 0:
        text = text[:index]
    return text


def product_for_label(label):
    """The CATALOG key for a ``nvidia.com/gpu.product`` label, or None when the GPU has no MIG.

    ``NVIDIA-A100-SXM4-80GB`` -> ``A100-80GB``; ``NVIDIA-A100-80GB-PCIe-MIG-1g.10gb`` -> ``A100-80GB``;
    older drivers name the board without the ``NVIDIA`` prefix (``A100-SXM4-40GB``), which is
    accepted too. ``Tesla-T4``, ``NVIDIA-L40S`` and any unknown board -> None.
    """
    base = base_label(label).upper()
    if not base:
        return None
    for key, spec in CATALOG.items():
        for known in spec["labels"]:
            known = known.upper()
            if base == known or "NVIDIA-" + base == known:
                return key
    return None


def _spec(product, field="product"):
    if isinstance(product, str) and product in CATALOG:
        return CATALOG[product]
    hint = ""
    if isinstance(product, str) and product_for_label(product):
        hint = " (that is a GPU label; its product is %s)" % product_for_label(product)
    raise ParamError(field, "%r is not a MIG-capable product this collection knows%s" % (product, hint),
                     "use one of %s; map a nvidia.com/gpu.product label with product_for_label"
                     % ", ".join(CATALOG))


def profile_names(product):
    """The MIG profile names of a product, in catalog order."""
    return list(_spec(product)["profiles"])


def _others_with(profile):
    return [key for key, spec in CATALOG.items() if profile in spec["profiles"] or profile in alternate_names(spec)]


def accepted_names(product):
    """Every MIG profile name a layout may use on a product: the catalog's names, then the other spellings of its
    driver-dependent profiles (GB200's 3g.95gb for 3g.93gb, ...; catalog data ``spellings``)."""
    spec = _spec(product)
    return list(spec["profiles"]) + list(alternate_names(spec))


def _table(spec):
    """{name: profile facts} under every name the product's drivers use."""
    table = dict(spec["profiles"])
    for other, first in alternate_names(spec).items():
        table[other] = spec["profiles"][first]
    return table


def _check_spelling(spec, devices, field, where):
    """A GPU's driver prints one spelling of its driver-dependent names; a layout that mixes two never applies."""
    rows = spec.get("spellings") or []
    used = [index for index, row in enumerate(rows) if any(name in devices for name in row["names"])]
    if len(used) > 1:
        first, second = rows[used[0]], rows[used[1]]
        raise ParamError(field, "%smixes %s (the names of %s) with %s (those of %s); the driver of a %s "
                         "reports one of the two spellings, so mig-parted cannot apply both"
                         % (where, ", ".join(n for n in first["names"] if n in devices), first["reported_by"],
                            ", ".join(n for n in second["names"] if n in devices), second["reported_by"],
                            spec["product"]),
                         "use the names nvidia-smi mig -lgip prints on the node: %s"
                         % " or ".join(", ".join(row["names"]) for row in rows))


# --- checking one GPU's layout ---------------------------------------------------------------------

def _describe(devices):
    return " + ".join("%d x %s" % (count, name) for name, count in devices.items())


def _fits_by_count(spec, devices):
    """The slice-count rule: compute slices and memory slices both fit the GPU.

    Used alone where NVIDIA publishes no placement table for the product (placements None). On the
    products whose -lgipp output is public (A100-40GB, H100-80GB, H100-94GB) this rule and the
    placement search agree for every combination the instance limits allow (the unit tests check
    that), so it is the fallback of least surprise for boards of the same design.
    """
    slices = sum(spec["profiles"][p]["slices"] * n for p, n in devices.items())
    memory = sum(spec["profiles"][p]["memory_slices"] * n for p, n in devices.items())
    return slices <= spec["slices"] and memory <= spec["memory_slices"]


def _place(spec, devices):
    """Start positions (memory-slice indices) for every instance, or None when they cannot all fit.

    Only for products whose profiles all have published placements.
    """
    instances = []
    for name, count in devices.items():
        profile = spec["profiles"][name]
        instances.extend([(name, profile["memory_slices"], profile["placements"])] * count)
    # Widest first: fewest choices first keeps the search small (at most 7 instances anyway).
    instances.sort(key=lambda item: (-item[1], len(item[2]), item[0]))
    chosen = []

    def search(index, used):
        if index == len(instances):
            return True
        name, size, starts = instances[index]
        for start in starts:
            mask = ((1 << size) - 1) << start
            if start + size <= spec["memory_slices"] and not used & mask:
                chosen.append((name, start))
                if search(index + 1, used | mask):
                    return True
                chosen.pop()
        return False

    return sorted(chosen, key=lambda item: item[1]) if search(0, 0) else None


def _has_placements(spec):
    return all(profile["placements"] is not None for profile in spec["profiles"].values())


def _check_counts(devices, field, where):
    if not isinstance(devices, dict):
        raise ParamError(field, "%smust be a dictionary of MIG profile to instance count, not %r" % (where, devices),
                         "give it as {\"1g.10gb\": 7} or {\"3g.40gb\": 1, \"2g.20gb\": 1}")
    for name, count in devices.items():
        if not isinstance(name, str) or not PROFILE_NAME.match(name):
            raise ParamError(field, "%s%r is not a MIG profile name" % (where, name),
                             "name profiles as nvidia-smi mig -lgip prints them, such as 1g.10gb or 1g.10gb+me")
        if isinstance(count, bool) or not isinstance(count, int):
            raise ParamError(field, "%sthe count of %s is %r, not a whole number" % (where, name, count),
                             "give a positive whole number of instances, such as %s: 1" % name)
        if count <= 0:
            raise ParamError(field, "%sthe count of %s is %d; it must be at least 1" % (where, name, count),
                             "drop %s from the layout or give it a positive count (mig-parted skips zero "
                             "counts silently, so a 0 here is refused as a likely mistake)" % name)


def _check_layout(spec, devices, field, where=""):
    """Raise ParamError(field, ...) when ``devices`` (profile -> count) does not fit one GPU of spec."""
    _check_counts(devices, field, where)
    product = spec["product"]
    table = _table(spec)
    unknown = [name for name in devices if name not in table]
    if unknown:
        notes = []
        for name in unknown:
            owners = _others_with(name)
            notes.append("%s (%s)" % (name, ("a profile of " + ", ".join(owners)) if owners
                                      else "no GPU in the catalog has it"))
        raise ParamError(field, "%s%s %s of %s"
                         % (where, "; ".join(notes), "is not a MIG profile" if len(unknown) == 1
                            else "are not MIG profiles", product),
                         "use the profiles of %s: %s" % (product, ", ".join(table)))
    _check_spelling(spec, devices, field, where)
    for name, count in devices.items():
        limit = table[name]["max_instances"]
        if count > limit:
            raise ParamError(field, "%sasks for %d x %s but %s allows at most %d of that profile"
                             % (where, count, name, product, limit),
                             "ask for at most %d x %s (NVIDIA's limit, %s)" % (limit, name, spec["source"]))
    slices = sum(table[p]["slices"] * n for p, n in devices.items())
    if slices > spec["slices"]:
        raise ParamError(field, "%s%s needs %d compute slices but %s has %d"
                         % (where, _describe(devices), slices, product, spec["slices"]),
                         "drop or shrink instances until the <n>g parts add up to at most %d" % spec["slices"])
    memory = sum(table[p]["memory_slices"] * n for p, n in devices.items())
    if memory > spec["memory_slices"]:
        # Counted in memory slices, not in the GB of the names: names round up (2 x 3g.71gb is
        # "142GB" on the 141GB H200, and NVIDIA documents 2 x 3g.71gb as valid).
        per_slice = float(spec["memory_gb"]) / spec["memory_slices"]
        raise ParamError(field, "%s%s needs %d of the %d memory slices of %s (about %g GB of %d GB)"
                         % (where, _describe(devices), memory, spec["memory_slices"], product,
                            round(memory * per_slice, 1), spec["memory_gb"]),
                         "use fewer or smaller instances; on %s the memory slices per instance are %s"
                         % (product, ", ".join("%s %d/%d" % (p, table[p]["memory_slices"],
                                                             spec["memory_slices"]) for p in devices)))
    first = alternate_names(spec)
    if _has_placements(spec) and _place(spec, {first.get(p, p): n for p, n in devices.items()}) is None:
        starts = "; ".join("%s starts at %s" % (p, ",".join(str(s) for s in table[p]["placements"]))
                           for p in devices)
        raise ParamError(field, "%s%s cannot be placed together on %s: NVIDIA's placement table allows %s"
                         % (where, _describe(devices), product, starts),
                         "pick a combination that fits the placements (%s), such as all-balanced"
                         % spec["placements_source"])


def validate_layout(product, mig_devices):
    """Raise ParamError (field ``mig_devices``) unless ``mig_devices`` fits one GPU of ``product``.

    Checks, in order: the shape (profile name -> positive whole number), profiles the product does
    not have, counts above NVIDIA's instance limit, compute slices, memory slices, and the placement
    table where NVIDIA publishes one (the slice-count rule elsewhere, see _fits_by_count).
    """
    _check_layout(_spec(product), mig_devices, "mig_devices")
