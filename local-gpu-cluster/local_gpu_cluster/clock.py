"""Injectable clocks: ``RealClock`` (wall time, timer threads) and ``FakeClock`` (test time).

Both offer ``now()`` (an aware UTC datetime), ``time()`` (seconds), ``sleep(s)``,
``call_later(delay, fn)`` returning a handle with ``cancel()``, and ``close()`` (cancels
pending timers). A FakeClock only moves when ``advance(seconds)`` (or ``sleep``) is called;
due timers then run, in due order, on the calling thread, with ``now()`` set to their due
time.
"""

import datetime
import heapq
import itertools
import threading
import time as _time

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def rfc3339(moment):
    """Kubernetes timestamp format (second precision, ``Z``)."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Timer:
    def __init__(self, due, fn):
        self.due, self.fn, self.cancelled = due, fn, False

    def cancel(self):
        self.cancelled = True


class RealClock:
    """Wall-clock time; timers run on daemon threads."""

    def __init__(self):
        self._timers = set()
        self._lock = threading.Lock()

    def now(self):
        return datetime.datetime.now(datetime.timezone.utc)

    def time(self):
        return _time.time()

    def sleep(self, seconds):
        _time.sleep(seconds)

    def call_later(self, delay, fn):
        timer = threading.Timer(max(delay, 0), self._run, args=(fn,))
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()
        return timer

    def _run(self, fn):
        with self._lock:
            self._timers.discard(threading.current_thread())
        fn()

    def close(self):
        with self._lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()


class FakeClock:
    """Test time that moves only when told to; ``advance`` fires due timers."""

    def __init__(self, start=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)):
        self._seconds = (start - EPOCH).total_seconds()
        self._timers = []
        self._counter = itertools.count()
        self._lock = threading.RLock()

    def now(self):
        return EPOCH + datetime.timedelta(seconds=self.time())

    def time(self):
        with self._lock:
            return self._seconds

    def sleep(self, seconds):
        self.advance(seconds)

    def call_later(self, delay, fn):
        with self._lock:
            timer = _Timer(self._seconds + max(delay, 0), fn)
            heapq.heappush(self._timers, (timer.due, next(self._counter), timer))
        return timer

    def pending(self):
        """Number of timers not yet fired or cancelled."""
        with self._lock:
            return sum(1 for entry in self._timers if not entry[2].cancelled)

    def advance(self, seconds=0):
        """Move time forward by ``seconds``, running every timer that falls due."""
        with self._lock:
            target = self._seconds + seconds
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > target:
                    self._seconds = target
                    return
                due, dummy, timer = heapq.heappop(self._timers)
                self._seconds = max(self._seconds, due)
            if not timer.cancelled:
                timer.fn()

    def close(self):
        with self._lock:
            for dummy, dummy2, timer in self._timers:
                timer.cancel()
            self._timers = []
