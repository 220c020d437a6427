"""``LiveStore``: the fake store's Python API (``local_gpu_cluster/store.py``) over a real API server.

The simulated controllers (``controllers.py``, ``gpu_operator.py``, ``network_operator.py``, ``smoke.py``...) are
written against the fake's ``Store``. ``LiveStore`` offers the part of that API they call, with the same
signatures and the same defaults, through the official ``kubernetes`` client's ``DynamicClient``:

* reads: ``get`` (None when absent), ``list`` (all namespaces when ``namespace`` is None; items carry
  ``apiVersion`` and ``kind``, as the fake's do), ``resource(api_version, kind)`` (``has_status``,
  ``namespaced``; ``NotServed`` when the server does not serve it);
* writes: ``create``, ``update``, ``modify`` (read-modify-write, re-read and retried on a 409 Conflict),
  ``patch`` (merge, strategic or JSON patch), ``patch_status``, ``set_labels``, ``delete``, ``apply`` and, for
  simulated schedulers, ``bind`` (the ``pods/binding`` subresource).

As in the fake, a namespaced kind with ``namespace=None`` means ``default`` (all namespaces for ``list``), and
writes are *privileged*: a status given to ``create``/``update``/``modify`` is written to the ``/status``
subresource where the kind has one. A write that would change nothing is not sent (the object is compared
before writing, as the fake drops such writes), so the chains of events the controllers start come to an end.
Each write the server took is logged as one line through ``log``.

For the watches of ``live.py``: ``preferred(group, kind)``, ``list_raw`` (items and the list's
resourceVersion) and ``open_watch`` (a streaming response).
"""

import copy
import json
import os
import tempfile
import threading
import time

from kubernetes import config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError, ResourceNotFoundError

from .store_python_api import PATCHERS

CONTENT_TYPES = {"merge": "application/merge-patch+json", "strategic": "application/strategic-merge-patch+json",
                 "json": "application/json-patch+json"}
RETRIES = 10  # read-modify-write attempts on 409 Conflict
REQUEST_TIMEOUT = (10, 60)  # seconds to connect, to read (a hung server must not stall the controllers for ever)
MISS_TTL = 2.0  # seconds a kind found missing is not looked up again (each look-up re-reads discovery)


class NotServed(LookupError):
    """The API server does not serve this apiVersion/kind (yet: a CRD may come later)."""


class LiveResourceType:
    """What the controllers ask of a kind (``has_status``, ``namespaced``), plus the client's Resource."""

    def __init__(self, resource):
        self.resource = resource
        self.api_version = resource.group_version
        self.group = resource.group or ""
        self.kind = resource.kind
        self.plural = resource.name
        self.namespaced = bool(resource.namespaced)
        self.has_status = "status" in resource.subresources

    @property
    def store_key(self):
        return (self.group, self.plural)

    def path(self, name=None, namespace=None, subresource=None):
        path = self.resource.path(name=name, namespace=namespace if self.namespaced else None)
        return path + "/" + subresource if subresource else path


