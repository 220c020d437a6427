"""Where a cluster-facing module's work runs (plugins/plugin_utils/placement.py): in the controller process only when
that gives what the module would, on the task's target otherwise."""
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.placement import in_controller_process, same_python


@pytest.fixture(name="venv")
def venv_fixture(tmp_path):
    """A venv-like folder: bin/python a link to this Python, bin/python3 a link to bin/python."""
    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True)
    (folder / "python").symlink_to(sys.executable)
    (folder / "python3").symlink_to("python")
    return folder


@pytest.mark.parametrize("interpreter", [None, "", "auto", "auto_silent", "auto_legacy", "auto_legacy_silent",
                                         " auto_silent ", sys.executable])
def test_a_local_connection_runs_in_the_controller_process(interpreter):
    here, why = in_controller_process("local", False, interpreter, sys.executable)
    assert here is True and why == "its connection is local"


@pytest.mark.parametrize("connection", ["ssh", "paramiko", "community.docker.docker", "podman", "winrm"])
def test_any_other_connection_runs_the_module_on_the_target(connection):
    here, why = in_controller_process(connection, False, sys.executable, sys.executable)
    assert here is False and why == "its connection is %s, not local" % connection


def test_become_on_a_local_connection_runs_the_module_as_that_user():
    here, why = in_controller_process("local", True, None, sys.executable)
    assert here is False and "become" in why


def test_a_local_connection_with_another_python_runs_the_module_in_that_python(venv):
    here, why = in_controller_process("local", False, "/opt/kube/bin/python3", str(venv / "python"))
    assert here is False
    assert why == "its ansible_python_interpreter is /opt/kube/bin/python3, not the controller's Python"


def test_two_names_of_one_python_in_one_folder_are_the_same(venv):
    assert same_python(str(venv / "python3"), str(venv / "python"))
    assert same_python(str(venv / "python"), str(venv / ".." / "bin" / "python"))
    assert in_controller_process("local", False, str(venv / "python3"), str(venv / "python"))[0] is True


def test_a_venv_reached_through_a_link_is_the_same(venv, tmp_path):
    """A checkout whose .venv links to another one's: the worker's sys.executable names the target folder."""
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / ".venv").symlink_to(venv.parent)
    linked = tmp_path / "checkout" / ".venv" / "bin" / "python"
    assert same_python(str(linked), str(venv / "python3"))
    assert in_controller_process("local", False, str(linked), str(venv / "python3"))[0] is True


def test_a_venv_is_not_the_python_it_links_to(venv):
    """Same file after the links, another folder: another sys.prefix, other libraries."""
    assert os.path.samefile(venv / "python", sys.executable)
    assert not same_python(str(venv / "python"), sys.executable)
    assert not same_python(sys.executable, str(venv / "python"))


def test_a_bare_name_is_looked_up_on_the_path(venv, monkeypatch):
    monkeypatch.setenv("PATH", str(venv))
    assert same_python("python3", str(venv / "python"))
    assert not same_python("no-such-python", str(venv / "python"))


def test_an_interpreter_with_arguments_is_not_the_controllers():
    assert not same_python("/usr/bin/env " + sys.executable, sys.executable)
    assert in_controller_process("local", False, "/usr/bin/env python3", sys.executable)[0] is False
