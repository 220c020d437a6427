# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG layouts: the product catalog, the standard layout names, mig-parted configs, expected resources.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Used by the mig_profile module and the gpu_sharing role. Every fact in CATALOG carries the URL it was
taken from (comment per product); nothing here is guessed. What NVIDIA does not document is left out
or handled by a stated fallback rule (see _fits_by_count).

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

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

MIG_GUIDE_PROFILES = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"
MIG_GUIDE_GPUS = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html"
MIG_GUIDE_PLACEMENTS = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/getting-started-with-mig.html"
OPERATOR_DEFAULT_CONFIG = ("https://github.com/NVIDIA/gpu-operator/blob/main/assets/state-mig-manager/"
                           "0400_configmap.yaml")
MIG_PARTED_BALANCED = "https://github.com/NVIDIA/mig-parted/blob/main/pkg/mig/builder/balanced.go"

STRATEGIES = ("none", "single", "mixed")
CONFIG_VERSION = "v1"
ENTRY_KEYS = ("devices", "mig-enabled", "mig-devices", "device-filter")
RESOURCE_PREFIX = "nvidia.com/"

PROFILE_NAME = re.compile(r"^(\d+c\.)?(\d+)g\.(\d+)gb([+-][a-z][a-z.]*)?$")
DEVICE_ID = re.compile(r"^0x[0-9A-Fa-f]{8}$")


def _profiles(*rows):
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


# Placements printed by `nvidia-smi mig -lgipp` on the 8-memory-slice GPUs whose output is public
# (same list for A100-40GB, H100-80GB and H100 NVL): 1g {0..6}:1, 1g+me {0..6}:1, the 2-memory-slice
# 1g {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4, 4g {0}:4, 7g {0}:8.
_P1 = (0, 1, 2, 3, 4, 5, 6)
_P1W = (0, 2, 4, 6)
_P2 = (0, 2, 4)
_P3 = (0, 4)
_P4 = (0,)
_P7 = (0,)

