"""The GPUDirect RDMA path (domain/drivers/gpudirect.py, through gpu_driver_mode.decide): DMA-BUF where every GPU
node's evidence allows it, nvidia-peermem where one does not, an explicit dmabuf that cannot work refused naming the
pool, the evidence and the fix, and the GPU Operator values and peermem path that follow."""
import copy

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode, gpudirect
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

POOLS = [{"name": "cpu", "node_selector": {"nodepool": "cpu"}},
         {"name": "h100", "node_selector": {"nodepool": "h100"}, "gpu_product": "NVIDIA-H100-80GB-HBM3"}]
HOPPER = {"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"}


def host(name, module_type="open", kernel="6.8.0-60-generic", version="595.91.07", loaded=True, packages=None):
    """gpu_host_facts' gpu_host for a host with a loaded driver (or none)."""
    return {"node_name": name, "gpu_present": True, "driver_loaded": loaded, "driver_version": version if loaded else "",
            "kernel_module_type": module_type if loaded else "", "driver_packages": dict(packages or {}),
            "toolkit_packages": {}, "nvidia_smi": "/usr/bin/nvidia-smi" if loaded else "",
            "os": {"kernel": kernel} if kernel else {}}


def node(name="gpu-a", facts="default", labels=None, kernel="", pool="h100"):
    base = {"nvidia.com/gpu.present": "true", "nodepool": pool}
    base.update(HOPPER if labels is None else labels)
    return {"name": name, "host": host(name) if facts == "default" else facts, "labels": base, "driver_pods": [],
            "kernel": kernel}


def decide(nodes, path="auto", mode="host", rdma=True, **kwargs):
    return gpu_driver_mode.decide(mode, nodes, rdma=rdma, gpudirect_path=path, node_pools=POOLS, **kwargs)


def refused(nodes, **kwargs):
    with pytest.raises(Refusal) as info:
        decide(nodes, path="dmabuf", **kwargs)
    return info.value.msg


# ---------------------------------------------------------------- auto: DMA-BUF only where every condition holds


def test_auto_picks_dmabuf_when_every_node_meets_every_condition():
    got = decide([node("gpu-b"), node("gpu-a")])
    assert got["gpudirect"]["path"] == "dmabuf" and got["peermem"] == "none"
    assert got["gpudirect"]["reason"] == ("auto: every GPU node (2) has the open kernel modules, Linux 5.12 or newer "
                                          "and a Turing-or-newer GPU")
    assert got["gpudirect"]["evidence"] == "open kernel modules 595, kernel 6.8, Hopper"
    first = got["gpudirect"]["nodes"][0]
    assert (first["name"], first["pool"], first["module_source"], first["kernel_source"]) == (
        "gpu-a", "h100", "/proc/driver/nvidia/version", "the host's uname")
    assert first["blocks"] == [] and first["unknown"] == [] and first["compute"] == [9, 0]


