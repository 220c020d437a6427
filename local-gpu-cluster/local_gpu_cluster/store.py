"""The thread-safe object store of the fake API server, with watch history and events.

Objects live in memory, keyed by (group, plural) and then (namespace, name). A global
counter gives every write its resourceVersion; every write is one ``Event`` that goes to
the watch history (for ``?watch``) and to listeners (the simulated controllers).

Two layers:

* ``*_object`` methods take a ``ResourceType`` and do what the HTTP API does: status is
  dropped on create and kept on update for kinds with a status subresource, resourceVersion
  preconditions, dry run, defaulting and validation, finalizers, garbage collection of
  dependents (ownerReferences), deletion of a Namespace's objects and of a CRD's objects.
* ``get/list/create/update/patch/patch_status/delete/set_labels/modify/apply`` take an
  apiVersion and kind and are the Python API for tests and controllers. They return deep
  copies and are *privileged*: ``create``/``update`` keep the ``status`` they are given.

Listeners run synchronously after each write, outside the store lock, on the writing
thread; writes made by listeners are queued and dispatched by the same loop, so when a
public call returns, every controller reaction to it has happened.

Stored dicts are never changed in place: every write stores a new dict.

The watch (``store_watch``), the Python API (``store_python_api``) and ``Event`` with the helpers on stored
objects (``store_objects``) are in modules of their own.
"""

import collections
import copy
import random
import threading
import uuid

from . import errors
from .clock import rfc3339
from .patches import apply_merge, canonical
from .selectors import ObjectFilter
from .semantics import apply_defaults, validation_causes
from .store_objects import Event, _ident, _same, _spec_part, _with_meta, versioned
from .store_python_api import StorePythonApi
from .store_watch import StoreWatch

