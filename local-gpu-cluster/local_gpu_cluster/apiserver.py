"""A fake Kubernetes API server on loopback, for tests that drive real clients.

``FakeApiServer`` serves discovery, OpenAPI v3, CRUD/patch/watch of the kinds in
``kinds.py`` plus CRDs, over plain HTTP on 127.0.0.1, backed by the in-memory ``Store``,
with pluggable simulated controllers (``controllers.py``). See README.md in this folder.

Manual use::

    python -m local_gpu_cluster.apiserver --kubeconfig /tmp/kc [--port 0] [--git-version v1.34.1]
"""

import argparse
import http.server
import os
import re
import signal
import socket
import threading
import traceback

import yaml

from .clock import RealClock
from .controllers import LOG, default_controllers
from .crds import DEFAULT_CRD_DIR, load_crds
from .discovery import parse_git_version
from .handler import ApiHandler
from .kinds import Registry
from .store import Store

DEFAULT_CONTROLLERS = object()
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, fake):
        self.fake = fake
        super().__init__(address, ApiHandler)


class FakeApiServer:
    """The fake API server. Use as a context manager or call ``start()``/``stop()``.

    ``crd_dirs``: directories whose CRD YAML files are registered at construction (default:
    ``<repo>/../shared/upstream``; ``[]`` for none). ``clock``: a FakeClock or RealClock
    (default RealClock). ``controllers``: list of controllers (default: the default set;
    ``[]`` for none). ``require_namespaces``: reject creates in a missing namespace (404),
    as a real server does; off by default.
    """

    def __init__(self, crd_dirs=None, clock=None, git_version="v1.34.1",
                 controllers=DEFAULT_CONTROLLERS, require_namespaces=False, port=0):
        self.git_version = git_version
        self._own_clock = clock is None
        self.clock = clock or RealClock()
        self.registry = Registry(minor_version=lambda: parse_git_version(self.git_version)[1])
        self.store = Store(self.registry, self.clock, require_namespaces)
        self.request_log = []
        self.controller_errors = []
        self.server_errors = []
        self.stopping = False
        self.kubeconfig = None
        self._port = port
        self._lock = threading.Lock()
        self._controllers = []
        self._connections = set()
        self._pod_logs = {}
        self._faults = []
        self._httpd = self._thread = None
        self.store.add_listener(self._on_event)
        self._seed([DEFAULT_CRD_DIR] if crd_dirs is None else list(crd_dirs))
        for controller in (default_controllers() if controllers is DEFAULT_CONTROLLERS
                           else controllers):
            self.add_controller(controller)

    def _seed(self, crd_dirs):
        for name in SYSTEM_NAMESPACES:
            self.store.create({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name}})
        for crd in load_crds(crd_dirs):
            self.store.create(crd)

    # ------------------------------------------------------------ properties

    @property
    def git_version(self):
        return self._git_version

    @git_version.setter
    def git_version(self, value):
        parse_git_version(value)
        self._git_version = value

    @property
    def port(self):
        return self._httpd.server_address[1] if self._httpd else None

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def url(self):
        return f"http://{self.address}"

    # ------------------------------------------------------------ life cycle

    def start(self):
        self._httpd = _HttpServer(("127.0.0.1", self._port), self)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.1}, daemon=True,
                                        name=f"fake-apiserver-{self.port}")
        self._thread.start()
        return self

    def stop(self):
        """Stop serving: end watches, close connections, cancel our clock's timers."""
        self.stopping = True
        self.store.close()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            with self._lock:
                connections = list(self._connections)
            for connection in connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._thread.join(timeout=5)
        if self._own_clock:
            self.clock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def track_connection(self, connection, is_open):
        with self._lock:
            if is_open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def write_kubeconfig(self, path, context="fake", namespace="default"):
        """Write a kubeconfig (mode 0600) pointing at this server; returns ``path``."""
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {"token": "fake-token"}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context,
                                                       "namespace": namespace}}],
            "current-context": context,
        }
        descriptor = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle, sort_keys=False)
        os.chmod(path, 0o600)
        return path

    # ------------------------------------------------------------ request log

    def inject(self, method, path, *faults):
        """Answer the next requests matching ``method`` (or "*") and ``path`` (a regular expression, searched in
        the URL path) with ``faults``, one each, in order; then serve normally again. A fault is a dict:
        ``{"status": 503, "retry_after": 1}`` (a Status with that code, and a Retry-After header if given),
        ``{"reset": True}`` (the connection closed with a TCP reset before any answer) or ``{"delay": 2.0}``
        (the answer held back that many seconds, then served). Every faulted request is logged with its fault."""
        with self._lock:
            self._faults.append({"method": method, "path": re.compile(path), "faults": list(faults)})

    def take_fault(self, method, path):
        """The next fault for this request, or None (called by the handler for every request)."""
        with self._lock:
            for rule in self._faults:
                if rule["faults"] and rule["method"] in ("*", method) and rule["path"].search(path):
                    fault = rule["faults"].pop(0)
                    self.request_log.append({"method": method, "path": path, "fault": fault})
                    return fault
        return None

    def log_request(self, entry):
        with self._lock:
            self.request_log.append(entry)

    def clear_log(self):
        with self._lock:
            self.request_log.clear()

    def writes(self):
        """Logged requests that changed (or tried to change) something; server-side dry-runs excluded."""
        with self._lock:
            return [r for r in self.request_log if r["method"] in ("POST", "PUT", "PATCH", "DELETE")
                    and "All" not in str(r["query"].get("dryRun", ""))]

    # ------------------------------------------------------------ controllers and logs

    def add_controller(self, controller):
        controller.attach(self)
        self._controllers.append(controller)
        return controller

    def remove_controller(self, controller):
        self._controllers.remove(controller)

    @property
    def controllers(self):
        return list(self._controllers)

    def _on_event(self, event):
        for controller in list(self._controllers):
            if controller.wants(event):
                try:
                    controller.handle(event)
                except Exception:  # noqa: BLE001 - recorded, the fixture fails the test
                    self.controller_errors.append(traceback.format_exc())

    def set_pod_log(self, namespace, name, text):
        """The text ``GET .../pods/<name>/log`` returns for this pod."""
        self._pod_logs[(namespace, name)] = text

    def pod_log(self, pod):
        meta = pod["metadata"]
        fallback = (meta.get("annotations") or {}).get(LOG, "")
        return self._pod_logs.get((meta.get("namespace"), meta["name"]), fallback)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Serve the fake Kubernetes API server.")
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig file to write")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--git-version", default="v1.34.1")
    parser.add_argument("--crd-dir", action="append", default=None,
                        help="CRD directory (repeatable; default ../shared/upstream)")
    args = parser.parse_args(argv)
    server = FakeApiServer(crd_dirs=args.crd_dir, git_version=args.git_version, port=args.port)
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    with server:
        server.write_kubeconfig(args.kubeconfig)
        print(f"fake API server at {server.url}; kubeconfig {args.kubeconfig}; Ctrl-C stops",
              flush=True)
        while not stop.wait(0.5):
            pass


if __name__ == "__main__":
    main()
