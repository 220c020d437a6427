"""execute(): a workflow's errors become the task's message; an unexpected exception never shows a traceback."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute, outcome
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


class Failed(Exception):
    pass


class Module:
    _name = "gpu_platform.cluster.manifests"
    params = {"objects": []}
    check_mode = True
    tmpdir = "/private"

    def __init__(self):
        self.failed = self.exited = self.warnings = None
        self.commands = []

    def fail_json(self, **result):
        self.failed = result
        raise Failed()

    def exit_json(self, **result):
        self.exited = result

    def warn(self, text):
        self.warnings = (self.warnings or []) + [text]

    def run_command(self, argv, environ_update=None):
        self.commands.append((argv, environ_update))
        return 0, "out", ""


def run(call):
    module = Module()
    try:
        execute(module, lambda params, check_mode, runtime: call())
    except Failed:
        pass
    return module


def test_a_user_error_is_the_message_with_its_field():
    def call():
        raise ParamError("objects[0].kind", "is missing", "give the object's kind")
    module = run(call)
    assert module.failed == {"msg": "objects[0].kind: is missing. Fix: give the object's kind", "field": "objects[0].kind"}


def test_a_bug_is_one_line_and_the_traceback_only_in_exception():
    def call():
        return {}["missing"]
    module = run(call)
    assert module.failed["msg"].startswith("gpu_platform.cluster.manifests failed unexpectedly (KeyError: 'missing')")
    assert "Traceback" not in module.failed["msg"] and "\n" not in module.failed["msg"]
    assert module.failed["exception"].startswith("Traceback")


def test_warnings_are_passed_on_and_the_result_returned():
    module = run(lambda: {"changed": True, "warnings": ["careful"]})
    assert module.exited == {"changed": True} and module.warnings == ["careful"]


def test_the_call_gets_the_modules_params_check_mode_and_runtime():
    module = Module()
    seen = {}

    def call(params, check_mode, runtime):
        seen.update(params=params, check_mode=check_mode, tmpdir=runtime.tmpdir, rc=runtime.run_command(["helm"], {"A": "1"}))
        return {"changed": False}
    execute(module, call)
    assert seen == {"params": {"objects": []}, "check_mode": True, "tmpdir": "/private", "rc": (0, "out", "")}
    assert module.commands == [(["helm"], {"A": "1"})], "the variables to add go to run_command as environ_update"


def test_outcome_is_the_same_result_for_the_controller():
    assert outcome("x", lambda: {"changed": True}) == {"changed": True}

    def bad():
        raise ParamError("f", "is bad", "fix it")
    failed = outcome("x", bad)
    assert failed == {"failed": True, "msg": "f: is bad. Fix: fix it", "field": "f"}


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_interrupts_are_not_swallowed(error):
    def call():
        raise error()
    with pytest.raises(error):
        run(call)
