"""gpu_driver_mode and gpu_host_facts run for real: the decision module against the fake cluster (it only
reads), the facts module against a file tree laid out like a GPU host's /proc and /sys."""
from __future__ import annotations

import json

import pytest

from local_gpu_cluster.controllers import PHASE, default_controllers
from local_gpu_cluster.gpu_operator import gpu_node
from tests.modules.harness import run_module

SELECTOR = "app=nvidia-driver-daemonset"


def host(node, **facts):
    out = {"node_name": node, "gpu_present": True, "driver_loaded": False, "driver_version": "",
           "driver_packages": {}, "toolkit_packages": {}, "nvidia_smi": ""}
    out.update(facts)
    return out


def driver_pod(api, node, name=None, namespace="gpu-operator", labels=None, phase=None):
    api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}) \
        if api.store.get("v1", "Namespace", namespace) is None else None
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name or "nvidia-driver-daemonset-" + node, "namespace": namespace,
                        "labels": labels or {"app": "nvidia-driver-daemonset"}},
           "spec": {"nodeName": node, "containers": [{"name": "driver", "image": "nvcr.io/nvidia/driver"}]}}
    if phase:
        pod["metadata"]["annotations"] = {PHASE: phase}
    api.store.create(pod)


@pytest.fixture
def cluster(fake_api_factory):
    api = fake_api_factory(controllers=default_controllers())
    for name in ("gpu-a", "gpu-b"):
        api.store.create(gpu_node(name))
    api.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1", "labels": {}}})
    api.clear_log()
    return api


def decide(api, **params):
    params.setdefault("kubeconfig", str(api.kubeconfig))
    return run_module("gpu_driver_mode", params)


def test_auto_without_drivers_picks_the_operator_and_reads_only(cluster):
    failed, result = decide(cluster, mode="auto", rdma=True, host_mofed=True)
    assert not failed, result["msg"] if failed else None
    assert result["mode"] == "operator" and result["changed"] is False and result["cluster_read"] is True
    assert result["reason"] == "auto: no GPU node (of 2) has a host driver"
    assert result["gpu_operator_values"]["driver"] == {
        "enabled": True, "nvidiaDriverCRD": {"enabled": False}, "rdma": {"enabled": True, "useHostMofed": True}}
    assert [n["name"] for n in result["nodes"]] == ["gpu-a", "gpu-b"], "the CPU node is not a GPU node"
    assert cluster.writes() == []


def test_host_facts_and_cluster_evidence_are_merged_per_node(cluster):
    hosts = [host("gpu-a", driver_loaded=True, driver_version="535.247.01",
                  driver_packages={"nvidia-kernel-dkms": "535.247.01-1~deb12u1"}),
             host("gpu-b", driver_packages={"nvidia-kernel-dkms": "535.247.01-1~deb12u1"}),
             host("gpu-c")]  # in the inventory, not (yet) a node of the cluster
    failed, result = decide(cluster, mode="host", hosts=hosts)
    assert not failed, result.get("msg")
    by_name = {n["name"]: n for n in result["nodes"]}
    assert by_name["gpu-a"]["findings"][0] == "driver 535.247.01 loaded (/proc/driver/nvidia/version)"
    assert by_name["gpu-b"]["findings"] == ["driver packages installed: nvidia-kernel-dkms 535.247.01-1~deb12u1"]
    assert by_name["gpu-c"]["in_cluster"] is False and by_name["gpu-c"]["managed"] is True
    assert result["owner"] == "host" and result["peermem"] == "host"
    assert result["gpu_operator_values"] == {"driver": {"enabled": False, "nvidiaDriverCRD": {"enabled": False}},
                                             "toolkit": {"enabled": True}}


def test_operator_mode_refuses_host_drivers_naming_each_node(cluster):
    hosts = [host("gpu-a", driver_packages={"nvidia-driver-535-server": "535.274.02-0ubuntu1"})]
    failed, result = decide(cluster, mode="operator", hosts=hosts)
    assert failed
    assert result["msg"].startswith("gpu_platform_driver_mode is operator but 1 GPU node(s) already have a host driver")
    assert "gpu-a: driver packages installed: nvidia-driver-535-server 535.274.02-0ubuntu1" in result["msg"]
    assert "gpu-b" not in result["msg"]
    assert [n["name"] for n in result["nodes"]] == ["gpu-a"]


