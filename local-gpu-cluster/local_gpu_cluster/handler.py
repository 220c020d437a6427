"""HTTP request handling of the fake API server: routing, decoding and encoding.

Every response is JSON (Kubernetes clients that prefer protobuf or Table accept JSON).
Request bodies may be JSON, YAML (apply), or protobuf for Secrets, ConfigMaps and
DeleteOptions (see ``protobuf.py``).
"""

import http.server
import json
import socket
import struct
import time
import traceback
import urllib.parse

import yaml

from . import discovery, errors, openapi, protobuf
from .handler_common import JSON, PROTOBUF, APPLY, _BODY_TYPES, parse_target
from .handler_verbs import ApiVerbs


class ApiHandler(ApiVerbs, http.server.BaseHTTPRequestHandler):
    """One connection; ``self.server.fake`` is the FakeApiServer."""

    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    def log_message(self, *args):  # quiet: requests go to FakeApiServer.request_log
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without NODELAY, Nagle's algorithm
        # and delayed ACKs add ~40 ms to every request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake.track_connection(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.fake.track_connection(self.connection, False)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_PATCH(self):
        self._handle("PATCH")

    def do_DELETE(self):
        self._handle("DELETE")

    # ------------------------------------------------------------ plumbing

    def _handle(self, method):
        self.fake = self.server.fake
        parsed = urllib.parse.urlsplit(self.path)
        self.url_path = parsed.path
        self.query_lists = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        self.query = {k: v[-1] for k, v in self.query_lists.items()}
        self.content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        self.method = method
        self._body = None
        self._started = False
        try:
            self._raw_body()  # always consume the body: the connection is kept alive
            fault = self.fake.take_fault(method, self.url_path)
            if fault is not None and self._fault(fault):
                return
            self._route()
        except errors.ApiError as error:
            self._send_json(error.code, error.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - report as a 500 Status, keep serving
            self.fake.server_errors.append(traceback.format_exc())
            if self._started:  # too late for a Status: drop the connection
                self.close_connection = True
            else:
                self._send_json(500, errors.ApiError(500, "InternalError", repr(exc)).status())

    def _fault(self, fault):
        """Play an injected fault (FakeApiServer.inject); True when it answered (or dropped) the request."""
        if fault.get("delay"):
            time.sleep(fault["delay"])
            return False
        if fault.get("reset"):
            # SO_LINGER 0: close() sends a TCP reset, as a crashed server or a dropped proxy connection would.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return True
        code = fault["status"]
        reasons = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 502: "BadGateway",
                   503: "ServiceUnavailable", 504: "Timeout"}
        data = json.dumps(errors.ApiError(code, reasons.get(code, "InternalError"),
                                          fault.get("message", "injected fault %d" % code)).status()).encode()
        self._started = True
        self.send_response(code)
        self.send_header("Content-Type", JSON)
        self.send_header("Content-Length", str(len(data)))
        if fault.get("retry_after") is not None:
            self.send_header("Retry-After", str(fault["retry_after"]))
        self.end_headers()
        self.wfile.write(data)
        return True

    def _start(self, code, content_type, length=None):
        self._started = True
        self.fake.log_request({"method": self.method, "path": self.url_path,
                               "query": dict(self.query), "content_type": self.content_type,
                               "code": code})
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _send_json(self, code, body):
        data = json.dumps(body).encode()
        self._start(code, JSON, len(data))
        self.wfile.write(data)

    def _send_text(self, code, text):
        data = text.encode()
        self._start(code, "text/plain", len(data))
        self.wfile.write(data)

    def _raw_body(self):
        if self._body is None:
            if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
                self._body = self._read_chunked()
            else:
                self._body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return self._body

    def _read_chunked(self):
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _decode_body(self):
        raw = self._raw_body()
        if self.content_type not in _BODY_TYPES:
            raise errors.unsupported_media_type(self.content_type)
        if self.content_type == PROTOBUF:
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError as error:
                raise errors.ApiError(415, "UnsupportedMediaType", str(error)) from None
        try:
            return json.loads(raw or b"null")
        except ValueError:
            if self.content_type not in (APPLY, "application/yaml"):
                raise errors.bad_request("the request body is not valid JSON") from None
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError:
            raise errors.bad_request("the request body is not valid YAML") from None

    def _int_query(self, name, default=0):
        value = self.query.get(name) or default
        try:
            return int(value)
        except ValueError:
            raise errors.bad_request(f"{name} must be an integer, not {value!r}") from None

    @property
    def dry_run(self):
        return "All" in self.query_lists.get("dryRun", [])

    # ------------------------------------------------------------ routing

    def _route(self):
        parts = [p for p in self.url_path.split("/") if p]
        head = parts[0] if parts else ""
        registry = self.fake.registry
        if self.url_path == "/version":
            return self._send_json(200, discovery.version_info(self.fake.git_version))
        if head in ("healthz", "livez", "readyz"):
            return self._send_text(200, "ok")
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:])
        if head == "api" and len(parts) <= 2:
            if len(parts) == 1:
                return self._send_json(200, discovery.api_versions(self.fake.address))
            return self._discovery(discovery.api_resource_list(registry, "", parts[1]))
        if head == "apis" and len(parts) <= 3:
            if len(parts) == 1:
                return self._send_json(200, discovery.api_group_list(registry))
            if len(parts) == 2:
                return self._discovery(discovery.api_group(registry, parts[1]))
            return self._discovery(discovery.api_resource_list(registry, parts[1], parts[2]))
        if head == "api":
            return self._resource(parse_target(registry, "", parts[1], parts[2:]))
        if head == "apis":
            return self._resource(parse_target(registry, parts[1], parts[2], parts[3:]))
        raise errors.route_not_found()

    def _discovery(self, document):
        if self.method != "GET":
            raise errors.method_not_allowed(self.method)
        if document is None:
            raise errors.route_not_found()
        self._send_json(200, document)

    def _openapi(self, rest):
        document = None
        if not rest:
            document = openapi.root_document(self.fake.registry)
        elif rest[0] == "api" and len(rest) == 2:
            document = openapi.group_version_document(self.fake.registry, "", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            document = openapi.group_version_document(self.fake.registry, rest[1], rest[2])
        self._discovery(document)

    def _resource(self, target):
        if target.name is None:
            handlers = {"GET": self._list_or_watch, "POST": self._create,
                        "DELETE": self._delete_collection}
        elif target.subresource == "log":
            handlers = {"GET": self._pod_log}
        elif target.subresource == "eviction":
            handlers = {"POST": self._evict}
        elif target.subresource == "scale":
            handlers = {"GET": self._get_scale, "PUT": self._write_scale,
                        "PATCH": self._write_scale}
        else:
            handlers = {"GET": self._get, "PUT": self._replace, "PATCH": self._patch,
                        "DELETE": self._delete}
        if self.method not in handlers:
            raise errors.method_not_allowed(self.method)
        handlers[self.method](target)
