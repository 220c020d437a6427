"""A simulated NVIDIA GPU Operator, for end-to-end tests of the GPU Operator layer.

``SimulatedGpuOperator`` plays the operator's reconcile loop: for a ClusterPolicy it creates
the operand DaemonSets of the enabled components in the operator's namespace (owned by the
ClusterPolicy, scheduled on Nodes labelled ``nvidia.com/gpu.present=true``), and sets the
ClusterPolicy's ``status.state`` to ``ready`` when every operand DaemonSet is ready, else
``notReady``. Operands named in ``never_ready`` carry the fake's never-ready label, so their
DaemonSet never becomes ready (a driver that does not build, say).

``NVIDIA_SMI`` is what ``nvidia-smi`` prints on one A100; ``local_gpu_cluster/smoke.SmokePods`` gives it to
the smoke tests' CUDA pods.
"""

import json

from .controllers import NEVER_READY, Controller, set_status

GPU_NODE_LABEL = "nvidia.com/gpu.present"
# component key in ClusterPolicy spec -> operand DaemonSet name (names as the real operator uses)
OPERANDS = (
    ("driver", "nvidia-driver-daemonset"),
    ("toolkit", "nvidia-container-toolkit-daemonset"),
    ("devicePlugin", "nvidia-device-plugin-daemonset"),
    ("dcgmExporter", "nvidia-dcgm-exporter"),
    ("gfd", "gpu-feature-discovery"),
    ("validator", "nvidia-operator-validator"),
)

OPERAND_NAMES = frozenset(name for component, name in OPERANDS)

NVIDIA_SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 595.91.07              Driver Version: 595.91.07      CUDA Version: 13.1     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  |   00000000:07:00.0 Off |                    0 |
| N/A   31C    P0             61W /  400W |       1MiB /  81920MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""


def gpu_node(name, product="NVIDIA-A100-SXM4-80GB", gpus=8):
    """A Node object as GFD and the device plugin leave it on a GPU host."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {GPU_NODE_LABEL: "true", "feature.node.kubernetes.io/pci-10de.present": "true",
                                              "nvidia.com/gpu.product": product,
                                              "nvidia.com/gpu.count": str(gpus), "kubernetes.io/hostname": name}},
        "status": {"capacity": {"nvidia.com/gpu": str(gpus)}, "allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


def _enabled(spec, component):
    section = spec.get(component)
    if component in ("gfd", "validator", "migManager"):
        return (section or {}).get("enabled", True) is not False
    return isinstance(section, dict) and section.get("enabled", True) is not False


class SimulatedGpuOperator(Controller):
    """ClusterPolicy -> operand DaemonSets -> ClusterPolicy status.state."""

    watches = frozenset({("nvidia.com", "ClusterPolicy"), ("apps", "DaemonSet"), ("apps", "Deployment")})

    def __init__(self, never_ready=()):
        self.never_ready = set(never_ready)
        self.namespace = None

    def handle(self, event):
        operators = self.store.list("apps/v1", "Deployment", label_selector="app=gpu-operator")
        if not operators:
            return
        self.namespace = operators[0]["metadata"]["namespace"]  # the operator runs its operands beside itself
        for policy in self.store.list("nvidia.com/v1", "ClusterPolicy"):
            if event.kind != "DaemonSet" and event.type != "DELETED":
                self._reconcile_operands(policy)
            self._set_state(policy)

    def _reconcile_operands(self, policy):
        spec = policy.get("spec") or {}
        for component, name in self._operands():
            existing = self.store.get("apps/v1", "DaemonSet", name, self.namespace)
            if not _enabled(spec, component):
                if existing is not None:  # a disabled operand goes away, and its pods with it (GC)
                    self.store.delete("apps/v1", "DaemonSet", name, self.namespace)
                continue
            template = self._template(spec, component, name)
            if existing is not None:
                if component == "driver" and existing["spec"].get("template") != template:
                    # A new driver version re-renders the template; OnDelete: the pods stay until replaced
                    # (local_gpu_cluster/driver_upgrade.py plays the operator's upgrade controller that replaces them).
                    self.store.modify("apps/v1", "DaemonSet", name, lambda ds, t=template: _set_template(ds, t),
                                      self.namespace)
                continue
            daemonset_spec = {"selector": {"matchLabels": {"app": name}}, "template": template}
            if component == "driver":
                daemonset_spec["updateStrategy"] = {"type": "OnDelete"}  # as the operator renders its driver
            self.store.create({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": self.namespace, "labels": {"app": name},
                             "ownerReferences": [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                                                  "name": policy["metadata"]["name"],
                                                  "uid": policy["metadata"]["uid"], "controller": True}]},
                "spec": daemonset_spec,
            })
            if component == "driver":
                self._driver_pods(self.store.get("apps/v1", "DaemonSet", name, self.namespace))

    def _operands(self):
        return OPERANDS

    def _template(self, spec, component, name):
        labels = {"app": name, "app.kubernetes.io/part-of": "nvidia-gpu"}
        if name in self.never_ready:
            labels[NEVER_READY] = "true"
        # As the real operator does: the operand's image from its ClusterPolicy section's repository (the chart's
        # default nvcr.io/nvidia, or a mirror the platform set).
        repository = (spec.get(component) or {}).get("repository") or "nvcr.io/nvidia"
        image = "%s/%s" % (repository, name)
        version = (spec.get("driver") or {}).get("version") if component == "driver" else None
        if version:
            image = "%s/driver:%s-ubuntu24.04" % (repository, version)
        return {"metadata": {"labels": labels},
                "spec": {"nodeSelector": {GPU_NODE_LABEL: "true"}, "containers": [{"name": name, "image": image}]}}

    def _driver_pods(self, daemonset):
        """The driver container's pods, one per GPU node, as gpu_driver_mode finds them."""
        for node in self.store.list("v1", "Node", label_selector=GPU_NODE_LABEL + "=true"):
            self.store.create(driver_pod(daemonset, node["metadata"]["name"]))

    def _set_state(self, policy):
        operands = [ds for ds in self.store.list("apps/v1", "DaemonSet", self.namespace)
                    if (ds["metadata"].get("labels") or {}).get("app") in {name for _component, name in self._operands()}]
        ready = bool(operands) and all(
            (ds.get("status") or {}).get("numberReady", 0) >= (ds.get("status") or {}).get("desiredNumberScheduled", 1)
            for ds in operands)
        state = "ready" if ready else "notReady"
        if (policy.get("status") or {}).get("state") != state:
            set_status(self.store, policy, dict(policy.get("status") or {}, state=state, namespace=self.namespace))


