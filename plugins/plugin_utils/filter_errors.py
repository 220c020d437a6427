# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a filter of this collection turns the domain's errors into what the user reads.

Private to the collection: not a public API; may change without notice. Controller-side code shared by the
filter plugins (plugins/filter/*.py): every filter they export is wrapped by ``user_errors``.

The filter's arguments reach it as plain data (plugin_utils/data.py: Ansible's lazy, tagged containers are slow
to copy and refused by YAML writers). A GpuPlatformError (ParamError, Refusal, ...) raised while a filter runs becomes an AnsibleFilterError with the
error's message, which Ansible shows as the task's message. A ParamError can first be renamed to the variable the
user set (``fields``). Any other exception is not caught: it is a bug, and Ansible shows it with its traceback.
"""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.data import plain

# Set on every wrapped filter (tests check that each exported filter has it).
MARKER = "gpu_platform_user_errors"
# The attribute of the AnsibleFilterError that carries the collection's own error.
ERROR_ATTRIBUTE = "gpu_platform_error"


def _filter_error(error):
    """An AnsibleFilterError with ``error``'s message, carrying ``error`` itself (ERROR_ATTRIBUTE): the preflight
    (plugins/action/preflight.py) finds it in the exception that templating raises and reports each of its mistakes
    on a line of its own, without the words Ansible wraps around a failed filter."""
    exc = AnsibleFilterError(error.msg)
    setattr(exc, ERROR_ATTRIBUTE, error)
    return exc


def user_errors(func=None, *, fields=None):
    """Decorate a filter so that its GpuPlatformError reaches the user as an AnsibleFilterError with its message.

    ``fields`` renames a ParamError's field to the user's variable (ParamError.renamed): a mapping
    {field: variable}, or a callable that takes the filter's own arguments and returns that mapping (or None),
    for a mapping the filter is given at run time. Use as ``@user_errors``, ``@user_errors(fields=...)`` or
    ``user_errors(some_function)``.
    """
    if func is None:
        return functools.partial(user_errors, fields=fields)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        args, kwargs = plain(args), plain(kwargs)
        try:
            return func(*args, **kwargs)
        except ParamError as exc:
            mapping = fields(*args, **kwargs) if callable(fields) else fields
            raise _filter_error(exc.renamed(mapping)) from None
        except GpuPlatformError as exc:
            raise _filter_error(exc) from None

    setattr(wrapper, MARKER, True)
    return wrapper
