"""The operators' part on a real API server: the simulated controllers, adapted where the real ones act.

``live_controllers()`` is the set ``live.py`` runs against the local control plane (scripts/local_cluster),
whose kube-controller-manager makes the pods of Deployments, DaemonSets and Jobs, whose scheduler binds them and
whose KWOK nodes run them (Running/Ready; pods of Jobs and bare ``restartPolicy: Never`` pods complete; the
``nvidia-smi`` and ``mpirun`` containers print what a GPU would). What is left is what the GPU, Network and DRA
operators' own controllers would do:

* ``LiveGpuOperator``: ``SimulatedGpuOperator`` without the driver pods it makes by hand in the fake: the real
  DaemonSet controller makes every operand's pods and KWOK runs them, so ClusterPolicy ``status.state`` follows
  the real DaemonSets' status (numberReady against desiredNumberScheduled).
* ``SimulatedNetworkOperator`` (as is): NicClusterPolicy ``status.appliedStates`` / ``state``.
* ``SimulatedDevicePlugin`` (as is): Node allocatable (time-slicing replicas, MIG instances) through the
  ``nodes/status`` subresource. KWOK's node heartbeat writes conditions, addresses and daemonEndpoints only,
  and its node-initialize stage keeps an allocatable that is set, so neither undoes it.
* ``MigManager`` (as is): ``nvidia.com/mig.config.state`` pending, then success.
* ``LiveVolcanoJobs`` (``live_volcano.py``): Volcano Jobs' pods, placed as a gang and created bound.
* ``SimulatedDraDriver`` (new; the fake has no scheduler, so it never needed one): the DRA driver's
  DeviceClasses and one ResourceSlice per node its kubelet plugin would run on, so that the real scheduler
  allocates the DRA smoke test's ResourceClaim. It works on the fake too.
* ``LiveDriverUpgrade``: ``SimulatedDriverUpgrade`` (the operator's driver upgrade state machine) on real
  DaemonSet pods: a node's driver pod is found by its ``nodeName``, and at ``pod-restart-required`` the old pod
  is deleted and the node stays there until the real DaemonSet controller has made the new template's pod and
  KWOK has made it Ready, as the operator waits for its driver pod.

Not run here: ``SmokePods`` (phases and logs are KWOK's), the fake's workload controllers (the real ones run).
"""

import hashlib

from .controllers import Controller
from .controller_base import pod_ready
from .driver_upgrade import DRIVER_SELECTOR, SimulatedDriverUpgrade
from .gpu_operator import GPU_NODE_LABEL as GPU_PRESENT, OPERANDS, SimulatedGpuOperator
from .live_network import LiveNetworkOperator
from .node_agent_effects import default_mig_parted_config
from .node_agent_smoke import SmokeLogs
from .node_agents import NodeAgents
from .live_volcano import LiveVolcanoJobs

RESOURCE_API = "resource.k8s.io/v1"
SIMULATED = "fake.gpu-platform.io/simulated-by"


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


