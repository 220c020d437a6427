"""The node agents (node_agents.py, node_agent_effects.py): pure effects, faults, and the agents run by LiveRunner
over HTTP against the fake API server (no controller of its own: the test plays the DaemonSet controller and
KWOK, creating each component's pod Running on its node)."""

import json

import pytest

from local_gpu_cluster.fleet import HARDWARE_ANNOTATION, fleet, hardware
from local_gpu_cluster import node_agent_effects as effects
from local_gpu_cluster.helpers import wait_until
from local_gpu_cluster.node_agent_smoke import SmokeLogs
from local_gpu_cluster.node_agents import AGENTS, EFFECTS, FAULTS, NodeAgents, agent_of, fault_state, parse_fault
from test_live_store import _policy

H100_AKS = hardware("h100", nic="cx7-ib", nics=8, netdev="ib%d")
RDMA_CONFIG = json.dumps({"configList": [{"resourceName": "shared_ib", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
                                          "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]})
SRIOV_CONFIG = json.dumps({"resourceList": [{"resourceName": "ib", "resourcePrefix": "rdma", "selectors": {
    "vendors": ["15b3"], "linkTypes": ["infiniband"], "isRdma": True}}]})


# ---------------------------------------------------------------- pure effects

def test_nfd_labels_follow_the_declared_hardware():
    labels = effects.nfd_labels(H100_AKS)
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert labels["feature.node.kubernetes.io/pci-15b3.present"] == "true"
    assert labels["feature.node.kubernetes.io/system-os_release.ID"] == "ubuntu"
    assert labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"] == "22.04"
    assert labels["feature.node.kubernetes.io/kernel-version.full"] == "5.15.0-1079-azure"
    cpu_only = effects.nfd_labels(hardware())
    assert not any("pci-" in key for key in cpu_only)


def test_gfd_labels_mig_and_time_slicing():
    labels = effects.gfd_labels(dict(H100_AKS, driver_version="580.126.20"))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3" and labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/cuda.driver-version.major"] == "580"
    # and the deprecated names GFD still writes (what gpu_driver_mode and the GPU Operator read)
    assert (labels["nvidia.com/cuda.driver.major"], labels["nvidia.com/cuda.driver.minor"],
            labels["nvidia.com/cuda.driver.rev"]) == ("580", "126", "20")
    single = effects.gfd_labels(H100_AKS, mig={"1g.10gb": 7}, strategy="single")
    assert single["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert single["nvidia.com/gpu.count"] == "56"
    mixed = effects.gfd_labels(H100_AKS, mig={"3g.40gb": 2}, strategy="mixed")
    assert mixed["nvidia.com/mig-3g.40gb.count"] == "16" and mixed["nvidia.com/mig.strategy"] == "mixed"
    shared = effects.gfd_labels(H100_AKS, replicas=("nvidia.com/gpu", 4, False))
    assert shared["nvidia.com/gpu.replicas"] == "4"
    assert shared["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED"
    renamed = effects.gfd_labels(H100_AKS, replicas=("nvidia.com/gpu", 4, True))
    assert renamed["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    both = effects.gfd_labels(H100_AKS, mig={"1g.10gb": 7}, strategy="single", replicas=("nvidia.com/gpu", 2, False))
    assert both["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED"
    assert effects.gfd_labels(hardware()) == {}


def test_device_plugin_resources():
    assert effects.device_plugin_resources(H100_AKS) == {"nvidia.com/gpu": "8"}
    assert effects.device_plugin_resources(H100_AKS, mig={"1g.10gb": 7}) == {"nvidia.com/gpu": "56"}
    assert effects.device_plugin_resources(H100_AKS, mig={"3g.40gb": 2}, strategy="mixed") == {
        "nvidia.com/mig-3g.40gb": "16", "nvidia.com/gpu": "0"}
    assert effects.device_plugin_resources(H100_AKS, replicas=("nvidia.com/gpu", 4, False)) == {"nvidia.com/gpu": "32"}
    assert effects.device_plugin_resources(H100_AKS, replicas=("nvidia.com/gpu", 4, True)) == {
        "nvidia.com/gpu.shared": "32", "nvidia.com/gpu": "0"}
    slicing = json.dumps({"version": "v1", "sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": 4}]}}})
    assert effects.sharing_replicas(slicing, "any") == ("nvidia.com/gpu", 4, False)
    assert effects.sharing_replicas("", "any") is None


def test_mig_layout_from_the_config_map():
    config = effects.default_mig_parted_config()
    assert effects.mig_layout(H100_AKS, config, "all-1g.10gb") == ("success", {"1g.10gb": 7})
    assert effects.mig_layout(H100_AKS, config, "all-disabled") == ("success", {})
    state, why = effects.mig_layout(H100_AKS, config, "all-9g.99gb")
    assert state == "failed" and "no config 'all-9g.99gb'" in why
    bad = "version: v1\nmig-configs:\n  too-many:\n    - devices: all\n      mig-enabled: true\n" \
          "      mig-devices: {'3g.40gb': 3}\n"
    state, why = effects.mig_layout(H100_AKS, bad, "too-many")
    assert state == "failed" and "3g.40gb x3 is not a valid MIG layout for NVIDIA-H100-80GB-HBM3" in why
    a100_only = "version: v1\nmig-configs:\n  a:\n    - device-filter: ['0x20B210DE']\n      devices: all\n" \
                "      mig-enabled: true\n      mig-devices: {'1g.10gb': 7}\n"
    assert effects.mig_layout(H100_AKS, a100_only, "a")[0] == "failed"
    assert effects.mig_layout(hardware("a100"), a100_only, "a") == ("success", {"1g.10gb": 7})


def test_rdma_and_sriov_resources_follow_the_selectors_and_the_nics():
    assert effects.rdma_shared_resources(H100_AKS, RDMA_CONFIG) == {"rdma/shared_ib": "63"}
    assert effects.sriov_resources(H100_AKS, SRIOV_CONFIG) == {"rdma/ib": "8"}
    ether = RDMA_CONFIG.replace("infiniband", "ether")
    assert effects.rdma_shared_resources(H100_AKS, ether) == {}
    named = json.loads(RDMA_CONFIG)
    named["configList"][0]["selectors"]["ifNames"] = ["ibs1f0"]
    assert effects.rdma_shared_resources(H100_AKS, json.dumps(named)) == {}
    assert effects.rdma_shared_resources(hardware("h100"), RDMA_CONFIG) == {}


def test_the_dra_kubelet_plugin_announces_each_gpu_as_the_plugin_does():
    devices = effects.dra_devices(H100_AKS, "aks-gpu-1", "580.159.04")
    assert [d["name"] for d in devices] == ["gpu-%d" % minor for minor in range(8)]
    first = devices[0]
    assert first["attributes"]["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert first["attributes"]["architecture"] == {"string": "Hopper"}
    assert first["attributes"]["driverVersion"] == {"version": "580.159.4"}  # semver: no leading zero
    assert first["attributes"]["cudaDriverVersion"] == {"version": "13.0.0"}
    assert first["attributes"]["cudaComputeCapability"] == {"version": "9.0.0"}
    assert first["capacity"] == {"memory": {"value": "81559Mi"}}
    assert effects.dra_devices(hardware("a100"), "n", "570.195.03")[0]["capacity"] == {"memory": {"value": "80Gi"}}
    uuids = {d["attributes"]["uuid"]["string"] for d in devices}
    assert len(uuids) == 8 and uuids.isdisjoint(
        d["attributes"]["uuid"]["string"] for d in effects.dra_devices(H100_AKS, "aks-gpu-2", "580.159.04"))
    assert effects.dra_devices(H100_AKS, "aks-gpu-1", None) == []  # no driver: NVML finds nothing
    assert effects.dra_devices(H100_AKS, "aks-gpu-1", "580.159.04", mig={"1g.10gb": 7}) == []
    assert effects.dra_devices(hardware(), "cpu-1", "580.159.04") == []


def test_faults_parse_and_resolve():
    assert parse_fault("rdma-shared-device-plugin:stuck") == ("rdma-shared-device-plugin", "stuck")
    assert parse_fault("mig-manager:failed:gpu-node-1") == ("mig-manager.gpu-node-1", "failed")
    for bad, says in (("nope:stuck", "'nope' is not an agent"), ("driver:broken", "'broken' is not a fault state"),
                      ("driver", "write <agent>:<state>[:<node>]")):
        with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
            parse_fault(bad)
    data = {"driver": "stuck", "driver.n2": "ok"}
    assert fault_state(data, "driver", "n1") == "stuck" and fault_state(data, "driver", "n2") == "ok"
    assert fault_state({}, "driver", "n1") == "ok"


def test_every_agent_is_recognised_by_its_pods_labels():
    for agent, wanted in AGENTS.items():
        for labels in wanted if isinstance(wanted, tuple) else (wanted,):  # each release's labels
            pod = {"metadata": {"labels": {k: v.replace("*", "ubuntu22.04") for k, v in labels.items()}}}
            assert agent_of(pod) == agent
    assert agent_of({"metadata": {"labels": {"app": "something-else"}}}) is None


# ---------------------------------------------------------------- the agents on a server

def _bare_node(fake, name="aks-gpu-1", declared=None):
    declared = H100_AKS if declared is None else declared
    node = fleet(1, "aks-nd-h100-v5")[1]
    node["metadata"]["name"] = name
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    node["metadata"]["annotations"][HARDWARE_ANNOTATION] = json.dumps(declared)
    fake.store.create(node)


def _pod(fake, agent, node, namespace="gpu-operator", suffix="", env=None):
    wanted = AGENTS[agent][-1] if isinstance(AGENTS[agent], tuple) else AGENTS[agent]  # a release's: the newest
    labels = {k: v.replace("*", "ubuntu22.04") for k, v in wanted.items()}
    name = "%s-%s%s" % (agent, node, suffix)
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "img:1"}]}
    if env:
        spec["initContainers"] = [{"name": "init", "image": "img:1",
                                   "env": [{"name": k, "value": v} for k, v in env.items()]}]
    fake.store.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": namespace, "labels": labels},
                       "spec": spec,
                       "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                                  "conditions": [{"type": "Ready", "status": "True"}],
                                  "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                                         "image": "img:1", "imageID": "", "state": {"running": {}}}]}})
    return name


def _node(fake, name="aks-gpu-1"):
    node = fake.store.get("v1", "Node", name)
    return node["metadata"].get("labels") or {}, (node.get("status") or {}).get("allocatable") or {}


def _ready(fake, name, namespace="gpu-operator"):
    pod = fake.store.get("v1", "Pod", name, namespace)
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


@pytest.fixture
def agents(fake, live):
    fake.store.create(_policy(mig={"strategy": "single"}, devicePlugin={"config": {"name": "", "default": ""}}))
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "default-mig-parted-config", "namespace": "gpu-operator"},
                       "data": {"config.yaml": effects.default_mig_parted_config()}})
    return live([NodeAgents(mig_delay=0.1, slow_seconds=1.0)])


