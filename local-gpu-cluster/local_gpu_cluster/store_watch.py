"""Part of local_gpu_cluster/store.py: the store's watch, over the watch history (``?watch`` of the HTTP API)."""
import time

from . import errors
from .store_objects import versioned


class StoreWatch:
    """``Store.watch``: the events after a resourceVersion, as a watcher with a filter sees them."""

    def _events_after(self, cursor):
        found = []
        for event in reversed(self._history):
            if event.rv <= cursor:
                break
            found.append(event)
        return found[::-1]

    def watch(self, rtype, obj_filter, resource_version=None, send_initial=False,
              timeout=1800.0, stopped=lambda: False):
        """Yield (type, object) for ``rtype`` objects matching ``obj_filter``.

        Without a resourceVersion (or "0"), or with ``send_initial``, the current objects
        come first as ADDED; ``send_initial`` then adds the ``k8s.io/initial-events-end``
        BOOKMARK. With a resourceVersion, events after it are replayed (410 ERROR if that
        part of the history is gone). Ends after ``timeout`` seconds of wall time, when
        ``stopped()`` or when the store is closed.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            cursor, initial, expired = self._rv, [], False
            if send_initial or resource_version in (None, "", "0"):
                initial = self._matching(rtype.store_key, obj_filter)
            else:
                cursor = int(resource_version)
                expired = bool(self._history) and cursor < self._history[0].rv - 1
        if expired:
            yield "ERROR", errors.gone(f"too old resource version: {cursor}").status()
            return
        for obj in initial:
            yield "ADDED", versioned(rtype, obj)
        if send_initial:
            yield "BOOKMARK", {"kind": rtype.kind, "apiVersion": rtype.api_version,
                               "metadata": {"resourceVersion": str(cursor), "annotations":
                                            {"k8s.io/initial-events-end": "true"}}}
        while not stopped() and not self.closed:
            with self._cond:
                events = self._events_after(cursor)
                if not events:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(min(remaining, 0.5))
                    continue
            cursor = events[-1].rv
            for event in events:
                seen = _seen_as(event, rtype.store_key, obj_filter)
                if seen:
                    yield seen, versioned(rtype, event.obj)


def _seen_as(event, key, obj_filter):
    """How a watcher with ``obj_filter`` sees ``event`` (None: not at all)."""
    if event.key != key:
        return None
    now = obj_filter.matches(event.obj)
    before = event.old is not None and obj_filter.matches(event.old)
    if event.type == "MODIFIED":
        return {(True, True): "MODIFIED", (False, True): "ADDED",
                (True, False): "DELETED"}.get((before, now))
    return event.type if now else None
