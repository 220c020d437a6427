"""Run the node agents and the operators' real processes against a real API server (the local control plane).

    python -m local_gpu_cluster.live --kubeconfig build/cluster/kubeconfig --logs-dir build/cluster/pod-logs \\
        --health-port 8089

runs the controllers of ``live_controllers.live_controllers()`` (what happens on the nodes), the operators' own
processes for their pods (``--operator-builds``, ``operator_processes.py``) and the pod network the API server reaches
them through (``--pod-network``, ``pod_network.py``) until SIGTERM or SIGINT. It serves
``GET /healthz`` on 127.0.0.1:PORT: 200 ``ok`` once every watch has done its initial list and the controllers
have handled what it found, 503 before. Each write the controllers make is one line on stdout; a controller that
raises is logged with its traceback on stderr and the loop goes on.

Pieces, usable from tests:

* ``LiveRunner(store, controllers)``: attaches the controllers (``controller.server`` is the runner, with
  ``store`` and ``clock``), starts one ``Watcher`` per (group, kind) any controller ``watches`` and one
  dispatcher thread that calls ``controller.handle(event)`` for the controllers whose ``wants(event)`` is true,
  one event at a time, so controllers need not be thread-safe. ``synced``, ``settle()``, ``errors``, ``stop()``.
* ``Watcher``: lists the kind (preferred version), then watches from the list's resourceVersion with bookmarks,
  resuming from the last resourceVersion seen when a watch ends (after a failed request: 1 s, doubling up to 10 s),
  and listing afresh (emitting what changed meanwhile) on 410 Gone. A kind that is not served yet (a CRD a chart
  installs later) counts as listed, empty, and is looked for again every ``poll`` seconds. Events are
  ``store.Event``s, shaped as the fake's: ``type``, ``key`` (group, plural), ``obj``, ``old`` (the previous state
  seen), ``rv``; ``group``, ``kind``, ``name``, ``namespace``.
* ``LiveClock``: ``RealClock`` whose timers run on the dispatcher thread.

``--logs-dir`` names the directory where the node agents write each smoke pod's logs (``node_agent_smoke.py``), which
KWOK serves through a ``Logs`` object per pod.
"""

import argparse
import datetime
import http.server
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, GoneError, NotFoundError
from kubernetes.watch.watch import iter_resp_lines

from .clock import RealClock
from .live_controllers import live_controllers
from .live_store import LiveStore, NotServed
from .operator_processes import OperatorProcesses, ca_data_of, parse_builds
from .pod_network import PodNetwork
from .store import Event


RETRY_DELAY = 2.0  # seconds before a controller's write the server refused for now is tried again
RETRIES = 60


def transient(exc):
    """True for a refusal the server may not repeat: 5xx (a webhook not reachable) or 429."""
    status = getattr(exc, "status", None) if isinstance(exc, (ApiException, DynamicApiError)) else None
    return status == 429 or (status or 0) >= 500


def log_line(text, stream=None):
    """One timestamped line (stdout unless ``stream``), flushed at once (it goes to a log file)."""
    moment = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    print("%s %s" % (moment[:-4] + "Z", text), file=stream or sys.stdout, flush=True)


class LiveClock(RealClock):
    """``RealClock`` whose ``call_later`` callbacks are handed to ``submit`` (the runner's dispatcher)."""

    def __init__(self, submit):
        super().__init__()
        self._submit = submit

    def call_later(self, delay, fn):
        return super().call_later(delay, lambda: self._submit(fn))


class Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


def _key(obj):
    return (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])


def _rv(obj):
    value = (obj.get("metadata") or {}).get("resourceVersion") or ""
    return int(value) if value.isdigit() else 0


