# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG catalog data: NVIDIA Blackwell GPUs (B200, GB200, B300, GB300, RTX PRO 6000 Blackwell).

Private to the collection: not a public API. Pure data; conventions as in catalog_ampere.py.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog_common import (
    MIG_GUIDE_PROFILES, OPERATOR_DEFAULT_CONFIG, driver_names, product, profiles, seven_slice)

# GB200's 3-, 4- and 7-slice instances have two names. Which driver branch prints which is not in the sources (the
# listings carry no driver version); what they do say:
# - 3g.93gb, 4g.93gb, 7g.186gb: "the setting from the production boards" (mig-parted#227, fixed by mig-parted#228,
#   commit ebab1f77, 2025-08-07; the operator's copy is gpu-operator commit a05d0ed3 "fix the GB200 MIG profile
#   configmap", first released in v25.10.0). The operator's all-balanced for 0x294110DE uses 3g.93gb.
# - 3g.95gb, 4g.95gb, 7g.189gb: the `nvidia-smi mig -lgip` listing of gpu-operator#1303 ("[MIG] add support for
#   HGX GB200", commit 74882777, 2025-02-28, first released in v25.3.0); a05d0ed3 kept the all-3g.95gb,
#   all-4g.95gb and all-7g.189gb layouts beside the new ones, and v26.3.3 and v26.7.0 still ship them. That
#   listing also named the 1-slice profiles 1g.24gb and 1g.24gb+me; a05d0ed3 dropped GB200's all-1g.24gb filter
#   (production boards print 1g.23gb), so those are not GB200 names here.
_GB200_PRODUCTION = "https://github.com/NVIDIA/mig-parted/issues/227"
_GB200_FIRST = "https://github.com/NVIDIA/gpu-operator/pull/1303"
_GB200_SPELLINGS = (
    driver_names(("3g.93gb", "4g.93gb", "7g.186gb"), "production GB200 boards, 2025-08", _GB200_PRODUCTION),
    driver_names(("3g.95gb", "4g.95gb", "7g.189gb"), "the first HGX GB200 listing, 2025-02", _GB200_FIRST),
)

# RTX PRO 6000 Blackwell: 4 compute and 4 memory slices, 96GB (MIG_GUIDE_GPUS: 4 instances).
# Profiles and counts: the operator's default config ("RTX-PRO-6000-96GB" block: +gfx graphics
# profiles, -me without media engines, +me.all with all of them; all-1g.24gb x4, all-2g.48gb x2,
# all-4g.96gb x1, all-1g.24gb.me x1).
_RTX_PRO_6000 = profiles(
    ("1g.24gb", 1, 1, 4, None),
    ("1g.24gb+me", 1, 1, 1, None),
    ("1g.24gb+gfx", 1, 1, 4, None),
    ("1g.24gb+me.all", 1, 1, 1, None),
    ("1g.24gb-me", 1, 1, 4, None),
    ("2g.48gb", 2, 2, 2, None),
    ("2g.48gb+gfx", 2, 2, 2, None),
    ("2g.48gb+me.all", 2, 2, 1, None),
    ("2g.48gb-me", 2, 2, 2, None),
    ("4g.96gb", 4, 4, 1, None),
    ("4g.96gb+gfx", 4, 4, 1, None),
)

PRODUCTS = [
    # B200 (180GB, 0x2901). Profiles: MIG User Guide, "B200 MIG Profiles". 0x2909 (HGX B200 168GB in
    # pci.ids) is left out: its profiles are not documented. Label "NVIDIA-B200".
    product("B200", ["NVIDIA-B200"], ["0x290110DE"], 180, seven_slice(23, 45, 90, 180),
            {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}, MIG_GUIDE_PROFILES),
    # GB200 (186GB, 7 instances: MIG_GUIDE_GPUS; 0x2941 "GB200 HGX" in the operator's all-balanced).
    # Profiles: the operator's default config (all-1g.23gb x7 and .me x1 "GB200, B200", all-1g.47gb x4,
    # all-2g.47gb x3, all-3g.93gb x2, all-4g.93gb x1, all-7g.186gb x1). Label "NVIDIA-GB200" as seen on
    # GFD-labelled nodes. The 3g/4g/7g names depend on the driver: _GB200_SPELLINGS.
    product("GB200", ["NVIDIA-GB200"], ["0x294110DE"], 186, seven_slice(23, 47, 93, 186),
            {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}, OPERATOR_DEFAULT_CONFIG, spellings=_GB200_SPELLINGS),
    # B300 (0x3182; 288GB HBM3e of which 269GB for MIG: the 7g.269gb profile). Profiles: the
    # operator's default config "B300" block (added in gpu-operator commit e4653c87). Driver R580+
    # (MIG User Guide, deployment considerations). Label "NVIDIA-B300-SXM6-AC" as seen on
    # GFD-labelled nodes.
    product("B300", ["NVIDIA-B300-SXM6-AC"], ["0x318210DE"], 269, seven_slice(34, 67, 135, 269),
            {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # GB300 (0x31C2; 278GB for MIG: the 7g.278gb profile). Profiles: the operator's default config
    # "GB300" block (gpu-operator commit 7031fcc5): 1g.35gb x7 (all-1g.35gb's GB300 filter), .me x1,
    # 1g.70gb x4, 2g.70gb x3, 3g.139gb x2, 4g.139gb x1. Label not recorded.
    product("GB300", [], ["0x31C210DE"], 278, seven_slice(35, 70, 139, 278),
            {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # RTX PRO 6000 Blackwell (96GB, 0x2BB5 "RTX-PRO-6000-96GB" in the operator's all-balanced). The guide
    # lists the Server, Workstation and Max-Q Workstation editions; only the Server Edition's label is
    # recorded ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", as seen on GFD-labelled nodes).
    product("RTX-PRO-6000-96GB", ["NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"], ["0x2BB510DE"], 96,
            _RTX_PRO_6000, {"1g.24gb": 2, "2g.48gb": 1}, OPERATOR_DEFAULT_CONFIG, slices=4, memory_slices=4),
]
