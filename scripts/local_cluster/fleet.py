"""The fake GPU fleet: KWOK nodes labelled and sized as NFD and GPU Feature Discovery leave real ones.

``CLUSTER_GPU_NODES`` (default 4) GPU nodes cycle through the pools below, plus one CPU-only
system node. Every node carries KWOK's management annotation and no taint, so the real
scheduler places pods on them and KWOK plays their kubelet: pods go Running/Ready, pods of
Jobs (and bare ``restartPolicy: Never`` pods, as a smoke test's ``nvidia-smi`` pod) complete,
and their logs come from files under ``<state>/pod-logs`` (what the GPU would print).
"""

from pathlib import Path

import yaml

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# pool -> (product, memory MiB, family, MIG capable, RDMA NIC present); values as GFD publishes them.
POOLS = (
    ("training", "NVIDIA-A100-SXM4-80GB", 81920, "ampere", True, True),
    ("training", "NVIDIA-A100-SXM4-80GB", 81920, "ampere", True, True),
    ("inference", "NVIDIA-H100-80GB-HBM3", 81920, "hopper", True, True),
    ("dra", "NVIDIA-H100-80GB-HBM3", 81920, "hopper", True, False),
)
GPUS_PER_NODE = 8
RDMA_RESOURCE = "rdma/shared_ib"  # the RDMA shared device plugin resource nic_cluster_policy names by default
RDMA_SHARED = 63
SYSTEM_NODE = "system-node-1"


def _node(name, labels, allocatable):
    base = {"cpu": "96", "memory": "1024Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    base.update(allocatable)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": dict(KWOK_ANNOTATION),
                         "labels": dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                         "kubernetes.io/arch": "amd64", "type": "kwok"}, **labels)},
            "spec": {},
            "status": {"capacity": dict(base), "allocatable": dict(base),
                       "nodeInfo": {"kernelVersion": "6.8.0-1021-azure", "osImage": "Ubuntu 24.04.2 LTS",
                                    "containerRuntimeVersion": "containerd://1.7.27",
                                    "operatingSystem": "linux", "architecture": "amd64"}}}


def gpu_nodes(count):
    """The GPU nodes, ``gpu-node-1`` .. ``gpu-node-<count>``."""
    nodes = []
    for index in range(count):
        pool, product, memory, family, mig, rdma = POOLS[index % len(POOLS)]
        labels = {"nodepool": pool, "node-role.kubernetes.io/gpu": "",
                  "feature.node.kubernetes.io/pci-10de.present": "true",
                  "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
                  "nvidia.com/gpu.count": str(GPUS_PER_NODE), "nvidia.com/gpu.memory": str(memory),
                  "nvidia.com/gpu.family": family, "nvidia.com/mig.capable": "true" if mig else "false"}
        allocatable = {"nvidia.com/gpu": str(GPUS_PER_NODE)}
        if rdma:
            labels["feature.node.kubernetes.io/pci-15b3.present"] = "true"
            allocatable[RDMA_RESOURCE] = str(RDMA_SHARED)
        nodes.append(_node("gpu-node-%d" % (index + 1), labels, allocatable))
    return nodes


def system_node():
    return _node(SYSTEM_NODE, {"nodepool": "system", "node-role.kubernetes.io/system": ""}, {})


def fleet(count):
    return [system_node()] + gpu_nodes(count)


# container name -> what it prints (the smoke tests judge these as they would a GPU's output)
def pod_logs():
    from tests.fakes.gpu_operator import NVIDIA_SMI
    from tests.fakes.nccl_logs import NCCL_IB_LOG
    # a gang member prints when it started (the smoke test checks every member started within its window)
    gang = "gpu-platform-smoke started %sZ on its node\n" % LOG_TIME.split(".", maxsplit=1)[0]
    return {"nvidia-smi": NVIDIA_SMI, "mpirun": NCCL_IB_LOG, "gang-member": gang}


LOG_TIME = "2026-01-01T00:00:00.000000000Z"


def cri_log(text):
    """``text`` in the container runtime's log format, which KWOK's log server reads: one
    ``<time> stdout F <line>`` record per line."""
    return "".join("%s stdout F %s\n" % (LOG_TIME, line) for line in text.splitlines())


# Our own stage (written here, in KWOK's Stage API): a bare pod that runs to completion (restartPolicy
# Never, no owner) finishes as Succeeded once Running, as a smoke test's nvidia-smi pod does on a GPU.
BARE_POD_COMPLETE = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
    "metadata": {"name": "gpu-platform-bare-pod-complete"},
    "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
             "selector": {"matchExpressions": [
                 {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                 {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                 {"key": ".spec.restartPolicy", "operator": "In", "values": ["Never"]},
                 {"key": ".metadata.ownerReferences", "operator": "DoesNotExist"}]},
             "next": {"statusTemplate": (
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
                 "phase: Succeeded\n")}},
}


def write_kwok_config(state_dir, upstream_stages):
    """kwok.yaml (KWOK's options come from its flags): the upstream stages (node init, lease heartbeat, pod ready/complete/delete), ours, and logs."""
    state_dir = Path(state_dir)
    logs_dir = state_dir / "pod-logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    logs = []
    for container, text in sorted(pod_logs().items()):
        path = logs_dir / ("%s.log" % container)
        path.write_text(cri_log(text))
        logs.append({"containers": [container], "logsFile": str(path)})
    documents = [BARE_POD_COMPLETE,
                 {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
                  "metadata": {"name": "gpu-platform-smoke-logs"}, "spec": {"logs": logs}}]
    ours = state_dir / "kwok.yaml"
    ours.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return [ours] + [Path(p) for p in upstream_stages]
