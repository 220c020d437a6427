# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The MIG catalog: every MIG-capable GPU this collection knows, as data.

Private to the collection: not a public API. Pure: standard library only, no I/O. The facts are
in one file per GPU family (catalog_ampere.py, catalog_hopper.py, catalog_blackwell.py),
each with its source; docs/mig_catalog.md shows them as a table (a unit test keeps both in step).
Where a GPU's driver spells some profile names in more than one way (GB200's 3g.93gb or 3g.95gb), the entry's
``spellings`` holds each spelling with its source; fit.py accepts either, never both in one layout.

Known gaps, named rather than guessed: the MIG User Guide also lists RTX PRO 5000 Blackwell (48GB,
2 instances), RTX PRO 4500 Blackwell (32GB, 2 instances) and the Thor iGPU (unified memory); their
profile tables and device IDs are not recorded here yet, so nodes with them are refused as not in
the catalog.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import (
    catalog_ampere as mig_catalog_ampere, catalog_blackwell as mig_catalog_blackwell, catalog_hopper as
    mig_catalog_hopper)

CATALOG = {}
for _family in (mig_catalog_ampere, mig_catalog_hopper, mig_catalog_blackwell):
    for _entry in _family.PRODUCTS:
        CATALOG[_entry["product"]] = _entry

# Profiles that need a newer driver than the product's first MIG driver (MIG_GUIDE_PROFILES notes).
MIN_DRIVER = {
    ("A30-24GB", "1g.6gb+me"): "R470",
    ("A30-24GB", "2g.12gb+me"): "R525",
    ("A100-40GB", "1g.5gb+me"): "R470",
    ("A100-40GB", "1g.10gb"): "R525",
}

# In the MIG User Guide, not (yet) in CATALOG: product -> why.
NOT_IN_CATALOG = {
    "RTX PRO 5000 Blackwell": "profile table and device ID not recorded",
    "RTX PRO 4500 Blackwell": "profile table and device ID not recorded",
    "Thor iGPU": "integrated GPU with unified memory; not a GPU Operator node GPU",
}
