"""HTTP request handling of the fake API server: routing, decoding and encoding.

Every response is JSON (Kubernetes clients that prefer protobuf or Table accept JSON).
Request bodies may be JSON, YAML (apply), or protobuf for Secrets, ConfigMaps and
DeleteOptions (see ``protobuf.py``).
"""

import base64
import http.server
import json
import socket
import struct
import time
import traceback
import urllib.parse

import yaml

from . import discovery, errors, eviction, openapi, protobuf
from .kinds import BUILTIN_GROUPS
from .patches import json_patch, merge_patch, strategic_merge
from .selectors import ObjectFilter

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
APPLY = "application/apply-patch+yaml"
PATCHERS = {"application/merge-patch+json": merge_patch,
            "application/json-patch+json": json_patch,
            "application/strategic-merge-patch+json": strategic_merge}
_BODY_TYPES = {JSON, "", "*/*", "application/yaml", APPLY, PROTOBUF, *PATCHERS}


class Target:
    """What a resource URL points at: type, namespace, name and subresource."""

    def __init__(self, rtype, namespace, name, subresource):
        self.rtype, self.namespace, self.name, self.subresource = (
            rtype, namespace, name, subresource)


def parse_target(registry, group, version, rest):
    """Resolve the path segments after ``/api/v1`` or ``/apis/<g>/<v>``."""
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise errors.route_not_found()
    rtype = registry.by_plural(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if rtype is None or not _scope_matches(rtype, namespace, name) or (
            subresource and subresource not in rtype.subresources):
        raise errors.route_not_found()
    return Target(rtype, namespace, name, subresource)


def _scope_matches(rtype, namespace, name):
    """Cluster-scoped kinds have no namespace; a namespaced object needs one."""
    if namespace:
        return rtype.namespaced
    return not (name and rtype.namespaced)


def _continue_token(obj):
    meta = obj["metadata"]
    key = json.dumps([meta.get("namespace") or "", meta["name"]])
    return base64.urlsafe_b64encode(key.encode()).decode()


def _after_token(items, token):
    try:
        after = tuple(json.loads(base64.urlsafe_b64decode(token.encode())))
    except ValueError:
        raise errors.bad_request("invalid continue token") from None
    return [o for o in items
            if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > after]


def _success(rtype, obj):
    details = {"name": obj["metadata"]["name"], "kind": rtype.plural,
               "uid": obj["metadata"]["uid"]}
    if rtype.group:
        details["group"] = rtype.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": details}


class ApiHandler(http.server.BaseHTTPRequestHandler):
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

    # ------------------------------------------------------------ reads

    def _filter(self, target):
        return ObjectFilter(target.namespace, self.query.get("labelSelector", ""),
                            self.query.get("fieldSelector", ""))

    def _list_body(self, target, items, resource_version):
        rtype = target.rtype
        meta = {"resourceVersion": resource_version}
        if self.query.get("continue"):
            items = _after_token(items, self.query["continue"])
        limit = self._int_query("limit")
        if 0 < limit < len(items):
            meta.update({"continue": _continue_token(items[limit - 1]),
                         "remainingItemCount": len(items) - limit})
            items = items[:limit]
        return {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                "metadata": meta, "items": items}

    def _list_or_watch(self, target):
        if self.query.get("watch") in ("true", "1"):
            self._watch(target)
        else:
            items, resource_version = self.fake.store.list_objects(target.rtype,
                                                                   self._filter(target))
            self._send_json(200, self._list_body(target, items, resource_version))

    def _get(self, target):
        self._send_json(200, self.fake.store.get_object(target.rtype, target.namespace,
                                                        target.name))

    def _pod_log(self, target):
        pod = self.fake.store.get_object(target.rtype, target.namespace, target.name)
        text = self.fake.pod_log(pod)
        tail = self._int_query("tailLines")
        if tail > 0:
            text = "".join(text.splitlines(keepends=True)[-tail:])
        self._send_text(200, text)

    def _watch(self, target):
        rv = self.query.get("resourceVersion")
        if rv not in (None, "") and not rv.isdigit():
            raise errors.bad_request(f"invalid resourceVersion {rv!r}")
        events = self.fake.store.watch(
            target.rtype, self._filter(target), rv,
            send_initial=self.query.get("sendInitialEvents") == "true",
            timeout=self._int_query("timeoutSeconds") or 1800,
            stopped=lambda: self.fake.stopping)
        self._start(200, JSON)
        self.close_connection = True
        try:
            for event_type, obj in events:
                self._write_chunk(json.dumps({"type": event_type, "object": obj}).encode()
                                  + b"\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        finally:
            events.close()

    def _write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    # ------------------------------------------------------------ writes

    def _object_body(self, target):
        obj = self._decode_body()
        if not isinstance(obj, dict):
            raise errors.bad_request("the request body must be an object")
        rtype = target.rtype
        if obj.get("apiVersion") not in (None, "", rtype.api_version) or obj.get(
                "kind") not in (None, "", rtype.kind):
            raise errors.bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) or kind "
                f"({obj.get('kind')}) does not match the expected {rtype.api_version} "
                f"{rtype.kind}")
        meta = obj.setdefault("metadata", {})
        if rtype.namespaced:
            if meta.get("namespace") not in (None, "", target.namespace):
                raise errors.bad_request("the namespace of the provided object does not "
                                         "match the namespace sent on the request")
            meta["namespace"] = target.namespace
        if target.name is not None and meta.get("name") not in (None, "", target.name):
            raise errors.bad_request(f"the name of the object ({meta.get('name')}) does not "
                                     f"match the name on the URL ({target.name})")
        if target.name is not None:
            meta["name"] = target.name
        return obj

    def _create(self, target):
        obj = self._object_body(target)
        created = self.fake.store.create_object(target.rtype, obj, self.dry_run)
        self._send_json(201, created)

    def _replace(self, target):
        obj = self._object_body(target)
        result = self.fake.store.replace_object(target.rtype, obj, target.subresource,
                                                self.dry_run)
        self._send_json(200, result)

    def _patch(self, target):
        if self.content_type == APPLY:
            self._apply(target)
            return
        patcher = PATCHERS.get(self.content_type)
        builtin = target.rtype.group in BUILTIN_GROUPS
        if patcher is None or (patcher is strategic_merge and not builtin):
            raise errors.ApiError(
                415, "UnsupportedMediaType", f"the body of the request was in an unknown "
                f"format - accepted media types include: {', '.join(openapi.PATCH_TYPES)}")
        patch = self._decode_body()
        result = self.fake.store.modify_object(target.rtype, target.namespace, target.name,
                                               lambda current: patcher(current, patch),
                                               target.subresource, self.dry_run)
        self._send_json(200, result)

    def _apply(self, target):
        manager = self.query.get("fieldManager")
        if not manager:
            raise errors.bad_request("PATCH request with apply type requires fieldManager")
        result, created = self.fake.store.apply_object(
            target.rtype, target.namespace, target.name, self._object_body(target), manager,
            target.subresource, self.dry_run)
        self._send_json(201 if created else 200, result)

    def _delete_options(self):
        options = {}
        if self._raw_body():
            try:
                options = self._decode_body()
            except errors.ApiError:
                options = {}  # undecodable DeleteOptions are ignored
        options = options if isinstance(options, dict) else {}
        policy = (self.query.get("propagationPolicy") or options.get("propagationPolicy")
                  or ("Orphan" if options.get("orphanDependents") else "Background"))
        dry_run = self.dry_run or "All" in (options.get("dryRun") or [])
        uid = (options.get("preconditions") or {}).get("uid")
        return policy, dry_run, uid

    def _delete(self, target):
        policy, dry_run, uid = self._delete_options()
        obj, gone = self.fake.store.delete_object(target.rtype, target.namespace, target.name,
                                                  dry_run, policy, uid)
        # Still there (finalizers) or a dry run: the object; deleted: a success Status.
        self._send_json(200, _success(target.rtype, obj) if gone and not dry_run else obj)

    def _delete_collection(self, target):
        policy, dry_run = self._delete_options()[:2]
        items, resource_version = self.fake.store.delete_collection(
            target.rtype, self._filter(target), dry_run, policy)
        self._send_json(200, self._list_body(target, items, resource_version))

    def _evict(self, target):
        code, body = eviction.evict(self.fake, target.rtype, target.namespace, target.name,
                                    self._decode_body(), self.dry_run)
        self._send_json(code, body)

    # ------------------------------------------------------------ scale subresource

    def _scale(self, obj):
        meta = obj["metadata"]
        selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                  "creationTimestamp") if k in meta},
                "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                           "selector": ",".join(f"{k}={v}" for k, v in selector.items())}}

    def _get_scale(self, target):
        obj = self.fake.store.get_object(target.rtype, target.namespace, target.name)
        self._send_json(200, self._scale(obj))

    def _write_scale(self, target):
        body = self._decode_body()
        patcher = PATCHERS.get(self.content_type)

        def change(current):
            scale = self._scale(current)
            scale = patcher(scale, body) if self.method == "PATCH" and patcher else body
            current["spec"]["replicas"] = int((scale.get("spec") or {}).get("replicas", 0))
            return current
        result = self.fake.store.modify_object(target.rtype, target.namespace, target.name,
                                               change, dry_run=self.dry_run)
        self._send_json(200, self._scale(result))
