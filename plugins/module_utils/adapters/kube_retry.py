# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""How the Kubernetes client retries: which answers, how often, how long it waits in between.

Private to the collection: not a public API. Used by adapters/kube.py; docs/hardening.md quotes the worst case.
"""

from __future__ import annotations

# Transient failures are retried with bounded exponential back-off and jitter: 429 (the server's flow control;
# its Retry-After is honoured up to RETRY_AFTER_MAX seconds), 500, 502, 503, 504, connection resets and read
# time-outs, for idempotent requests only: reads, server-side apply and merge patches, deletes. A POST (a create,
# an eviction) is not retried on an answer, as it may have taken effect and an eviction's 429 is a
# PodDisruptionBudget's verdict that node_maintenance waits on itself. A request that never left (connection
# refused) is retried whatever its method.
RETRY_STATUSES = (429, 500, 502, 503, 504)
IDEMPOTENT = frozenset(("GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"))
RETRIES = 4
BACKOFF = 0.5  # seconds before the first retry, doubling each time
BACKOFF_MAX = 8.0
JITTER = 0.5
RETRY_AFTER_MAX = 30.0
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 60


def worst_case_seconds(connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT):
    """The longest one API call can take, retries included: every attempt times out and every pause is the
    longest allowed (docs/hardening.md quotes it)."""
    attempts = RETRIES + 1
    return attempts * (connect_timeout + read_timeout) + RETRIES * max(RETRY_AFTER_MAX, BACKOFF_MAX + JITTER)


def retry_policy():
    """The urllib3 Retry the client's connection pool uses (see RETRY_STATUSES)."""
    from urllib3.util.retry import Retry  # pylint: disable=import-outside-toplevel

    class ApiRetry(Retry):
        """Retry-After honoured, but never longer than RETRY_AFTER_MAX."""

        def get_retry_after(self, response):
            seconds = super().get_retry_after(response)
            return None if seconds is None else min(seconds, RETRY_AFTER_MAX)

    return ApiRetry(total=RETRIES, connect=RETRIES, read=RETRIES, status=RETRIES, other=0, redirect=0,
                    status_forcelist=RETRY_STATUSES, allowed_methods=IDEMPOTENT, backoff_factor=BACKOFF,
                    backoff_max=BACKOFF_MAX, backoff_jitter=JITTER, respect_retry_after_header=True,
                    raise_on_status=False, raise_on_redirect=False)