class Watcher:
    """List-then-watch of one (group, kind), turning what the server sends into fake-shaped events."""

    def __init__(self, runner, group, kind, poll=2.0, timeout_seconds=300):
        self.runner, self.group, self.kind = runner, group, kind
        self.poll, self.timeout_seconds = poll, timeout_seconds
        self.synced = False
        self.rtype = None
        self.cache = {}  # (namespace, name) -> the object as last seen
        self._response = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="watch-%s/%s" % (group, kind))

    @property
    def name(self):
        return "%s/%s" % (self.group or "core", self.kind)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stopped.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # noqa: BLE001 - it may be closed already
                pass
        self._thread.join(timeout=5)

    def _emit(self, event_type, obj, old):
        obj.setdefault("apiVersion", self.rtype.api_version)
        obj.setdefault("kind", self.kind)
        self.runner.submit_event(Event(event_type, self.rtype.store_key, obj, old, _rv(obj)))

    def _mark_synced(self):
        if not self.synced:
            self.runner.submit(lambda: setattr(self, "synced", True))

    def _served(self):
        """Look the kind up (its preferred version); False when the server does not serve it."""
        try:
            self.rtype = self.runner.store.preferred(self.group, self.kind)
            return True
        except NotServed:
            return False

    def _gone(self):
        """The kind is not served any more (its CRD went): what was seen of it is DELETED."""
        for old in self.cache.values():
            self._emit("DELETED", old, old)
        self.cache.clear()
        self.rtype = None

    def relist(self):
        """List afresh and emit what changed since the objects last seen; returns the list's resourceVersion."""
        items, resource_version = self.runner.store.list_raw(self.rtype)
        fresh = {_key(obj): obj for obj in items}
        for key in [k for k in self.cache if k not in fresh]:
            old = self.cache.pop(key)
            self._emit("DELETED", old, old)
        for key, obj in fresh.items():
            old = self.cache.get(key)
            self.cache[key] = obj
            if old is None:
                self._emit("ADDED", obj, None)
            elif _rv(old) != _rv(obj):
                self._emit("MODIFIED", obj, old)
        return resource_version

    def _watch(self, resource_version):
        """Follow one watch request; returns the last resourceVersion seen (to resume from)."""
        try:
            self._response = self.runner.store.open_watch(self.rtype, resource_version, self.timeout_seconds)
        except GoneError:
            raise Gone() from None
        except NotFoundError:
            raise NotServed(self.name) from None
        try:
            for line in iter_resp_lines(self._response):
                if self._stopped.is_set():
                    break
                event = json.loads(line)
                event_type, obj = event.get("type"), event.get("object") or {}
                if event_type == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise RuntimeError("watch error: %s" % obj.get("message"))
                resource_version = (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                if event_type == "BOOKMARK":
                    continue
                key = _key(obj)
                old = self.cache.pop(key, None) if event_type == "DELETED" else self.cache.get(key)
                if event_type != "DELETED":
                    self.cache[key] = obj
                self._emit(event_type, obj, old)
        finally:
            self._response.release_conn()
            self._response = None
        return resource_version

    def _run(self):
        resource_version, waiting_logged, pause = None, False, 1.0
        while not self._stopped.is_set():
            try:
                if resource_version is None:
                    if self.rtype is None and not self._served():
                        if not waiting_logged:
                            self.runner.log("%s is not served yet; looking again every %gs" % (self.name, self.poll))
                            waiting_logged = True
                        self._mark_synced()
                        self._stopped.wait(self.poll)
                        continue
                    resource_version = self.relist()
                    if waiting_logged or not self.synced:
                        self.runner.log("watching %s (%s, %d objects)" % (self.name, self.rtype.api_version,
                                                                          len(self.cache)))
                    waiting_logged = False
                    self._mark_synced()
                resource_version = self._watch(resource_version)
                pause = 1.0
            except Gone:
                self.runner.log("%s: resourceVersion %s expired; listing again" % (self.name, resource_version))
                resource_version = None
            except NotServed:
                # The kind went away (its CRD was deleted). Discovery may still name it for a while, so the look-up
                # just above would answer "served" at once and the next list fail again: without this pause the
                # loop spun on a 404 with no wait, burning a core between this process and the API server for as
                # long as the cluster ran after an uninstall.
                self._gone()
                resource_version = None
                self._stopped.wait(self.poll)
            except Exception as exc:  # noqa: BLE001 - a broken connection: resume after a pause
                if self._stopped.is_set():
                    break
                first = (str(exc).splitlines() or [""])[0]
                self.runner.log("%s: watch failed (%s: %s); again in %gs" % (self.name, type(exc).__name__, first,
                                                                             pause), error=True)
                self._stopped.wait(pause)
                pause = min(pause * 2, 10.0)  # the server may be down for a while: do not flood the log


class LiveRunner:
    """Controllers + watches + one dispatcher thread (see the module docstring)."""

    def __init__(self, store, controllers, log=log_line, poll=2.0, watch_timeout=300):
        self.store = store
        self._log = log
        self.clock = LiveClock(self.submit)
        self.controllers = list(controllers)
        self.errors = []
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="live-dispatch")
        for controller in self.controllers:
            controller.attach(self)
        kinds = sorted({pair for controller in self.controllers for pair in controller.watches})
        self.watchers = [Watcher(self, group, kind, poll, watch_timeout) for group, kind in kinds]

    def log(self, text, error=False):
        self._log(text, sys.stderr) if error else self._log(text)

    def start(self):
        self._thread.start()
        for watcher in self.watchers:
            watcher.start()
        return self

    def stop(self):
        for watcher in self.watchers:
            watcher._stopped.set()
        for watcher in self.watchers:
            watcher.stop()
        self.clock.close()
        self._queue.put(None)
        self._thread.join(timeout=10)

    @property
    def synced(self):
        """Every watch has listed its kind and the controllers have handled what it found."""
        return all(watcher.synced for watcher in self.watchers)

    def unsynced(self):
        return [watcher.name for watcher in self.watchers if not watcher.synced]

    def submit(self, fn):
        """Run ``fn`` on the dispatcher thread, after what was submitted before."""
        self._queue.put(fn)

    def submit_event(self, event):
        self.submit(lambda: self.dispatch(event))

    def dispatch(self, event, controllers=None, attempt=0):
        """Hand ``event`` to each controller that wants it; an exception is logged and the next one goes on. A write
        the server refused for now (5xx, 429: an admission webhook whose process is restarting) is tried again, on
        the object as it is then, as a kubelet or a controller requeues it."""
        for controller in controllers or self.controllers:
            if controller.wants(event):
                failed = self._guarded(lambda: controller.handle(event), "%s on %s %s %s" % (
                    type(controller).__name__, event.type, event.kind, event.name))
                if transient(failed) and attempt < RETRIES:
                    self.log("%s: %s %s tried again in %.0f s"
                             % (type(controller).__name__, event.kind, event.name, RETRY_DELAY))
                    self.clock.call_later(RETRY_DELAY, lambda c=controller: self._again(c, event, attempt + 1))

    def _again(self, controller, event, attempt):
        if event.type != "DELETED":
            meta = event.obj["metadata"]
            current = self.store.get(event.obj["apiVersion"], event.obj["kind"], meta["name"], meta.get("namespace"))
            if current is None:
                return  # gone since: its DELETED event comes from the watch
            event = Event("MODIFIED", event.key, current, event.obj, _rv(current))
        self.dispatch(event, [controller], attempt)

    def _guarded(self, fn, what):
        """Run ``fn``; an exception is logged (and returned), the loop goes on."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - logged, the loop goes on
            text = traceback.format_exc()
            self.errors.append(text)
            self.log("%s failed:\n%s" % (what, text.rstrip()), error=True)
            return exc
        return None

    def _loop(self):
        while True:
            fn = self._queue.get()
            try:
                if fn is None:
                    return
                self._guarded(fn, getattr(fn, "__qualname__", "a timer"))
            finally:
                self._queue.task_done()

    def settle(self, timeout=10.0, quiet=0.3):
        """Wait until nothing has been queued for ``quiet`` seconds (for tests); True if it got there."""
        deadline = time.monotonic() + timeout
        calm_since = None
        while time.monotonic() < deadline:
            if self._queue.unfinished_tasks == 0:
                calm_since = calm_since or time.monotonic()
                if time.monotonic() - calm_since >= quiet:
                    return True
            else:
                calm_since = None
            time.sleep(0.02)
        return False


# ---------------------------------------------------------------- the command line

class _Health(http.server.BaseHTTPRequestHandler):
    """``GET /healthz``: 200 ok once the runner is synced, 503 before."""

    def do_GET(self):  # noqa: N802 - the http.server name
        if self.path.split("?")[0] != "/healthz":
            self._answer(404, "not found\n")
            return
        runner = self.server.runner
        if runner is not None and runner.synced:
            self._answer(200, "ok")
        else:
            waiting = runner.unsynced() if runner is not None else ["the API server"]
            self._answer(503, "waiting for: %s\n" % ", ".join(waiting))

    def _answer(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve_health(port):
    """The /healthz server on 127.0.0.1:``port`` (0: a free port), serving from a daemon thread; set its
    ``runner`` when there is one."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Health)
    server.daemon_threads = True
    server.runner = None
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True,
                     name="live-health").start()
    return server


