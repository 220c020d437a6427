"""A real HTTP Helm chart repository on loopback, for tests that run helm against it.

:class:`ChartRepoServer` serves ``index.yaml`` and chart archives from
``http://127.0.0.1:<free port>``, so ``helm pull/show/template/install --repo URL``
and ``helm repo add`` work against it exactly as against a public repository.
The index is generated in Python from the ``Chart.yaml`` inside each archive
(``apiVersion: v1``; each entry carries the chart metadata plus ``digest`` =
sha256 of the archive, relative ``urls: [charts/<file>]`` and ``created``).

Test switches:

* ``tamper(name, version)`` serves different (but valid) archive bytes than the
  index ``digest`` claims, for sha256-pin tests; ``untamper`` undoes it.
* ``fail_all = True`` answers every request with ``fail_status`` (503), so a test
  can prove a no-op never reached the repository (helm then fails loudly).
* ``requests`` / ``count(path_prefix)`` / ``clear()`` record what was asked for.

This module also holds :class:`LoopbackServer`, the small threaded HTTP server
base that :mod:`local_gpu_cluster.oci_registry` builds on.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from .charts import chart_metadata, chart_sha256, tampered_archive_bytes

__all__ = ["ChartRepoServer", "LoopbackServer", "Request", "Response", "http_request"]


@dataclass
class Request:
    """One HTTP request as seen by a :class:`LoopbackServer` route."""

    method: str
    path: str  # percent-decoded, without the query string
    query: dict  # name -> last value
    headers: dict  # lower-cased name -> value
    body: bytes = b""


@dataclass
class Response:
    """What a route returns; HEAD requests get the headers and Content-Length only."""

    status: int = 200
    body: bytes = b""
    headers: dict = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    """Hands every request to ``self.server.owner.dispatch``; keep-alive capable."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections end on their own

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin  # noqa: A002
        pass  # tests must not be drowned in access logs

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self):
        url = urllib.parse.urlsplit(self.path)
        request = Request(
            method=self.command,
            path=urllib.parse.unquote(url.path),
            query={k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()},
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self._read_body(),
        )
        response = self.server.owner.dispatch(request)
        self.send_response(response.status)
        headers = {"Content-Length": str(len(response.body)), **response.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and response.body:
            self.wfile.write(response.body)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _QuietThreadingHTTPServer(ThreadingHTTPServer):
    """A client hanging up mid-connection (helm exits with keep-alive sockets open) is normal."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class LoopbackServer:
    """Threaded HTTP server on 127.0.0.1:<free port> with a request log and a failure switch.

    Subclasses implement :meth:`route`.  Use as a context manager or call
    :meth:`start` / :meth:`stop`.  ``fail_all = True`` makes every request answer
    ``fail_status`` (requests are still logged).
    """

    fail_status = 503

    def __init__(self, port=0):
        self.bind_port = port
        self.fail_all = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._log: list[tuple[str, str]] = []
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self):
        """Bind a free loopback port and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        httpd = _QuietThreadingHTTPServer(("127.0.0.1", self.bind_port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop serving and release the port (idempotent)."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._httpd.server_address[1]

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    # -- request log ---------------------------------------------------------------------
    @property
    def requests(self) -> list[tuple[str, str]]:
        """A copy of the (method, path) pairs received so far, oldest first."""
        with self._lock:
            return list(self._log)

    def count(self, path_prefix: str | None = None, method: str | None = None) -> int:
        """How many requests had a path starting with *path_prefix* (and this *method*)."""
        return sum(1 for m, p in self.requests
                   if (path_prefix is None or p.startswith(path_prefix)) and (method is None or m == method))

    def clear(self):
        """Forget the recorded requests."""
        with self._lock:
            self._log.clear()

    # -- dispatch ------------------------------------------------------------------------
    def dispatch(self, request: Request) -> Response:
        with self._lock:
            self._log.append((request.method, request.path))
        if self.fail_all:
            return self.fail_response()
        try:
            return self.route(request)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # a bug in the fake -> 500, not a hang
            return Response(500, f"fake server error: {exc!r}\n".encode(), {"Content-Type": "text/plain"})

    def fail_response(self) -> Response:
        """The answer to every request while ``fail_all`` is set."""
        return Response(self.fail_status, b"fail_all is set on this fake server\n", {"Content-Type": "text/plain"})

    def route(self, request: Request) -> Response:
        raise NotImplementedError


_NOT_FOUND = Response(404, b"not found\n", {"Content-Type": "text/plain"})


def _version_key(version: str):
    """Sort key approximating SemVer precedence (newest first when reversed)."""
    core, dummy, pre = version.split("+", 1)[0].partition("-")
    nums = tuple(int(x) if x.isdigit() else 0 for x in core.split("."))
    return nums, pre == "", tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".") if pre)


def _rfc3339(when: _dt.datetime) -> str:
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ChartRepoServer(LoopbackServer):
    """An HTTP Helm repository (``index.yaml`` + ``charts/<file>.tgz``) on loopback."""

    def __init__(self, charts=(), port=0):
        super().__init__(port)
        self._charts: dict[tuple[str, str], dict] = {}  # (name, version) -> entry state
        self._index_bytes = b""
        for tgz in charts:
            self.add_chart(tgz)
        self._rebuild_index()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the value for ``--repo`` / ``helm repo add``)."""
        return f"http://{self.host}"

    def chart_url(self, name: str, version: str) -> str:
        """Absolute URL of a chart archive."""
        return f"{self.url}/charts/{self._entry(name, version)['file']}"

    # -- content -------------------------------------------------------------------------
    def add_chart(self, tgz) -> dict:
        """Serve the archive *tgz* (replacing the same name/version) and update the index.

        Returns the index entry for it.
        """
        path = Path(tgz)
        meta = chart_metadata(path)
        name, version = meta["name"], str(meta["version"])
        file_name = f"{name}-{version}.tgz"
        data = path.read_bytes()
        with self._lock:
            self._charts[(name, version)] = {
                "meta": meta,
                "file": file_name,
                "data": data,
                "digest": chart_sha256(path),
                "created": _rfc3339(_dt.datetime.now(_dt.timezone.utc)),
                "served": data,
            }
            self._rebuild_index()
            return self.index()["entries"][name][self._position(name, version)]

    def remove_chart(self, name: str, version: str):
        """Stop serving a chart version and drop it from the index."""
        with self._lock:
            del self._charts[(name, version)]
            self._rebuild_index()

    def tamper(self, name: str, version: str, data: bytes | None = None):
        """Serve *data* (default: a valid chart with a changed values.yaml) for this chart.

        The index keeps the digest of the genuine archive, so the served bytes no
        longer match it; a ``chart_sha256`` pin must reject them.
        """
        with self._lock:
            entry = self._entry(name, version)
            entry["served"] = data if data is not None else tampered_archive_bytes(entry["data"])

    def untamper(self, name: str, version: str):
        """Serve the genuine archive again."""
        with self._lock:
            entry = self._entry(name, version)
            entry["served"] = entry["data"]

    def digest(self, name: str, version: str) -> str:
        """The sha256 the index advertises for this chart (that of the genuine archive)."""
        return self._entry(name, version)["digest"]

    def index(self) -> dict:
        """The current ``index.yaml`` as a dict."""
        with self._lock:
            return yaml.safe_load(self._index_bytes)

    # -- internals -----------------------------------------------------------------------
    def _entry(self, name: str, version: str) -> dict:
        try:
            return self._charts[(name, version)]
        except KeyError:
            raise KeyError(f"chart {name} {version} is not in this repository") from None

    def _position(self, name: str, version: str) -> int:
        versions = sorted((v for n, v in self._charts if n == name), key=_version_key, reverse=True)
        return versions.index(version)

    def _rebuild_index(self):
        entries: dict[str, list] = {}
        for (name, version) in sorted(self._charts, key=lambda nv: (nv[0], _version_key(nv[1])), reverse=True):
            state = self._charts[(name, version)]
            entry = dict(state["meta"])
            entry.update(version=version, digest=state["digest"], urls=[f"charts/{state['file']}"],
                         created=state["created"])
            entries.setdefault(name, []).append(entry)
        index = {"apiVersion": "v1", "entries": dict(sorted(entries.items())),
                 "generated": _rfc3339(_dt.datetime.now(_dt.timezone.utc))}
        self._index_bytes = yaml.safe_dump(index, sort_keys=False).encode()

    def route(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"method not allowed\n", {"Allow": "GET, HEAD"})
        path = request.path
        with self._lock:
            if path in ("/index.yaml", "/index.yml"):
                return Response(200, self._index_bytes, {"Content-Type": "application/x-yaml"})
            match = re.fullmatch(r"/charts/([^/]+)", path)
            if match:
                for state in self._charts.values():
                    if state["file"] == match.group(1):
                        return Response(200, state["served"], {"Content-Type": "application/gzip"})
        return _NOT_FOUND


def http_request(method: str, url: str, body: bytes | None = None, headers: dict | None = None,
                 timeout: float = 10) -> tuple[int, dict, bytes]:
    """Plain HTTP client for tests of these fakes.

    Returns ``(status, headers with lower-case names, body)``; 4xx/5xx are returned, not raised.
    """
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def main(argv=None):
    """``python -m local_gpu_cluster.chart_repo --serve DIR [--port P]``: serve every chart archive in DIR
    until stopped (the local cluster's chart repository, ``make cluster-up``)."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--serve", required=True, help="a directory of packaged charts (*.tgz)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    charts = sorted(Path(args.serve).glob("*.tgz"))
    if not charts:
        parser.error("no chart archive (*.tgz) in %s" % args.serve)
    server = ChartRepoServer(charts, port=args.port).start()
    print("serving %d charts at %s" % (len(charts), server.url), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *unused: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()


if __name__ == "__main__":
    main()
