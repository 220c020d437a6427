"""The smoke tests' logs on the local cluster, from each pod's node and what it was given (``node_agent_logs.py``).

``SmokeLogs`` watches the pods labelled ``gpu-platform.io/smoke``. When one runs (or has run) on a node, it writes
each container's log into ``<logs_dir>/<namespace>_<pod>/<container>.log`` and a KWOK ``Logs`` object named after
the pod (KWOK, started with ``--enable-crds=Logs``, serves a pod's logs from the files such an object names), and
removes both with the pod. What a log says is read from the cluster at that moment, never canned:

* ``nvidia-smi``: the GPUs the pod's limits hold, the node's product, a driver only where one is loaded (declared by
  the node, or the driver pod Ready there);
* ``mpirun`` (the NCCL launcher): GPUDirect RDMA over InfiniBand only when every worker holds an RDMA resource its
  node advertises, every worker's node has a path for it (nvidia-peermem loaded, or DMA-BUF: the open kernel modules,
  Linux 5.12+, a Turing-or-newer GPU) and the NicClusterPolicy is ready, with NCCL's line per path each node offers;
  the bus bandwidth from the nodes' NICs;
* ``gang-member``: the pod's own start time.
"""

import json
import shutil
import time
from pathlib import Path

from . import node_agent_logs as logs
from .node_agent_effects import rdma_driver
from .controller_base import Controller, pod_ready
from .node_agents import HARDWARE, agent_of

SMOKE = "gpu-platform.io/smoke"
TASK = "gpu-platform.io/smoke-task"
LOGS_API = ("kwok.x-k8s.io/v1alpha1", "Logs")
LOGS_WRITTEN = "fake.gpu-platform.io/logs"  # KWOK completes a smoke pod only once this is set (fleet.STAGES)


def _limits(pod):
    out = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for key, value in ((container.get("resources") or {}).get("limits") or {}).items():
            out[key] = out.get(key, 0) + (int(value) if str(value).isdigit() else 0)
    return out


