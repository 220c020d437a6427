"""The fake GPU fleet: KWOK nodes that declare their hardware, in profiles a provider would hand over.

``CLUSTER_PROFILE`` picks the profile (``PROFILES``; default ``DEFAULT_PROFILE``) and ``CLUSTER_GPU_NODES``
(default 4) the number of GPU nodes, which cycle through the profile's GPU pools; every profile has one CPU-only
system node too. Each node declares its hardware in the annotation ``fake.gpu-platform.io/hardware`` (JSON: GPU
model, count, memory, PCI device, MIG capability; NICs with vendor, device, count and link type; OS, kernel,
container runtime; a driver the provider installed), which the node agents (``local_gpu_cluster/node_agents.py``) read.

* ``aks-nd-h100-v5``: an AKS system pool and a ``Standard_ND96isr_H100_v5`` pool as ``az aks nodepool add
  --gpu-driver none`` leaves it: AKS's own labels only (agent pool, mode, instance type, the accelerator label,
  image version, OS SKU, region and zone), no NFD or GPU label, no GPU or RDMA allocatable. 8 H100 and 8 NDR
  InfiniBand ConnectX-7 NICs per node.
* ``aks-nd-h100-v5-driver``: the same pool with AKS's driver (``--gpu-driver install``): the only evidence AKS
  leaves is on the host (the driver loaded, declared in the hardware); no label says so.
* ``aks-nc-h100-v5``: an AKS system pool and a ``Standard_NC40ads_H100_v5`` pool (``--gpu-driver none``), AKS's
  labels only: one H100 NVL per node and no InfiniBand NIC (the pool ``inventories/aks-no-rdma`` is for).
* ``baremetal``: DGX-like A100 and H100 hosts (8 GPUs, 8 InfiniBand NICs) with kubelet's labels only.
* ``baremetal-driver``: the same hosts as the host tier (``host_driver``, proven on podman hosts in
  ``molecule/hosts``) leaves them: the pinned 580 branch loaded (declared); kubelet's labels only.
* ``mixed`` (the default): bare nodes in the pools the collection's tests use: ``training`` (A100, MIG),
  ``inference`` (H100, time-slicing), ``dra`` (H100, no NIC).
* ``host-drift``: the ``mixed`` pools, the ``inference`` hosts carrying the container toolkit's containerd drop-in
  at version 3 over a version 2 root config (declared under ``host``: what the host preflight's probe reads).
* ``labelled``: the ``mixed`` pools as NFD, GPU Feature Discovery and the device plugins would have left them
  (labels and allocatable set at creation, the hosts' driver declared), for trying a layer on its own.

Taints as providers hand the pools over: the AKS GPU pools carry the taint AKS recommends for them
(``sku=gpu:NoSchedule``, ``az aks nodepool add --node-taints``), the bare-metal GPU hosts ``nvidia.com/gpu:NoSchedule``
as DGX clusters commonly do; ``CLUSTER_SYSTEM_TAINT=1`` gives the system node AKS's ``CriticalAddonsOnly=true:NoSchedule``
of a dedicated system pool. The ``mixed`` pools (the default) and the rest stay untainted, so both paths are proven.
Every node carries KWOK's management annotation, so the real scheduler places pods on them and KWOK plays their
kubelet: pods go Running/Ready, pods of Jobs (and bare ``restartPolicy: Never`` pods, as a smoke test's
``nvidia-smi`` pod) complete, and their logs come from files under ``<state>/pod-logs``.
"""

import json
from pathlib import Path

import yaml

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
HARDWARE_ANNOTATION = "fake.gpu-platform.io/hardware"
SYSTEM_NODE = "system-node-1"
GPUS_PER_NODE = 8
RDMA_RESOURCE = "rdma/shared_ib"  # the RDMA shared device plugin resource nic_cluster_policy names by default
RDMA_SHARED = 63
KUBELET_LABELS = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")
AKS_GPU_TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
DGX_GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SYSTEM_POOL_TAINT = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}

