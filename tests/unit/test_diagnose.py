"""The known-failure diagnosis (domain/diagnose): every id provoked by the least evidence names itself, the node and
what it matched; a healthy platform gives nothing; near misses give nothing; the fixes the host preflight also gives
are its own texts."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.diagnose import catalog
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.diagnose.findings import diagnose
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings as host
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NS = "gpu-operator"
IDS = ("driver-not-ready driver-no-kernel-headers containerd-dropin-version runtime-handler-missing nvml-not-found "
       "cdi-unresolvable nvml-unknown-error gpu-fallen-off-bus secure-boot-rejected peermem-load-failed "
       "mig-reset-blocked nouveau-loaded driver-in-use fabric-manager-missing driver-upgrade-failed "
       "operands-blocked-by-taint operator-oomkilled rdma-resource-zero").split()


def pod(name, node="gpu-1", ns=NS, reason="Running", ready=True, containers=(), logs=None):
    return {"namespace": ns, "name": name, "node": node, "reason": reason, "ready": ready,
            "containers": list(containers), "logs": logs or {}}


def gpu_node(name="gpu-1", labels=None, gpus="8", alloc=None, **extra):
    node = {"name": name, "labels": dict({"nvidia.com/gpu.present": "true"}, **(labels or {})), "taints": [],
            "capacity": {"nvidia.com/gpu": gpus, "rdma/shared_ib": "63"},
            "allocatable": {"nvidia.com/gpu": alloc or gpus, "rdma/shared_ib": "63"}, "modules": ["nvidia"]}
    node.update(extra)
    return node


def healthy():
    return {
        "pods": [pod("nvidia-driver-daemonset-abc", containers=[{"name": "nvidia-driver-ctr", "state": "running"}],
                     logs={"nvidia-driver-ctr": ["Done, now waiting for signal"]}),
                 pod("nvidia-operator-validator-x", logs={"nvidia-operator-validator": ["all validations are successful"]}),
                 pod("gpu-operator-5d9", node="cpu-1", containers=[{"name": "gpu-operator", "state": "running"}])],
        "events": [{"namespace": "default", "object": "pod/train-0", "node": "gpu-1", "reason": "Scheduled",
                    "message": "Successfully assigned default/train-0 to gpu-1"}],
        "nodes": [gpu_node(), {"name": "cpu-1", "labels": {}, "capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"},
                               "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}],
        "daemonsets": [{"namespace": NS, "name": "nvidia-device-plugin-daemonset", "desired": 1, "ready": 1}],
    }


def log(line, container="nvidia-driver-ctr", name="nvidia-driver-daemonset-abc"):
    return {"pods": [pod(name, logs={container: ["starting", line]})]}


def journal(line):
    return {"nodes": [gpu_node(logs={"journal": [line]})]}


PROVOKED = [
    ("driver-not-ready", {"pods": [pod("nvidia-driver-daemonset-abc", reason="CrashLoopBackOff", ready=False),
                                   pod("nvidia-operator-validator-x", reason="Init:0/4", ready=False)]},
     "nvidia-operator-validator-x is Init:0/4 and the driver pod gpu-operator/nvidia-driver-daemonset-abc is not ready"),
    ("driver-not-ready", log("waiting for nvidia container stack to be setup", "toolkit-validation",
                             "nvidia-operator-validator-x"), "waiting for nvidia container stack to be setup"),
    ("driver-no-kernel-headers", log("E: Unable to locate package linux-headers-6.8.0-1015-gke"),
     "container nvidia-driver-ctr: E: Unable to locate package linux-headers-6.8.0-1015-gke"),
    ("driver-no-kernel-headers", log("Could not resolve Linux kernel version"), "Could not resolve Linux kernel"),
    ("containerd-dropin-version", journal("containerd: drop-in config version 4 higher than root config version 2"),
     "node gpu-1 journal: containerd: drop-in config version 4 higher than root config version 2"),
    ("runtime-handler-missing", {"events": [{"namespace": "default", "object": "pod/cuda", "node": "gpu-1",
                                             "reason": "FailedCreatePodSandBox", "message": 'Failed to create pod sandbox: '
                                             'rpc error: no runtime for "nvidia" is configured'}]},
     'event FailedCreatePodSandBox default on pod/cuda: Failed to create pod sandbox: rpc error: no runtime for "nvidia"'),
    ("nvml-not-found", log("could not load NVML library: libnvidia-ml.so.1: cannot open shared object file",
                           "nvidia-device-plugin", "nvidia-device-plugin-daemonset-q"), "could not load NVML library"),
    ("cdi-unresolvable", log("unresolvable CDI devices management.nvidia.com/gpu=GPU-1234", "main", "train-0"),
     "unresolvable CDI devices"),
    ("nvml-unknown-error", log("Failed to initialize NVML: Unknown Error", "main", "train-0"), "NVML: Unknown Error"),
    ("gpu-fallen-off-bus", {"nodes": [gpu_node(logs={"dmesg": [
        "NVRM: Xid (PCI:0000:9d:00): 79, pid=0, GPU has fallen off the bus."]})]}, "node gpu-1 dmesg: NVRM: Xid"),
    ("gpu-fallen-off-bus", {"nodes": [gpu_node(alloc="7")]}, "allocatable nvidia.com/gpu 7 of capacity 8"),
    ("secure-boot-rejected", log("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"),
     "Key was rejected by service"),
    ("peermem-load-failed", journal("nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client"),
     "disagrees about version of symbol"),
    ("peermem-load-failed", {"pods": [pod("nvidia-driver-daemonset-abc", containers=[
        {"name": "nvidia-peermem-ctr", "state": "CrashLoopBackOff", "restarts": 7}])]},
     "container nvidia-peermem-ctr is in CrashLoopBackOff (7 restarts)"),
    ("mig-reset-blocked", log("GPU 00000000:17:00.0: In use by another client", "nvidia-mig-manager",
                              "nvidia-mig-manager-z"), "In use by another client"),
    ("mig-reset-blocked", {"nodes": [gpu_node(labels={"nvidia.com/mig.config.state": "failed"})]},
     "label nvidia.com/mig.config.state=failed"),
    ("nouveau-loaded", {"nodes": [gpu_node(modules=["nouveau", "drm"])]}, "nouveau is among the loaded kernel modules"),
    ("nouveau-loaded", journal("nouveau 0000:17:00.0: Failed to enable MSI-X"), "Failed to enable MSI-X"),
    ("driver-in-use", log("Could not unload NVIDIA driver kernel modules, driver is in use", "k8s-driver-manager"),
     "driver is in use"),
    ("fabric-manager-missing", log("Failed to allocate device vector A (error code system not yet initialized)!",
                                   "cuda-validation", "nvidia-cuda-validator-k"), "system not yet initialized"),
    ("driver-upgrade-failed", {"nodes": [gpu_node(labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"})]},
     "label nvidia.com/gpu-driver-upgrade-state=upgrade-failed"),
    ("operands-blocked-by-taint", {
        "nodes": [gpu_node(taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}])],
        "daemonsets": [{"namespace": NS, "name": "nvidia-device-plugin-daemonset", "desired": 0, "ready": 0,
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}]},
     "taint sku=gpu:NoSchedule, and DaemonSet gpu-operator/nvidia-device-plugin-daemonset desires 0 pods for 1 GPU"),
    ("operator-oomkilled", {"pods": [pod("gpu-operator-5d9", node="cpu-1", containers=[
        {"name": "gpu-operator", "state": "CrashLoopBackOff", "last_state": "OOMKilled", "restarts": 4}])]},
     "pod gpu-operator/gpu-operator-5d9 container gpu-operator was OOMKilled (4 restarts)"),
    ("rdma-resource-zero", {"nodes": [gpu_node(capacity={"rdma/rdma_shared_device_a": "0"},
                                               allocatable={"rdma/rdma_shared_device_a": "0"})]},
     "rdma/rdma_shared_device_a: capacity 0, allocatable 0"),
]


def test_the_catalog_has_exactly_the_issues_ids_each_with_cause_fix_and_reference():
    assert sorted(catalog.IDS) == sorted(IDS)
    for check_id, signature in catalog.SIGNATURES.items():
        assert signature["matches"] and signature["cause"] and signature["fix"], check_id
        assert "research section 3" in signature["reference"], check_id


@pytest.mark.parametrize("check_id, evidence, seen", PROVOKED, ids=[p[0] for p in PROVOKED])
def test_each_id_is_named_with_its_node_and_evidence(check_id, evidence, seen):
    found = diagnose(evidence)
    assert [f["id"] for f in found] == [check_id]
    expected_node = "cpu-1" if check_id == "operator-oomkilled" else "gpu-1"
    assert found[0]["node"] == expected_node and seen in found[0]["evidence"]
    assert set(found[0]) == {"id", "node", "evidence", "cause", "fix", "reference"}


def test_every_id_is_provoked():
    assert {p[0] for p in PROVOKED} == set(IDS)


def test_a_healthy_platform_gives_no_finding():
    assert diagnose(healthy()) == [] and diagnose({}) == []


NEAR_MISSES = [
    log("Unable to locate package nvidia-utils"),                       # not a kernel package
    journal("containerd: loaded drop-in config version 2"),             # no version conflict
    {"events": [{"reason": "FailedCreatePodSandBox", "node": "gpu-1", "message": "network not ready"}]},
    log("NVRM: Xid (PCI:0000:9d:00): 13, Graphics Exception", "main", "train-0"),  # Xid 13, not 79
    {"nodes": [gpu_node(alloc="8")]},                                   # allocatable = capacity
    {"nodes": [gpu_node(gpus="0", alloc="0")]},                         # MIG mixed: 0 whole GPUs, none missing
    {"nodes": [gpu_node(labels={"nvidia.com/mig.config.state": "pending"})]},
    {"nodes": [gpu_node(labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"})]},
    {"nodes": [gpu_node(modules=["nvidia", "nvidia_drm"])]},
    # the driver pod is not ready but no operand waits in Init on its node
    {"pods": [pod("nvidia-driver-daemonset-abc", reason="Running", ready=False)]},
    # an operand in Init while the driver pod is ready
    {"pods": [pod("nvidia-driver-daemonset-abc"), pod("nvidia-operator-validator-x", reason="Init:0/4", ready=False)]},
    # OOMKilled, but not the operator
    {"pods": [pod("train-0", ns="default", containers=[{"name": "main", "last_state": "OOMKilled"}])]},
    # the peermem container restarted once and runs
    {"pods": [pod("nvidia-driver-daemonset-abc",
                  containers=[{"name": "nvidia-peermem-ctr", "state": "running", "restarts": 1}])]},
    # a tainted GPU node whose taint the DaemonSet tolerates
    {"nodes": [gpu_node(taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])],
     "daemonsets": [{"namespace": NS, "name": "nvidia-device-plugin-daemonset", "desired": 0,
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}]},
    # a tainted GPU node, and every DaemonSet has its pod there
    {"nodes": [gpu_node(taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}])],
     "daemonsets": [{"namespace": NS, "name": "nvidia-device-plugin-daemonset", "desired": 1}]},
    # a PreferNoSchedule taint does not keep a DaemonSet off
    {"nodes": [gpu_node(taints=[{"key": "sku", "value": "gpu", "effect": "PreferNoSchedule"}])],
     "daemonsets": [{"namespace": NS, "name": "nvidia-device-plugin-daemonset", "desired": 0}]},
    {"nodes": [gpu_node(capacity={"rdma/shared_ib": "63"}, allocatable={"rdma/shared_ib": "63"})]},
]


@pytest.mark.parametrize("evidence", NEAR_MISSES)
def test_near_misses_give_no_finding(evidence):
    assert diagnose(evidence) == []


def test_findings_are_sorted_by_node_then_catalog_order_one_per_id_and_node():
    evidence = {"nodes": [gpu_node("gpu-2", alloc="7", modules=["nouveau"]),
                          gpu_node("gpu-1", labels={"nvidia.com/mig.config.state": "failed"},
                                   logs={"dmesg": ["GPU has fallen off the bus", "NVRM: Xid (PCI:0000:1a:00): 79"]})]}
    found = diagnose(evidence)
    assert [(f["node"], f["id"]) for f in found] == [
        ("gpu-1", "gpu-fallen-off-bus"), ("gpu-1", "mig-reset-blocked"),
        ("gpu-2", "gpu-fallen-off-bus"), ("gpu-2", "nouveau-loaded")]
    assert found[0]["evidence"] == "node gpu-1 dmesg: GPU has fallen off the bus"
    assert diagnose(evidence) == found


@pytest.mark.parametrize("check_id, text", [
    ("containerd-dropin-version", host.CONTAINERD_SOURCE_FIX), ("nouveau-loaded", host.NOUVEAU_FIX),
    ("secure-boot-rejected", host.SECURE_BOOT_SIGN_FIX), ("mig-reset-blocked", host.MIG_DRM_FIX),
    ("driver-no-kernel-headers", host.HEADERS_OPERATOR_FIX),
])
def test_the_host_preflights_fixes_are_reused(check_id, text):
    assert text in catalog.SIGNATURES[check_id]["fix"]


@pytest.mark.parametrize("evidence, match", [
    ([], r"evidence: \[\] is not a dict"),
    ({"pods": "nvidia-driver"}, r"evidence.pods: is not a list of dicts"),
    ({"nodes": [1]}, r"evidence.nodes: is not a list of dicts"),
])
def test_bad_evidence_is_refused(evidence, match):
    with pytest.raises(ParamError, match=match):
        diagnose(evidence)


def test_the_docs_name_every_id():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "diagnose.md").read_text(encoding="utf-8")
    assert [i for i in IDS if "### `%s`" % i not in text] == []