def test_a_bare_node_gets_labels_and_resources_only_while_the_components_run(fake, agents):
    _bare_node(fake)
    labels, allocatable = _node(fake)
    assert not [k for k in labels if k.startswith(("nvidia.com/", "feature.node.kubernetes.io/"))]
    nfd = _pod(fake, "nfd-worker", "aks-gpu-1", "node-feature-discovery")
    wait_until(lambda: _node(fake)[0].get("feature.node.kubernetes.io/pci-10de.present") == "true", what="NFD labels")
    gfd = _pod(fake, "gpu-feature-discovery", "aks-gpu-1")
    _pod(fake, "device-plugin", "aks-gpu-1")
    assert agents.settle()
    assert "nvidia.com/gpu.product" not in _node(fake)[0]  # no driver loaded: GFD and the plugin find no GPU
    assert "nvidia.com/gpu" not in _node(fake)[1]
    _pod(fake, "driver", "aks-gpu-1")
    wait_until(lambda: _node(fake)[1].get("nvidia.com/gpu") == "8", what="8 GPUs allocatable")
    assert _node(fake)[0]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    fake.store.set_labels("v1", "Node", "aks-gpu-1", {"nvidia.com/gpu.deploy.device-plugin": "false"})
    wait_until(lambda: "nvidia.com/gpu" not in _node(fake)[1], what="the plugin honouring deploy=false")
    fake.store.delete("v1", "Pod", gfd, "gpu-operator")
    wait_until(lambda: "nvidia.com/gpu.product" not in _node(fake)[0], what="GFD's labels gone with its pod")
    fake.store.delete("v1", "Pod", nfd, "node-feature-discovery")
    wait_until(lambda: not [k for k in _node(fake)[0] if k.startswith("feature.node")], what="NFD's labels gone")
    record = json.loads(fake.store.get("v1", "Node", "aks-gpu-1")["metadata"]["annotations"][EFFECTS])
    assert record["labels"] == {}


