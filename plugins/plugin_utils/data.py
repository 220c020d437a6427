# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's templated values as the plain data the collection's domain code expects.

Private to the collection: not a public API; may change without notice.
"""

from __future__ import annotations


def plain(value):
    """``value`` with plain dicts, lists, strings and numbers in place of Ansible's templated containers and tagged
    values. Those subclass the builtin types but carry tags and lazy templating: YAML and JSON writers refuse or keep
    them, and ``copy.deepcopy`` copies their whole templating context (measured: 2.7 s for one GPU Operator values
    merge, 0.01 s on plain data). Other values (None, Undefined, ...) are returned as they are."""
    if isinstance(value, dict):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item) for item in value]
    for kind in (bool, int, float, str, bytes):
        if isinstance(value, kind):
            return kind(value)
    return value
