# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side execution of the collection's cluster-facing modules.

Private to the collection: not a public API.

Each cluster-facing module (helm_pinned_release, manifests, nic_cluster_policy, mig_profile, node_labels, ...) has
an action plugin of the same name, a subclass of ``ControllerModule`` naming the module. Where the task's
connection is local (placement.py decides: the delegated host's connection with ``delegate_to``, no ``become``, the
controller's own Python), the task runs the module's ``call()`` here, in Ansible's worker process on the
controller: the options are checked against the module's own argument spec (the same types, defaults, aliases,
choices, environment fallbacks and ``no_log``), check and diff mode come from the task, and errors become the same
failed results the module gives. Anywhere else (``delegate_to`` a bastion reached over SSH, a ``k8s_api`` host
that is a jump host, ``become``) the module runs on that host like any module (``_execute_module``, the same
arguments, check and diff mode), so ``kubeconfig``, ``ca_cert``, ``render_to`` and ``binary_path`` are that host's
paths and the ``K8S_AUTH_*`` fallbacks are read from its environment. ``ansible-playbook -vvv`` says which, and why.

What running here saves, per task (measured by the site no-op benchmark): no module zip sent and unpacked, no new
Python interpreter, no ``ansible.module_utils.basic`` and ``kubernetes`` imports. Ansible's linear strategy loads an
action plugin's class in the main process before it forks the task's worker, so what this file imports when it is
loaded (``preload``: the ``kubernetes`` library, and the collection's filter plugins with the domain code under
them) is imported once per ``ansible-playbook`` run, and the worker of every later task inherits it instead of
importing it again.

``_requires_connection = False``: ansible-core's TaskExecutor reads it only for persistent connections
(``network_cli``, ``httpapi``, ``netconf``), which it then replaces with ``local`` instead of starting them; for
every other connection the task's connection plugin is made as usual (it connects only when a command runs), so
``self._connection.transport`` names the connection the module would use.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import sys
import tempfile

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import helm, kube
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import outcome
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.data import plain
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.placement import in_controller_process

display = Display()


def preload():
    """Import the ``kubernetes`` library and every filter plugin of the collection (see the module's docstring).
    A filter that fails to import is left for Ansible to report when a task uses it."""
    kube.preload()
    package = "ansible_collections.gpu_platform.cluster.plugins.filter"
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        try:
            importlib.import_module("%s.%s" % (package, info.name))
        except Exception:  # pylint: disable=broad-exception-caught  # reported where the filter is used, not here
            pass


preload()


class ControllerRuntime:
    """The controller's runtime for a module's ``call()``: a private folder (0700, removed after the task) for
    credential files, and programs started with the task's environment plus ``env``."""

    def __init__(self, environment):
        self._environment = environment
        self._tmpdir = None

    @property
    def tmpdir(self):
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="gpu-platform-")
        return self._tmpdir

    def run_command(self, argv, env=None):
        return helm.subprocess_run(argv, dict(self._environment, **(env or {})))

    def cleanup(self):
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def validate(module, name, args, environment):
    """The module's argument spec applied to the task's ``args`` as AnsibleModule would (``name``: the module's name
    as the task gave it, for the messages), with the environment fallbacks read from ``environment``.

    Returns (params, no_log values, error message or None, warnings)."""
    saved = dict(os.environ)
    os.environ.update(environment)  # env_fallback reads os.environ; this worker process runs this one task
    try:
        validator = ArgumentSpecValidator(module.ARGUMENT_SPEC, **getattr(module, "SPEC_OPTIONS", {}))
        result = validator.validate(plain(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    warnings = ["Both option %s and its alias %s are set." % (item["option"], item["alias"])
                for item in result._warnings]  # pylint: disable=protected-access
    no_log = result._no_log_values  # pylint: disable=protected-access
    if result.error_messages:
        error = result.errors[0]
        msg = result.errors.msg
        if isinstance(error, UnsupportedError):  # worded as AnsibleModule words it
            msg = "Unsupported parameters for (%s) module: %s" % (name, msg)
        return None, no_log, msg, warnings
    return result.validated_parameters, no_log, None, warnings


class ControllerModule(ActionBase):
    """Runs ``MODULE.call()`` in the controller process where the task's connection is local, and the module on
    the task's target otherwise. ``MODULE`` is the module (plugins/modules/NAME.py): its ``ARGUMENT_SPEC``, optional
    ``SPEC_OPTIONS`` (mutually_exclusive, ...) and ``call(params, check_mode, runtime)``."""

    MODULE = None
    TRANSFERS_FILES = False
    _requires_connection = False  # see the module's docstring
    _supports_check_mode = True

    def _environment(self):
        """The controller's environment plus the task's ``environment:`` keyword (templated, later entries win)."""
        environment = dict(os.environ)
        for entry in self._task.environment or []:
            entry = self._templar.template(entry)
            if isinstance(entry, dict):
                environment.update({str(key): str(value) for key, value in entry.items()})
        return environment

    def _interpreter(self, task_vars):
        """The Python interpreter the module would be started with on the task's host (the delegated host's with
        ``delegate_to``), templated; a discovery mode (``auto_silent``) when none is named."""
        host_vars = task_vars
        templar = self._templar
        if self._task.delegate_to:
            host_vars = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to) or {}
            templar = templar.copy_with_new_env(available_variables=host_vars)
        value = C.config.get_config_value("INTERPRETER_PYTHON", variables=host_vars)
        try:
            return templar.template(value) if isinstance(value, str) else value
        except Exception:  # pylint: disable=broad-exception-caught  # not the controller's: the module run reports it
            return value

    def _placement(self, task_vars):
        """(True, why) to run in this process, (False, why) to run the module on the task's target."""
        connection = self._connection.transport
        become = self._connection.become is not None
        if connection != "local" or become:  # no interpreter to work out
            return in_controller_process(connection, become, None, sys.executable)
        return in_controller_process(connection, become, self._interpreter(task_vars), sys.executable)

    def _run_module(self, task_vars):
        """The module on the task's target, as Ansible runs any module (the same arguments, check and diff mode)."""
        result = self._execute_module(module_name=self._task.action, module_args=self._task.args, task_vars=task_vars)
        self._remove_tmp_path(self._connection._shell.tmpdir)  # pylint: disable=protected-access  # as the normal action does
        return result

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars if task_vars is not None else {}
        name = self._task.action
        here, why = self._placement(task_vars)
        host = self._task.delegate_to or task_vars.get("inventory_hostname")
        if not here:
            display.vvv("%s runs as a module on %s: %s" % (name, host, why), host=host)
            return merge_hash(result, self._run_module(task_vars))
        display.vvv("%s runs in the controller process: %s" % (name, why), host=host)
        environment = self._environment()
        params, no_log, error, warnings = validate(self.MODULE, name, self._task.args, environment)
        if error:
            outcome_ = {"failed": True, "msg": error}
        else:
            runtime = ControllerRuntime(environment)
            try:
                outcome_ = outcome(name, lambda: self.MODULE.call(params, bool(self._task.check_mode), runtime))
            finally:
                runtime.cleanup()
            outcome_["invocation"] = {"module_args": params}
        warnings = warnings + list(outcome_.pop("warnings", []))
        if warnings:
            outcome_["warnings"] = warnings
        result.update(remove_values(outcome_, no_log))
        return result
