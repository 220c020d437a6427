# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""MIG catalog data: NVIDIA Hopper GPUs (H100, H800, H20, H200, GH200).

Private to the collection: not a public API. Pure data; conventions as in catalog_ampere.py.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig.catalog_common import (
    MIG_GUIDE_PROFILES, OPERATOR_DEFAULT_CONFIG, product, seven_slice)

_H100_PLACED = ("https://github.com/GoogleCloudDataproc/initialization-actions/blob/master/"
                "gpu/install_gpu_driver.sh")
_H100_NVL_PLACED = ("https://research.colfax-intl.com/sharing-nvidia-gpus-at-the-system-level-"
                    "time-sliced-and-mig-backed-vgpus/")

PRODUCTS = [
    # H100-80GB (SXM5 0x2330, PCIe 0x2331). Profiles: MIG User Guide, "H100 MIG Profiles", 80GB table.
    # Placements: `nvidia-smi mig -lgipp` on H100 quoted in _H100_PLACED (configure_mig_cgi).
    product("H100-80GB", ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"], ["0x233010DE", "0x233110DE"], 80,
            seven_slice(10, 20, 40, 80, placed=True), {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
            MIG_GUIDE_PROFILES, placements_source=_H100_PLACED),
    # H800-80GB (PCIe 0x2322, SXM5 0x2324). Not in the guide's tables; the operator's default config
    # groups it with H100-80GB ("H100-80GB, H800-80GB, ..." filters). Label "NVIDIA-H800" (SXM) as seen
    # on GFD-labelled nodes; the PCIe label is not recorded.
    product("H800-80GB", ["NVIDIA-H800"], ["0x232210DE", "0x232410DE"], 80, seven_slice(10, 20, 40, 80),
            {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # H100-94GB (H100 NVL 0x2321, H100 SXM5 94GB 0x2339 from pci.ids). Profiles: the guide's "H100 94GB"
    # table. Placements: `nvidia-smi mig -lgipp` on H100 NVL in _H100_NVL_PLACED.
    product("H100-94GB", ["NVIDIA-H100-NVL"], ["0x232110DE", "0x233910DE"], 94,
            seven_slice(12, 24, 47, 94, placed=True), {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
            MIG_GUIDE_PROFILES, placements_source=_H100_NVL_PLACED),
    # H800-94GB (H800 NVL, 0x233A). Not in the guide's tables; the operator's default config groups it
    # with H100 NVL ("H100 NVL, H800 NVL"). Label not recorded.
    product("H800-94GB", [], ["0x233A10DE"], 94, seven_slice(12, 24, 47, 94),
            {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}, OPERATOR_DEFAULT_CONFIG),
    # GH200-96GB (H100 96GB on GH200, 0x2342). Profiles: the guide's "H100 96GB product (H100 on
    # GH200)" table. Label "NVIDIA-GH200-480GB" as seen on GFD-labelled nodes.
    product("GH200-96GB", ["NVIDIA-GH200-480GB"], ["0x234210DE"], 96, seven_slice(12, 24, 48, 96),
            {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}, MIG_GUIDE_PROFILES),
    # H100-96GB (0x233D). The operator's default config groups it with GH200 ("H100-96GB, PG506-96GB,
    # GH200, H20"); the guide's 96GB H100 table applies. Label not recorded.
    product("H100-96GB", [], ["0x233D10DE"], 96, seven_slice(12, 24, 48, 96),
            {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}, MIG_GUIDE_PROFILES),
    # H20 (96GB, 7 instances: MIG_GUIDE_GPUS; driver R535+). 0x2329 in the operator's "H100-96GB,
    # PG506-96GB, GH200, H20" all-balanced filter. Label "NVIDIA-H20" as seen on GFD-labelled nodes.
    product("H20-96GB", ["NVIDIA-H20"], ["0x232910DE"], 96, seven_slice(12, 24, 48, 96),
            {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}, MIG_GUIDE_PROFILES),
    # H200-141GB (H200 SXM 0x2335, H200 NVL 0x233B). Profiles: the guide's "H200 MIG Profiles" table.
    # Labels "NVIDIA-H200", "NVIDIA-H200-NVL" as seen on GFD-labelled nodes.
    product("H200-141GB", ["NVIDIA-H200", "NVIDIA-H200-NVL"], ["0x233510DE", "0x233B10DE"], 141,
            seven_slice(18, 35, 71, 141), {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}, MIG_GUIDE_PROFILES),
    # GH200-144GB (GH200 144G HBM3e, 0x2348). Not in the guide's tables. Profiles and counts:
    # `nvidia-smi mig -lgip` in gpu-operator#1057 and the all-* entries it added to the default config.
    product("GH200-144GB", ["NVIDIA-GH200-144G-HBM3e"], ["0x234810DE"], 144, seven_slice(18, 36, 72, 144),
            {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1}, "https://github.com/NVIDIA/gpu-operator/pull/1057"),
]
