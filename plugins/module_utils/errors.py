# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors shared by every layer of gpu_platform.cluster.

Private to the collection: not a public API; may change without notice.
Standard library only, no Ansible imports.
"""

from __future__ import annotations

from collections.abc import Mapping


class GpuPlatformError(Exception):
    """Base error: ``msg`` is what the user reads; ``details`` go into the failed result."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


class ParamError(GpuPlatformError):
    """A bad input. Names the field, says what is wrong and how to fix it."""

    def __init__(self, field, problem, fix):
        super().__init__("%s: %s. Fix: %s" % (field, problem, fix), field=field)
        self.field = field
        self.problem = problem
        self.fix = fix

    def renamed(self, fields):
        """This error under the name the user knows its field by: ``fields`` maps a field (such as a key of the
        version matrix's combination) to the user's variable. Itself when ``fields`` does not name the field."""
        name = fields.get(self.field) if isinstance(fields, Mapping) else None
        if not name or name == self.field:
            return self
        return ParamError(name, self.problem, self.fix)


class Refusal(GpuPlatformError):
    """The request is well formed but acting on it would harm the cluster."""


class ToolError(GpuPlatformError):
    """An external tool (helm, the Kubernetes API) failed."""