# GPU models: (GFD's product label, memory MiB as nvidia-smi reports it, GFD family, PCI device id, MIG capable,
# CUDA compute capability). Memory: the A100 80GB's 81920 MiB; the H100's 81559 MiB is what the real H100 80GB HBM3
# host in ../shared/real-hosts reports (nvidia-smi -q, FB memory total).
GPUS = {
    "a100": ("NVIDIA-A100-SXM4-80GB", 81920, "ampere", "20b2", True, (8, 0)),
    "h100": ("NVIDIA-H100-80GB-HBM3", 81559, "hopper", "2330", True, (9, 0)),
    # H100 NVL (Azure NC H100 v5): 95830 MiB as nvidia-smi reports it, PCI 0x2321 (pci.ids)
    "h100-nvl": ("NVIDIA-H100-NVL", 95830, "hopper", "2321", True, (9, 0)),
}
# NICs: (PCI vendor, PCI device, model, link type). ConnectX-6 (HDR) in DGX A100, ConnectX-7 (NDR) in DGX H100 and
# Azure ND H100 v5.
NICS = {
    "cx6-ib": ("15b3", "101b", "ConnectX-6", "infiniband"),
    "cx7-ib": ("15b3", "1021", "ConnectX-7", "infiniband"),
}


# containerd 2.0: what Kubernetes 1.35 node images run (the fleets' v1.35.8), and the runtime both GPU Operator lines are
# validated on (v26.3.x: containerd 1.7 to 2.2; v26.7.x: 1.8 to 2.3; domain/platform/support.py).
def hardware(gpu=None, gpus=GPUS_PER_NODE, nic=None, nics=0, os_id="ubuntu", os_version="22.04",
             os_image="Ubuntu 22.04.5 LTS", kernel="5.15.0-1079-azure", runtime="containerd://2.0.5-1",
             driver=None, netdev="ibp%ds0", host=None):
    """One node's declared hardware (what the node agents read). ``host``: the host state the host preflight's probe
    reads beyond what the rest implies (local_gpu_cluster/node_agent_probe.py): ``files`` ({host path: text}, added or
    replacing), ``modules`` (/proc/modules lines loaded besides the driver's), ``absent`` (paths, and all under them,
    the host does not have: ``/lib/modules/<kernel>/build`` for a kernel without headers)."""
    declared = {"os": {"id": os_id, "version_id": os_version, "image": os_image}, "kernel": kernel,
                "runtime": runtime, "gpus": None, "nics": None, "driver": driver}
    if host:
        declared["host"] = host
    if gpu:
        product, memory, family, device, mig, compute = GPUS[gpu]
        declared["gpus"] = {"product": product, "count": gpus, "memory_mib": memory, "family": family,
                            "pci_device": device, "mig_capable": mig, "compute": list(compute)}
    if nic and nics:
        vendor, device, model, link = NICS[nic]
        declared["nics"] = {"vendor": vendor, "device": device, "model": model, "link_type": link, "count": nics,
                            "netdevs": [netdev % index for index in range(nics)]}
    return declared


AKS_KERNEL = "5.15.0-1079-azure"
AKS_IMAGE = "AKSUbuntu-2204gen2containerd-202510.07.0"


def _aks_labels(pool, mode, size, gpu):
    labels = {"agentpool": pool, "kubernetes.azure.com/agentpool": pool, "kubernetes.azure.com/mode": mode,
              "kubernetes.azure.com/role": "agent", "kubernetes.azure.com/cluster": "MC_gpu-rg_gpu-aks_eastus",
              "kubernetes.azure.com/node-image-version": AKS_IMAGE, "kubernetes.azure.com/os-sku": "Ubuntu",
              "kubernetes.azure.com/nodepool-type": "VirtualMachineScaleSets",
              "node.kubernetes.io/instance-type": size, "beta.kubernetes.io/instance-type": size,
              "topology.kubernetes.io/region": "eastus", "topology.kubernetes.io/zone": "0"}
    if gpu:
        labels["kubernetes.azure.com/accelerator"] = "nvidia"
    return labels


