# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors shared by every layer of gpu_platform.cluster.

Private to the collection: not a public API; may change without notice.
Standard library only, no Ansible imports.
"""

from __future__ import annotations


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


class Refusal(GpuPlatformError):
    """The request is well formed but acting on it would harm the cluster."""


class ToolError(GpuPlatformError):
    """An external tool (helm, the Kubernetes API) failed."""