def _comparable(obj):
    """``obj`` without what the server changes on every write (resourceVersion, managedFields)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return dict(obj, metadata=meta)


def _without_status(obj):
    return {k: v for k, v in _comparable(obj).items() if k != "status"}


def _describe(obj):
    meta = obj.get("metadata") or {}
    name = meta.get("name") or (meta.get("generateName", "") + "*")
    return "%s %s %s" % (obj.get("apiVersion"), obj.get("kind"),
                         "%s/%s" % (meta["namespace"], name) if meta.get("namespace") else name)


class LiveStore:
    """The fake ``Store``'s Python API over a real API server (see the module docstring)."""

    def __init__(self, kubeconfig, context=None, log=print):
        api_client = config.new_client_from_config(config_file=str(kubeconfig), context=context)
        cache_dir = tempfile.mkdtemp(prefix="gpu-platform-live-")
        self.client = DynamicClient(api_client, cache_file=os.path.join(cache_dir, "discovery.json"))
        self.log = log
        self._lock = threading.RLock()  # discovery is not thread-safe; requests are
        self._types = {}
        self._misses = {}

    # ------------------------------------------------------------ discovery

    def _lookup(self, key, find):
        with self._lock:
            if key in self._types:
                return self._types[key]
            if time.monotonic() - self._misses.get(key, -MISS_TTL) < MISS_TTL:
                raise NotServed("%s %s is not served" % key)
            try:
                found = find()
            except ResourceNotFoundError:
                found = None
            if found is None:
                self._misses[key] = time.monotonic()
                raise NotServed("%s %s is not served" % key)
            rtype = self._types[key] = LiveResourceType(found)
            return rtype

    def resource(self, api_version, kind):
        """The served kind (``has_status``, ``namespaced``, ``path``); NotServed if the server has none."""
        return self._lookup((api_version, kind), lambda: self.client.resources.get(api_version=api_version, kind=kind))

    def preferred(self, group, kind):
        """The server's preferred version of (group, kind), as for ``resource``."""
        def find():
            if not group:
                return self.client.resources.get(api_version="v1", kind=kind)
            found = [r for r in self.client.resources.search(group=group, kind=kind) if r.kind == kind]
            return next((r for r in found if r.preferred), found[0] if found else None)
        return self._lookup((group + "/*", kind), find)

    def forget(self, rtype):
        """Drop a kind from the cache (its CRD went away); the next look-up asks the server again."""
        with self._lock:
            for key, value in list(self._types.items()):
                if value.store_key == rtype.store_key:
                    del self._types[key]

    # ------------------------------------------------------------ requests

    def _request(self, method, path, body=None, **params):
        params.setdefault("_request_timeout", REQUEST_TIMEOUT)
        response = self.client.request(method, path, body=body, serialize=False, **params)
        data = response.data
        return json.loads(data) if data else {}

    def _namespace(self, rtype, namespace):
        return (namespace or "default") if rtype.namespaced else None

    def _logged(self, action, before, after):
        """Log ``action`` on ``after`` when the server stored something (a new resourceVersion)."""
        old_rv = ((before or {}).get("metadata") or {}).get("resourceVersion")
        if after.get("metadata", {}).get("resourceVersion") != old_rv:
            self.log("%s %s" % (action, _describe(after)))
        return after

    def _fill(self, rtype, obj):
        obj.setdefault("apiVersion", rtype.api_version)
        obj.setdefault("kind", rtype.kind)
        return obj

    # ------------------------------------------------------------ reads

    def get(self, api_version, kind, name, namespace=None):
        """The object, or None when it does not exist."""
        rtype = self.resource(api_version, kind)
        try:
            return self._fill(rtype, self._request("get", rtype.path(name, self._namespace(rtype, namespace))))
        except NotFoundError:
            return None

    def _must_get(self, rtype, name, namespace):
        return self._fill(rtype, self._request("get", rtype.path(name, self._namespace(rtype, namespace))))

    def list_raw(self, rtype, namespace=None, label_selector="", field_selector=""):
        """(items sorted by namespace/name, the list's resourceVersion); NotServed when the kind went away."""
        try:
            data = self._request("get", rtype.path(namespace=namespace), label_selector=label_selector or None,
                                 field_selector=field_selector or None)
        except NotFoundError:
            self.forget(rtype)
            raise NotServed("%s %s is not served" % (rtype.api_version, rtype.kind)) from None
        items = [self._fill(rtype, item) for item in data.get("items") or []]
        items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return items, (data.get("metadata") or {}).get("resourceVersion")

    def list(self, api_version, kind, namespace=None, label_selector="", field_selector=""):
        """The objects of a kind (every namespace when ``namespace`` is None), sorted by namespace/name."""
        return self.list_raw(self.resource(api_version, kind), namespace, label_selector, field_selector)[0]

    def open_watch(self, rtype, resource_version, timeout_seconds=300):
        """A streaming watch response from ``resource_version`` (bookmarks on); read it line by line."""
        return self.client.request("get", rtype.path(), serialize=False, watch="true",
                                   resource_version=resource_version, allow_watch_bookmarks="true",
                                   timeout_seconds=timeout_seconds,
                                   _request_timeout=(10, timeout_seconds + 30))

    # ------------------------------------------------------------ writes

    def create(self, obj):
        """Create ``obj``; a status it carries is written too (to ``/status`` where the kind has one)."""
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        obj = copy.deepcopy(obj)
        namespace = self._namespace(rtype, (obj.get("metadata") or {}).get("namespace"))
        if namespace:
            obj["metadata"]["namespace"] = namespace
        created = self._fill(rtype, self._request("post", rtype.path(namespace=namespace), body=obj))
        self.log("create %s" % _describe(created))
        if rtype.has_status and "status" in obj and created.get("status") != obj["status"]:
            created = self._put_status(rtype, created, obj["status"])
        return created

    def _put_status(self, rtype, current, status):
        meta = current["metadata"]
        body = dict(current, status=status)
        result = self._fill(rtype, self._request("put", rtype.path(meta["name"], meta.get("namespace"), "status"),
                                                 body=body))
        return self._logged("status", current, result)

    def _write(self, rtype, current, new, subresource=None):
        """Send what differs between ``current`` and ``new`` (main resource, then status); returns the result."""
        meta = current["metadata"]
        new.setdefault("metadata", {})
        new["metadata"]["name"] = meta["name"]
        if meta.get("namespace"):
            new["metadata"]["namespace"] = meta["namespace"]
        new["metadata"].setdefault("resourceVersion", meta.get("resourceVersion"))
        result = current
        if subresource != "status" and (_without_status(new) != _without_status(current)
                                        if rtype.has_status else _comparable(new) != _comparable(current)):
            result = self._fill(rtype, self._request("put", rtype.path(meta["name"], meta.get("namespace")),
                                                     body=new))
            self._logged("update", current, result)
        if (rtype.has_status or subresource == "status") and "status" in new \
                and new["status"] != result.get("status"):
            result = self._put_status(rtype, result, new["status"])
        return result

    def update(self, obj):
        """Replace the object (status included); a resourceVersion in it is a precondition."""
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        meta = obj.get("metadata") or {}
        current = self._must_get(rtype, meta.get("name"), meta.get("namespace"))
        return self._write(rtype, current, copy.deepcopy(obj))

    def modify(self, api_version, kind, name, change, namespace=None, subresource=None):
        """Replace the object by ``change(copy)`` (which may edit and return it); re-read and retried on 409."""
        rtype = self.resource(api_version, kind)
        for attempt in range(RETRIES):
            current = self._must_get(rtype, name, namespace)
            new = copy.deepcopy(current)
            result = change(new)
            new = new if result is None else result
            new["metadata"] = dict(new.get("metadata") or {}, resourceVersion=current["metadata"]["resourceVersion"])
            try:
                return self._write(rtype, current, new, subresource)
            except ConflictError:
                if attempt == RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def patch(self, api_version, kind, name, patch, namespace=None, patch_type="merge"):
        """Patch with ``patch_type`` "merge", "strategic" or "json"; skipped when it would change nothing."""
        rtype = self.resource(api_version, kind)
        current = self._must_get(rtype, name, namespace)
        if _comparable(PATCHERS[patch_type](copy.deepcopy(current), copy.deepcopy(patch))) == _comparable(current):
            return current
        meta = current["metadata"]
        result = self._fill(rtype, self._request("patch", rtype.path(name, meta.get("namespace")), body=patch,
                                                 content_type=CONTENT_TYPES[patch_type]))
        self._logged("patch", current, result)
        if patch_type == "merge" and rtype.has_status and isinstance(patch, dict) and "status" in patch:
            result = self.patch_status(api_version, kind, name, patch["status"], namespace)
        return result

    def patch_status(self, api_version, kind, name, status, namespace=None):
        """JSON-merge ``status`` into the object's status (the ``/status`` subresource where there is one)."""
        rtype = self.resource(api_version, kind)
        current = self._must_get(rtype, name, namespace)
        if _comparable(PATCHERS["merge"](copy.deepcopy(current), {"status": status})) == _comparable(current):
            return current
        path = rtype.path(name, current["metadata"].get("namespace"), "status" if rtype.has_status else None)
        result = self._fill(rtype, self._request("patch", path, body={"status": status},
                                                 content_type=CONTENT_TYPES["merge"]))
        return self._logged("status", current, result)

    def set_labels(self, api_version, kind, name, labels, namespace=None):
        """Merge ``labels`` into the object's labels (a None value removes the label)."""
        return self.patch(api_version, kind, name, {"metadata": {"labels": labels}}, namespace)

    def delete(self, api_version, kind, name, namespace=None, propagation_policy="Background", grace_period=None):
        """Delete the object (dependents by ``propagation_policy``; ``grace_period`` seconds, 0: at once, as a kubelet
        confirms a pod's end); NotFoundError when it is absent."""
        rtype = self.resource(api_version, kind)
        path = rtype.path(name, self._namespace(rtype, namespace))
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation_policy}
        if grace_period is not None:
            options["gracePeriodSeconds"] = grace_period
        result = self._request("delete", path, body=options)
        ns = self._namespace(rtype, namespace)
        self.log("delete %s %s %s" % (api_version, kind, "%s/%s" % (ns, name) if ns else name))
        return result

    def apply(self, obj, field_manager="test"):
        """Server-side apply of ``obj`` as ``field_manager`` (conflicts forced); returns the result."""
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        meta = obj.get("metadata") or {}
        current = self.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        result = self._request("patch", rtype.path(meta["name"], self._namespace(rtype, meta.get("namespace"))),
                               body=obj, content_type="application/apply-patch+yaml", field_manager=field_manager,
                               force_conflicts="true")
        return self._logged("apply", current, self._fill(rtype, result))

    def bind(self, name, namespace, node):
        """Bind a pod to ``node`` through ``pods/<name>/binding``, as a scheduler does."""
        rtype = self.resource("v1", "Pod")
        self._request("post", rtype.path(name, namespace, "binding"), body={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        self.log("bind v1 Pod %s/%s to %s" % (namespace, name, node))

    def token(self, namespace, service_account, seconds):
        """A token of ``service_account`` from the TokenRequest API (``serviceaccounts/<name>/token``), as the kubelet
        gets one for a pod; never logged."""
        rtype = self.resource("v1", "ServiceAccount")
        result = self._request("post", rtype.path(service_account, namespace, "token"), body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": int(seconds)}})
        return result["status"]["token"]