def _aks(driver=False, series="nd"):
    """An AKS system pool and one GPU pool: ``nd`` (``Standard_ND96isr_H100_v5``: 8 H100, 8 NDR InfiniBand NICs) or
    ``nc`` (``Standard_NC40ads_H100_v5``: one H100 NVL, no InfiniBand NIC, accelerated networking only)."""
    aks_hw = dict(kernel=AKS_KERNEL, os_image="Ubuntu 22.04.5 LTS")
    # the driver packages ship nvidia-peermem (since R470): it loads once the NIC driver runs
    gpu_driver = {"version": "570.195.03", "installed_by": "aks", "open": True, "rdma": True} if driver else None
    if series == "nc":
        pool = ("aks-nch100-34567890-vmss%06d", _aks_labels("nch100", "user", "Standard_NC40ads_H100_v5", True),
                hardware("h100-nvl", gpus=1, driver=gpu_driver, **aks_hw))
    else:
        pool = ("aks-ndh100-23456789-vmss%06d", _aks_labels("ndh100", "user", "Standard_ND96isr_H100_v5", True),
                hardware("h100", nic="cx7-ib", nics=8, driver=gpu_driver, netdev="ib%d", **aks_hw))
    return {
        "system": ("aks-system-12345678-vmss000000", _aks_labels("system", "system", "Standard_D8ds_v5", False),
                   hardware(**aks_hw)),
        "first": 0,  # a scale set's instances count from 0
        "gpu_pools": [pool],
        "gpu_taints": [AKS_GPU_TAINT],
    }


def _baremetal(driver=False):
    host = dict(kernel="6.8.0-60-generic", os_version="24.04", os_image="Ubuntu 24.04.2 LTS",
                runtime="containerd://2.0.5")
    # what host_driver leaves on a host (inventories/baremetal: gpu_platform_driver_branch "580"), built without RDMA
    # (the inventory's gpu_platform_gpudirect_rdma: false)
    host_driver = {"version": "580.126.20", "installed_by": "host", "open": True} if driver else None
    return {
        "system": ("cpu-01", {}, hardware(**host)),
        "gpu_pools": [("dgx-a100-%02d", {}, hardware("a100", nic="cx6-ib", nics=8, driver=host_driver, **host)),
                      ("dgx-h100-%02d", {}, hardware("h100", nic="cx7-ib", nics=8, driver=host_driver, **host))],
        "gpu_taints": [DGX_GPU_TAINT],
    }


def _mixed():
    host = dict(kernel="6.8.0-1021-azure", os_version="24.04", os_image="Ubuntu 24.04.2 LTS",
                runtime="containerd://2.0.5")
    pool = {"node-role.kubernetes.io/gpu": ""}
    nic = dict(nics=1, netdev="ibs1f%d", **host)
    return {
        "system": (SYSTEM_NODE, {"nodepool": "system", "node-role.kubernetes.io/system": ""}, hardware(**host)),
        "gpu_pools": [("gpu-node-%d", dict(pool, nodepool="training"), hardware("a100", nic="cx6-ib", **nic)),
                      ("gpu-node-%d", dict(pool, nodepool="training"), hardware("a100", nic="cx6-ib", **nic)),
                      ("gpu-node-%d", dict(pool, nodepool="inference"), hardware("h100", nic="cx7-ib", **nic)),
                      ("gpu-node-%d", dict(pool, nodepool="dra"), hardware("h100", **host))],
    }


# What the container toolkit leaves on a host where containerd's root config is at version 2: its drop-in at version 3
# (NVIDIA/nvidia-container-toolkit#1222); containerd refuses it at its next restart.
TOOLKIT_DROP_IN = {"files": {
    "/etc/containerd/config.toml": 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n[plugins]\n',
    "/etc/containerd/conf.d/99-nvidia.toml": "version = 3\n[plugins]\n"}}


def _host_drift():
    """The mixed pools, the inference pool's hosts carrying the toolkit's drop-in above their root config's version."""
    layout = _mixed()
    layout["gpu_pools"] = [(name, labels, dict(declared, host=TOOLKIT_DROP_IN) if labels.get("nodepool") == "inference"
                            else declared) for name, labels, declared in layout["gpu_pools"]]
    return layout


def _labelled():
    """The mixed pools with a driver the hosts loaded (what GFD and the device plugin needed to label them)."""
    layout = _mixed()
    host_driver = {"version": "580.126.20", "installed_by": "host", "open": True}
    layout["gpu_pools"] = [(name, labels, dict(declared, driver=host_driver) if declared.get("gpus") else declared)
                           for name, labels, declared in layout["gpu_pools"]]
    return layout


