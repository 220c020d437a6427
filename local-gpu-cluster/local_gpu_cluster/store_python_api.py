"""Part of local_gpu_cluster/store.py: the store's Python API for tests and controllers (apiVersion and kind, deep
copies, privileged writes); see store.py's docstring."""
import copy

from . import errors
from .patches import json_patch, merge_patch, strategic_merge
from .selectors import ObjectFilter

PATCHERS = {"merge": merge_patch, "strategic": strategic_merge, "json": json_patch}


class StorePythonApi:
    """``get/list/create/update/patch/patch_status/delete/set_labels/modify/apply`` over the ``*_object`` methods."""

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

    def select(self, api_version, kind, predicate, namespace=None):
        """The stored objects of a kind ``predicate(obj)`` holds for, read in place and not copied: for controllers
        that only read them on every event (counting nodes or pods); never modify them."""
        rtype = self.resource(api_version, kind)
        return [obj for obj in self.list_objects(rtype, ObjectFilter(namespace, "", ""))[0] if predicate(obj)]

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
