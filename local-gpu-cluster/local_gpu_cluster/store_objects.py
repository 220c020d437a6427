"""Part of local_gpu_cluster/store.py: what the store keeps, one write's ``Event``, and helpers on stored objects
(identity, spec part, metadata copies, the object as seen through a version)."""
import collections


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