PROFILES = {"aks-nd-h100-v5": lambda: _aks(False), "aks-nd-h100-v5-driver": lambda: _aks(True),
            "aks-nc-h100-v5": lambda: _aks(series="nc"), "baremetal": _baremetal,
            "baremetal-driver": lambda: _baremetal(True), "mixed": _mixed, "labelled": _labelled,
            "host-drift": _host_drift}
DEFAULT_PROFILE = "mixed"
BARE_PROFILES = ("aks-nd-h100-v5", "aks-nd-h100-v5-driver", "aks-nc-h100-v5", "baremetal", "baremetal-driver",
                 "mixed")


def profile_names():
    return sorted(PROFILES)


def labelled_state(declared):
    """What NFD, GPU Feature Discovery and the device plugins leave on a node of ``declared`` hardware (the
    ``labelled`` profile): the labels and the allocatable they add."""
    from .node_agent_effects import nfd_labels
    gpus, nics = declared.get("gpus"), declared.get("nics")
    labels, allocatable = nfd_labels(declared), {}
    if gpus:
        labels.update({"nvidia.com/gpu.present": "true",
                       "nvidia.com/gpu.product": gpus["product"], "nvidia.com/gpu.count": str(gpus["count"]),
                       "nvidia.com/gpu.memory": str(gpus["memory_mib"]), "nvidia.com/gpu.family": gpus["family"],
                       "nvidia.com/mig.capable": "true" if gpus["mig_capable"] else "false"})
        allocatable["nvidia.com/gpu"] = str(gpus["count"])
    if nics:
        allocatable[RDMA_RESOURCE] = str(RDMA_SHARED)
    return labels, allocatable


def _node(name, labels, declared, allocatable=None, taints=()):
    base = {"cpu": "96", "memory": "1024Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    base.update(allocatable or {})
    kubelet = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
               "type": "kwok"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": dict(KWOK_ANNOTATION, **{HARDWARE_ANNOTATION: json.dumps(declared,
                                                                                                 sort_keys=True)}),
                         "labels": dict(kubelet, **labels)},
            "spec": {"taints": [dict(t) for t in taints]} if taints else {},
            "status": {"capacity": dict(base), "allocatable": dict(base),
                       "nodeInfo": {"kernelVersion": declared["kernel"], "osImage": declared["os"]["image"],
                                    "containerRuntimeVersion": declared["runtime"],
                                    "operatingSystem": "linux", "architecture": "amd64"}}}


def fleet(count, profile=DEFAULT_PROFILE, system_taint=False):
    """The profile's system node, then ``count`` GPU nodes cycling through its GPU pools (each with the profile's
    ``gpu_taints``); ``system_taint`` puts AKS's dedicated-system-pool taint on the system node."""
    if profile not in PROFILES:
        raise ValueError("CLUSTER_PROFILE=%r is not a fleet profile; choose one of %s"
                         % (profile, ", ".join(profile_names())))
    layout = PROFILES[profile]()
    name, labels, declared = layout["system"]
    nodes = [_node(name, labels, declared, taints=[SYSTEM_POOL_TAINT] if system_taint else ())]
    pools = layout["gpu_pools"]
    numbered = {}  # name pattern -> nodes named with it so far (pools that share a pattern number on together)
    for index in range(count):
        pattern, labels, declared = pools[index % len(pools)]
        node_name = pattern % (numbered.get(pattern, 0) + layout.get("first", 1))
        numbered[pattern] = numbered.get(pattern, 0) + 1
        extra, allocatable = labelled_state(declared) if profile == "labelled" else ({}, {})
        nodes.append(_node(node_name, dict(labels, **extra), declared, allocatable, layout.get("gpu_taints", ())))
    return nodes