def test_driver_pods_of_both_operator_paths_are_found_and_finished_ones_ignored(cluster):
    driver_pod(cluster, "gpu-a")
    driver_pod(cluster, "gpu-b", name="nvidia-gpu-driver-ubuntu22.04-x", labels={
        "app.kubernetes.io/component": "nvidia-driver"})
    failed, result = decide(cluster, mode="host", hosts=[host("gpu-a"), host("gpu-b")])
    assert failed
    assert "gpu-a: operator driver pod gpu-operator/nvidia-driver-daemonset-gpu-a" in result["msg"]
    assert "gpu-b: operator driver pod gpu-operator/nvidia-gpu-driver-ubuntu22.04-x" in result["msg"]

    cluster.store.delete("v1", "Pod", "nvidia-driver-daemonset-gpu-a", "gpu-operator")
    cluster.store.delete("v1", "Pod", "nvidia-gpu-driver-ubuntu22.04-x", "gpu-operator")
    driver_pod(cluster, "gpu-a", name="old-driver", phase="Failed")
    failed, result = decide(cluster, mode="host", hosts=[host("gpu-a"), host("gpu-b")])
    assert not failed, result["msg"]


def test_existing_nvidia_driver_objects_are_kept_in_operator_mode(cluster):
    cluster.store.create({"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "gpu-580"},
                          "spec": {"driverType": "gpu"}})
    failed, result = decide(cluster, mode="operator")
    assert not failed, result.get("msg")
    assert result["gpu_operator_values"]["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}


def test_check_mode_decides_the_same_and_writes_nothing(cluster):
    normal = decide(cluster, mode="auto")
    checked = run_module("gpu_driver_mode", {"mode": "auto", "kubeconfig": str(cluster.kubeconfig)}, check_mode=True)
    assert normal == checked
    assert cluster.writes() == []


def test_without_the_cluster_only_hosts_and_cloud_count(tmp_path):
    # No cluster is contacted: a kubeconfig that points nowhere does not matter.
    failed, result = run_module("gpu_driver_mode", {"mode": "host", "read_cluster": False, "cloud_driver": "present",
                                                    "kubeconfig": str(tmp_path / "missing")})
    assert not failed, result.get("msg")
    assert result["owner"] == "cloud" and result["peermem"] == "daemonset" and result["cluster_read"] is False
    assert result["gpu_operator_values"]["toolkit"] == {"enabled": False}


@pytest.mark.parametrize("params, words", [
    ({"mode": "hots"}, "value of mode must be one of: host, operator, auto, got: hots"),
    ({"mode": "auto", "cloud_driver": "maybe"}, "value of cloud_driver must be one of"),
    ({"mode": "auto", "hosts": [{"gpu_present": True}]}, "hosts[0]: has no node_name"),
    ({"mode": "auto", "hosts": [host("n1"), host("n1")]}, "hosts[1].node_name: 'n1' is given by two hosts"),
    ({"mode": "auto", "host_mofed": True}, "host_mofed: is true but rdma is false"),
])
def test_bad_inputs_name_the_option(cluster, params, words):
    failed, result = decide(cluster, **params)
    assert failed and words in result["msg"], result["msg"]
    assert cluster.writes() == []


def rdma_node(name, kernel, compute, pool="h100"):
    """A GPU node as GFD labels it (compute capability) with its kubelet's kernel release."""
    node = gpu_node(name, product="NVIDIA-H100-80GB-HBM3")
    node["metadata"]["labels"].update({"nodepool": pool, "nvidia.com/gpu.compute.major": str(compute[0]),
                                       "nvidia.com/gpu.compute.minor": str(compute[1])})
    node["status"]["nodeInfo"] = {"kernelVersion": kernel, "osImage": "Ubuntu 24.04.2 LTS"}
    return node


@pytest.fixture
def rdma_cluster(fake_api_factory):
    api = fake_api_factory(controllers=default_controllers())
    api.store.create(rdma_node("h100-1", "6.8.0-60-generic", (9, 0)))
    api.store.create(rdma_node("h100-2", "6.8.0-60-generic", (9, 0)))
    api.clear_log()
    return api


POOLS = [{"name": "h100", "node_selector": {"nodepool": "h100"}, "sharing": "none"},
         {"name": "v100", "node_selector": {"nodepool": "v100"}, "sharing": "none"}]


def test_auto_reads_the_nodes_kernel_and_gpu_and_picks_dmabuf_for_the_operators_driver(rdma_cluster):
    failed, result = decide(rdma_cluster, mode="operator", rdma=True, node_pools=POOLS)
    assert not failed, result.get("msg")
    gpudirect = result["gpudirect"]
    assert gpudirect["path"] == "dmabuf" and gpudirect["requested"] == "auto" and result["peermem"] == "none"
    assert gpudirect["evidence"] == "open kernel modules, kernel 6.8, Hopper"
    assert [(n["name"], n["pool"], n["kernel_source"]) for n in gpudirect["nodes"]] == [
        ("h100-1", "h100", "status.nodeInfo.kernelVersion"), ("h100-2", "h100", "status.nodeInfo.kernelVersion")]
    assert result["gpu_operator_values"]["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}
    assert result["gpu_operator_values"]["driver"]["kernelModuleType"] == "open"
    assert rdma_cluster.writes() == []


def test_explicit_dmabuf_is_refused_before_any_write_naming_the_pool_and_the_evidence(rdma_cluster):
    rdma_cluster.store.create(rdma_node("v100-1", "5.4.0-150-generic", (7, 0), pool="v100"))
    rdma_cluster.clear_log()
    failed, result = decide(rdma_cluster, mode="operator", rdma=True, node_pools=POOLS, gpudirect_path="dmabuf")
    assert failed
    assert result["msg"] == (
        "gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on 1 GPU node(s): pool v100, node v100-1: "
        "kernel 5.4.0-150-generic (status.nodeInfo.kernelVersion) is older than 5.12 - fix: boot a kernel 5.12 or "
        "newer; Volta GPUs (nvidia.com/gpu.compute.major=7, nvidia.com/gpu.compute.minor=0) are older than Turing "
        "(compute capability 7.5) - fix: run GPUDirect RDMA on Turing-or-newer GPUs. Fix that, or set "
        "gpu_platform_gpudirect_path: peermem (legacy nvidia-peermem, with MLNX_OFED/DOCA-OFED). Nothing was changed.")
    assert [n["name"] for n in result["gpudirect"] if n["blocks"]] == ["v100-1"]
    assert rdma_cluster.writes() == []
    # auto takes nvidia-peermem instead, through the operator's driver container
    failed, result = decide(rdma_cluster, mode="operator", rdma=True, node_pools=POOLS)
    assert not failed and result["gpudirect"]["path"] == "peermem" and result["peermem"] == "operator"
    assert result["gpu_operator_values"]["driver"]["rdma"]["enabled"] is True
    assert rdma_cluster.writes() == []


def test_a_cluster_policy_with_peermem_keeps_auto_on_peermem(rdma_cluster):
    rdma_cluster.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                               "metadata": {"name": "cluster-policy"},
                               "spec": {"driver": {"enabled": True, "rdma": {"enabled": True}}}})
    rdma_cluster.clear_log()
    failed, result = decide(rdma_cluster, mode="operator", rdma=True)
    assert not failed, result.get("msg")
    assert result["gpudirect"]["path"] == "peermem" and result["peermem"] == "operator"
    assert "already runs nvidia-peermem (ClusterPolicy cluster-policy has driver.rdma.enabled=true)" in \
        result["gpudirect"]["reason"]
    assert rdma_cluster.writes() == []


