"""A simulated GPU Operator driver upgrade controller (the operator's ``upgrade`` state machine).

``SimulatedDriverUpgrade`` plays what NVIDIA's k8s-operator-libs upgrade package does inside the GPU
Operator, from the facts in its docs: when the driver DaemonSet (``app=nvidia-driver-daemonset``, update
strategy ``OnDelete``) gets a new template, every GPU node whose driver pod is older is labelled
``nvidia.com/gpu-driver-upgrade-state=upgrade-required``; then, one step per ``step`` clock seconds, nodes
move through cordon-required (the node is cordoned), wait-for-jobs-required, pod-deletion-required,
drain-required (only with the ClusterPolicy's ``driver.upgradePolicy.drain.enable``), pod-restart-required
(the driver pod is replaced by one of the new template), validation-required, uncordon-required (uncordoned)
and upgrade-done. At most ``driver.upgradePolicy.maxParallelUpgrades`` nodes (0: no limit) are past
upgrade-required at once; a failed node keeps its slot (it stays cordoned). Nodes already on the current template are labelled upgrade-done, as the operator
does after an install. ``autoUpgrade`` false (the custom resource's default) stops it all; nodes labelled
``nvidia.com/gpu-driver-upgrade.skip=true`` are left alone.

Configurable: ``fail_nodes`` ({node: state}: on reaching that state the node goes to upgrade-failed and stays
cordoned) and ``stuck_nodes`` ({node: state}: the node stays in that state). Recorded for tests:
``max_in_progress`` (the most nodes past upgrade-required at once), ``transitions`` ([(clock time, node, from,
to)]) and ``restarted`` (nodes whose driver pod was replaced, in order).

Not modelled: maxUnavailable, waitForCompletion / pod deletion / drain doing anything to other pods (the
eviction of workload pods is the node_maintenance fake's business), NVIDIADriver custom resources, the
operator validator, the requestor mode (node-maintenance-required / post-maintenance-required).
"""

from .controllers import Controller
from .gpu_operator import GPU_NODE_LABEL, driver_pod

STATE = "nvidia.com/gpu-driver-upgrade-state"
SKIP = "nvidia.com/gpu-driver-upgrade.skip"
DRIVER_SELECTOR = "app=nvidia-driver-daemonset"
DONE, FAILED, REQUIRED = "upgrade-done", "upgrade-failed", "upgrade-required"
# state -> the next one (drain-required only when drain.enable).
STEPS = ("cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
         "pod-restart-required", "validation-required", "uncordon-required", DONE)
ACTIVE = frozenset(STEPS[:-1])