def test_a_label_the_node_had_is_not_taken_away(fake, agents):
    _bare_node(fake)
    fake.store.set_labels("v1", "Node", "aks-gpu-1", {"feature.node.kubernetes.io/pci-10de.present": "true"})
    nfd = _pod(fake, "nfd-worker", "aks-gpu-1", "node-feature-discovery")
    wait_until(lambda: _node(fake)[0].get("feature.node.kubernetes.io/pci-15b3.present") == "true", what="NFD")
    fake.store.delete("v1", "Pod", nfd, "node-feature-discovery")
    wait_until(lambda: "feature.node.kubernetes.io/pci-15b3.present" not in _node(fake)[0], what="NFD's own label gone")
    assert _node(fake)[0]["feature.node.kubernetes.io/pci-10de.present"] == "true"


def test_a_stuck_device_plugin_is_never_ready_and_gives_nothing_until_unstuck(fake, agents):
    fake.store.create({"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                       "metadata": {"name": "nic-cluster-policy"},
                       "spec": {"rdmaSharedDevicePlugin": {"image": "p", "config": RDMA_CONFIG}}})
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": FAULTS[1], "namespace": FAULTS[0]},
                       "data": {"rdma-shared-device-plugin.aks-gpu-1": "stuck"}})
    _bare_node(fake)
    _bare_node(fake, "aks-gpu-2")
    stuck = _pod(fake, "rdma-shared-device-plugin", "aks-gpu-1", "network")
    fine = _pod(fake, "rdma-shared-device-plugin", "aks-gpu-2", "network")
    wait_until(lambda: _node(fake, "aks-gpu-2")[1].get("rdma/shared_ib") == "63", what="the other node's RDMA")
    wait_until(lambda: not _ready(fake, stuck, "network"), what="the stuck pod not Ready")
    waiting = fake.store.get("v1", "Pod", stuck, "network")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff" and "aks-gpu-1" in waiting["message"]
    assert "rdma/shared_ib" not in _node(fake, "aks-gpu-1")[1] and _ready(fake, fine, "network")
    fake.store.patch("v1", "ConfigMap", FAULTS[1], {"data": {"rdma-shared-device-plugin.aks-gpu-1": "ok"}}, FAULTS[0])
    wait_until(lambda: _node(fake, "aks-gpu-1")[1].get("rdma/shared_ib") == "63", what="RDMA once unstuck")
    assert _ready(fake, stuck, "network")