CATALOG = {
    # A30-24GB. Profiles: MIG User Guide, "A30 MIG Profiles" (A30-24GB table), MIG_GUIDE_PROFILES.
    # 1g.6gb+me needs R470 drivers, 2g.12gb+me R525 (same page). Memory 24GB, 4 slices:
    # MIG_GUIDE_GPUS. Device ID 0x20B710DE: OPERATOR_DEFAULT_CONFIG (all-balanced, "A30-24GB").
    # Placements: not published by NVIDIA in text; the slice-count rule applies (see _fits_by_count).
    "A30-24GB": {
        "product": "A30-24GB",
        "labels": ["NVIDIA-A30"],
        "device_ids": ["0x20B710DE"],
        "slices": 4,
        "memory_slices": 4,
        "memory_gb": 24,
        "profiles": _profiles(
            ("1g.6gb", 1, 1, 4, None),
            ("1g.6gb+me", 1, 1, 1, None),
            ("2g.12gb", 2, 2, 2, None),
            ("2g.12gb+me", 2, 2, 1, None),
            ("4g.24gb", 4, 4, 1, None),
        ),
        "balanced": {"1g.6gb": 2, "2g.12gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": None,
    },
    # A100-40GB (SXM4 and PCIe). Profiles: MIG User Guide, "A100 MIG Profiles" (A100-SXM4-40GB
    # table), MIG_GUIDE_PROFILES; 1g.5gb+me needs R470 drivers, 1g.10gb R525 (same page). The table
    # prints 1/8 of the memory for 1g.10gb, but its name (10gb of 40GB) and the guide's own -lgipp
    # output ("Profile ID 15 Placements: {0,2,4,6}:2") give 2 memory slices. Placements: the
    # `nvidia-smi mig -lgipp` example of MIG_GUIDE_PLACEMENTS (profile IDs 19 1g.5gb, 20 1g.5gb+me,
    # 15 1g.10gb, 14 2g.10gb, 9 3g.20gb, 5 4g.20gb, 0 7g.40gb). Memory 40GB: MIG_GUIDE_GPUS.
    # Device IDs: OPERATOR_DEFAULT_CONFIG (all-balanced "A100-40GB" filter, without the A800 IDs).
    # Labels: NVML names "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB" as GFD writes them.
    "A100-40GB": {
        "product": "A100-40GB",
        "labels": ["NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"],
        "device_ids": ["0x20B010DE", "0x20B110DE", "0x20F110DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 40,
        "profiles": _profiles(
            ("1g.5gb", 1, 1, 7, _P1),
            ("1g.5gb+me", 1, 1, 1, _P1),
            ("1g.10gb", 1, 2, 4, _P1W),
            ("2g.10gb", 2, 2, 3, _P2),
            ("3g.20gb", 3, 4, 2, _P3),
            ("4g.20gb", 4, 4, 1, _P4),
            ("7g.40gb", 7, 8, 1, _P7),
        ),
        "balanced": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": MIG_GUIDE_PLACEMENTS,
    },
    # A100-80GB (SXM4 and PCIe). Profiles: MIG User Guide, "A100 MIG Profiles": "For
    # A100-SXM4-80GB, the profile names will change according to the memory proportion - 1g.10gb,
    # 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb respectively" (MIG_GUIDE_PROFILES);
    # counts as in the 40GB table. Memory 80GB: MIG_GUIDE_GPUS. Device IDs 0x20B2 (SXM4-80GB),
    # 0x20B5 (PCIe-80GB): OPERATOR_DEFAULT_CONFIG and go-nvml's A100 mock. Labels
    # "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe" as seen on GFD-labelled nodes.
    # Placements: no -lgipp output for the 80GB board is published; slice-count rule.
    "A100-80GB": {
        "product": "A100-80GB",
        "labels": ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"],
        "device_ids": ["0x20B210DE", "0x20B510DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 80,
        "profiles": _profiles(
            ("1g.10gb", 1, 1, 7, None),
            ("1g.10gb+me", 1, 1, 1, None),
            ("1g.20gb", 1, 2, 4, None),
            ("2g.20gb", 2, 2, 3, None),
            ("3g.40gb", 3, 4, 2, None),
            ("4g.40gb", 4, 4, 1, None),
            ("7g.80gb", 7, 8, 1, None),
        ),
        "balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": None,
    },
    # H100-80GB (SXM5 and PCIe). Profiles: MIG User Guide, "H100 MIG Profiles", H100 80GB table
    # (MIG_GUIDE_PROFILES). Memory 80GB: MIG_GUIDE_GPUS. Device IDs 0x2330 (H100 SXM5 80GB),
    # 0x2331 (H100 PCIe): OPERATOR_DEFAULT_CONFIG and pci.ids. Labels "NVIDIA-H100-80GB-HBM3",
    # "NVIDIA-H100-PCIe" as seen on GFD-labelled nodes. Placements: `nvidia-smi mig -lgipp` on
    # H100, quoted in https://github.com/GoogleCloudDataproc/initialization-actions/blob/master/
    # gpu/install_gpu_driver.sh (configure_mig_cgi, "result when using H100 instances on 20241220");
    # profile IDs 19 1g.10gb, 20 +me, 15 1g.20gb, 14 2g.20gb, 9 3g.40gb, 5 4g.40gb, 0 7g.80gb.
    "H100-80GB": {
        "product": "H100-80GB",
        "labels": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"],
        "device_ids": ["0x233010DE", "0x233110DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 80,
        "profiles": _profiles(
            ("1g.10gb", 1, 1, 7, _P1),
            ("1g.10gb+me", 1, 1, 1, _P1),
            ("1g.20gb", 1, 2, 4, _P1W),
            ("2g.20gb", 2, 2, 3, _P2),
            ("3g.40gb", 3, 4, 2, _P3),
            ("4g.40gb", 4, 4, 1, _P4),
            ("7g.80gb", 7, 8, 1, _P7),
        ),
        "balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": ("https://github.com/GoogleCloudDataproc/initialization-actions/blob/master/"
                              "gpu/install_gpu_driver.sh"),
    },
    # H100-94GB (H100 NVL; the guide's table covers "H100 94GB product (PCIe and SXM5)").
    # Profiles: MIG_GUIDE_PROFILES. Memory 94GB: MIG_GUIDE_GPUS. Device IDs 0x2321 (H100 NVL:
    # OPERATOR_DEFAULT_CONFIG all-balanced "H100 NVL") and 0x2339 (H100 SXM5 94GB, pci.ids).
    # Label "NVIDIA-H100-NVL" as seen on a GFD-labelled node. Placements: `nvidia-smi mig -lgipp`
    # on H100 NVL in https://research.colfax-intl.com/sharing-nvidia-gpus-at-the-system-level-
    # time-sliced-and-mig-backed-vgpus/ (IDs 19 1g.12gb, 20 +me, 15 1g.24gb, 14 2g.24gb,
    # 9 3g.47gb, 5 4g.47gb, 0 7g.94gb per the -lgip listing of the same GPU).
    "H100-94GB": {
        "product": "H100-94GB",
        "labels": ["NVIDIA-H100-NVL"],
        "device_ids": ["0x232110DE", "0x233910DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 94,
        "profiles": _profiles(
            ("1g.12gb", 1, 1, 7, _P1),
            ("1g.12gb+me", 1, 1, 1, _P1),
            ("1g.24gb", 1, 2, 4, _P1W),
            ("2g.24gb", 2, 2, 3, _P2),
            ("3g.47gb", 3, 4, 2, _P3),
            ("4g.47gb", 4, 4, 1, _P4),
            ("7g.94gb", 7, 8, 1, _P7),
        ),
        "balanced": {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": ("https://research.colfax-intl.com/sharing-nvidia-gpus-at-the-system-level-"
                              "time-sliced-and-mig-backed-vgpus/"),
    },
    # GH200-96GB (the H100 96GB on GH200). Profiles: MIG User Guide, "H100 96GB product (H100 on
    # GH200)" table (MIG_GUIDE_PROFILES). Memory 96GB: MIG_GUIDE_GPUS ("H100 on GH200").
    # Device ID 0x2342 (GH200 120GB / 480GB, pci.ids; in OPERATOR_DEFAULT_CONFIG's "GH200" filter).
    # Label "NVIDIA-GH200-480GB" as seen on GFD-labelled nodes. Placements: none published;
    # slice-count rule.
    "GH200-96GB": {
        "product": "GH200-96GB",
        "labels": ["NVIDIA-GH200-480GB"],
        "device_ids": ["0x234210DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 96,
        "profiles": _profiles(
            ("1g.12gb", 1, 1, 7, None),
            ("1g.12gb+me", 1, 1, 1, None),
            ("1g.24gb", 1, 2, 4, None),
            ("2g.24gb", 2, 2, 3, None),
            ("3g.48gb", 3, 4, 2, None),
            ("4g.48gb", 4, 4, 1, None),
            ("7g.96gb", 7, 8, 1, None),
        ),
        "balanced": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": None,
    },
    # H200-141GB (H200 SXM and H200 NVL). Profiles: MIG User Guide, "H200 MIG Profiles", H200
    # 141GB table (MIG_GUIDE_PROFILES). Memory 141GB for H200-SXM5 and H200 NVL: MIG_GUIDE_GPUS.
    # Device IDs 0x2335 (H200 SXM), 0x233B (H200 NVL): OPERATOR_DEFAULT_CONFIG all-balanced
    # ("H200 141GB, H200 NVL" share one entry). Labels "NVIDIA-H200" (NVML name "NVIDIA H200"),
    # "NVIDIA-H200-NVL" as seen on GFD-labelled nodes. Placements: none published; slice-count rule.
    "H200-141GB": {
        "product": "H200-141GB",
        "labels": ["NVIDIA-H200", "NVIDIA-H200-NVL"],
        "device_ids": ["0x233510DE", "0x233B10DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 141,
        "profiles": _profiles(
            ("1g.18gb", 1, 1, 7, None),
            ("1g.18gb+me", 1, 1, 1, None),
            ("1g.35gb", 1, 2, 4, None),
            ("2g.35gb", 2, 2, 3, None),
            ("3g.71gb", 3, 4, 2, None),
            ("4g.71gb", 4, 4, 1, None),
            ("7g.141gb", 7, 8, 1, None),
        ),
        "balanced": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": None,
    },
    # GH200-144GB (GH200 144G HBM3e). Not in the MIG User Guide's tables. Profiles and counts:
    # `nvidia-smi mig -lgip` in https://github.com/NVIDIA/gpu-operator/pull/1057 (1g.18gb 7,
    # 1g.18gb+me 1, 1g.36gb 4, 2g.36gb 3) and the all-* entries it added to OPERATOR_DEFAULT_CONFIG
    # ("GH200 144G HBM3e": 3g.72gb 2, 4g.72gb 1, 7g.144gb 1; all-balanced 1g.18gb 2, 2g.36gb 1,
    # 3g.72gb 1; device ID 0x234810DE). Memory slices are derived from the profile memory
    # (18GB per eighth), as for every other 8-slice product here. Label: GFD's form of the NVML
    # name "NVIDIA GH200 144G HBM3e". Placements: none published; slice-count rule.
    "GH200-144GB": {
        "product": "GH200-144GB",
        "labels": ["NVIDIA-GH200-144G-HBM3e"],
        "device_ids": ["0x234810DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 144,
        "profiles": _profiles(
            ("1g.18gb", 1, 1, 7, None),
            ("1g.18gb+me", 1, 1, 1, None),
            ("1g.36gb", 1, 2, 4, None),
            ("2g.36gb", 2, 2, 3, None),
            ("3g.72gb", 3, 4, 2, None),
            ("4g.72gb", 4, 4, 1, None),
            ("7g.144gb", 7, 8, 1, None),
        ),
        "balanced": {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
        "source": "https://github.com/NVIDIA/gpu-operator/pull/1057",
        "placements_source": None,
    },
    # B200 (180GB). Profiles: MIG User Guide, "B200 MIG Profiles", B200 180GB table
    # (MIG_GUIDE_PROFILES). Memory 180GB: MIG_GUIDE_GPUS. Device ID 0x2901: OPERATOR_DEFAULT_CONFIG
    # all-balanced "B200" (0x2909, an HGX B200 168GB board in pci.ids, is left out: its profiles are
    # not documented). Label "NVIDIA-B200" (NVML name "NVIDIA B200"). Placements: none published;
    # slice-count rule.
    "B200": {
        "product": "B200",
        "labels": ["NVIDIA-B200"],
        "device_ids": ["0x290110DE"],
        "slices": 7,
        "memory_slices": 8,
        "memory_gb": 180,
        "profiles": _profiles(
            ("1g.23gb", 1, 1, 7, None),
            ("1g.23gb+me", 1, 1, 1, None),
            ("1g.45gb", 1, 2, 4, None),
            ("2g.45gb", 2, 2, 3, None),
            ("3g.90gb", 3, 4, 2, None),
            ("4g.90gb", 4, 4, 1, None),
            ("7g.180gb", 7, 8, 1, None),
        ),
        "balanced": {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
        "source": MIG_GUIDE_PROFILES,
        "placements_source": None,
    },
}

# Profiles that need a newer driver than the product's first MIG driver (MIG_GUIDE_PROFILES notes).
MIN_DRIVER = {
    ("A30-24GB", "1g.6gb+me"): "R470",
    ("A30-24GB", "2g.12gb+me"): "R525",
    ("A100-40GB", "1g.5gb+me"): "R470",
    ("A100-40GB", "1g.10gb"): "R525",
}


# --- products and labels ---------------------------------------------------------------------------

def _base_label(label):
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
    base = _base_label(label).upper()
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
    return [key for key, spec in CATALOG.items() if profile in spec["profiles"]]


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
        owners = [key for key, other in CATALOG.items() if wanted in other["profiles"]]
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
    unknown = [name for name in devices if name not in spec["profiles"]]
    if unknown:
        notes = []
        for name in unknown:
            owners = _others_with(name)
            notes.append("%s (%s)" % (name, ("a profile of " + ", ".join(owners)) if owners
                                      else "no GPU in the catalog has it"))
        raise ParamError(field, "%s%s %s of %s"
                         % (where, "; ".join(notes), "is not a MIG profile" if len(unknown) == 1
                            else "are not MIG profiles", product),
                         "use the profiles of %s: %s" % (product, ", ".join(spec["profiles"])))
    for name, count in devices.items():
        limit = spec["profiles"][name]["max_instances"]
        if count > limit:
            raise ParamError(field, "%sasks for %d x %s but %s allows at most %d of that profile"
                             % (where, count, name, product, limit),
                             "ask for at most %d x %s (NVIDIA's limit, %s)" % (limit, name, spec["source"]))
    slices = sum(spec["profiles"][p]["slices"] * n for p, n in devices.items())
    if slices > spec["slices"]:
        raise ParamError(field, "%s%s needs %d compute slices but %s has %d"
                         % (where, _describe(devices), slices, product, spec["slices"]),
                         "drop or shrink instances until the <n>g parts add up to at most %d" % spec["slices"])
    memory = sum(spec["profiles"][p]["memory_slices"] * n for p, n in devices.items())
    if memory > spec["memory_slices"]:
        # Counted in memory slices, not in the GB of the names: names round up (2 x 3g.71gb is
        # "142GB" on the 141GB H200, and NVIDIA documents 2 x 3g.71gb as valid).
        per_slice = float(spec["memory_gb"]) / spec["memory_slices"]
        raise ParamError(field, "%s%s needs %d of the %d memory slices of %s (about %g GB of %d GB)"
                         % (where, _describe(devices), memory, spec["memory_slices"], product,
                            round(memory * per_slice, 1), spec["memory_gb"]),
                         "use fewer or smaller instances; on %s the memory slices per instance are %s"
                         % (product, ", ".join("%s %d/%d" % (p, spec["profiles"][p]["memory_slices"],
                                                             spec["memory_slices"]) for p in devices)))
    if _has_placements(spec) and _place(spec, devices) is None:
        table = "; ".join("%s starts at %s" % (p, ",".join(str(s) for s in spec["profiles"][p]["placements"]))
                          for p in devices)
        raise ParamError(field, "%s%s cannot be placed together on %s: NVIDIA's placement table allows %s"
                         % (where, _describe(devices), product, table),
                         "pick a combination that fits the placements (%s), such as all-balanced"
                         % spec["placements_source"])


def validate_layout(product, mig_devices):
    """Raise ParamError (field ``mig_devices``) unless ``mig_devices`` fits one GPU of ``product``.

    Checks, in order: the shape (profile name -> positive whole number), profiles the product does
    not have, counts above NVIDIA's instance limit, compute slices, memory slices, and the placement
    table where NVIDIA publishes one (the slice-count rule elsewhere, see _fits_by_count).
    """
    _check_layout(_spec(product), mig_devices, "mig_devices")


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