def _connect(kubeconfig, stop):
    """A LiveStore, once the API server answers (tried again every 2 s until ``stop`` is set)."""
    while not stop.is_set():
        try:
            return LiveStore(kubeconfig, log=log_line)
        except Exception as exc:  # noqa: BLE001 - the server may still be starting
            log_line("the API server does not answer yet (%s); again in 2s" % str(exc).splitlines()[0],
                     sys.stderr)
            stop.wait(2.0)
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m local_gpu_cluster.live", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--kubeconfig", required=True, help="admin kubeconfig of the cluster")
    parser.add_argument("--logs-dir", help="where the node agents write the smoke pods' logs (KWOK serves them)")
    parser.add_argument("--health-port", type=int, default=0, help="port of GET /healthz on 127.0.0.1")
    parser.add_argument("--mig-delay", type=float, default=1.0,
                        help="seconds the MIG manager takes to apply a layout")
    parser.add_argument("--operator-builds", default="",
                        help="name=<build directory>,...: the operators whose real process runs for their pod "
                             "(local_gpu_cluster/operator_processes.py)")
    parser.add_argument("--operator-dir", default="", help="where each operator process keeps its kubeconfig and log")
    parser.add_argument("--pod-network", default="",
                        help="the Unix socket the API server's egress selector connects pods through "
                             "(local_gpu_cluster/pod_network.py)")
    parser.add_argument("--pod-ranges", default="10.0.0.0/24,10.244.0.0/16",
                        help="the pod IPs (comma-separated CIDRs): one nothing serves is refused")
    args = parser.parse_args(argv)
    try:
        builds = parse_builds(args.operator_builds)
    except ValueError as exc:
        parser.error(str(exc))
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    health = serve_health(args.health_port)
    network = None
    if args.pod_network:
        network = PodNetwork(args.pod_ranges.split(",")).serve(args.pod_network)
        log_line("pod network (the API server's egress): %s" % args.pod_network)
    log_line("node agents and operators: healthz on http://127.0.0.1:%d/healthz, kubeconfig %s"
             % (health.server_address[1], args.kubeconfig))
    if args.logs_dir:
        log_line("smoke pods' logs (written here, served by KWOK): %s%s"
                 % (args.logs_dir, "" if os.path.isdir(args.logs_dir) else " (MISSING)"))
    store = _connect(args.kubeconfig, stop)
    runner = processes = None
    if store is not None:
        controllers = live_controllers(mig_delay=args.mig_delay, logs_dir=args.logs_dir)
        if builds:
            server, ca_data = ca_data_of(args.kubeconfig)
            processes = OperatorProcesses(builds, server, ca_data, args.operator_dir or os.path.join(
                os.path.dirname(os.path.abspath(args.kubeconfig)), "operators"), network=network)
            controllers.append(processes)
            log_line("real operators: %s" % ", ".join("%s (%s)" % item for item in sorted(builds.items())))
        runner = LiveRunner(store, controllers).start()
        health.runner = runner
        log_line("controllers: %s; watches: %s" % (", ".join(type(c).__name__ for c in runner.controllers),
                                                   ", ".join(w.name for w in runner.watchers)))
    while not stop.wait(0.5):
        pass
    log_line("stopping")
    if runner is not None:
        runner.stop()
    if processes is not None:
        processes.stop_all()
    health.shutdown()
    if network is not None:
        network.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
