"""Part of local_gpu_cluster/controllers.py: helpers for later test layers, ``StatusSetter`` (a custom resource's
status from a function) and ``MigManager`` (answers ``nvidia.com/mig.config`` label changes on Nodes)."""
from .patches import merge_patch
from .controller_base import Controller, set_status


# ---------------------------------------------------------------- helpers for later layers

class StatusSetter(Controller):
    """Merge ``status_fn(obj)`` into the status of every ``api_version``/``kind`` object.

    ``status_fn`` returns a dict (JSON-merged into ``status``) or None (no change). With
    ``delay`` > 0 the status is set that many clock seconds after each create or spec change.
    """

    def __init__(self, api_version, kind, status_fn, delay=0.0):
        group = api_version.rpartition("/")[0]
        self.watches = frozenset({(group, kind)})
        self.api_version, self.kind = api_version, kind
        self.status_fn, self.delay = status_fn, delay
        self._scheduled = set()

    def handle(self, event):
        if event.type == "DELETED":
            return
        meta = event.obj["metadata"]
        key = (meta["uid"], meta.get("generation"))
        if self.delay <= 0:
            self._apply(meta["name"], meta.get("namespace"))
        elif key not in self._scheduled:
            self._scheduled.add(key)
            self.clock.call_later(self.delay,
                                  lambda: self._apply(meta["name"], meta.get("namespace")))

    def _apply(self, name, namespace):
        obj = self.store.get(self.api_version, self.kind, name, namespace)
        if obj is None:
            return
        status = self.status_fn(obj)
        if status is not None:
            set_status(self.store, obj, merge_patch(obj.get("status") or {}, status))


class MigManager(Controller):
    """Simulated NVIDIA mig-manager: reacts to the ``nvidia.com/mig.config`` Node label.

    When the label's value changes, the Node gets ``nvidia.com/mig.config.state=pending``,
    then after ``delay`` clock seconds ``success`` (or ``failed`` for names in
    ``fail_nodes``). ``on_success(store, node)`` may change the Node further (capacity...).
    """

    CONFIG = "nvidia.com/mig.config"
    STATE = "nvidia.com/mig.config.state"
    watches = frozenset({("", "Node")})

    def __init__(self, delay=0.0, fail_nodes=(), on_success=None):
        self.delay = delay
        self.fail_nodes = set(fail_nodes)
        self.on_success = on_success
        self._handled = {}

    def handle(self, event):
        name = event.name
        if event.type == "DELETED":
            self._handled.pop(name, None)
            return
        config = (event.obj["metadata"].get("labels") or {}).get(self.CONFIG)
        if config is None:
            self._handled.pop(name, None)  # a removed label: adding it again is a change again
            return
        if self._handled.get(name) == config:
            return
        self._handled[name] = config
        self.store.set_labels("v1", "Node", name, {self.STATE: "pending"})
        if self.delay > 0:
            self.clock.call_later(self.delay, lambda: self._finish(name, config))
        else:
            self._finish(name, config)

    def _finish(self, name, config):
        node = self.store.get("v1", "Node", name)
        if node is None or (node["metadata"].get("labels") or {}).get(self.CONFIG) != config:
            return
        state = "failed" if name in self.fail_nodes else "success"
        if state == "success" and self.on_success:
            self.on_success(self.store, node)
        self.store.set_labels("v1", "Node", name, {self.STATE: state})
