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
"""

import collections
import copy
import random
import threading
import time
import uuid

from . import errors
from .clock import rfc3339
from .patches import apply_merge, canonical, json_patch, merge_patch, strategic_merge
from .selectors import ObjectFilter
from .semantics import apply_defaults, validation_causes

NAMESPACES = ("", "namespaces")
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_CREATE_KEEPS_STATUS = {("", "nodes"), ("", "persistentvolumes")}
_IMMUTABLE_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                   "deletionGracePeriodSeconds")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
PATCHERS = {"merge": merge_patch, "strategic": strategic_merge, "json": json_patch}


class Event(collections.namedtuple("Event", "type key obj old rv")):
    """One write: type ADDED/MODIFIED/DELETED, key (group, plural), new and old object."""

    __slots__ = ()

    @property
    def group(self):
        return self.key[0]

    @property
    def kind(self):
        return self.obj.get("kind")

    @property
    def name(self):
        return self.obj["metadata"]["name"]

    @property
    def namespace(self):
        return self.obj["metadata"].get("namespace")


def _ident(obj):
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _spec_part(obj):
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _with_meta(obj, **changes):
    """A shallow copy of ``obj`` with a copied metadata carrying ``changes``."""
    meta = {**obj["metadata"], **changes}
    return {**obj, "metadata": {k: v for k, v in meta.items() if v is not None}}


def _same(a, b):
    return _with_meta(a, resourceVersion=None) == _with_meta(b, resourceVersion=None)


def versioned(rtype, obj):
    """``obj`` as seen through ``rtype``'s version (apiVersion rewritten if needed)."""
    if obj.get("apiVersion") == rtype.api_version:
        return obj
    return {**obj, "apiVersion": rtype.api_version}


class Store:
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

    # ------------------------------------------------------------ watch

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

    # ------------------------------------------------------------ Python API

    def resource(self, api_version, kind):
        """The served ResourceType for apiVersion/kind (ApiError 404 if none)."""
        rtype = self.registry.by_kind(api_version, kind)
        if rtype is None:
            raise errors.ApiError(404, "NotFound", f"no kind {kind!r} is served in "
                                  f"{api_version!r}")
        return rtype

    def get(self, api_version, kind, name, namespace=None):
        """A copy of the object, or None."""
        rtype = self.resource(api_version, kind)
        try:
            return copy.deepcopy(self.get_object(rtype, namespace or "default", name))
        except errors.ApiError:
            return None

    def list(self, api_version, kind, namespace=None, label_selector="", field_selector=""):
        rtype = self.resource(api_version, kind)
        obj_filter = ObjectFilter(namespace, label_selector, field_selector)
        return copy.deepcopy(self.list_objects(rtype, obj_filter)[0])

    def create(self, obj):
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        return copy.deepcopy(self.create_object(rtype, obj, privileged=True))

    def update(self, obj):
        """Replace the object (status included); a resourceVersion in it is a precondition."""
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        return copy.deepcopy(self.replace_object(rtype, obj, privileged=True))

    def modify(self, api_version, kind, name, change, namespace=None, subresource=None):
        """Atomically replace the object by ``change(copy)`` (which may edit and return it)."""
        rtype = self.resource(api_version, kind)

        def _change(obj):
            result = change(obj)
            return obj if result is None else result
        return copy.deepcopy(self.modify_object(rtype, namespace or "default", name, _change,
                                                subresource, privileged=True))

    def patch(self, api_version, kind, name, patch, namespace=None, patch_type="merge"):
        """Patch with ``patch_type`` "merge", "strategic" or "json"."""
        patcher = PATCHERS[patch_type]
        return self.modify(api_version, kind, name, lambda obj: patcher(obj, patch), namespace)

    def patch_status(self, api_version, kind, name, status, namespace=None):
        """JSON-merge ``status`` into the object's status."""
        return self.modify(api_version, kind, name,
                           lambda obj: merge_patch(obj, {"status": status}), namespace,
                           "status" if self.resource(api_version, kind).has_status else None)

    def set_labels(self, api_version, kind, name, labels, namespace=None):
        """Merge ``labels`` into the object's labels (a None value removes the label)."""
        return self.patch(api_version, kind, name, {"metadata": {"labels": labels}}, namespace)

    def delete(self, api_version, kind, name, namespace=None, propagation_policy="Background"):
        rtype = self.resource(api_version, kind)
        obj = self.delete_object(rtype, namespace or "default", name,
                                 propagation=propagation_policy)[0]
        return copy.deepcopy(obj)

    def apply(self, obj, field_manager="test"):
        """Server-side apply of ``obj`` as ``field_manager``; returns the result."""
        rtype = self.resource(obj.get("apiVersion"), obj.get("kind"))
        meta = obj.get("metadata") or {}
        result = self.apply_object(rtype, meta.get("namespace") or "default", meta["name"],
                                   obj, field_manager)[0]
        return copy.deepcopy(result)


def _keep_allocated_fields(rtype, old, new):
    """Fields the server allocated on create survive a PUT that omits them."""
    if rtype.store_key == ("", "services"):
        old_spec, new_spec = old.get("spec") or {}, new.setdefault("spec", {})
        for field in ("clusterIP", "clusterIPs"):
            if field in old_spec and not new_spec.get(field):
                new_spec[field] = old_spec[field]


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
