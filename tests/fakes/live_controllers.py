"""The operators' part on a real API server: the simulated controllers, adapted where the real ones act.

``live_controllers()`` is the set ``live.py`` runs against the local control plane (scripts/local_cluster),
whose kube-controller-manager makes the pods of Deployments, DaemonSets and Jobs, whose scheduler binds them and
whose KWOK nodes run them. What is left is what the operators' own controllers and the components on the nodes
would do:

* ``LiveGpuOperator``: ``SimulatedGpuOperator`` without the driver pods it makes by hand in the fake: it labels
  the nodes where NFD found an NVIDIA device, the real DaemonSet controller makes every operand's pods and KWOK
  runs them, so ClusterPolicy ``status.state`` follows the real DaemonSets' status.
* ``LiveNetworkOperator`` (``live_network.py``): NicClusterPolicy into its component DaemonSets and state.
* ``NodeAgents`` (``node_agents.py``): what happens on a node while a component's pod runs there (NFD, GFD, the
  device plugin, drivers, peermem, the MIG manager, the RDMA and SR-IOV device plugins, the DRA kubelet plugin's
  ResourceSlices), from the node's declared hardware.
* ``SmokeLogs`` (``node_agent_smoke.py``): the smoke pods' logs, from what each pod was given on its node.
* ``LiveVolcanoJobs`` (``live_volcano.py``): Volcano Jobs' pods, placed as a gang and created bound.
* ``LiveDriverUpgrade``: ``SimulatedDriverUpgrade`` (the operator's driver upgrade state machine) on real
  DaemonSet pods: a node's driver pod is found by its ``nodeName``, and at ``pod-restart-required`` the old pod
  is deleted and the node stays there until the real DaemonSet controller has made the new template's pod and
  KWOK has made it Ready, as the operator waits for its driver pod.

The DRA driver's DeviceClasses come from its chart (as the real chart's); its ResourceSlices from the kubelet
plugin's node agent. Not run here: ``SmokePods`` (phases are KWOK's), the fake's workload controllers (the real
ones run).
"""


from .controller_base import pod_ready
from .driver_upgrade import DRIVER_SELECTOR, SimulatedDriverUpgrade
from .gpu_operator import GPU_NODE_LABEL as GPU_PRESENT, OPERANDS, SimulatedGpuOperator
from .live_network import LiveNetworkOperator
from .node_agent_effects import default_mig_parted_config
from .node_agent_smoke import SmokeLogs
from .node_agents import NodeAgents
from .live_volcano import LiveVolcanoJobs


class LiveGpuOperator(SimulatedGpuOperator):
    """``SimulatedGpuOperator`` for a real cluster, on a fleet that starts bare.

    As the real operator: a node with NFD's NVIDIA PCI label gets ``nvidia.com/gpu.present=true`` and an
    ``nvidia.com/gpu.deploy.<operand>=true`` label per operand (``mig-manager`` only where GFD found a MIG
    capable GPU; a value already set, ``false`` say, is kept), each operand DaemonSet selects its own deploy label,
    the MIG manager is an operand, and the default mig-parted ConfigMap is made beside the operator. The real
    DaemonSet controller makes every operand's pods and KWOK runs them, so ClusterPolicy ``status.state`` follows
    the real DaemonSets' status (numberReady against desiredNumberScheduled).
    """

    watches = SimulatedGpuOperator.watches | {("", "Node")}
    NFD_GPU_LABELS = tuple("feature.node.kubernetes.io/pci-%s.present" % c for c in ("10de", "0302_10de", "0300_10de"))
    DEPLOY = {"driver": "driver", "toolkit": "container-toolkit", "devicePlugin": "device-plugin",
              "dcgmExporter": "dcgm-exporter", "gfd": "gpu-feature-discovery", "validator": "operator-validator",
              "migManager": "mig-manager"}
    MIG_CONFIG = "default-mig-parted-config"

    def handle(self, event):
        if event.kind == "Node":
            if event.type != "DELETED" and self.store.list("apps/v1", "Deployment", label_selector="app=gpu-operator"):
                self._label(event.obj)
            return
        super().handle(event)
        if self.namespace and self.store.list("nvidia.com/v1", "ClusterPolicy"):
            for node in self.store.list("v1", "Node"):
                self._label(node)
            self._mig_config()

    def _label(self, node):
        labels = node["metadata"].get("labels") or {}
        if not any(labels.get(key) == "true" for key in self.NFD_GPU_LABELS):
            return
        wanted = {GPU_PRESENT: "true"}
        for component, name in self.DEPLOY.items():
            key = "nvidia.com/gpu.deploy." + name
            if component == "migManager" and labels.get("nvidia.com/mig.capable") != "true":
                continue
            if key not in labels:
                wanted[key] = "true"
        if any(labels.get(k) != v for k, v in wanted.items()):
            self.store.set_labels("v1", "Node", node["metadata"]["name"], wanted)

    def _mig_config(self):
        if self.store.get("v1", "ConfigMap", self.MIG_CONFIG, self.namespace) is None:
            self.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": self.MIG_CONFIG, "namespace": self.namespace},
                               "data": {"config.yaml": default_mig_parted_config()}})

    def _operands(self):
        return OPERANDS + (("migManager", "nvidia-mig-manager"),)

    def _template(self, spec, component, name):
        template = super()._template(spec, component, name)
        template["spec"]["nodeSelector"] = {"nvidia.com/gpu.deploy." + self.DEPLOY[component]: "true"}
        return template

    def _driver_pods(self, daemonset):
        """Nothing: the real DaemonSet controller makes the driver pods (``app=nvidia-driver-daemonset``)."""


class LiveDriverUpgrade(SimulatedDriverUpgrade):
    """The operator's driver upgrade on a real cluster: the DaemonSet controller makes the driver pods."""

    def _pod(self, daemonset, name):
        meta = daemonset["metadata"]
        pods = self.store.list("v1", "Pod", meta["namespace"], label_selector=DRIVER_SELECTOR,
                               field_selector="spec.nodeName=" + name)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        return live[0] if live else None

    def _restart(self, daemonset, name):
        """Delete the node's outdated driver pod; True once the pod of the current template is Ready."""
        pod = self._pod(daemonset, name)
        if pod is not None and self._current(daemonset, pod):
            return pod_ready(pod)
        if pod is not None:
            self.store.delete("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])
            self.restarted.append(name)
        return False


# The simulated controllers each real operator's process replaces (operator_processes.py).
REPLACED_BY = {"gpu-operator": ("LiveGpuOperator", "LiveDriverUpgrade"), "network-operator": ("LiveNetworkOperator",),
               "volcano": ("LiveVolcanoJobs",)}


def live_controllers(network_ready_after=2.0, mig_delay=1.0, volcano_retry=5.0, upgrade_step=1.0, logs_dir=None,
                     real=()):
    """Fresh instances of the controllers ``live.py`` runs against the local control plane; ``real``: the operators
    whose own process runs (their simulations are left out)."""
    del network_ready_after  # the network's readiness is its DaemonSets' now (LiveNetworkOperator)
    replaced = {name for operator in real for name in REPLACED_BY.get(operator, ())}
    controllers = [LiveGpuOperator(), LiveNetworkOperator(), NodeAgents(mig_delay=mig_delay), SmokeLogs(logs_dir),
                   LiveVolcanoJobs(retry=volcano_retry), LiveDriverUpgrade(step=upgrade_step)]
    return [c for c in controllers if type(c).__name__ not in replaced]