def test_the_mig_manager_applies_layouts_its_config_map_has_and_fails_the_others(fake, agents):
    _bare_node(fake)
    for agent in ("driver", "mig-manager", "device-plugin", "gpu-feature-discovery"):
        _pod(fake, agent, "aks-gpu-1")
    wait_until(lambda: _node(fake)[1].get("nvidia.com/gpu") == "8", what="whole GPUs first")
    fake.store.set_labels("v1", "Node", "aks-gpu-1", {"nvidia.com/mig.config": "all-1g.10gb"})
    wait_until(lambda: _node(fake)[0].get("nvidia.com/mig.config.state") == "success", what="success")
    wait_until(lambda: _node(fake)[1].get("nvidia.com/gpu") == "56", what="56 MIG instances")
    assert _node(fake)[0]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    fake.store.set_labels("v1", "Node", "aks-gpu-1", {"nvidia.com/mig.config": "all-5g.55gb"})
    wait_until(lambda: _node(fake)[0].get("nvidia.com/mig.config.state") == "failed", what="failed")
    assert _node(fake)[1]["nvidia.com/gpu"] == "56"  # the layout applied before stays


def test_peermem_is_ready_only_with_a_driver_with_rdma_and_the_nic_driver(fake, agents):
    _bare_node(fake)
    fake.store.set_labels("v1", "Node", "aks-gpu-1", {"feature.node.kubernetes.io/pci-15b3.present": "true"})
    loader = _pod(fake, "peermem", "aks-gpu-1", "peermem")
    wait_until(lambda: not _ready(fake, loader, "peermem"), what="no driver: not Ready")
    fake.store.patch("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"spec": {"driver": {"rdma": {"enabled": True}}}})
    driver = _pod(fake, "driver", "aks-gpu-1")
    # driver.rdma.enabled: the driver pod waits for the NIC driver (its mofed-validation init container)
    wait_until(lambda: not _ready(fake, driver), what="the driver waiting for the NIC driver")
    assert agents.settle()
    assert not _ready(fake, loader, "peermem")
    message = fake.store.get("v1", "Pod", loader, "peermem")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert "no NVIDIA driver loaded" in message["message"]
    _pod(fake, "doca-driver", "aks-gpu-1", "network")
    wait_until(lambda: _ready(fake, loader, "peermem") and _ready(fake, driver), what="Ready with both drivers")


def _slices(fake, node="aks-gpu-1"):
    return fake.store.list("resource.k8s.io/v1", "ResourceSlice", field_selector="spec.nodeName=" + node)


def test_the_dra_kubelet_plugin_publishes_its_nodes_slice_once_the_driver_is_under_its_root(fake, agents):
    _bare_node(fake)
    plugin = _pod(fake, "dra-kubelet-plugin", "aks-gpu-1", "dra-driver-nvidia-gpu",
                  env={"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"})
    wait_until(lambda: not _ready(fake, plugin, "dra-driver-nvidia-gpu"), what="no driver: not Ready")
    assert agents.settle()
    assert _slices(fake) == []
    fake.store.patch("nvidia.com/v1", "ClusterPolicy", "cluster-policy", {"spec": {"driver": {"version": "580.126.20"}}})
    _pod(fake, "driver", "aks-gpu-1")  # the operator's driver, under /run/nvidia/driver
    wait_until(lambda: _slices(fake), what="the node's ResourceSlice")
    spec = _slices(fake)[0]["spec"]
    assert (spec["driver"], spec["pool"]["name"], len(spec["devices"])) == ("gpu.nvidia.com", "aks-gpu-1", 8)
    assert spec["devices"][0]["attributes"]["driverVersion"] == {"version": "580.126.20"}
    assert _ready(fake, plugin, "dra-driver-nvidia-gpu")
    fake.store.delete("v1", "Pod", plugin, "dra-driver-nvidia-gpu")
    wait_until(lambda: _slices(fake) == [], what="the slice gone with the plugin")


def test_the_dra_kubelet_plugin_pointed_at_the_wrong_driver_root_never_starts(fake, agents):
    _bare_node(fake, declared=dict(H100_AKS, driver={"version": "570.195.03", "installed_by": "aks"}))
    plugin = _pod(fake, "dra-kubelet-plugin", "aks-gpu-1", "dra-driver-nvidia-gpu",
                  env={"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"})  # the host's driver is at /
    wait_until(lambda: not _ready(fake, plugin, "dra-driver-nvidia-gpu"), what="waiting for a driver")
    status = fake.store.get("v1", "Pod", plugin, "dra-driver-nvidia-gpu")["status"]["containerStatuses"][0]
    assert "no driver under NVIDIA_DRIVER_ROOT=/run/nvidia/driver (the driver is at /)" in \
        status["state"]["waiting"]["message"]
    assert agents.settle()
    assert _slices(fake) == []
    fake.store.delete("v1", "Pod", plugin, "dra-driver-nvidia-gpu")
    plugin = _pod(fake, "dra-kubelet-plugin", "aks-gpu-1", "dra-driver-nvidia-gpu", suffix="-b",
                  env={"NVIDIA_DRIVER_ROOT": "/"})
    wait_until(lambda: _slices(fake), what="the slice with the right root")
    assert _slices(fake)[0]["spec"]["devices"][0]["attributes"]["driverVersion"] == {"version": "570.195.3"}


def _smoke_pod(fake, name, node, task, limits=None, container="mpirun"):
    fake.store.create({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "smoke", "labels": {
                           "gpu-platform.io/smoke": "nccl", "gpu-platform.io/smoke-task": task}},
                       "spec": {"nodeName": node, "containers": [{"name": container, "image": "img:1", "resources": {
                           "limits": limits or {}}}]},
                       "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}})


def test_the_nccl_log_follows_the_workers_nodes(fake, live, tmp_path):
    """Both workers hold rdma/ib their nodes advertise, the NIC policy is ready: GDRDMA only once peermem is loaded
    on both nodes (a Ready loader pod there); the launcher is completed by KWOK only after its log is written."""
    fake.store.create({"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                       "metadata": {"name": "nic-cluster-policy"}, "spec": {}})
    fake.store.patch_status("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy", {"state": "ready"})
    for name in ("aks-gpu-1", "aks-gpu-2"):
        _bare_node(fake, name)
        fake.store.patch_status("v1", "Node", name, {"allocatable": {"rdma/ib": "8", "nvidia.com/gpu": "8"}})
    _pod(fake, "peermem", "aks-gpu-1", "peermem")  # Ready; none on aks-gpu-2
    runner = live([SmokeLogs(tmp_path)])
    for index in (1, 2):
        _smoke_pod(fake, "nccl-worker-%d" % index, "aks-gpu-%d" % index, "worker", {"rdma/ib": "8"}, "nccl-worker")
    _smoke_pod(fake, "nccl-launcher", "aks-gpu-1", "launcher")
    wait_until(lambda: (fake.store.get("v1", "Pod", "nccl-launcher", "smoke")["metadata"].get("annotations") or {})
               .get("fake.gpu-platform.io/logs"), what="the launcher's log written")
    text = (tmp_path / "smoke_nccl-launcher" / "mpirun.log").read_text()
    assert "nvidia-peermem is not loaded on node aks-gpu-2" in text and "NET/Socket" in text and "GDRDMA" not in text
    fake.store.delete("v1", "Pod", "nccl-launcher", "smoke")
    first_log = tmp_path / "smoke_nccl-launcher" / "mpirun.log"
    wait_until(lambda: not first_log.exists(), what="the log removed with its pod")
    _pod(fake, "peermem", "aks-gpu-2", "peermem")
    _smoke_pod(fake, "nccl-launcher-2", "aks-gpu-1", "launcher")
    second_log = tmp_path / "smoke_nccl-launcher-2" / "mpirun.log"
    wait_until(second_log.exists, what="the second launcher's log")
    text = second_log.read_text()
    assert "GDRDMA" in text and "Avg bus bandwidth    : 3" in text, text[-400:]
    assert runner.settle()


@pytest.mark.parametrize("driver, words", [
    ({"version": "580.126.20", "installed_by": "host", "open": True}, None),
    ({"version": "580.126.20", "installed_by": "host", "open": False},
     "nvidia-peermem is not loaded on node dgx-2, and DMA-BUF cannot work there (the driver is the proprietary "
     "kernel module)"),
], ids=["open", "proprietary"])
def test_without_peermem_the_nccl_log_uses_dma_buf_where_the_node_can(fake, live, tmp_path, driver, words):
    """Hosts whose driver is the open kernel modules, on kernel 6.8 with H100s and their NIC driver running: GDRDMA
    through DMA-BUF with no nvidia-peermem loaded; the proprietary module has no path without it."""
    fake.store.create({"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                       "metadata": {"name": "nic-cluster-policy"}, "spec": {}})
    fake.store.patch_status("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy", {"state": "ready"})
    declared = hardware("h100", nic="cx7-ib", nics=8, netdev="ib%d", kernel="6.8.0-60-generic", driver=driver)
    for name in ("dgx-1", "dgx-2"):
        _bare_node(fake, name, declared=declared)
        fake.store.patch_status("v1", "Node", name, {"allocatable": {"rdma/ib": "8", "nvidia.com/gpu": "8"}})
        _pod(fake, "doca-driver", name, "network")
    runner = live([SmokeLogs(tmp_path)])
    for index in (1, 2):
        _smoke_pod(fake, "nccl-worker-%d" % index, "dgx-%d" % index, "worker", {"rdma/ib": "8"}, "nccl-worker")
    _smoke_pod(fake, "nccl-launcher", "dgx-1", "launcher")
    log = tmp_path / "smoke_nccl-launcher" / "mpirun.log"
    wait_until(log.exists, what="the launcher's log")
    text = log.read_text()
    if words:
        assert words in text and "GDRDMA" not in text, text[:600]
    else:
        assert "GDRDMA" in text and "NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0" in text, text[:900]
        assert "(nvidia-peermem) enabled" not in text
    assert runner.settle()


def test_a_launcher_running_before_its_workers_are_placed_gets_its_log_once_they_are(fake, live, tmp_path):
    """A gang scheduler (KAI) binds launcher and workers at once: the launcher may run, with no event of its own
    after, before the workers are placed. Its log is written when the workers' placement is seen."""
    for name in ("aks-gpu-1", "aks-gpu-2"):
        _bare_node(fake, name)
    runner = live([SmokeLogs(tmp_path)])
    _smoke_pod(fake, "nccl-launcher", "aks-gpu-1", "launcher")
    for index in (1, 2):
        _smoke_pod(fake, "nccl-worker-%d" % index, "", "worker", {"rdma/ib": "8"}, "nccl-worker")
    assert runner.settle()
    assert not (tmp_path / "smoke_nccl-launcher" / "mpirun.log").exists()  # no worker placed: undecided
    for index in (1, 2):
        fake.store.patch("v1", "Pod", "nccl-worker-%d" % index, {"spec": {"nodeName": "aks-gpu-%d" % index}}, "smoke")
    wait_until((tmp_path / "smoke_nccl-launcher" / "mpirun.log").exists, what="the launcher's log, after the workers")
    assert "nccl-worker-1" in (tmp_path / "smoke_nccl-launcher" / "mpirun.log").read_text()
