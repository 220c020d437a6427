# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Names and labels every layer shares, written once.

Private to the collection: not a public API; may change without notice. Standard library only.
"""

from __future__ import annotations

COLLECTION = "gpu_platform.cluster"
# The label on every object the collection renders or applies (kubectl get all -A -l app.kubernetes.io/managed-by=...)
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = {MANAGED_BY_LABEL: COLLECTION}
# The server-side apply field manager of every write
FIELD_MANAGER = "gpu-platform"
