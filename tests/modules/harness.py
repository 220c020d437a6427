"""Run a collection module's main() in-process, as Ansible would, and capture its result.

The module runs for real: AnsibleModule parses the arguments (check and diff mode flags
included) and run_command starts the real helm binary, which talks to the fake API server.
"""
from __future__ import annotations

import importlib
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super().__init__(result.get("msg", ""))
        self.result = result
        self.failed = failed


def _exit_json(self, **kwargs):  # pylint: disable=unused-argument
    raise ModuleExit(json.loads(json.dumps(kwargs, default=str)), failed=False)


def _fail_json(self, msg, **kwargs):  # pylint: disable=unused-argument
    kwargs.update(msg=msg, failed=True)
    raise ModuleExit(json.loads(json.dumps(kwargs, default=str)), failed=True)


def run_module(name, params, check_mode=False, diff=False):
    """Returns (failed, result)."""
    module = importlib.import_module("ansible_collections.gpu_platform.cluster.plugins.modules." + name)
    args = dict(params, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args), \
            pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic.AnsibleModule, "exit_json", _exit_json)
        mp.setattr(basic.AnsibleModule, "fail_json", _fail_json)
        try:
            module.main()
        except ModuleExit as exc:
            return exc.failed, exc.result
    raise AssertionError("module %s returned without exit_json or fail_json" % name)
