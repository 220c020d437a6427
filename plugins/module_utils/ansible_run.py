# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The end of every module's main(): run the workflow, turn its errors into fail_json.

Private to the collection: not a public API.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError


def execute(module, call):
    """``call()`` returns the result; a GpuPlatformError fails the task with its message and details."""
    try:
        result = call()
    except GpuPlatformError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**result)
