# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Waiting for the cluster: a poll loop with an injectable clock, so tests and simulated controllers run
without real sleeps.

Private to the collection: not a public API.
"""

from __future__ import annotations

import time

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError


class WaitTimeout(GpuPlatformError):
    """A wait ran out of time; ``last`` is the last thing seen."""


class RealClock:
    """Monotonic wall clock. A clock is anything with ``time()`` (seconds) and ``sleep(seconds)``."""

    @staticmethod
    def time():
        return time.monotonic()

    @staticmethod
    def sleep(seconds):
        time.sleep(seconds)


def wait_for(fetch, ready, timeout, clock=None, interval=2.0, describe=None):
    """Poll ``fetch()`` until ``ready(value)`` is true; raise WaitTimeout with ``describe(value)``."""
    clock = clock or RealClock()
    deadline = clock.time() + timeout
    while True:
        value = fetch()
        if ready(value):
            return value
        remaining = deadline - clock.time()
        if remaining <= 0:
            detail = describe(value) if describe else repr(value)
            raise WaitTimeout("timed out after %ss: %s" % (timeout, detail), last=value)
        clock.sleep(min(interval, remaining))