# Each condition, flipped on one of two nodes, makes auto fall back to peermem and say which node and why.
FLIPS = [
    ("proprietary module", dict(facts=host("gpu-b", module_type="proprietary")),
     "pool h100, node gpu-b: the proprietary kernel module (/proc/driver/nvidia/version)"),
    ("kernel 5.4", dict(facts=host("gpu-b", kernel="5.4.0-150-generic")),
     "pool h100, node gpu-b: kernel 5.4.0-150-generic (the host's uname) is older than 5.12"),
    ("kernel 5.11", dict(facts=host("gpu-b", kernel="5.11.22")), "kernel 5.11.22 (the host's uname) is older than 5.12"),
    ("Volta", dict(labels={"nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "0"}),
     "pool h100, node gpu-b: Volta GPUs (nvidia.com/gpu.compute.major=7, nvidia.com/gpu.compute.minor=0) are older "
     "than Turing"),
    ("unknown module type", dict(facts=host("gpu-b", loaded=False)),
     "not known on pool h100, node gpu-b: the kernel module type unknown"),
    ("unknown kernel", dict(facts=host("gpu-b", kernel="")),
     "not known on pool h100, node gpu-b: the kernel release unknown"),
    ("unknown GPU", dict(labels={}, pool="other"), "not known on node gpu-b: the GPU generation unknown"),
]


@pytest.mark.parametrize("what, changes, words", FLIPS, ids=[f[0] for f in FLIPS])
def test_each_condition_flips_auto_to_peermem_naming_the_node_and_the_evidence(what, changes, words):
    got = decide([node("gpu-a"), node("gpu-b", **changes)])
    assert got["gpudirect"]["path"] == "peermem", what
    assert got["peermem"] == "host", "the hosts' own driver: the peermem role loads it"
    assert got["gpudirect"]["reason"].startswith("auto: DMA-BUF needs the open kernel modules, Linux 5.12 or newer and "
                                                 "a Turing-or-newer GPU; not ")
    assert words in got["gpudirect"]["reason"]
    assert "gpu-a" not in got["gpudirect"]["reason"]


def test_turing_is_the_oldest_generation_that_counts():
    turing = {"nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "5"}
    assert decide([node(labels=turing)])["gpudirect"]["path"] == "dmabuf"


def test_a_cloud_managed_driver_gets_peermem_through_the_loader():
    got = decide([node()], cloud_driver="present")
    assert got["owner"] == "cloud" and got["gpudirect"]["path"] == "peermem" and got["peermem"] == "daemonset"
    assert "the cloud's node image ships its own driver" in got["gpudirect"]["reason"]


def test_no_gpu_node_seen_is_peermem_saying_what_auto_could_not_check():
    got = gpu_driver_mode.decide("operator", [], rdma=True)
    assert got["gpudirect"]["path"] == "peermem" and got["peermem"] == "operator"
    assert got["gpudirect"]["reason"].startswith("auto: no GPU node seen yet, so DMA-BUF's conditions cannot be "
                                                 "checked")
    assert "set gpu_platform_gpudirect_path: dmabuf to choose it" in got["gpudirect"]["reason"]


RUNNING = {"cluster_policy": {"name": "cluster-policy", "driver_enabled": True, "use_nvidia_driver_crd": False,
                              "rdma_enabled": True}, "nvidia_drivers": []}


def test_auto_keeps_the_peermem_a_running_operator_cluster_has():
    """The GPU Operator already loads nvidia-peermem: auto does not move the cluster (new driver pods) on a re-run,
    even once the evidence (GFD's labels, after the first run) shows DMA-BUF would work; dmabuf moves it."""
    nodes = [node("gpu-a", facts=None, kernel="6.8.0-60-generic")]
    got = gpu_driver_mode.decide("operator", nodes, RUNNING, rdma=True)
    assert got["gpudirect"]["path"] == "peermem" and got["peermem"] == "operator"
    assert got["gpudirect"]["reason"] == (
        "auto: DMA-BUF would work on every GPU node (1), but the cluster already runs nvidia-peermem (ClusterPolicy "
        "cluster-policy has driver.rdma.enabled=true) and auto does not move it; set gpu_platform_gpudirect_path: "
        "dmabuf to move it")
    assert got["gpu_operator_values"]["driver"]["rdma"]["enabled"] is True
    moved = gpu_driver_mode.decide("operator", nodes, RUNNING, rdma=True, gpudirect_path="dmabuf")
    assert moved["gpudirect"]["path"] == "dmabuf" and moved["gpu_operator_values"]["driver"]["rdma"]["enabled"] is False
    off = dict(RUNNING, cluster_policy=dict(RUNNING["cluster_policy"], rdma_enabled=False))
    assert gpu_driver_mode.decide("operator", nodes, off, rdma=True)["gpudirect"]["path"] == "dmabuf"


# ---------------------------------------------------------------- the evidence and where it is read


@pytest.mark.parametrize("labels, pool, arch, source", [
    ({"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "9"}, "h100", "Ada Lovelace",
     "nvidia.com/gpu.compute.major=8, nvidia.com/gpu.compute.minor=9"),
    ({"nvidia.com/gpu.family": "ampere"}, "h100", "Ampere", "nvidia.com/gpu.family=ampere"),
    ({"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}, "h100", "Volta", "nvidia.com/gpu.product=Tesla-V100-SXM2-16GB"),
    ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}, "h100", "Ampere",
     "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"),
    ({"nvidia.com/gpu.product": "NVIDIA-B200"}, "h100", "Blackwell", "nvidia.com/gpu.product=NVIDIA-B200"),
    # no GFD label yet (the GPU Operator comes later): the pool's gpu_product says it
    ({}, "h100", "Hopper", "the pool's gpu_product NVIDIA-H100-80GB-HBM3"),
    ({}, "cpu", None, None),
])
def test_the_gpu_generation_comes_from_gfd_labels_then_the_pool(labels, pool, arch, source):
    got = gpudirect.node_evidence(node(labels=labels, pool=pool), "host", gpudirect.check_pools(POOLS))
    assert (got["architecture"], got["gpu_source"]) == (arch, source)


def test_the_kernel_comes_from_the_host_then_the_node():
    nodes = [node("gpu-a", facts=None, kernel="6.8.0-1021-azure")]
    got = gpudirect.node_evidence(nodes[0], "operator", [])
    assert (got["kernel"], got["kernel_source"]) == ("6.8.0-1021-azure", "status.nodeInfo.kernelVersion")
    got = gpudirect.node_evidence(node("gpu-a", kernel="5.4.0-1"), "host", [])
    assert (got["kernel"], got["kernel_source"]) == ("6.8.0-60-generic", "the host's uname")


@pytest.mark.parametrize("kernel_module_type, driver_version, loaded, flavour", [
    ("auto", "", None, "open"),                     # the chart's default driver: R580 or newer
    ("auto", "580.126.20", None, "open"),
    ("auto", "570.195.03", None, "open"),
    ("auto", "565.57.01", None, "proprietary"),     # before R570 auto keeps the proprietary modules
    ("auto", "535.288.01", None, "proprietary"),
    ("open", "535.288.01", None, "open"),           # an explicit choice is what the driver container installs
    ("proprietary", "", None, "proprietary"),
    ("auto", "", "proprietary", "proprietary"),     # what the operator's running driver loaded tells auto's choice
    ("open", "", "proprietary", "open"),            # ...but an explicit value is what the next rollout installs
])
def test_the_operators_module_type_follows_driver_kernel_module_type(kernel_module_type, driver_version, loaded,
                                                                     flavour):
    facts = host("gpu-a", module_type=loaded) if loaded else None
    got = gpudirect.node_evidence(node(facts=facts, kernel="6.8.0-60-generic"), "operator", [],
                                  kernel_module_type, driver_version)
    assert got["module_type"] == flavour


def test_a_host_without_a_driver_yet_counts_the_flavour_host_driver_installs():
    bare = host("gpu-a", loaded=False)
    assert gpudirect.node_evidence(node(facts=bare), "host", [], host_kernel_modules="open")["module_type"] == "open"
    assert gpudirect.node_evidence(node(facts=bare), "host", [])["module_type"] is None
    packaged = host("gpu-a", loaded=False, packages={"nvidia-driver-580-server-open": "580.126.20-0ubuntu1"})
    got = gpudirect.node_evidence(node(facts=packaged), "host", [], host_kernel_modules="proprietary")
    assert got["module_type"] == "open", "installed packages beat the plan"
    assert got["module_source"] == "open driver packages installed (nvidia-driver-580-server-open)"


# ---------------------------------------------------------------- an explicit dmabuf that cannot work: refused


@pytest.mark.parametrize("changes, kwargs, words", [
    (dict(facts=host("gpu-b", module_type="proprietary")), {},
     "pool h100, node gpu-b: the proprietary kernel module (/proc/driver/nvidia/version) - fix: install the open "
     "kernel modules (host_driver_kernel_modules: open) and reboot"),
    (dict(facts=host("gpu-b", kernel="5.4.0-150-generic")), {},
     "pool h100, node gpu-b: kernel 5.4.0-150-generic (the host's uname) is older than 5.12 - fix: boot a kernel 5.12 "
     "or newer"),
    (dict(labels={"nvidia.com/gpu.product": "Tesla-P100-PCIE-16GB"}, pool="p100"), {},
     "node gpu-b: Pascal GPUs (nvidia.com/gpu.product=Tesla-P100-PCIE-16GB) are older than Turing (compute capability "
     "7.5) - fix: run GPUDirect RDMA on Turing-or-newer GPUs"),
    (dict(facts=None, kernel="6.8.0-60-generic", labels={"nvidia.com/gpu.family": "hopper"}),
     dict(mode="operator", kernel_module_type="proprietary"),
     "pool h100, node gpu-b: the proprietary kernel module (driver.kernelModuleType=proprietary) - fix: set "
     "driver.kernelModuleType: open in gpu_operator_extra_values"),
], ids=["proprietary", "kernel", "pascal", "operator-proprietary"])
def test_explicit_dmabuf_is_refused_naming_the_pool_the_evidence_and_the_fix(changes, kwargs, words):
    # gpu-a is fine; under the operator (one setting for every node) it is not a node of the cluster yet
    ready = [] if kwargs.get("mode") else [node("gpu-a")]
    msg = refused(ready + [node("gpu-b", **changes)], **kwargs)
    assert msg.startswith("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on 1 GPU node(s): ")
    assert words in msg
    assert "gpu-a" not in msg
    assert msg.endswith("Fix that, or set gpu_platform_gpudirect_path: peermem (legacy nvidia-peermem, with "
                        "MLNX_OFED/DOCA-OFED). Nothing was changed.")
    assert "\n" not in msg


def test_explicit_dmabuf_on_a_cloud_driver_is_refused_also_before_any_node_is_seen():
    msg = refused([], cloud_driver="present")
    assert msg.startswith("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on every GPU node: the "
                          "cloud's node image ships its own driver (gpu_platform_cloud_driver: present)")
    assert "on AKS --gpu-driver none" in msg and "gpu_platform_cloud_driver: absent" in msg
    msg = refused([node("aks-ndh100-0"), node("aks-ndh100-1")], cloud_driver="present")
    assert "on 2 GPU node(s): pool h100, node aks-ndh100-0: the cloud's node image" in msg


def test_every_blocking_condition_of_a_node_is_named_at_once():
    facts = host("gpu-b", module_type="proprietary", kernel="5.10.0-32-amd64")
    msg = refused([node("gpu-b", facts=facts, labels={"nvidia.com/gpu.family": "volta"})])
    assert msg.count("pool h100, node gpu-b:") == 1
    assert "the proprietary kernel module" in msg and "kernel 5.10.0-32-amd64" in msg and "Volta GPUs" in msg


def test_an_operator_driver_before_r570_under_auto_is_the_proprietary_module_on_every_node():
    nodes = [node(name, facts=None, kernel="6.8.0-60-generic") for name in ("gpu-a", "gpu-b")]
    msg = refused(nodes, mode="operator", driver_version="535.288.01")
    assert "on 2 GPU node(s): pool h100, node gpu-a: the proprietary kernel module (driver.kernelModuleType=auto " \
           "with driver 535.288.01 (before R570)) - fix: set driver.kernelModuleType: open" in msg
    assert decide(nodes, mode="operator", driver_version="535.288.01")["gpudirect"]["path"] == "peermem"
    assert decide(nodes, mode="operator", driver_version="580.126.20")["gpudirect"]["path"] == "dmabuf"


def test_explicit_dmabuf_without_evidence_is_allowed_and_says_what_was_not_verified():
    # a driver GFD saw on a host outside the inventory: nothing says its module type, kernel or GPU
    got = decide([node("gpu-a", facts=None, labels={"nvidia.com/cuda.driver.major": "580"}, pool="other")],
                 path="dmabuf")
    assert got["gpudirect"]["path"] == "dmabuf" and got["peermem"] == "none"
    assert got["gpudirect"]["reason"] == ("requested: dmabuf (not verified: node gpu-a: the kernel module type and "
                                          "the kernel release and the GPU generation unknown)")


@pytest.mark.parametrize("kwargs, words", [
    (dict(kernel_module_type="proprietary"), "the proprietary kernel module (driver.kernelModuleType=proprietary)"),
    (dict(driver_version="550.163.01"), "the proprietary kernel module (driver.kernelModuleType=auto with driver "
                                        "550.163.01 (before R570))"),
])
def test_the_operators_module_type_rules_dmabuf_out_before_any_node_is_seen(kwargs, words):
    with pytest.raises(Refusal) as info:
        gpu_driver_mode.decide("operator", [], rdma=True, gpudirect_path="dmabuf", **kwargs)
    assert info.value.msg.startswith("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on every GPU "
                                     "node: " + words + " - fix: set driver.kernelModuleType: open")
    got = gpu_driver_mode.decide("operator", [], rdma=True, **kwargs)
    assert got["gpudirect"]["path"] == "peermem"
    assert "not met on every GPU node: " + words in got["gpudirect"]["reason"]


def test_explicit_dmabuf_before_any_node_is_seen_is_allowed_but_not_verified():
    got = gpu_driver_mode.decide("operator", [], rdma=True, gpudirect_path="dmabuf")
    assert got["gpudirect"]["path"] == "dmabuf"
    assert got["gpudirect"]["reason"] == "requested: dmabuf (not verified: no GPU node seen yet)"


def test_explicit_peermem_is_allowed_where_dmabuf_would_work():
    got = decide([node()], path="peermem")
    assert got["gpudirect"] == dict(got["gpudirect"], path="peermem", requested="peermem", reason="requested: peermem")
    assert got["peermem"] == "host"


@pytest.mark.parametrize("path", ["auto", "dmabuf", "peermem"])
def test_rdma_off_is_path_none_whatever_was_asked(path):
    proprietary = node(facts=host("gpu-a", module_type="proprietary"))
    got = decide([proprietary], path=path, rdma=False)
    assert got["gpudirect"]["path"] == "none" and got["gpudirect"]["reason"] == "GPUDirect RDMA is off"


# ---------------------------------------------------------------- the values that follow


def operator_nodes():
    return [node("gpu-a", facts=None, kernel="6.8.0-60-generic")]


def test_operator_with_dmabuf_turns_peermem_off_and_asks_for_the_open_modules():
    got = decide(operator_nodes(), mode="operator", host_mofed=True)
    assert got["gpudirect"]["path"] == "dmabuf" and got["peermem"] == "none"
    assert got["gpudirect"]["evidence"] == "open kernel modules, kernel 6.8, Hopper"
    assert got["gpu_operator_values"]["driver"] == {
        "enabled": True, "nvidiaDriverCRD": {"enabled": False}, "kernelModuleType": "open",
        # the hosts' network drivers still count (gpu-operator-rdma.rst: DMA-BUF with useHostMofed=true)
        "rdma": {"enabled": False, "useHostMofed": True}}


def test_operator_with_peermem_keeps_the_driver_containers_peermem():
    got = decide(operator_nodes(), mode="operator", path="peermem")
    assert got["peermem"] == "operator"
    assert got["gpu_operator_values"]["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
    assert "kernelModuleType" not in got["gpu_operator_values"]["driver"]


def test_host_driver_with_dmabuf_leaves_the_operator_values_as_they_were():
    dmabuf, peermem = decide([node()]), decide([node()], path="peermem")
    assert dmabuf["gpu_operator_values"] == peermem["gpu_operator_values"] == {
        "driver": {"enabled": False, "nvidiaDriverCRD": {"enabled": False}}, "toolkit": {"enabled": True}}
    assert (dmabuf["peermem"], peermem["peermem"]) == ("none", "host")


def test_the_decision_does_not_change_its_inputs():
    nodes = [node("gpu-a"), node("gpu-b", facts=host("gpu-b", kernel="5.4.0"))]
    before = copy.deepcopy(nodes)
    decide(nodes)
    assert nodes == before


# ---------------------------------------------------------------- bad input: one line naming the field


@pytest.mark.parametrize("kwargs, words", [
    (dict(gpudirect_path="dma-buf"), "gpudirect_path: 'dma-buf' is not a GPUDirect RDMA path. Fix: use auto"),
    (dict(kernel_module_type="Open"),
     "gpu_operator_extra_values.driver.kernelModuleType: 'Open' is not a kernel module type. Fix: use auto, open or "
     "proprietary"),
    (dict(host_kernel_modules="dkms"), "host_kernel_modules: 'dkms' is not a kernel module flavour"),
    (dict(driver_version=580), "driver_version: 580 is not a string"),
    (dict(node_pools={"name": "h100"}), "node_pools: {'name': 'h100'} is not a list"),
    (dict(node_pools=[{"node_selector": {}}]), "node_pools[0]: has no name. Fix: give each gpu_platform_node_pools"),
    (dict(node_pools=[{"name": "h100", "node_selector": "nodepool=h100"}]),
     "node_pools[0].node_selector: 'nodepool=h100' is not a dictionary"),
])
def test_bad_inputs_name_the_field_and_the_fix(kwargs, words):
    kwargs.setdefault("node_pools", POOLS)
    with pytest.raises(ParamError) as info:
        gpu_driver_mode.decide("host", [node()], rdma=True, **kwargs)
    assert words in info.value.msg
    assert "\n" not in info.value.msg


@pytest.mark.parametrize("text, parsed", [
    ("6.8.0-60-generic", (6, 8)), ("5.15.0-1079-azure", (5, 15)), ("4.18.0-553.el8_10.x86_64", (4, 18)),
    ("5.12", (5, 12)), ("", None), (None, None), ("generic", None),
])
def test_kernel_release(text, parsed):
    assert gpudirect.kernel_release(text) == parsed