def test_the_gpudirect_decision_is_the_same_in_check_mode(rdma_cluster):
    params = {"mode": "operator", "rdma": True, "kubeconfig": str(rdma_cluster.kubeconfig),
              "kernel_module_type": "proprietary"}
    normal = run_module("gpu_driver_mode", params)
    assert normal[0] is False and normal[1]["gpudirect"]["path"] == "peermem"
    assert run_module("gpu_driver_mode", params, check_mode=True) == normal
    assert rdma_cluster.writes() == []


@pytest.mark.parametrize("params, words", [
    ({"gpudirect_path": "dma-buf"}, "value of gpudirect_path must be one of: auto, dmabuf, peermem, got: dma-buf"),
    ({"kernel_module_type": "Open"}, "gpu_operator_extra_values.driver.kernelModuleType: 'Open' is not a kernel "
                                     "module type"),
    ({"node_pools": [{"node_selector": {"a": "b"}}]}, "node_pools[0]: has no name"),
    ({"host_kernel_modules": "dkms"}, "value of host_kernel_modules must be one of"),
])
def test_bad_gpudirect_inputs_name_the_option_and_write_nothing(rdma_cluster, params, words):
    failed, result = decide(rdma_cluster, mode="operator", rdma=True, **params)
    assert failed and words in result["msg"], result["msg"]
    assert "Traceback" not in result["msg"]
    assert rdma_cluster.writes() == []


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_host_facts_from_a_gpu_host_tree(tmp_path):
    root = tmp_path
    gpu = root / "sys/bus/pci/devices/0000:17:00.0"
    write(gpu / "vendor", "0x10de\n")
    write(gpu / "class", "0x030200\n")
    write(gpu / "device", "0x2330\n")
    nic = root / "sys/bus/pci/devices/0000:3b:00.0"
    write(nic / "vendor", "0x15b3\n")
    write(nic / "class", "0x020700\n")
    write(root / "proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:07:36 UTC 2025\n"
          "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n")
    write(root / "proc/modules", "nvidia_peermem 16384 0 - Live 0x0000000000000000\n"
                                 "nvidia 56537088 10 nvidia_uvm,nvidia_peermem, Live 0x0\nib_core 454656 9 - Live 0x0\n")
    write(root / "etc/ansible/facts.d/gpu_platform_driver.fact", json.dumps({"branch": "535", "source": "distribution"}))
    write(root / "etc/os-release", 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n')
    failed, result = run_module("gpu_host_facts", {"root": str(root), "node_name": "gpu-node-01", "packages": ["make"]})
    assert not failed, result.get("msg")
    facts = result["ansible_facts"]["gpu_host"]
    assert facts["node_name"] == "gpu-node-01" and result["changed"] is False
    assert facts["gpus"] == [{"address": "0000:17:00.0", "device": "0x2330"}] and facts["gpu_present"] is True
    assert facts["driver_loaded"] is True and facts["driver_version"] == "535.247.01"
    assert facts["kernel_module_type"] == "proprietary", "no 'Open Kernel Module' in /proc/driver/nvidia/version"
    assert facts["peermem_loaded"] is True and facts["nouveau_loaded"] is False
    assert facts["modules"] == ["ib_core", "nvidia", "nvidia_peermem"]
    assert facts["host_driver"] == {"branch": "535", "source": "distribution"}
    assert facts["package_manager"] == "dpkg"  # this machine's own package database, which has no NVIDIA driver
    assert facts["driver_packages"] == {}
    assert facts["os"]["distribution"] == "Ubuntu" and facts["os"]["version"] == "24.04"
    assert facts["os"]["family"] == "Debian"
    assert "make" in facts["packages"] and "libc6" not in facts["packages"]  # asked for / not asked for


def test_host_facts_of_a_host_without_a_gpu_and_a_broken_record(tmp_path):
    write(tmp_path / "etc/ansible/facts.d/gpu_platform_driver.fact", "not json")
    failed, result = run_module("gpu_host_facts", {"root": str(tmp_path)})
    assert not failed
    facts = result["ansible_facts"]["gpu_host"]
    assert facts["gpu_present"] is False and facts["driver_loaded"] is False and facts["host_driver"] == {}
    assert facts["node_name"]  # the host name, lower-cased