class SimulatedDriverUpgrade(Controller):
    """Driver DaemonSet template change -> per-node upgrade states, one step per ``step`` clock seconds."""

    watches = frozenset({("apps", "DaemonSet"), ("nvidia.com", "ClusterPolicy"), ("", "Node"), ("", "Pod")})

    def __init__(self, step=10.0, fail_nodes=None, stuck_nodes=None):
        self.step = step
        self.fail_nodes = dict(fail_nodes or {})
        self.stuck_nodes = dict(stuck_nodes or {})
        self.max_in_progress = 0
        self.transitions = []
        self.restarted = []
        self._timer = None

    # -- reading -----------------------------------------------------------------------------------------------
    def _daemonset(self):
        found = self.store.list("apps/v1", "DaemonSet", label_selector=DRIVER_SELECTOR)
        return found[0] if found else None

    def _policy(self):
        policies = self.store.list("nvidia.com/v1", "ClusterPolicy")
        if not policies:
            return {}
        return ((policies[0].get("spec") or {}).get("driver") or {}).get("upgradePolicy") or {}

    def _nodes(self):
        nodes = self.store.list("v1", "Node", label_selector=GPU_NODE_LABEL + "=true")
        return sorted((n for n in nodes if (n["metadata"].get("labels") or {}).get(SKIP) != "true"),
                      key=lambda n: n["metadata"]["name"])

    def _pod(self, daemonset, name):
        meta = daemonset["metadata"]
        return self.store.get("v1", "Pod", "%s-%s" % (meta["name"], name), meta["namespace"])

    @staticmethod
    def _current(daemonset, pod):
        labels = (pod or {}).get("metadata", {}).get("labels") or {}
        return labels.get("pod-template-generation") == str(daemonset["metadata"]["generation"])

    @staticmethod
    def _state(node):
        return (node["metadata"].get("labels") or {}).get(STATE, "")

    # -- writing -----------------------------------------------------------------------------------------------
    def _set_state(self, name, before, after):
        self.transitions.append((self.clock.time(), name, before, after))
        self.store.set_labels("v1", "Node", name, {STATE: after})

    def _cordon(self, name, value):
        self.store.patch("v1", "Node", name, {"spec": {"unschedulable": value}})

    def _record(self):
        states = [self._state(n) for n in self._nodes()]
        self.max_in_progress = max(self.max_in_progress, sum(1 for s in states if s in ACTIVE))

    def _restart(self, daemonset, name):
        """Replace the node's driver pod by one of the current template; True when the node may move on."""
        old = self._pod(daemonset, name)
        if old is not None:
            self.store.delete("v1", "Pod", old["metadata"]["name"], old["metadata"]["namespace"])
        self.store.create(driver_pod(self.store.get("apps/v1", "DaemonSet", daemonset["metadata"]["name"],
                                                    daemonset["metadata"]["namespace"]), name))
        self.restarted.append(name)
        return True

    # -- the controller ----------------------------------------------------------------------------------------
    def handle(self, event):
        if event.kind == "Pod" and (event.obj["metadata"].get("labels") or {}).get("app") != "nvidia-driver-daemonset":
            return
        self._reconcile()

    def _reconcile(self):
        daemonset = self._daemonset()
        if daemonset is None:  # no driver DaemonSet yet (the ClusterPolicy's CRD may not be served either)
            return
        policy = self._policy()
        if policy.get("autoUpgrade") is not True:
            return
        waiting = False
        for node in self._nodes():
            name, state = node["metadata"]["name"], self._state(node)
            pod = self._pod(daemonset, name)
            if pod is None:
                continue
            if state in ("", DONE) and not self._current(daemonset, pod):
                self._set_state(name, state, REQUIRED)
                state = REQUIRED
            elif state == "" and self._current(daemonset, pod):
                self._set_state(name, state, DONE)
                state = DONE
            waiting = waiting or state == REQUIRED or state in ACTIVE
        if waiting and self._timer is None:
            self._timer = self.clock.call_later(self.step, self._tick)

    def _tick(self):
        # self._timer stays set while the tick runs: the label writes below re-enter _reconcile, which must
        # not schedule a second tick.
        daemonset, policy = self._daemonset(), self._policy()
        if daemonset is None or policy.get("autoUpgrade") is not True:
            self._timer = None
            return
        drain = (policy.get("drain") or {}).get("enable") is True
        nodes = self._nodes()
        limit = int(policy.get("maxParallelUpgrades", 1) or 0) or len(nodes)
        active = 0  # a failed node stays cordoned: it keeps its slot until someone retries it
        for node in nodes:
            state = self._state(node)
            if state in ACTIVE:
                state = self._advance(daemonset, node["metadata"]["name"], state, drain)
            active += state in ACTIVE or state == FAILED
        for node in nodes:  # admit waiting nodes into free slots
            name = node["metadata"]["name"]
            if active >= limit:
                break
            if self._state(self.store.get("v1", "Node", name)) == REQUIRED:
                self._set_state(name, REQUIRED, STEPS[0])
                active += 1
        self._record()
        busy = any(self._state(n) == REQUIRED or self._state(n) in ACTIVE for n in self._nodes())
        self._timer = self.clock.call_later(self.step, self._tick) if busy else None

    def _advance(self, daemonset, name, state, drain):
        """One step of one node; returns its new state."""
        if self.stuck_nodes.get(name) == state:
            return state
        if self.fail_nodes.get(name) == state:
            self._set_state(name, state, FAILED)
            return FAILED
        if state == "cordon-required":
            self._cordon(name, True)
        elif state == "pod-restart-required" and not self._restart(daemonset, name):
            return state
        elif state == "uncordon-required":
            self._cordon(name, None)
        following = STEPS[STEPS.index(state) + 1]
        if following == "drain-required" and not drain:
            following = "pod-restart-required"
        self._set_state(name, state, following)
        return following