def declared_hardware(node):
    """A Node's declared hardware (the fleet's annotation), or None for a node that declares none."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(HARDWARE_ANNOTATION)
    return json.loads(text) if text else None


LOGS_WRITTEN = "fake.gpu-platform.io/logs"  # set on a smoke pod once its logs are written (node_agent_smoke.py)
SMOKE_LABEL = "gpu-platform.io/smoke"
COMPLETED = (
    "{{ $now := Now }}\n"
    "containerStatuses:\n"
    "{{ range .spec.containers }}\n"
    "- name: {{ .name | Quote }}\n"
    "  image: {{ .image | Quote }}\n"
    "  ready: false\n"
    "  restartCount: 0\n"
    "  started: false\n"
    "  state:\n"
    "    terminated:\n"
    "      exitCode: 0\n"
    "      reason: Completed\n"
    "      startedAt: {{ $now | Quote }}\n"
    "      finishedAt: {{ $now | Quote }}\n"
    "{{ end }}\n"
    "phase: Succeeded\n")
RUNNING = [{"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
           {"key": ".status.phase", "operator": "In", "values": ["Running"]}]


def _stage(name, expressions):
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name},
            "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                     "selector": {"matchExpressions": RUNNING + expressions},
                     "next": {"statusTemplate": COMPLETED}}}


# Our own stages (written here, in KWOK's Stage API), in place of KWOK's pod-complete: a pod of a Job, or a bare pod
# that runs to completion (restartPolicy Never, no owner, as a smoke test's nvidia-smi pod), finishes as Succeeded once
# Running; a smoke test's pod only once the node agents have written its logs (what it printed is then decided).
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # the Job controller's label on each pod of a Job
OWNED_BY_JOB = {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]}
BARE = [{"key": ".spec.restartPolicy", "operator": "In", "values": ["Never"]},
        {"key": ".metadata.ownerReferences", "operator": "DoesNotExist"}]
NOT_SMOKE = {"key": '.metadata.labels["%s"]' % SMOKE_LABEL, "operator": "DoesNotExist"}
# The host preflight's probe pods (domain/host_checks/probe.py) complete once the probe agent wrote what they printed
# (local_gpu_cluster/node_agent_probe.py), as a smoke test's.
PROBE_LABEL = "gpu-platform.io/host-probe"
NOT_PROBE = {"key": '.metadata.labels["%s"]' % PROBE_LABEL, "operator": "DoesNotExist"}
PROBED = [{"key": '.metadata.labels["%s"]' % PROBE_LABEL, "operator": "Exists"},
          {"key": '.metadata.annotations["%s"]' % LOGS_WRITTEN, "operator": "Exists"}]
LOGGED = [{"key": '.metadata.labels["%s"]' % SMOKE_LABEL, "operator": "Exists"},
          {"key": '.metadata.annotations["%s"]' % LOGS_WRITTEN, "operator": "Exists"}]
STAGES = [_stage("gpu-platform-job-pod-complete", [OWNED_BY_JOB, NOT_SMOKE, NOT_PROBE]),
          _stage("gpu-platform-bare-pod-complete", BARE + [NOT_SMOKE]),
          _stage("gpu-platform-smoke-job-pod-complete", [OWNED_BY_JOB] + LOGGED),
          _stage("gpu-platform-smoke-bare-pod-complete", BARE + LOGGED),
          _stage("gpu-platform-probe-job-pod-complete", [OWNED_BY_JOB] + PROBED)]
UPSTREAM_LEFT_OUT = ("pod-complete.yaml",)  # replaced by STAGES


def write_kwok_config(state_dir, upstream_stages, held_jobs=()):
    """kwok.yaml (KWOK's options come from its flags): our stages (a Job's pod completes unless it is one of
    ``held_jobs``); then the upstream stages (node init, lease heartbeat, pod ready/delete). Pods' logs are not
    configured here: the node agents write each smoke pod's logs and a KWOK ``Logs`` object for it (KWOK runs with
    ``--enable-crds=Logs``)."""
    state_dir = Path(state_dir)
    (state_dir / "pod-logs").mkdir(parents=True, exist_ok=True)
    ours = state_dir / "kwok.yaml"
    stages = STAGES
    if held_jobs:  # the pods of these Jobs run a real process (local_gpu_cluster/operator_processes.py), which ends them
        held = {"key": '.metadata.labels["%s"]' % JOB_NAME_LABEL, "operator": "NotIn",
                "values": list(held_jobs)}
        stages = [dict(stage, spec=dict(stage["spec"], selector={"matchExpressions": stage["spec"]["selector"][
            "matchExpressions"] + [held]})) if OWNED_BY_JOB in stage["spec"]["selector"]["matchExpressions"] else stage
            for stage in STAGES]
    ours.write_text(yaml.safe_dump_all(stages, sort_keys=False))
    return [ours] + [Path(p) for p in upstream_stages if Path(p).name not in UPSTREAM_LEFT_OUT]