NAMESPACES = ("", "namespaces")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_CREATE_KEEPS_STATUS = {("", "nodes"), ("", "persistentvolumes")}
_IMMUTABLE_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                   "deletionGracePeriodSeconds")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Store(StoreWatch, StorePythonApi):
    """In-memory objects, resourceVersions, watch history and event listeners."""

    def __init__(self, registry, clock, require_namespaces=False, history=10000):
        self.registry = registry
        self.clock = clock
        self.require_namespaces = require_namespaces
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._objects = collections.defaultdict(dict)
        self._rv = 1000
        self._history = collections.deque(maxlen=history)
        self._pending = collections.deque()
        self._listeners = []
        self._applied = {}  # (key, namespace, name) -> {field manager: applied config}
        self._dispatch_lock = threading.Lock()
        self._local = threading.local()
        self.closed = False

    # ------------------------------------------------------------ listeners and events

    def add_listener(self, listener):
        self._listeners.append(listener)

    def remove_listener(self, listener):
        self._listeners.remove(listener)

    def close(self):
        """Wake and end every watch."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    @property
    def resource_version(self):
        with self._lock:
            return str(self._rv)

    def _dispatch(self):
        if getattr(self._local, "dispatching", False):
            return
        with self._dispatch_lock:
            self._local.dispatching = True
            try:
                while True:
                    with self._lock:
                        if not self._pending:
                            return
                        event = self._pending.popleft()
                    for listener in list(self._listeners):
                        listener(event)
            finally:
                self._local.dispatching = False

    def _commit(self, event_type, key, obj, old):
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        if event_type == "DELETED":
            self._objects[key].pop(_ident(obj), None)
        else:
            self._objects[key][_ident(obj)] = obj
        event = Event(event_type, key, obj, old, self._rv)
        self._history.append(event)
        self._pending.append(event)
        if key == CRDS:
            self._sync_crd(event)
        self._cond.notify_all()
        return obj

    def _sync_crd(self, event):
        if event.type != "DELETED":
            self.registry.register_crd(event.obj)
            return
        self.registry.unregister_crd(event.name)
        spec = event.obj.get("spec") or {}
        cr_key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        for obj in list(self._objects[cr_key].values()):
            self._delete_now(cr_key, obj)

    # ------------------------------------------------------------ reads

    def _find(self, key, namespace, name):
        return self._objects[key].get((namespace or "", name))

    def get_object(self, rtype, namespace, name):
        with self._lock:
            obj = self._find(rtype.store_key, namespace if rtype.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rtype, name)
        return versioned(rtype, obj)

    def _matching(self, key, obj_filter):
        return [o for dummy, o in sorted(self._objects[key].items()) if obj_filter.matches(o)]

    def list_objects(self, rtype, obj_filter=None):
        """(objects sorted by namespace/name, list resourceVersion)."""
        with self._lock:
            items = self._matching(rtype.store_key, obj_filter or ObjectFilter())
            return [versioned(rtype, o) for o in items], str(self._rv)

    # ------------------------------------------------------------ create

    def _now(self):
        return rfc3339(self.clock.now())

    def _prepare_create(self, rtype, obj, privileged):
        meta = obj.setdefault("metadata", {})
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        if rtype.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices(_NAME_CHARS, k=5))
        if meta.pop("resourceVersion", None) and not privileged:
            raise errors.bad_request("resourceVersion should not be set on objects to be "
                                     "created")
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=self._now(), generation=1)
        if rtype.has_status and not privileged and rtype.store_key not in _CREATE_KEEPS_STATUS:
            obj.pop("status", None)
        apply_defaults(rtype, obj, self._now())
        self._validate(rtype, obj)

    def _validate(self, rtype, obj, old=None):
        causes = validation_causes(rtype, obj, old)
        if causes:
            raise errors.invalid(rtype, obj["metadata"].get("name", ""), causes)

    def _create_locked(self, rtype, obj, dry_run, privileged):
        self._prepare_create(rtype, obj, privileged)
        namespace, name = _ident(obj)
        if self._find(rtype.store_key, namespace, name) is not None:
            raise errors.already_exists(rtype, name)
        if namespace and self.require_namespaces and not self._find(NAMESPACES, "", namespace):
            raise errors.ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                                  {"name": namespace, "kind": "namespaces"})
        if dry_run:
            return obj
        return self._commit("ADDED", rtype.store_key, obj, None)

    def create_object(self, rtype, obj, dry_run=False, privileged=False):
        obj = canonical(obj)
        with self._lock:
            result = self._create_locked(rtype, obj, dry_run, privileged)
        self._dispatch()
        return versioned(rtype, result)

    # ------------------------------------------------------------ update

    def _prepare_update(self, rtype, old, obj, subresource, privileged):
        if subresource == "status":
            new = _with_meta(old)
            new["status"] = obj.get("status")
            if new["status"] is None:
                del new["status"]
            return new
        new = obj
        new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
        meta = new.setdefault("metadata", {})
        for field in _IMMUTABLE_META:
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        if rtype.has_status and not privileged:
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        _keep_allocated_fields(rtype, old, new)
        apply_defaults(rtype, new, old["metadata"]["creationTimestamp"])
        self._validate(rtype, new, old)
        if _spec_part(new) != _spec_part(old):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        return new

    def _replace_locked(self, rtype, obj, subresource, dry_run, privileged):
        meta = obj.setdefault("metadata", {})
        namespace = (meta.get("namespace") or "default") if rtype.namespaced else ""
        name = meta.get("name", "")
        meta["namespace"] = namespace or None
        old = self._find(rtype.store_key, namespace, name)
        if old is None:
            raise errors.not_found(rtype, name)
        wanted = meta.get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype, name)
        new = self._prepare_update(rtype, old, _with_meta(obj), subresource, privileged)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if _same(new, old) or dry_run:
            return new
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._delete_now(rtype.store_key, new)
        return self._commit("MODIFIED", rtype.store_key, new, old)

    def replace_object(self, rtype, obj, subresource=None, dry_run=False, privileged=False):
        obj = canonical(obj)
        with self._lock:
            result = self._replace_locked(rtype, obj, subresource, dry_run, privileged)
        self._dispatch()
        return versioned(rtype, result)

    def modify_object(self, rtype, namespace, name, change, subresource=None, dry_run=False,
                      privileged=False):
        """Atomic read-modify-write: ``change(copy of current) -> new object``."""
        with self._lock:
            current = self.get_object(rtype, namespace, name)
            new = canonical(change(copy.deepcopy(current)))
            new.setdefault("metadata", {})
            new["metadata"]["name"] = name
            if rtype.namespaced:
                new["metadata"]["namespace"] = namespace
            result = self._replace_locked(rtype, new, subresource, dry_run, privileged)
        self._dispatch()
        return versioned(rtype, result)

    def apply_object(self, rtype, namespace, name, applied, manager, subresource=None,
                     dry_run=False):
        """Approximate server-side apply: (result, created)."""
        applied = canonical(applied)
        applied.setdefault("metadata", {})["name"] = name
        if rtype.namespaced:
            applied["metadata"]["namespace"] = namespace
        ident = (rtype.store_key, namespace if rtype.namespaced else "", name)
        with self._lock:
            old = self._find(*ident)
            if old is None:
                if subresource:
                    raise errors.not_found(rtype, name)
                result = self._create_locked(rtype, copy.deepcopy(applied), dry_run, False)
            else:
                previous = self._applied.get(ident, {}).get(manager)
                merged = canonical(apply_merge(old, applied, previous))
                # A resourceVersion in the applied configuration is a precondition.
                merged["metadata"]["resourceVersion"] = (
                    applied["metadata"].get("resourceVersion")
                    or old["metadata"]["resourceVersion"])
                result = self._replace_locked(rtype, merged, subresource, dry_run, False)
            if not dry_run:
                self._applied.setdefault(ident, {})[manager] = applied
        self._dispatch()
        return versioned(rtype, result), old is None

    # ------------------------------------------------------------ delete

    def _delete_locked(self, key, obj, dry_run=False, propagation="Background"):
        """Delete (or, with finalizers, mark deleted); returns (object, gone now)."""
        obj = self._objects[key].get(_ident(obj))
        if obj is None or dry_run:
            return obj, True
        if obj["metadata"].get("finalizers"):
            if obj["metadata"].get("deletionTimestamp"):
                return obj, False
            marked = _with_meta(obj, deletionTimestamp=self._now(), deletionGracePeriodSeconds=0)
            return self._commit("MODIFIED", key, marked, obj), False
        return self._delete_now(key, obj, propagation), True

    def _delete_now(self, key, obj, propagation="Background"):
        deleted = self._commit("DELETED", key, _with_meta(obj), obj)
        self._applied.pop((key,) + _ident(obj), None)
        if key == NAMESPACES:
            self._purge_namespace(obj["metadata"]["name"])
        self._collect_garbage(obj["metadata"]["uid"], propagation)
        return deleted

    def _purge_namespace(self, namespace):
        for key, bucket in list(self._objects.items()):
            for (obj_ns, dummy), obj in list(bucket.items()):
                if obj_ns == namespace and bucket.get(_ident(obj)) is obj:
                    self._delete_now(key, obj)

    def _collect_garbage(self, owner_uid, propagation):
        live = {o["metadata"]["uid"] for bucket in self._objects.values() for o in bucket.values()}
        for key, bucket in list(self._objects.items()):
            for obj in list(bucket.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                if not any(ref.get("uid") == owner_uid for ref in refs):
                    continue
                if bucket.get(_ident(obj)) is not obj:
                    continue  # already removed by an earlier cascade
                if propagation == "Orphan":
                    kept = [ref for ref in refs if ref.get("uid") != owner_uid]
                    self._commit("MODIFIED", key, _with_meta(obj, ownerReferences=kept or None),
                                 obj)
                elif not any(ref.get("uid") in live for ref in refs):
                    self._delete_locked(key, obj)

    def delete_object(self, rtype, namespace, name, dry_run=False, propagation="Background",
                      precondition_uid=None):
        """Returns (object, gone now)."""
        with self._lock:
            obj = self._find(rtype.store_key, namespace if rtype.namespaced else "", name)
            if obj is None:
                raise errors.not_found(rtype, name)
            if precondition_uid and precondition_uid != obj["metadata"]["uid"]:
                raise errors.conflict(rtype, name)
            result = self._delete_locked(rtype.store_key, obj, dry_run, propagation)
        self._dispatch()
        return versioned(rtype, result[0]), result[1]

    def delete_collection(self, rtype, obj_filter, dry_run=False, propagation="Background"):
        with self._lock:
            deleted = [self._delete_locked(rtype.store_key, obj, dry_run, propagation)[0]
                       or obj for obj in self._matching(rtype.store_key, obj_filter)]
            rv = str(self._rv)
        self._dispatch()
        return [versioned(rtype, o) for o in deleted], rv


def _keep_allocated_fields(rtype, old, new):
    """Fields the server allocated on create survive a PUT that omits them."""
    if rtype.store_key == ("", "services"):
        old_spec, new_spec = old.get("spec") or {}, new.setdefault("spec", {})
        for field in ("clusterIP", "clusterIPs"):
            if field in old_spec and not new_spec.get(field):
                new_spec[field] = old_spec[field]
