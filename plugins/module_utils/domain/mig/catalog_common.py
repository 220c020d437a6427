# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Shared pieces of the MIG catalog data: source addresses, the profile-table builder, placements.

Private to the collection: not a public API. Pure: standard library only, no I/O. The per-GPU facts
are in catalog_ampere.py, catalog_hopper.py and catalog_blackwell.py; catalog.py
joins them; layouts.py holds the logic.
"""

from __future__ import annotations

import re

MIG_GUIDE_PROFILES = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"
MIG_GUIDE_GPUS = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html"
MIG_GUIDE_PLACEMENTS = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/getting-started-with-mig.html"
OPERATOR_DEFAULT_CONFIG = ("https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-mig-manager/"
                           "0400_configmap.yaml")
MIG_PARTED_BALANCED = "https://github.com/NVIDIA/mig-parted/blob/main/pkg/mig/builder/balanced.go"

# A profile name as nvidia-smi prints it: [<n>c.]<n>g.<n>gb[+me|+gfx|+me.all|-me].
PROFILE_NAME = re.compile(r"^(\d+c\.)?(\d+)g\.(\d+)gb([+-][a-z][a-z.]*)?$")

# Placements printed by `nvidia-smi mig -lgipp` on the 8-memory-slice GPUs whose output is public
# (same list for A100-40GB, H100-80GB and H100 NVL): 1g {0..6}:1, 1g+me {0..6}:1, the 2-memory-slice
# 1g {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4, 4g {0}:4, 7g {0}:8.
P1 = (0, 1, 2, 3, 4, 5, 6)
P1W = (0, 2, 4, 6)
P2 = (0, 2, 4)
P3 = (0, 4)
P4 = (0,)
P7 = (0,)


def profiles(*rows):
    """Profile table from (name, compute slices, memory slices, max instances, placements) rows.

    placements: allowed start indices on the memory-slice axis, as ``nvidia-smi mig -lgipp`` prints
    them (``{0,2,4,6}:2`` is starts 0, 2, 4, 6 of size 2); None where NVIDIA publishes none.
    memory_gb is the number in the profile name.
    """
    out = {}
    for name, slices, memory_slices, max_instances, placements in rows:
        out[name] = {
            "slices": slices,
            "memory_slices": memory_slices,
            "memory_gb": int(PROFILE_NAME.match(name).group(3)),
            "max_instances": max_instances,
            "placements": list(placements) if placements is not None else None,
        }
    return out


def seven_slice(gb_1, gb_1w, gb_3, gb_7, placed=False):
    """The profile table every 7-compute/8-memory-slice GPU of the catalog has, by its memory sizes:
    1g.<gb_1> x7, 1g.<gb_1>+me x1, 1g.<gb_1w> x4 (two memory slices), 2g.<gb_1w> x3, 3g.<gb_3> x2,
    4g.<gb_3> x1, 7g.<gb_7> x1. ``placed``: attach the published -lgipp placements."""
    def at(value):
        return value if placed else None
    return profiles(
        ("1g.%dgb" % gb_1, 1, 1, 7, at(P1)),
        ("1g.%dgb+me" % gb_1, 1, 1, 1, at(P1)),
        ("1g.%dgb" % gb_1w, 1, 2, 4, at(P1W)),
        ("2g.%dgb" % gb_1w, 2, 2, 3, at(P2)),
        ("3g.%dgb" % gb_3, 3, 4, 2, at(P3)),
        ("4g.%dgb" % gb_3, 4, 4, 1, at(P4)),
        ("7g.%dgb" % gb_7, 7, 8, 1, at(P7)),
    )


def driver_names(names, reported_by, source, driver=None):
    """One spelling of a GPU's driver-dependent profile names: the names (in the order of the product's first
    spelling), what reports them as the source says it (``reported_by``), the source, and the driver branch that
    prints them (``driver``, such as ``R570``), None where no source states it."""
    return {"names": list(names), "reported_by": reported_by, "source": source, "driver": driver}


def product(key, labels, device_ids, memory_gb, table, balanced, source, slices=7, memory_slices=8,
            placements_source=None, facts_source=None, spellings=()):
    """One catalog entry. ``source``: where the profile table comes from; ``facts_source``: where the
    device IDs come from (the GPU Operator's default mig-parted config unless stated).

    ``spellings``: where the driver names some of the product's profiles in more than one way (same slices, same
    instance limits, another name), the ``driver_names`` rows; the first row's names are those of ``table``. A GPU
    reports one spelling, so a layout takes its names from one row (fit.py checks that).
    """
    for row in spellings[1:]:
        if len(row["names"]) != len(spellings[0]["names"]):
            raise ValueError("%s: spelling rows of different lengths" % key)
    if spellings and not set(spellings[0]["names"]) <= set(table):
        raise ValueError("%s: the first spelling row must name profiles of the table" % key)
    return {
        "product": key,
        "labels": list(labels),
        "device_ids": list(device_ids),
        "slices": slices,
        "memory_slices": memory_slices,
        "memory_gb": memory_gb,
        "profiles": table,
        "balanced": dict(balanced),
        "source": source,
        "placements_source": placements_source,
        "facts_source": facts_source or OPERATOR_DEFAULT_CONFIG,
        "spellings": [dict(row, names=list(row["names"])) for row in spellings],
    }


def alternate_names(spec):
    """{other spelling: the table's name} for a catalog entry (empty for most GPUs)."""
    rows = spec.get("spellings") or []
    if not rows:
        return {}
    return {other: first for row in rows[1:] for other, first in zip(row["names"], rows[0]["names"])}