class SimulatedDraDriver(Controller):
    """The NVIDIA DRA driver as the scheduler sees it: DeviceClasses and per-node ResourceSlices.

    While a Deployment labelled ``app=nvidia-dra-driver-gpu-controller`` (the chart's controller) is available (by
    then helm has made the rest of the release), the DeviceClasses ``gpu.nvidia.com`` and ``mig.nvidia.com`` exist
    (made here only when absent: a chart that has them wins), and every node labelled
    ``nvidia.com/dra-kubelet-plugin=true`` (the kubelet plugin's node selector) publishes a ResourceSlice of driver
    ``gpu.nvidia.com`` (pool = node) with one device per GPU (GFD's ``nvidia.com/gpu.count``; attributes type,
    index, productName, uuid; capacity memory). Slices of nodes that lose the label go away, and everything made
    here goes when the controller does. Objects made here carry the label
    ``fake.gpu-platform.io/simulated-by: dra-driver``; slices are owned by their Node. Nothing happens when the
    server does not serve ``resource.k8s.io/v1``.
    """

    DRIVER = "gpu.nvidia.com"
    CONTROLLER_APP = "nvidia-dra-driver-gpu-controller"
    CONTROLLER_SELECTOR = "app=" + CONTROLLER_APP
    NODE_LABEL = "nvidia.com/dra-kubelet-plugin"
    DEVICE_CLASSES = (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))
    watches = frozenset({("apps", "Deployment"), ("", "Node")})

    def handle(self, event):
        if event.kind == "Deployment" and (event.obj["metadata"].get("labels") or {}).get("app") != self.CONTROLLER_APP:
            return
        try:
            self.store.resource(RESOURCE_API, "ResourceSlice")
        except Exception:  # LiveStore raises NotServed, the fake store its not-found error: either means absent
            return
        installed = any((d.get("status") or {}).get("availableReplicas", 0) >= 1
                        for d in self.store.list("apps/v1", "Deployment", label_selector=self.CONTROLLER_SELECTOR))
        self._device_classes(installed)
        wanted = {}
        if installed:
            for node in self.store.list("v1", "Node", label_selector=self.NODE_LABEL + "=true"):
                wanted["%s-%s" % (node["metadata"]["name"], self.DRIVER)] = node
        for found in self.store.list(RESOURCE_API, "ResourceSlice", field_selector="spec.driver=" + self.DRIVER):
            name = found["metadata"]["name"]
            if name not in wanted and (found["metadata"].get("labels") or {}).get(SIMULATED) == "dra-driver":
                self.store.delete(RESOURCE_API, "ResourceSlice", name)
            elif name in wanted:
                self._update(found, self._devices(wanted.pop(name)))
        for name, node in sorted(wanted.items()):
            self.store.create(self._slice(name, node))

    def _device_classes(self, installed):
        for name, device_type in self.DEVICE_CLASSES:
            existing = self.store.get(RESOURCE_API, "DeviceClass", name)
            if installed and existing is None:
                expression = "device.driver == '%s' && device.attributes['%s'].type == '%s'" % (
                    self.DRIVER, self.DRIVER, device_type)
                self.store.create({"apiVersion": RESOURCE_API, "kind": "DeviceClass",
                                   "metadata": {"name": name, "labels": {SIMULATED: "dra-driver"}},
                                   "spec": {"selectors": [{"cel": {"expression": expression}}]}})
            elif not installed and existing is not None \
                    and (existing["metadata"].get("labels") or {}).get(SIMULATED) == "dra-driver":
                self.store.delete(RESOURCE_API, "DeviceClass", name)

    @staticmethod
    def _devices(node):
        labels = node["metadata"].get("labels") or {}
        name = node["metadata"]["name"]
        count = int(labels.get("nvidia.com/gpu.count", "0") or 0)
        memory = labels.get("nvidia.com/gpu.memory")
        devices = []
        for index in range(count):
            uuid = hashlib.sha256(("%s/%d" % (name, index)).encode()).hexdigest()
            device = {"name": "gpu-%d" % index, "attributes": {
                "type": {"string": "gpu"}, "index": {"int": index},
                "productName": {"string": labels.get("nvidia.com/gpu.product", "unknown")},
                "uuid": {"string": "GPU-%s-%s-%s-%s-%s" % (uuid[:8], uuid[8:12], uuid[12:16], uuid[16:20],
                                                           uuid[20:32])}}}
            if memory and memory.isdigit():  # in the server's canonical form, so that comparing finds no change
                mebibytes = int(memory)
                value = "%dGi" % (mebibytes // 1024) if mebibytes % 1024 == 0 else "%dMi" % mebibytes
                device["capacity"] = {"memory": {"value": value}}
            devices.append(device)
        return devices

    def _slice(self, name, node):
        meta = node["metadata"]
        return {"apiVersion": RESOURCE_API, "kind": "ResourceSlice",
                "metadata": {"name": name, "labels": {SIMULATED: "dra-driver"},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": meta["name"],
                                                  "uid": meta["uid"], "controller": True}]},
                "spec": {"driver": self.DRIVER, "nodeName": meta["name"], "devices": self._devices(node),
                         "pool": {"name": meta["name"], "generation": 1, "resourceSliceCount": 1}}}

    @staticmethod
    def _shape(devices):
        """What this driver sets on its devices (the server may default more fields)."""
        return [(d.get("name"), d.get("attributes"), d.get("capacity")) for d in devices or []]

    def _update(self, found, devices):
        if self._shape((found.get("spec") or {}).get("devices")) == self._shape(devices):
            return

        def change(current):
            current["spec"]["devices"] = devices
            pool = current["spec"].setdefault("pool", {})
            pool["generation"] = int(pool.get("generation", 0)) + 1  # a new generation of the pool's devices
            return current
        self.store.modify(RESOURCE_API, "ResourceSlice", found["metadata"]["name"], change)


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


def live_controllers(network_ready_after=2.0, mig_delay=1.0, volcano_retry=5.0, upgrade_step=1.0, logs_dir=None):
    """Fresh instances of the controllers ``live.py`` runs against the local control plane."""
    del network_ready_after  # the network's readiness is its DaemonSets' now (LiveNetworkOperator)
    return [LiveGpuOperator(), LiveNetworkOperator(), NodeAgents(mig_delay=mig_delay), SmokeLogs(logs_dir),
            LiveVolcanoJobs(retry=volcano_retry), SimulatedDraDriver(), LiveDriverUpgrade(step=upgrade_step)]