class SmokeLogs(Controller):
    """Smoke pods' logs, written as they run (see the module docstring)."""

    watches = frozenset({("", "Pod")})
    LABEL = SMOKE  # the pods whose logs this writes

    def __init__(self, logs_dir):
        self.logs_dir = Path(logs_dir) if logs_dir else None
        self.written = {}  # pod uid -> (namespace, name)
        self.undecided = {}  # pod uid -> (namespace, name): running, its log not decidable yet

    def handle(self, event):
        pod = event.obj
        if not ((pod["metadata"].get("labels") or {}).get(self.LABEL)) or self.logs_dir is None:
            return
        uid = pod["metadata"]["uid"]
        if event.type == "DELETED":
            self.undecided.pop(uid, None)
            self._forget(uid)
            return
        self._consider(pod)
        # a pod's log may wait on others (the NCCL launcher on its workers' placement), and a gang scheduler binds
        # them all at once: the launcher's own events may all come before its workers are placed
        for other, (namespace, name) in list(self.undecided.items()):
            if other != uid:
                waiting = self.store.get("v1", "Pod", name, namespace)
                if waiting is None or waiting["metadata"]["uid"] != other:
                    self.undecided.pop(other, None)
                else:
                    self._consider(waiting)

    def _consider(self, pod):
        uid = pod["metadata"]["uid"]
        phase = (pod.get("status") or {}).get("phase")
        if uid in self.written or phase not in ("Running", "Succeeded", "Failed") or not pod["spec"].get("nodeName"):
            return
        texts = {}
        for container in pod["spec"].get("containers") or []:
            text = self._log(pod, container["name"])
            if text is None:  # not decidable yet (the NCCL workers not placed): looked at again on the next event
                self.undecided[uid] = (pod["metadata"]["namespace"], pod["metadata"]["name"])
                return
            texts[container["name"]] = text
        self.undecided.pop(uid, None)
        self._write(pod, texts)

    # ------------------------------------------------------------ what the cluster says

    def _node(self, name):
        node = self.store.get("v1", "Node", name)
        text = ((node or {}).get("metadata", {}).get("annotations") or {}).get(HARDWARE)
        return node, (json.loads(text) if text else {})

    def _ready_agents(self, node_name):
        pods = self.store.list("v1", "Pod", field_selector="spec.nodeName=" + node_name)
        return {agent_of(p) for p in pods if agent_of(p) and pod_ready(p)}

    def _cluster_policy(self):
        try:
            found = self.store.list("nvidia.com/v1", "ClusterPolicy")
        except Exception:  # noqa: BLE001 - not served: no GPU Operator
            return {}
        return (found[0].get("spec") or {}) if found else {}

    def _driver(self, hardware, ready):
        declared = hardware.get("driver") or {}
        if declared:
            return declared.get("version")
        return ((self._cluster_policy().get("driver") or {}).get("version") or "580.126.20") \
            if "driver" in ready else None

    def _peermem(self, node, hardware, ready):
        declared = hardware.get("driver") or {}
        if declared.get("rdma") and hardware.get("nic_driver"):
            return True
        if "peermem" in ready:
            return True
        rdma = rdma_driver(self._cluster_policy())
        nic = hardware.get("nic_driver") or "doca-driver" in ready
        return bool("driver" in ready and rdma and nic)

    def _dmabuf(self, hardware, ready):
        """Why DMA-BUF cannot carry GPUDirect RDMA on the node, or '' where it can: the driver loaded there is the
        open kernel modules (declared by the node; the operator's, by its ClusterPolicy's driver.kernelModuleType,
        auto being open from branch R570), its kernel is 5.12 or newer, its GPUs Turing or newer (compute capability
        7.5), and its NIC driver runs (NVIDIA/cloud-native-docs gpu-operator-rdma.rst, "Common Prerequisites")."""
        declared = hardware.get("driver") or {}
        if declared:
            flavour = "open" if declared.get("open") else "proprietary"
        elif "driver" in ready:
            driver = self._cluster_policy().get("driver") or {}
            flavour = driver.get("kernelModuleType") or "auto"
            if flavour == "auto":
                branch = str(self._driver(hardware, ready) or "").partition(".")[0]
                flavour = "open" if branch.isdigit() and int(branch) >= 570 else "proprietary"
        else:
            return "no driver is loaded"
        release = str(hardware.get("kernel") or "").partition("-")[0].split(".")
        kernel = tuple(int(p) for p in release[:2] if p.isdigit())
        compute = tuple((hardware.get("gpus") or {}).get("compute") or (0, 0))
        if flavour != "open":
            return "the driver is the proprietary kernel module"
        if kernel < (5, 12):
            return "kernel %s is older than 5.12" % hardware.get("kernel")
        if compute < (7, 5):
            return "its GPUs are older than Turing"
        if not (hardware.get("nic_driver") or "doca-driver" in ready):
            return "no NIC driver runs"
        return ""

    def _gdr_paths(self, node, hardware, ready):
        """The GPUDirect RDMA paths NCCL finds on the node, and why DMA-BUF is not one ('' where it is)."""
        why = self._dmabuf(hardware, ready)
        paths = ({"peermem"} if self._peermem(node, hardware, ready) else set()) | (set() if why else {"dmabuf"})
        return paths, why

    def _log(self, pod, container):
        node, hardware = self._node(pod["spec"]["nodeName"])
        if container == "nvidia-smi":
            limits = _limits(pod)
            gpus = sum(v for k, v in limits.items() if k.startswith("nvidia.com/gpu") or k.startswith("nvidia.com/mig-"))
            gpus += self._claimed(pod)
            return logs.nvidia_smi(hardware, gpus, self._driver(hardware, self._ready_agents(node["metadata"]["name"])))
        if container == "gang-member":
            return logs.gang_member(self._start_time(pod), node["metadata"]["name"])
        if container == "mpirun":
            return self._nccl(pod)
        return ""

    def _claimed(self, pod):
        """The GPUs the DRA driver allocated to the pod's ResourceClaims (their status.allocation)."""
        names = [s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []]
        names += [c.get("resourceClaimName") for c in (pod.get("spec") or {}).get("resourceClaims") or []]
        count = 0
        for name in sorted({n for n in names if n}):
            claim = self.store.get("resource.k8s.io/v1", "ResourceClaim", name, pod["metadata"]["namespace"])
            results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            count += sum(1 for r in results or [] if r.get("driver") == "gpu.nvidia.com")
        return count

    @staticmethod
    def _start_time(pod):
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            state = status.get("state") or {}
            started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
            if started:
                return started
        return (pod.get("status") or {}).get("startTime") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def _nccl(self, launcher):
        meta = launcher["metadata"]
        selector = "%s=%s,%s=worker" % (SMOKE, meta["labels"][SMOKE], TASK)
        workers = [p for p in self.store.list("v1", "Pod", meta["namespace"], label_selector=selector)
                   if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
        if len(workers) < 2:
            return None
        blocked, hardwares, paths = [], [], []
        for worker in sorted(workers, key=lambda p: p["metadata"]["name"]):
            name, node_name = worker["metadata"]["name"], worker["spec"]["nodeName"]
            node, hardware = self._node(node_name)
            hardwares.append(hardware)
            ready = self._ready_agents(node_name)
            rdma = [k for k in _limits(worker) if k.startswith("rdma/") or k.endswith("/ib")]
            advertised = (node.get("status") or {}).get("allocatable") or {}
            if not rdma:
                blocked.append("worker %s holds no RDMA device (no rdma/* in its limits)" % name)
            for resource in rdma:
                if advertised.get(resource, "0") in ("0", 0):
                    blocked.append("node %s advertises no %s" % (node_name, resource))
            offered, why = self._gdr_paths(node, hardware, ready)
            paths.append(offered)
            if not offered:
                blocked.append("nvidia-peermem is not loaded on node %s, and DMA-BUF cannot work there (%s)"
                               % (node_name, why))
        try:
            policies = self.store.list("mellanox.com/v1alpha1", "NicClusterPolicy")
        except Exception:  # noqa: BLE001 - not served: no Network Operator
            policies = []
        if not any((p.get("status") or {}).get("state") == "ready" for p in policies):
            blocked.append("the NicClusterPolicy is not ready")
        hosts = [w["metadata"]["name"] for w in sorted(workers, key=lambda p: p["metadata"]["name"])]
        return logs.nccl(hosts, blocked, logs.busbw(hardwares), paths)

    # ------------------------------------------------------------ files and the Logs object

    def _write(self, pod, texts):
        meta = pod["metadata"]
        folder = self.logs_dir / ("%s_%s" % (meta["namespace"], meta["name"]))
        folder.mkdir(parents=True, exist_ok=True)
        moment = self._start_time(pod)
        entries = []
        for container, text in sorted(texts.items()):
            path = folder / ("%s.log" % container)
            path.write_text(logs.cri_log(text, moment))
            entries.append({"containers": [container], "logsFile": str(path)})
        try:
            self.store.resource(*LOGS_API)
            served = True
        except Exception:  # noqa: BLE001 - KWOK's Logs CRD is not installed (a fake server): the files stay
            served = False
        if served and self.store.get(*LOGS_API, meta["name"], meta["namespace"]) is None:
            self.store.create({"apiVersion": LOGS_API[0], "kind": LOGS_API[1],
                               "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                               "spec": {"logs": entries}})
        self.store.patch("v1", "Pod", meta["name"], {"metadata": {"annotations": {LOGS_WRITTEN: "written"}}},
                         meta["namespace"])
        # written once the pod says so: a patch refused for now (a webhook down) is tried again (live.py)
        self.written[meta["uid"]] = (meta["namespace"], meta["name"], folder)

    def _forget(self, uid):
        namespace, name, folder = self.written.pop(uid, (None, None, None))
        if name is None:
            return
        shutil.rmtree(folder, ignore_errors=True)
        try:
            if self.store.get(*LOGS_API, name, namespace) is not None:
                self.store.delete(*LOGS_API, name, namespace)
        except Exception:  # noqa: BLE001 - not served, or gone with its namespace
            pass
