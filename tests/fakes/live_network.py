"""The Network Operator's reconcile loop on the local control plane: NicClusterPolicy -> component DaemonSets ->
``status.appliedStates`` and ``status.state``.

As the real operator (v26.4.0, ``pkg/state``): each component of the policy is a DaemonSet in the operator's
namespace (names and ``app`` labels as its manifests give them), owned by the policy and placed by the policy's
``nodeAffinity``; the NIC driver's DaemonSet is one per OS release, on the nodes NFD labelled with it. A component
is ``ready`` when its DaemonSets are: at least one node desired, every desired pod available and updated (a
component no node matches stays ``notReady``, as upstream's ``isDaemonSetReady``). The policy is ``ready`` when
every component is. The pods are the real DaemonSet controller's, run by KWOK; whether they become Ready is the
node agents' part (``node_agents.py``: a stuck device plugin keeps its pod from being Ready).
"""

from .controller_base import Controller, set_status

NFD_OS_ID = "feature.node.kubernetes.io/system-os_release.ID"
NFD_OS_VERSION = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
# spec key (under secondaryNetwork when the second item is True) -> (state, DaemonSet name, app label)
COMPONENTS = (
    ("ofedDriver", False, "state-OFED", None, None),
    ("rdmaSharedDevicePlugin", False, "state-RDMA-device-plugin", "rdma-shared-dp-ds", "rdma-shared-dp"),
    ("sriovDevicePlugin", False, "state-SRIOV-device-plugin", "network-operator-sriov-device-plugin", "sriovdp"),
    ("nvIpam", False, "state-nv-ipam-cni", "nv-ipam-node", "nv-ipam-node"),
    ("multus", True, "state-multus-cni", "kube-multus-ds", "multus"),
    ("cniPlugins", True, "state-container-networking-plugins", "cni-plugins-ds", "cni-plugins"),
    ("ipoib", True, "state-ipoib-cni", "kube-ipoib-cni-ds", "ipoib-cni"),
    ("ipamPlugin", True, "state-whereabouts-cni", "whereabouts", "whereabouts"),
)
OWNED = "fake.gpu-platform.io/nic-policy-component"


def daemonset_ready(daemonset):
    """Upstream's isDaemonSetReady: desired != 0 and desired == available == updated."""
    status = daemonset.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    available = status.get("numberAvailable", 0)
    return desired != 0 and desired == available and status.get("updatedNumberScheduled", 0) == available


class LiveNetworkOperator(Controller):
    """NicClusterPolicy -> component DaemonSets -> status (see the module docstring)."""

    watches = frozenset({("mellanox.com", "NicClusterPolicy"), ("apps", "DaemonSet"), ("apps", "Deployment"),
                         ("", "Node")})

    def handle(self, event):
        if event.kind == "DaemonSet" and not (event.obj["metadata"].get("labels") or {}).get(OWNED):
            return
        if event.kind == "Node" and event.type == "MODIFIED" and \
                (event.obj["metadata"].get("labels") or {}) == ((event.old or {}).get("metadata", {}).get("labels") or {}):
            return
        operators = self.store.list("apps/v1", "Deployment", label_selector="app=network-operator")
        if not operators:
            return
        namespace = operators[0]["metadata"]["namespace"]
        for policy in self.store.list("mellanox.com/v1alpha1", "NicClusterPolicy"):
            wanted = self._wanted(policy)
            if event.kind != "DaemonSet":
                self._reconcile(policy, namespace, wanted)
            self._status(policy, namespace, wanted)

    def _wanted(self, policy):
        """{DaemonSet name: (state, app label, extra node selector)} for the policy's components."""
        spec = policy.get("spec") or {}
        secondary = spec.get("secondaryNetwork") or {}
        wanted = {}
        for key, nested, state, name, app in COMPONENTS:
            if not (secondary if nested else spec).get(key):
                continue
            if key != "ofedDriver":
                wanted[name] = (state, app, {})
                continue
            releases = set()
            for node in self.store.list("v1", "Node"):
                labels = node["metadata"].get("labels") or {}
                if labels.get(NFD_OS_ID) and labels.get(NFD_OS_VERSION):
                    releases.add((labels[NFD_OS_ID], labels[NFD_OS_VERSION]))
            if not releases:  # no node is labelled with its OS yet: the state has no DaemonSet, so not ready
                wanted["mofed-pending"] = (state, None, None)
            for os_id, version in sorted(releases):
                tag = "mofed-%s%s" % (os_id, version)
                wanted[tag + "-ds"] = (state, tag, {NFD_OS_ID: os_id, NFD_OS_VERSION: version})
        return wanted

    def _reconcile(self, policy, namespace, wanted):
        affinity = (policy.get("spec") or {}).get("nodeAffinity")
        existing = {d["metadata"]["name"]: d for d in self.store.list("apps/v1", "DaemonSet", namespace,
                                                                      label_selector=OWNED)}
        for name, (state, app, selector) in wanted.items():
            if app is None or name in existing:
                continue
            container = "mofed-container" if app.startswith("mofed-") else app  # no dots in a container's name
            pod_spec = {"containers": [{"name": container, "image": "nvcr.io/nvidia/mellanox/%s" % container}]}
            if selector:
                pod_spec["nodeSelector"] = dict(selector)
            if affinity:
                pod_spec["affinity"] = {"nodeAffinity": affinity}
            meta = policy["metadata"]
            self.store.create({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": namespace, "labels": {"app": app, OWNED: state},
                             "ownerReferences": [{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                                                  "name": meta["name"], "uid": meta["uid"], "controller": True}]},
                "spec": {"selector": {"matchLabels": {"app": app}},
                         "template": {"metadata": {"labels": {"app": app}}, "spec": pod_spec}}})
        for name in existing:
            if name not in wanted:
                self.store.delete("apps/v1", "DaemonSet", name, namespace)

    def _status(self, policy, namespace, wanted):
        daemonsets = self.store.list("apps/v1", "DaemonSet", namespace, label_selector=OWNED)
        states = {}
        for name, (state, _app, _selector) in wanted.items():
            found = [d for d in daemonsets if d["metadata"]["name"] == name]
            ready = bool(found) and all(daemonset_ready(d) for d in found)
            states[state] = states.get(state, True) and ready
        applied = [{"name": name, "state": "ready" if ok else "notReady"} for name, ok in sorted(states.items())]
        overall = "ready" if applied and all(states.values()) else "notReady"
        status = {"state": overall, "appliedStates": applied}
        if (policy.get("status") or {}) != status:
            set_status(self.store, policy, status)
