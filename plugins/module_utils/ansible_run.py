# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""How a module's work is called and how its errors become a result, wherever it runs.

Private to the collection: not a public API.

A cluster-facing module defines ``call(params, check_mode, runtime)``: the one function that does its work. It
runs in one of two places, with the same outcome:

- in the module process (``main()``: AnsibleModule parses the arguments, ``execute`` ends the run), when the module
  is copied to a host and started there;
- in the controller process (the action plugin of the same name, plugins/plugin_utils/controller_module.py), which
  is what a playbook task gets: no module upload, no new interpreter.

``runtime`` is what the work needs from the place it runs: a private folder for credential files (``tmpdir``) and
a way to start a program (``run_command(argv, env) -> (rc, stdout, stderr)``, ``env`` the variables to add).
"""

from __future__ import annotations

import traceback

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError

BUG = ("%s failed unexpectedly (%s: %s). This is a bug in gpu_platform.cluster: please report it with the task's "
       "options (without secrets); -vvv shows where it happened")


def outcome(name, call):
    """``call()``'s result; or, when it raises, a failed result: a GpuPlatformError's message and details, and for
    anything else (a bug of ours) a one-line message, the traceback only in ``exception`` (shown at -vvv)."""
    try:
        return call()
    except GpuPlatformError as exc:
        return dict(exc.details, failed=True, msg=exc.msg)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the last resort: no traceback as a message
        return {"failed": True, "msg": BUG % (name, type(exc).__name__, exc), "exception": traceback.format_exc(limit=50)}


class ModuleRuntime:
    """The module process's runtime: AnsibleModule's private tmpdir (removed at exit) and run_command."""

    def __init__(self, module):
        self._module = module

    @property
    def tmpdir(self):
        return self._module.tmpdir

    def run_command(self, argv, env=None):
        return self._module.run_command(argv, environ_update=env or {})


def execute(module, call):
    """The end of a module's main(): ``call(params, check_mode, runtime)``, then exit_json or fail_json."""
    result = outcome(module._name, lambda: call(module.params, module.check_mode, ModuleRuntime(module)))  # pylint: disable=protected-access
    if result.pop("failed", False):
        module.fail_json(**result)
    for warning in result.pop("warnings", []):
        module.warn(warning)
    module.exit_json(**result)
