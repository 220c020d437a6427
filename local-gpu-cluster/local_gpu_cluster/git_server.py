"""A loopback git server speaking smart HTTP, for the Flux controllers to fetch from.

``python -m local_gpu_cluster.git_server --root DIR --port N`` serves every bare repository
under DIR as ``http://127.0.0.1:N/<name>.git``: each request is handed to ``git http-backend``
(git's own CGI program, with ``GIT_PROJECT_ROOT`` and ``GIT_HTTP_EXPORT_ALL``), so clone, fetch
and push work as against any git host, for git and for go-git (source-controller), which need
the smart protocol. ``/healthz`` answers ``ok``. :func:`init_repo` makes a repository there
that accepts pushes.
"""

import argparse
import os
import subprocess
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import ClusterError


def init_repo(root, name, branch="main"):
    """A bare repository ``<root>/<name>.git`` that accepts pushes over HTTP; returns its path."""
    path = Path(root) / ("%s.git" % name)
    for command in (["git", "init", "--quiet", "--bare", "--initial-branch=" + branch, str(path)],
                    ["git", "-C", str(path), "config", "http.receivepack", "true"]):
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ClusterError("%s failed: %s" % (" ".join(command), proc.stderr.strip()))
    return path


class _Handler(BaseHTTPRequestHandler):
    """One request, one ``git http-backend`` run; the connection closes after each answer (HTTP/1.0)."""

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # git sends large pushes chunked
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/healthz":
            self._answer(200, b"ok", [("Content-Type", "text/plain")])
            return
        body = self._body()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": self.server.root,
               "GIT_HTTP_EXPORT_ALL": "1", "GIT_CONFIG_NOSYSTEM": "1", "HOME": self.server.root,
               "REQUEST_METHOD": self.command, "PATH_INFO": urllib.parse.unquote(url.path), "QUERY_STRING": url.query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": self.client_address[0], "SERVER_PROTOCOL": "HTTP/1.0"}
        for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"), ("Git-Protocol", "GIT_PROTOCOL")):
            if self.headers.get(header):
                env[variable] = self.headers[header]
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, separator, payload = proc.stdout.partition(b"\r\n\r\n")
        if not separator:
            self._answer(500, b"git http-backend failed: " + proc.stderr, [("Content-Type", "text/plain")])
            return
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, value = (line.split(":", 1) + [""])[:2]
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if proc.stderr:
            sys.stderr.write(proc.stderr.decode(errors="replace"))
        self._answer(status, payload, headers)

    do_GET = do_HEAD = do_POST = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, root):
        super().__init__(address, _Handler)
        self.root = root


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m local_gpu_cluster.git_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="the directory of the bare repositories (<name>.git)")
    parser.add_argument("--port", type=int, required=True, help="the port on 127.0.0.1")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    server = _Server(("127.0.0.1", args.port), str(root))
    print("serving the git repositories in %s on http://127.0.0.1:%d" % (root, args.port), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
