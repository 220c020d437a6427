"""Node agents: what happens on a GPU node while a component's pod runs there, played on KWOK nodes.

``NodeAgents`` is one controller (run by ``live.py`` against the local control plane) for every agent in
``AGENTS``. An agent acts on a node only while a pod of its component runs there (placed by the real DaemonSet
controller and scheduler, run by KWOK), reads the node's declared hardware (``fake.gpu-platform.io/hardware``,
``local_gpu_cluster/fleet.py``) and its component's own configuration, and stops acting when the pod goes:

* ``nfd-worker``: ``feature.node.kubernetes.io/*`` (PCI vendors, kernel, OS release, RDMA);
* ``gpu-feature-discovery``: ``nvidia.com/gpu.*`` and the MIG and time-slicing labels, once a driver is loaded;
* ``device-plugin``: allocatable ``nvidia.com/gpu`` (MIG instances, time-slicing replicas from the config its pod
  read when it started), not on a node labelled ``nvidia.com/gpu.deploy.device-plugin=false``;
* ``driver``: the GPU Operator's driver container (a driver the host or the provider loaded is declared instead);
* ``doca-driver``: the Network Operator's NIC driver;
* ``peermem``: the loader's pod is Ready only where a driver with RDMA and the NIC driver run;
* ``mig-manager``: ``nvidia.com/mig.config`` -> ``nvidia.com/mig.config.state`` pending, then ``success`` or
  ``failed`` (a layout the mig-parted ConfigMap lacks, or one the node's GPU cannot take);
* ``rdma-shared-device-plugin``, ``sriov-device-plugin``: ``rdma/*`` allocatable from the NicClusterPolicy's
  config and the node's NICs;
* ``dra-kubelet-plugin``: the DRA driver's kubelet plugin; Ready once a driver is found under its
  ``NVIDIA_DRIVER_ROOT`` (``/`` for a host's or provider's driver, ``/run/nvidia/driver`` for the operator's), then
  the node's ResourceSlice of driver ``gpu.nvidia.com`` (one device per GPU, from the declared hardware), which the
  real scheduler allocates claims from; the slice goes when the pod does.

What an agent added is recorded on the node (``fake.gpu-platform.io/agent-effects``), so that it is taken away
again when the component stops, and only that: a label the node had already is left alone.

Faults: the ConfigMap ``kube-system/fake-node-agent-faults`` maps ``<agent>`` (every node) or
``<agent>.<node>`` to a state: ``never-ready`` (the pod runs, never Ready, no effect), ``stuck`` (the container
restarts: CrashLoopBackOff, no effect), ``failed`` (as stuck; the MIG manager ends ``failed``), ``slow`` (the
effects come ``SLOW_SECONDS`` after the pod started) or ``ok``. ``make cluster-fault FAULT=<agent>:<state>[:<node>]``
writes it.
"""

import calendar
import json
import time

from . import node_agent_effects as effects
from .controller_base import Controller, finish_deletion, set_pod_ready

HARDWARE = "fake.gpu-platform.io/hardware"
EFFECTS = "fake.gpu-platform.io/agent-effects"
FAULTS = ("kube-system", "fake-node-agent-faults")
FAULT_STATES = ("ok", "never-ready", "stuck", "failed", "slow")
SLOW_SECONDS = 20.0
MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
DEPLOY_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
MELLANOX = "feature.node.kubernetes.io/pci-15b3.present"

# agent -> the labels of its component's pods (every one must match; a value ending in "*" is a prefix), or a tuple
# of such label sets, one per release that labels them differently
AGENTS = {
    "nfd-worker": {"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"},
    "gpu-feature-discovery": {"app": "gpu-feature-discovery"},
    "device-plugin": {"app": "nvidia-device-plugin-daemonset"},
    "mig-manager": {"app": "nvidia-mig-manager"},
    "driver": {"app": "nvidia-driver-daemonset"},
    "doca-driver": {"app": "mofed-*"},
    "peermem": {"app.kubernetes.io/name": "nvidia-peermem-loader"},
    "rdma-shared-device-plugin": {"app": "rdma-shared-dp"},
    "sriov-device-plugin": {"app": "sriovdp"},
    # the chart's selector label is named after the chart: nvidia-dra-driver-gpu until 25.12.0, dra-driver-nvidia-gpu
    # from 0.4.0
    "dra-kubelet-plugin": ({"nvidia-dra-driver-gpu-component": "kubelet-plugin"},
                           {"dra-driver-nvidia-gpu-component": "kubelet-plugin"}),
}
RESOURCE_API = "resource.k8s.io/v1"
HOST_DRIVER_ROOT, OPERATOR_DRIVER_ROOT = "/", "/run/nvidia/driver"


