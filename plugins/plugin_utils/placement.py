# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a cluster-facing module's work runs: in the controller process, or as a module on the task's target.

Private to the collection: not a public API.

The action plugins (controller_module.py) run a module's ``call()`` in the controller process only where that gives
what running the module would: the task's connection (the delegated host's, with ``delegate_to``) is ``local``, no
``become`` switches to another user, and the Python the module would get is the controller's own (its
``ansible_python_interpreter`` is unset, a discovery mode, or the controller's interpreter; the collection's
inventories set ``{{ ansible_playbook_python }}``). Anything else (ssh to a bastion, ``become``, a venv of its own)
runs the module there, as Ansible runs any module, so the paths, the environment and the libraries are that
host's.
"""

from __future__ import annotations

import os
import shutil

# ansible_python_interpreter values that ask Ansible to discover an interpreter rather than name one
DISCOVERY = frozenset(("auto", "auto_legacy", "auto_silent", "auto_legacy_silent"))


def same_python(interpreter, controller_python):
    """Whether the interpreter path ``interpreter`` starts the same Python environment as ``controller_python``.

    Python finds its environment (a venv's ``pyvenv.cfg``) from the folder of the path it was started by, so two
    names for one file in one folder (a venv's ``python`` and ``python3``, or the same folder reached through a
    linked venv) are the same; a venv's ``bin/python`` and the system Python it links to are not (another
    ``sys.prefix``, other libraries)."""
    if not os.path.isabs(interpreter):
        interpreter = shutil.which(interpreter) or interpreter
    first, second = os.path.abspath(interpreter), os.path.abspath(controller_python)
    if first == second:
        return True
    if os.path.realpath(os.path.dirname(first)) != os.path.realpath(os.path.dirname(second)):
        return False
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def in_controller_process(connection, become, interpreter, controller_python):
    """(True, why) when the module's work may run in the controller process, (False, why) when it must run as a
    module on the task's target.

    ``connection``: the task's connection plugin's transport (``local``, ``ssh``, ...); ``become``: whether the
    task becomes another user; ``interpreter``: the templated ``ansible_python_interpreter`` (None when unset);
    ``controller_python``: the controller's interpreter (``sys.executable``)."""
    if connection != "local":
        return False, "its connection is %s, not local" % connection
    if become:
        return False, "it uses become (another user's files and environment)"
    if interpreter and str(interpreter).strip() not in DISCOVERY and \
            not same_python(str(interpreter).strip(), controller_python):
        return False, "its ansible_python_interpreter is %s, not the controller's Python" % interpreter
    return True, "its connection is local"