def _set_template(daemonset, template):
    daemonset["spec"]["template"] = template
    return daemonset


def driver_pod(daemonset, node_name):
    """A driver pod of ``daemonset``'s current template on ``node_name``, labelled as a DaemonSet's pods are
    (``pod-template-generation``); its image carries the template's driver version tag."""
    meta = daemonset["metadata"]
    containers = daemonset["spec"]["template"]["spec"]["containers"]
    image = containers[0]["image"] if ":" in containers[0]["image"] else "nvcr.io/nvidia/driver"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "%s-%s" % (meta["name"], node_name), "namespace": meta["namespace"],
                     "labels": {"app": meta["name"], "pod-template-generation": str(meta.get("generation", 1))},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True}]},
        "spec": {"nodeName": node_name, "containers": [{"name": "nvidia-driver-ctr", "image": image}]},
        "status": {"phase": "Running"},
    }


class SimulatedDevicePlugin(Controller):
    """The NVIDIA device plugin's view of time-slicing: a node advertises GPUs x replicas of its config.

    As in gpu-operator#1144, the plugin reads the ConfigMap only when its pods (re)start: the content
    is taken when the device-plugin DaemonSet's pod template changes, not when the ConfigMap does.
    The node label ``nvidia.com/device-plugin.config`` picks the config (``default`` when unset).
    A node whose MIG layout (MIG_LAYOUTS) reached ``success`` advertises its MIG instances instead, as
    ``nvidia.com/gpu`` (single strategy) or ``nvidia.com/mig-<profile>`` (mixed), per the ClusterPolicy.
    """

    watches = frozenset({("", "Node"), ("apps", "DaemonSet")})
    DAEMONSET = "nvidia-device-plugin-daemonset"
    # The fake's own MIG facts (NVIDIA MIG user guide, A100-80GB), independent of the collection's catalog:
    # layout -> (profile, instances per GPU).
    MIG_LAYOUTS = {"all-1g.10gb": ("1g.10gb", 7), "all-3g.40gb": ("3g.40gb", 2)}

    def __init__(self, config_map="time-slicing-config"):
        self.config_map = config_map
        self.loaded = None  # the ConfigMap data the running plugin pods read
        self.template = None

    def handle(self, event):
        if event.kind == "DaemonSet":
            if event.name != self.DAEMONSET or event.type == "DELETED":
                return
            template = (event.obj.get("spec") or {}).get("template")
            if template != self.template:  # a rollout: the new pods read the ConfigMap now
                self.template = template
                cm = self.store.get("v1", "ConfigMap", self.config_map, event.namespace)
                self.loaded = (cm or {}).get("data") or {}
            for node in self.store.list("v1", "Node"):
                self._advertise(node)
        elif event.type != "DELETED":  # a node's own change (its labels) concerns that node alone
            node = self.store.get("v1", "Node", event.name)
            if node is not None:
                self._advertise(node)

    def _advertise(self, node):
        labels = node["metadata"].get("labels") or {}
        if labels.get(GPU_NODE_LABEL) != "true" or self.loaded is None:
            return
        gpus = int(labels.get("nvidia.com/gpu.count", "0"))
        text = self.loaded.get(labels.get("nvidia.com/device-plugin.config", "default"))
        resources = {"nvidia.com/gpu": str(gpus)}
        layout = self.MIG_LAYOUTS.get(labels.get("nvidia.com/mig.config"))
        if layout and labels.get("nvidia.com/mig.config.state") == "success":
            policies = self.store.list("nvidia.com/v1", "ClusterPolicy")
            strategy = ((policies[0].get("spec") or {}).get("mig") or {}).get("strategy") if policies else "single"
            count = str(gpus * layout[1])
            resources = {"nvidia.com/gpu": count} if strategy == "single" else {"nvidia.com/mig-" + layout[0]: count,
                                                                                "nvidia.com/gpu": "0"}
        elif text:
            slicing = (json.loads(text).get("sharing") or {}).get("timeSlicing") or {}
            for resource in slicing.get("resources") or []:
                name = resource["name"] + (".shared" if slicing.get("renameByDefault") else "")
                resources = {name: str(gpus * int(resource["replicas"]))}
                if slicing.get("renameByDefault"):
                    resources["nvidia.com/gpu"] = "0"
        status = node.get("status") or {}
        allocatable = {k: v for k, v in (status.get("allocatable") or {}).items() if not k.startswith("nvidia.com/gpu")}
        allocatable.update(resources)
        if allocatable != status.get("allocatable"):
            set_status(self.store, node, dict(status, allocatable=allocatable, capacity=dict(allocatable)))