def agent_of(pod):
    labels = pod["metadata"].get("labels") or {}
    for agent, wanted in AGENTS.items():
        for labelled in wanted if isinstance(wanted, tuple) else (wanted,):
            if all(labels.get(k) == v or (v.endswith("*") and (labels.get(k) or "").startswith(v[:-1]))
                   for k, v in labelled.items()):
                return agent
    return None


def fault_state(data, agent, node):
    """The fault set for ``agent`` on ``node`` (the node's own entry first), ``ok`` when none."""
    data = data or {}
    state = data.get("%s.%s" % (agent, node)) or data.get(agent) or "ok"
    return state if state in FAULT_STATES else "ok"


def parse_fault(text):
    """``<agent>:<state>[:<node>]`` -> (configmap key, state); a ValueError names what is wrong."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError("FAULT=%r: write <agent>:<state>[:<node>]" % text)
    agent, state = parts[0], parts[1]
    if agent not in AGENTS:
        raise ValueError("FAULT=%r: %r is not an agent; one of %s" % (text, agent, ", ".join(sorted(AGENTS))))
    if state not in FAULT_STATES:
        raise ValueError("FAULT=%r: %r is not a fault state; one of %s" % (text, state, ", ".join(FAULT_STATES)))
    return (agent if len(parts) == 2 else "%s.%s" % (agent, parts[2])), state


def _running(pod):
    return (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def _started(pod):
    text = (pod.get("status") or {}).get("startTime")
    if not text:
        return time.time()
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


class NodeAgents(Controller):
    """Every node agent, node by node (see the module docstring)."""

    watches = frozenset({("", "Pod"), ("", "Node"), ("", "ConfigMap"), ("nvidia.com", "ClusterPolicy"),
                         ("mellanox.com", "NicClusterPolicy")})

    def __init__(self, mig_delay=1.0, slow_seconds=SLOW_SECONDS):
        self.mig_delay, self.slow_seconds = mig_delay, slow_seconds
        self.faults = {}
        self.cluster_policy = None
        self.nic_policy = None
        self.loaded = {}  # device plugin pod uid -> the ConfigMap data it read when it started
        self.mig_seen = {}  # node -> the mig.config value the MIG manager took
        self.timers = set()

    # ------------------------------------------------------------ events

    def handle(self, event):
        if event.kind == "Pod":
            nodes = {((o or {}).get("spec") or {}).get("nodeName") for o in (event.obj, event.old)}
            if not any(agent_of(o) for o in (event.obj, event.old) if o):
                return
            finish_deletion(self.store, event)
        elif event.kind == "Node":
            nodes = {event.name} if event.type != "DELETED" else set()
        elif event.kind == "ConfigMap":
            # Only the faults are read as they change: a component's own ConfigMap is read when it acts (the device
            # plugin when its pod starts, the MIG manager when a layout is asked for), as the real ones do.
            if (event.namespace, event.name) != FAULTS:
                return
            self.faults = dict(event.obj.get("data") or {}) if event.type != "DELETED" else {}
            nodes = self._all_nodes()
        else:
            obj = event.obj if event.type != "DELETED" else None
            setattr(self, "cluster_policy" if event.kind == "ClusterPolicy" else "nic_policy", obj)
            if event.type == "MODIFIED" and (event.old or {}).get("spec") == event.obj.get("spec"):
                return  # a status the operator wrote: nothing an agent reads changed
            nodes = self._all_nodes()
        for name in sorted(n for n in nodes if n):
            self.reconcile(name)

    def _all_nodes(self):
        return [n["metadata"]["name"] for n in self.store.list("v1", "Node")]

    def _later(self, delay, name):
        if (name, round(delay)) in self.timers:
            return
        self.timers.add((name, round(delay)))

        def run():
            self.timers.discard((name, round(delay)))
            self.reconcile(name)
        self.clock.call_later(delay, run)

    # ------------------------------------------------------------ one node

    def reconcile(self, name):
        node = self.store.get("v1", "Node", name)
        hardware_text = ((node or {}).get("metadata", {}).get("annotations") or {}).get(HARDWARE)
        if not hardware_text:
            return
        hardware = json.loads(hardware_text)
        pods = {}
        for pod in self.store.list("v1", "Pod", field_selector="spec.nodeName=" + name):
            agent = agent_of(pod)
            if agent and _running(pod):
                pods[agent] = pod
        healthy = self._health(node, hardware, pods)
        record = json.loads((node["metadata"].get("annotations") or {}).get(EFFECTS) or "{}")
        mig = self._mig(node, hardware, pods, healthy, record)
        labels, resources = self._effects(node, hardware, pods, healthy, mig)
        self._write(node, labels, resources, dict(record, mig=mig))
        self._resource_slice(node, hardware, healthy, mig)

    def _health(self, node, hardware, pods):
        """{agent: healthy} for the agents whose pod runs here; sets each pod's readiness to match."""
        name = node["metadata"]["name"]
        mellanox = (node["metadata"].get("labels") or {}).get(MELLANOX) == "true"
        rdma_driver = effects.rdma_driver(self._policy_spec())
        healthy = {}
        for agent in ("nfd-worker", "doca-driver", "driver", "gpu-feature-discovery", "device-plugin",
                      "mig-manager", "rdma-shared-device-plugin", "sriov-device-plugin", "peermem",
                      "dra-kubelet-plugin"):
            pod = pods.get(agent)
            if pod is None:
                continue
            state = fault_state(self.faults, agent, name)
            reason = None
            if state in ("stuck", "failed"):
                reason = ("CrashLoopBackOff", "%s on %s: fault %s" % (agent, name, state))
            elif state == "never-ready":
                reason = ("Running", "%s on %s: fault never-ready" % (agent, name))
            elif state == "slow" and time.time() - _started(pod) < self.slow_seconds:
                reason = ("Running", "%s on %s: starting (fault slow)" % (agent, name))
                self._later(self.slow_seconds - (time.time() - _started(pod)) + 0.5, name)
            elif agent == "driver" and rdma_driver and mellanox and not (hardware.get("nic_driver")
                                                                         or healthy.get("doca-driver")):
                # driver.rdma.enabled: the driver pod's mofed-validation waits for the NIC driver where NFD found a
                # Mellanox device (gpu-operator v26.3.3 cmd/nvidia-validator: no such label, no wait)
                reason = ("PodInitializing", "driver on %s: waiting for the NIC driver (driver.rdma.enabled)" % name)
            elif agent == "peermem":
                reason = self._peermem_blocked(name, hardware, healthy, rdma_driver)
            elif agent == "dra-kubelet-plugin":
                reason = self._driver_root_blocked(name, hardware, healthy, pod)
            healthy[agent] = reason is None
            set_pod_ready(self.store, pod, reason)
        return healthy

    @staticmethod
    def _peermem_blocked(name, hardware, healthy, rdma_driver):
        driver = hardware.get("driver") or healthy.get("driver")
        rdma = bool((hardware.get("driver") or {}).get("rdma")) or (healthy.get("driver") and rdma_driver)
        nic = hardware.get("nic_driver") or healthy.get("doca-driver")
        if not driver:
            return ("CrashLoopBackOff", "modprobe nvidia-peermem on %s: no NVIDIA driver loaded" % name)
        if not nic:
            return ("CrashLoopBackOff", "modprobe nvidia-peermem on %s: ib_core is not the NIC driver's (no DOCA/"
                                        "MOFED driver runs)" % name)
        if not rdma:
            return ("CrashLoopBackOff", "modprobe nvidia-peermem on %s: the driver was built without RDMA" % name)
        return None

    @staticmethod
    def _driver_root_blocked(name, hardware, healthy, pod):
        """The kubelet plugin's init container waits until the driver is under NVIDIA_DRIVER_ROOT (its pod spec)."""
        root = next((e.get("value") for c in (pod.get("spec") or {}).get("initContainers") or []
                     for e in c.get("env") or [] if e.get("name") == "NVIDIA_DRIVER_ROOT"), None) or HOST_DRIVER_ROOT
        found = HOST_DRIVER_ROOT if hardware.get("driver") else OPERATOR_DRIVER_ROOT if healthy.get("driver") else None
        if found is None:
            return ("PodInitializing", "kubelet-plugin-prestart on %s: no NVIDIA driver loaded" % name)
        if root.rstrip("/") != found.rstrip("/"):
            return ("PodInitializing", "kubelet-plugin-prestart on %s: no driver under NVIDIA_DRIVER_ROOT=%s (the driver "
                                       "is at %s)" % (name, root, found))
        return None

    def _policy_spec(self):
        return (self.cluster_policy or {}).get("spec") or {}

    def _config_map(self, namespace, name):
        found = self.store.get("v1", "ConfigMap", name, namespace) if name else None
        return (found or {}).get("data") or {}

    def _mig(self, node, hardware, pods, healthy, record):
        """The MIG manager: {profile: instances per GPU} applied on the node (from the record)."""
        name, labels = node["metadata"]["name"], node["metadata"].get("labels") or {}
        applied = record.get("mig") or {}
        wanted = labels.get(MIG_CONFIG)
        pod = pods.get("mig-manager")
        if pod is None or not wanted or self.mig_seen.get(name) == (wanted, pod["metadata"]["uid"]):
            return applied
        if labels.get(MIG_STATE) in ("success", "failed") and record.get("mig_layout") == wanted:
            self.mig_seen[name] = (wanted, pod["metadata"]["uid"])
            return applied
        if labels.get(MIG_STATE) != "pending":
            self.store.set_labels("v1", "Node", name, {MIG_STATE: "pending"})
            self._later(self.mig_delay, name)
            return applied
        if fault_state(self.faults, "mig-manager", name) in ("stuck", "never-ready"):
            return applied
        config_name = ((self._policy_spec().get("migManager") or {}).get("config") or {}).get("name") \
            or "default-mig-parted-config"
        text = self._config_map(pod["metadata"]["namespace"], config_name).get("config.yaml")
        if text is None:
            outcome, detail = "failed", "no ConfigMap %s/%s" % (pod["metadata"]["namespace"], config_name)
        else:
            outcome, detail = effects.mig_layout(hardware, text, wanted)
        if fault_state(self.faults, "mig-manager", name) == "failed":
            outcome, detail = "failed", "fault failed"
        self.mig_seen[name] = (wanted, pod["metadata"]["uid"])
        if outcome == "success":
            applied = detail
        record["mig_layout"] = wanted
        self.store.set_labels("v1", "Node", name, {MIG_STATE: outcome})
        return applied

    def _driver(self, hardware, healthy):
        """(whether a driver is loaded on the node, its version): the host's or provider's, else the operator's."""
        driver = hardware.get("driver") or {}
        return bool(driver) or bool(healthy.get("driver")), \
            driver.get("version") or (self._policy_spec().get("driver") or {}).get("version")

    def _effects(self, node, hardware, pods, healthy, mig):
        labels_now = node["metadata"].get("labels") or {}
        spec = self._policy_spec()
        strategy = (spec.get("mig") or {}).get("strategy") or "single"
        driver_loaded, version = self._driver(hardware, healthy)
        labels, resources = {}, {}
        if healthy.get("nfd-worker"):
            labels.update(effects.nfd_labels(hardware))
        replicas = None
        plugin = pods.get("device-plugin")
        if plugin is not None and healthy.get("device-plugin"):
            uid = plugin["metadata"]["uid"]
            if uid not in self.loaded:  # the plugin reads its config when it starts (gpu-operator#1144)
                config = (spec.get("devicePlugin") or {}).get("config") or {}
                self.loaded[uid] = (self._config_map(plugin["metadata"]["namespace"], config.get("name")),
                                    config.get("default") or "default")
            data, default = self.loaded[uid]
            key = labels_now.get("nvidia.com/device-plugin.config") or default
            replicas = effects.sharing_replicas(data.get(key), key)
        if healthy.get("gpu-feature-discovery") and driver_loaded:
            labels.update(effects.gfd_labels(dict(hardware, driver_version=version), mig, strategy, replicas))
        if healthy.get("device-plugin") and driver_loaded and labels_now.get(DEPLOY_DEVICE_PLUGIN) != "false":
            resources.update(effects.device_plugin_resources(hardware, mig, strategy, replicas))
        nic_spec = (self.nic_policy or {}).get("spec") or {}
        if healthy.get("rdma-shared-device-plugin"):
            resources.update(effects.rdma_shared_resources(
                hardware, (nic_spec.get("rdmaSharedDevicePlugin") or {}).get("config")))
        if healthy.get("sriov-device-plugin"):
            resources.update(effects.sriov_resources(hardware, (nic_spec.get("sriovDevicePlugin") or {}).get("config")))
        return labels, resources

    def _resource_slice(self, node, hardware, healthy, mig):
        """The kubelet plugin's ResourceSlice of the node (pool = node), while its pod is healthy; none otherwise."""
        name = node["metadata"]["name"]
        try:
            found = self.store.list(RESOURCE_API, "ResourceSlice", field_selector="spec.nodeName=" + name)
        except Exception:  # noqa: BLE001 - a server without resource.k8s.io/v1 has no DRA to play
            return
        found = [s for s in found if (s.get("spec") or {}).get("driver") == effects.DRA_DRIVER]
        if not healthy.get("dra-kubelet-plugin"):  # the kubelet removes a plugin's slices when it goes
            for stale in found:
                self.store.delete(RESOURCE_API, "ResourceSlice", stale["metadata"]["name"])
            return
        devices = effects.dra_devices(hardware, name, self._driver(hardware, healthy)[1], mig)
        if not found:
            meta = node["metadata"]
            self.store.create({"apiVersion": RESOURCE_API, "kind": "ResourceSlice", "metadata": {
                "name": "%s-%s" % (name, effects.DRA_DRIVER), "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta["uid"], "controller": True}]},
                "spec": {"driver": effects.DRA_DRIVER, "nodeName": name, "devices": devices,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}}})
            return
        shape = [(d.get("name"), d.get("attributes"), d.get("capacity")) for d in devices]
        if [(d.get("name"), d.get("attributes"), d.get("capacity")) for d in found[0]["spec"].get("devices") or []] \
                == shape:
            return

        def change(current):
            current["spec"]["devices"] = devices
            pool = current["spec"].setdefault("pool", {})
            pool["generation"] = int(pool.get("generation", 0)) + 1  # a new generation of the pool's devices
            return current
        self.store.modify(RESOURCE_API, "ResourceSlice", found[0]["metadata"]["name"], change)

    # ------------------------------------------------------------ writes

    def _write(self, node, labels, resources, record):
        meta = node["metadata"]
        current = meta.get("labels") or {}
        owned = record.get("labels") or {}
        patch = {}
        for key, value in owned.items():
            if key not in labels and current.get(key) == value:
                patch[key] = None
        new_owned = {}
        for key, value in labels.items():
            if current.get(key) != value:
                patch[key] = value
                new_owned[key] = value
            elif key in owned:
                new_owned[key] = value
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        owned_resources = record.get("resources") or {}
        changes = {key: None for key in owned_resources if key not in resources and key in allocatable}
        new_resources = {}
        for key, value in resources.items():
            if allocatable.get(key) != value or key in owned_resources:
                new_resources[key] = value
            if allocatable.get(key) != value:
                changes[key] = value
        record = dict(record, labels=new_owned, resources=new_resources)
        text = json.dumps(record, sort_keys=True)
        body = {}
        if patch:
            body["labels"] = patch
        if text != (meta.get("annotations") or {}).get(EFFECTS):
            body["annotations"] = {EFFECTS: text}
        if body:
            self.store.patch("v1", "Node", meta["name"], {"metadata": body})
        if changes:  # a device plugin's resources are the node's capacity and allocatable alike (JSON merge: None removes)
            self.store.patch_status("v1", "Node", meta["name"], {"allocatable": changes, "capacity": changes})
