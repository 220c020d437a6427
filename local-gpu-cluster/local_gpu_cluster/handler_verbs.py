"""Part of local_gpu_cluster/handler.py: the reads (get, list, watch, pod logs), the writes (create, replace, patch,
apply, delete, evict) and the scale subresource of the fake API server, as a mixin of ``ApiHandler``."""
import json

from . import errors, eviction, openapi
from .kinds import BUILTIN_GROUPS
from .patches import strategic_merge
from .selectors import ObjectFilter
from .handler_common import JSON, APPLY, PATCHERS, _continue_token, _after_token, _success


class ApiVerbs:
    """The verbs ``ApiHandler._route`` dispatches to; plumbing (``_send_json``, ``_decode_body``, ...) is the handler's."""

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
