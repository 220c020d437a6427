# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_platform.cluster.preflight: every enabled layer's inputs checked in one pass, every mistake on a line of its
own (plugins/modules/preflight.py documents it; the verdict is module_utils/domain/platform/preflight.py).

Thin: it reads the variables the task names and hands them to what already checks them - Ansible's argument spec
validator for the roles' meta/argument_specs.yml, each module's own ``request()`` for the options a role gives it,
and the layers' filters (evaluating the variable runs them). Each variable is evaluated on its own, so a mistake in
one does not hide the others, and a filter's error is taken from the exception (plugin_utils/filter_errors.py)
instead of the words Ansible wraps around it.
"""

from __future__ import annotations

import importlib
import os

import yaml

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import preflight
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.data import plain
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import ERROR_ATTRIBUTE

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
MODULES = "ansible_collections.gpu_platform.cluster.plugins.modules."


def own_error(exc):
    """The collection's error an exception carries (a filter's, see filter_errors.py), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, GpuPlatformError):
            return exc
        error = getattr(exc, ERROR_ATTRIBUTE, None)
        if isinstance(error, GpuPlatformError):
            return error
        exc = getattr(exc, "orig_exc", None) or exc.__cause__ or exc.__context__
    return None


def spec_findings(spec, params):
    """(kind, message) for each finding of Ansible's argument spec validator, and the no_log values it saw."""
    result = ArgumentSpecValidator(spec).validate(params, validate_role_argument_spec=True)
    found = [(type(e).__name__, str(getattr(e, "error_message", e))) for e in result.errors.errors]
    if any(kind != "NoLogError" for kind, dummy in found):
        found = [f for f in found if f[0] != "NoLogError"]  # the same finding, in the no_log check's words
    return found, result._no_log_values, result  # pylint: disable=protected-access


class ActionModule(ActionBase):
    """Runs the checks the task names; fails once, with one line per mistake."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def _value(self, name, task_vars):
        """(value, None) or (None, the mistake) for the variable ``name``."""
        if name not in task_vars:
            raise AnsibleActionFail("preflight: %s is not defined (a bug of the playbook that names it)" % name)
        try:
            return plain(self._templar.template(task_vars[name])), None
        except Exception as exc:  # pylint: disable=broad-exception-caught  # each variable's mistake is reported
            return None, preflight.value_error(name, own_error(exc) or exc)

    def _role(self, role, task_vars):
        """The role's argument spec (entry point main) against the variables it defines."""
        path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
        with open(path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)["argument_specs"]["main"].get("options") or {}
        mistakes = []
        for option in spec:
            if option not in task_vars:
                continue  # the spec's default applies
            value, mistake = self._value(option, task_vars)
            if mistake is not None:
                mistakes.append(mistake)
                continue
            found, no_log, dummy = spec_findings({option: spec[option]}, {option: value})
            mistakes += [remove_values(preflight.line(preflight.spec_error(
                kind, message, spec, option, "ansible-doc -t role gpu_platform.cluster.%s" % role)), no_log)
                for kind, message in found]
        return mistakes

    def _options(self, name, raw):
        """(options, mistakes, options left out) of one call: each option of a dictionary on its own, so that one
        that does not evaluate leaves the others checked; ``raw`` of another shape is evaluated whole."""
        if not isinstance(raw, dict):
            try:
                return plain(self._templar.template(raw)) or {}, [], set()
            except Exception as exc:  # pylint: disable=broad-exception-caught  # reported as the variable's mistake
                return None, [preflight.value_error(name, own_error(exc) or exc)], set()
        options, mistakes, left_out = {}, [], set()
        for key, value in raw.items():
            try:
                options.update(plain(self._templar.template({key: value})))  # an omitted option leaves no key
            except Exception as exc:  # pylint: disable=broad-exception-caught  # reported as the option's mistake
                mistakes.append(preflight.value_error("%s.%s" % (name, key), own_error(exc) or exc))
                left_out.add(str(key))
        return options, mistakes, left_out

    def _request(self, entry, task_vars):
        """A module's options (the variable ``entry['options']`` names: one call's options, or a list of calls'; with
        ``loop``, one call per item of that variable, merged over the options) through the module's argument spec and
        its ``request()``."""
        module = importlib.import_module(MODULES + entry["module"])
        name = entry["options"]
        if name not in task_vars:
            raise AnsibleActionFail("preflight: %s is not defined (a bug of the playbook that names it)" % name)
        raw = task_vars[name]
        if isinstance(raw, list):
            calls = [self._options("%s[%d]" % (name, index), one) + (preflight.fields_from(one),)
                     for index, one in enumerate(raw)]
        else:
            options, found, left_out = self._options(name, raw)
            if isinstance(options, list):  # a template that gives the calls' options
                calls = [(one, found if index == 0 else [], set(), {}) for index, one in enumerate(options)]
            else:
                calls = [(options, found, left_out, preflight.fields_from(raw))]
        items = [({}, "")]
        if entry.get("loop"):
            listed, mistake = self._value(entry["loop"], task_vars)
            if mistake is not None:
                return [mistake]
            items = [(item or {}, "%s[%d]." % (entry["loop"], index)) for index, item in enumerate(listed or [])]
        mistakes = []
        for options, found, left_out, fields in calls:
            mistakes += found
            if options is None:
                continue
            for item, where in items:
                named = dict(fields, **{key: where + key for key in item})
                mistakes += [m for m in self._call(module, entry["module"], dict(options, **item), named, name)
                             if not any(preflight.line(m).startswith(fields.get(k, k)) for k in left_out)]
        return mistakes

    @staticmethod
    def _call(module, module_name, params, named, name):
        """One call's options through the module's argument spec, then its request(); the mistakes, renamed."""
        found, no_log, result = spec_findings(module.ARGUMENT_SPEC, params)
        if found:
            return [remove_values(preflight.line(preflight.rename(preflight.spec_error(
                kind, message, module.ARGUMENT_SPEC, name, "ansible-doc gpu_platform.cluster.%s" % module_name),
                named)), no_log) for kind, message in found]
        try:
            module.request(result.validated_parameters)
        except GpuPlatformError as exc:
            return [preflight.rename(error, named) for error in preflight.split(exc)]
        return []

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        mistakes = []
        for role in args.get("roles") or []:
            mistakes += self._role(role, task_vars)
        for entry in args.get("requests") or []:
            mistakes += self._request(entry, task_vars)
        for name in args.get("values") or []:
            dummy, mistake = self._value(name, task_vars)
            if mistake is not None:
                mistakes.append(mistake)
        lines = preflight.verdict(mistakes)
        result["changed"] = False
        if lines:  # one message, one line per mistake (not repeated in another key of the result)
            result.update(failed=True, msg="\n".join(lines))
        else:
            result["msg"] = "Every input checked is right"
        return result
