# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG catalog data: NVIDIA Ampere GPUs (A30, A100, A800, PG506).

Private to the collection: not a public API. Pure data. Facts only, each with its source; see
catalog_common.py for the addresses and docs/mig_catalog.md for the table users read.
Device IDs come from the GPU Operator's default mig-parted config (OPERATOR_DEFAULT_CONFIG,
device-filter lists) unless a comment says otherwise. ``labels`` holds only the GFD
``nvidia.com/gpu.product`` values seen on labelled nodes; a product whose label is not recorded
has none, and its nodes are refused by mig_profile until the label is added here.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog_common import (
    MIG_GUIDE_PLACEMENTS, MIG_GUIDE_PROFILES, OPERATOR_DEFAULT_CONFIG, product, profiles, seven_slice)

_A30 = profiles(
    ("1g.6gb", 1, 1, 4, None),
    ("1g.6gb+me", 1, 1, 1, None),
    ("2g.12gb", 2, 2, 2, None),
    ("2g.12gb+me", 2, 2, 1, None),
    ("4g.24gb", 4, 4, 1, None),
)

PRODUCTS = [
    # A30-24GB. Profiles: MIG User Guide, "A30 MIG Profiles" (A30-24GB table). 1g.6gb+me needs R470
    # drivers, 2g.12gb+me R525 (same page). Memory 24GB, 4 slices: MIG_GUIDE_GPUS. Placements: not
    # published in text; the slice-count rule applies. Label: NVML name "NVIDIA A30".
    product("A30-24GB", ["NVIDIA-A30"], ["0x20B710DE"], 24, _A30, {"1g.6gb": 2, "2g.12gb": 1},
            MIG_GUIDE_PROFILES, slices=4, memory_slices=4),
    # A100-40GB (SXM4 and PCIe). Profiles: MIG User Guide, "A100 MIG Profiles" (A100-SXM4-40GB table);
    # 1g.5gb+me needs R470, 1g.10gb R525. The table prints 1/8 of the memory for 1g.10gb, but its name
    # and the guide's -lgipp output ("Profile ID 15 Placements: {0,2,4,6}:2") give 2 memory slices.
    # Placements: the `nvidia-smi mig -lgipp` example of MIG_GUIDE_PLACEMENTS. Memory 40GB.
    product("A100-40GB", ["NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"],
            ["0x20B010DE", "0x20B110DE", "0x20F110DE"], 40, seven_slice(5, 10, 20, 40, placed=True),
            {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}, MIG_GUIDE_PROFILES, placements_source=MIG_GUIDE_PLACEMENTS),
    # A800-40GB (PCIe). Not in the MIG User Guide's tables; the operator's default config gives it the
    # A100-40GB layouts (comments "A100-40GB, A800-40GB"; all-1g.10gb x4 and all-balanced filters with
    # 0x20F6). Label not recorded.
    product("A800-40GB", [], ["0x20F610DE"], 40, seven_slice(5, 10, 20, 40),
            {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # A100-80GB (SXM4 and PCIe). Profiles: MIG User Guide, "A100 MIG Profiles" ("For A100-SXM4-80GB, the
    # profile names will change according to the memory proportion"); counts as in the 40GB table.
    # Memory 80GB. Labels as seen on GFD-labelled nodes. Placements: none published for the 80GB board.
    product("A100-80GB", ["NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"], ["0x20B210DE", "0x20B510DE"], 80,
            seven_slice(10, 20, 40, 80), {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, MIG_GUIDE_PROFILES),
    # A800-80GB (SXM4 0x20F3, PCIe 0x20F5). Not in the guide's tables; the operator's default config
    # gives it the A100-80GB layouts ("H100-80GB, H800-80GB, A100-80GB, A800-80GB" filters). Labels:
    # GFD forms of the NVML names "NVIDIA A800-SXM4-80GB" and "NVIDIA A800 80GB PCIe".
    product("A800-80GB", ["NVIDIA-A800-SXM4-80GB", "NVIDIA-A800-80GB-PCIe"], ["0x20F310DE", "0x20F510DE"], 80,
            seven_slice(10, 20, 40, 80), {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # PG506-96GB (a GA100 board, 0x20B6). Not in the guide. Only the layouts the operator's default
    # config attributes to it are recorded (its older release: all-1g.12gb x7, all-2g.24gb x3,
    # all-3g.48gb x2, all-7g.96gb x1, all-balanced; the current one adds it to the 4g.48gb group).
    # Label not recorded.
    product("PG506-96GB", [], ["0x20B610DE"], 96, profiles(
        ("1g.12gb", 1, 1, 7, None),
        ("2g.24gb", 2, 2, 3, None),
        ("3g.48gb", 3, 4, 2, None),
        ("4g.48gb", 4, 4, 1, None),
        ("7g.96gb", 7, 8, 1, None),
    ), {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}, OPERATOR_DEFAULT_CONFIG),
]
