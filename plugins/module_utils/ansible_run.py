# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The end of every module's main(): run the workflow, turn its errors into fail_json.

Private to the collection: not a public API.
"""

from __future__ import annotations

import traceback

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError


def execute(module, call):
    """``call()`` returns the result; a GpuPlatformError fails the task with its message and details. Anything
    else is a bug of ours: the task fails with a one-line message, and the traceback goes only where Ansible shows
    it at -vvv (the result's ``exception``), never as the message."""
    try:
        result = call()
    except GpuPlatformError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the last resort: no traceback as a message
        module.fail_json(msg="%s failed unexpectedly (%s: %s). This is a bug in gpu_platform.cluster: please report "
                         "it with the task's options (without secrets); -vvv shows where it happened"
                         % (module._name, type(exc).__name__, exc),  # pylint: disable=protected-access
                         exception=traceback.format_exc(limit=50))
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**result)
