"""A simulated NVIDIA Network Operator, for tests of nic_cluster_policy and the network layer.

For the NicClusterPolicy it reports one applied state per component present in the spec
(names as the real operator uses them), first ``notReady`` and, ``ready_after`` seconds later
on the server's clock, ``ready`` (at once when ``ready_after`` is 0). Components named in ``stuck`` stay ``notReady`` with a
message, so the policy never becomes ready (a DOCA driver that does not build, say).
"""

from .controllers import Controller, set_status

# spec key -> state name
COMPONENTS = (
    ("ofedDriver", "state-OFED"),
    ("rdmaSharedDevicePlugin", "state-RDMA-device-plugin"),
    ("sriovDevicePlugin", "state-SRIOV-device-plugin"),
    ("nvIpam", "state-nv-ipam-cni"),
)
SECONDARY = (
    ("multus", "state-multus-cni"),
    ("cniPlugins", "state-container-networking-plugins"),
    ("ipoib", "state-ipoib-cni"),
    ("ipamPlugin", "state-whereabouts-cni"),
)


def component_names(spec):
    names = [state for key, state in COMPONENTS if spec.get(key)]
    secondary = spec.get("secondaryNetwork") or {}
    names += [state for key, state in SECONDARY if secondary.get(key)]
    return names


class SimulatedNetworkOperator(Controller):
    """NicClusterPolicy spec -> status.appliedStates -> status.state."""

    watches = frozenset({("mellanox.com", "NicClusterPolicy")})

    def __init__(self, ready_after=5.0, stuck=()):
        self.ready_after = ready_after
        self.stuck = set(stuck)
        self._generations = {}

    def handle(self, event):
        if event.type == "DELETED":
            return
        meta = event.obj["metadata"]
        generation = meta.get("generation")
        if self._generations.get(meta["uid"]) == generation:
            return
        self._generations[meta["uid"]] = generation
        if self.ready_after <= 0:
            self._report(meta["name"], ready=True)
            return
        self._report(meta["name"], ready=False)
        self.clock.call_later(self.ready_after, lambda: self._report(meta["name"], ready=True))

    def _report(self, name, ready):
        policy = self.store.get("mellanox.com/v1alpha1", "NicClusterPolicy", name)
        if policy is None:
            return
        states = []
        for component in component_names(policy.get("spec") or {}):
            ok = ready and component not in self.stuck
            entry = {"name": component, "state": "ready" if ok else "notReady"}
            if not ok:
                entry["message"] = ("driver build failed for kernel 6.8.0-1020-azure" if component in self.stuck
                                    else "waiting for pods to be ready")
            states.append(entry)
        overall = "ready" if states and all(s["state"] == "ready" for s in states) else "notReady"
        set_status(self.store, policy, {"state": overall, "appliedStates": states})
