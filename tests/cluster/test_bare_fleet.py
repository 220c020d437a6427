"""The platform on a fleet that starts bare: the AKS ND H100 v5 pool as ``az aks nodepool add --gpu-driver none``
leaves it (``CLUSTER_PROFILE=aks-nd-h100-v5``), each node's labels and resources given only by the node agents while
the component that would give them runs there (docs/testing.md).

``ansible-playbook site.yml -i inventories/aks -e @<cluster>/connection.yml`` (the connection file ``cluster-up``
writes) converges from the bare pool to a passing RDMA proof in one run, and the second run changes nothing; a stuck
SR-IOV device plugin stops the run in the network layer, naming the component and the node, before anything of the
GPU Operator is installed; a MIG layout the MIG manager's ConfigMap lacks ends ``failed``, and ``mig_profile`` says so.
The two orderings the bare pool broke are shown failing, then fixed: NFD must come with the Network Operator (the
GPU Operator's comes too late for the NicClusterPolicy), and the peermem loader must run after the NIC driver.

The other example inventories on the fleets they are written for: ``inventories/aks-no-rdma`` on an AKS
``Standard_NC40ads_H100_v5`` pool (``aks-nc-h100-v5``: one H100 NVL, no InfiniBand), and ``inventories/baremetal`` on
DGX-like hosts (``baremetal-driver``) with its host tier left out (``--limit k8s_api``: ``host_driver`` is proven on
podman hosts in molecule/hosts); the profile declares the 580 driver that tier leaves on the hosts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kubernetes import config, dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from local_gpu_cluster.audit import describe
from local_gpu_cluster.fleet import declared_hardware
from local_gpu_cluster.charts import helm_env
from local_gpu_cluster.testing import ROOT, RUN_USER, cluster_command, fleet_cluster
from tests.playbooks.conftest import PlayResult, site_env

pytestmark = pytest.mark.slow
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests@sha256:" + "a" * 64  # pinned by digest, as inventories/aks asks
AKS_ARGS = ("-e", "smoke_tests_nccl_image=" + NCCL_IMAGE)
GPU_NODES = 2
BARE_DOMAINS = ("nvidia.com/", "feature.node.kubernetes.io/")


def _profile_cluster(profile, directory):
    """A fresh cluster of ``profile`` (GPU_NODES GPU nodes) in build/<directory>, for one module."""
    yield from fleet_cluster(ROOT / "build" / directory, profile, GPU_NODES)


@pytest.fixture(scope="module")
def aks_cluster():
    """A fresh cluster of the bare AKS profile, for this module."""
    yield from _profile_cluster("aks-nd-h100-v5", "test-cluster-aks")


@pytest.fixture(scope="module")
def aks_driver_cluster():
    """The pool with AKS's own driver (``--gpu-driver install``): peermem comes from the loader DaemonSet."""
    yield from _profile_cluster("aks-nd-h100-v5-driver", "test-cluster-aks-driver")


@pytest.fixture(scope="module")
def aks_fault_cluster():
    """Another fresh one, for the faults: its network layer is stopped before the GPU Operator is installed."""
    yield from _profile_cluster("aks-nd-h100-v5", "test-cluster-aks-fault")


@pytest.fixture(scope="module")
def aks_nc_cluster():
    """An AKS NC H100 v5 pool (one H100 NVL, no InfiniBand), bare: what inventories/aks-no-rdma is for."""
    yield from _profile_cluster("aks-nc-h100-v5", "test-cluster-aks-nc")


@pytest.fixture(scope="module")
def baremetal_cluster():
    """DGX-like hosts with the driver inventories/baremetal's host tier installs, otherwise bare."""
    yield from _profile_cluster("baremetal-driver", "test-cluster-baremetal")


class BareFleet:
    """An example inventory (``inventories/<inventory>``, with ``args``) run on a bare-fleet cluster."""

    def __init__(self, cluster, tmp_path, inventory="aks", args=AKS_ARGS):
        self.cluster, self.inventory, self.args = cluster, inventory, args
        self.env = dict(site_env(helm_env(tmp_path / "helm-env")), CLUSTER_DIR=str(cluster.dir))
        self.dyn = dynamic.DynamicClient(config.new_client_from_config(config_file=cluster.kubeconfig))

    def run(self, *extra, playbook="site.yml", user=None):
        """The playbook on the cluster; with ``user``, with that user's credential (the audit log tells its requests
        from everyone else's)."""
        connection = "@%s" % (self.cluster.dir / "connection.yml")
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                   str(ROOT / "inventories" / self.inventory), str(ROOT / playbook), "-e", connection,
                   *self.args, *extra]
        if user:
            command += ["-e", "gpu_platform_kubeconfig=" + self.cluster.kubeconfig_for(user)]
        proc = subprocess.run(command, env=self.env, capture_output=True, text=True, cwd=str(ROOT), check=False,
                              timeout=1200)
        return PlayResult(proc)

    def get(self, api_version, kind, name=None, namespace=None):
        try:
            resource = self.dyn.resources.get(api_version=api_version, kind=kind)
            return resource.get(name=name, namespace=namespace).to_dict()
        except (NotFoundError, ResourceNotFoundError):
            return None

    def gpu_nodes(self):
        """The nodes whose declared hardware has GPUs."""
        return [n for n in self.get("v1", "Node")["items"] if (declared_hardware(n) or {}).get("gpus")]

    def assert_bare(self):
        """Every node as its provider hands it over: no NFD or GPU label, no GPU or RDMA allocatable."""
        nodes = self.get("v1", "Node")["items"]
        assert len(nodes) == GPU_NODES + 1
        for node in nodes:
            name, labels = node["metadata"]["name"], node["metadata"]["labels"]
            assert [k for k in labels if k.startswith(BARE_DOMAINS)] == [], name
            allocatable = node["status"]["allocatable"]
            assert [k for k in allocatable if k.startswith(("nvidia.com/", "rdma/"))] == [], name
        assert len(self.gpu_nodes()) == GPU_NODES

    @staticmethod
    def summary(result):
        """The platform summary's lines of one run."""
        return "\n".join(json.dumps(res.get("msg")) for task, res in result.tasks()
                         if task.endswith("What was written and which versions are pinned"))


def test_the_aks_pool_starts_bare(aks_cluster, tmp_path):
    aks = BareFleet(aks_cluster, tmp_path)
    aks.assert_bare()
    for node in aks.gpu_nodes():
        assert node["metadata"]["labels"]["kubernetes.azure.com/accelerator"] == "nvidia"
    assert aks.gpu_nodes()[0]["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "Standard_ND96isr_H100_v5"


def test_a_gpu_pool_taint_nothing_tolerates_is_refused_before_any_write(aks_cluster, tmp_path):
    """The pool carries AKS's recommended GPU taint: without its toleration the operands would show DESIRED 0 and the
    smoke tests stay Pending. The first play names the pool, the taint and the fix, and the API server's audit log
    shows that the run wrote nothing."""
    aks = BareFleet(aks_cluster, tmp_path)
    assert {json.dumps(t, sort_keys=True) for n in aks.gpu_nodes() for t in n["spec"].get("taints") or []} == {
        json.dumps({"effect": "NoSchedule", "key": "sku", "value": "gpu"}, sort_keys=True)}
    mark = aks_cluster.audit.mark()
    refused = aks.run("-e", '{"gpu_platform_gpu_tolerations": []}', user=RUN_USER)
    assert refused.rc != 0
    message = refused.failure_messages()[-1]
    assert message.startswith("gpu_platform_gpu_tolerations: GPU pool ndh100 (aks-ndh100-23456789-vmss000000, "
                              "aks-ndh100-23456789-vmss000001) carries the taint sku=gpu:NoSchedule"), message
    assert "Fix: add {key: sku, operator: Equal, value: gpu, effect: NoSchedule} to gpu_platform_gpu_tolerations" \
        in message
    assert aks_cluster.audit.writes(mark, user=RUN_USER) == []


def test_site_converges_from_the_bare_pool_to_a_passing_rdma_proof(aks_cluster, tmp_path):
    aks = BareFleet(aks_cluster, tmp_path)
    first = aks.run()
    assert first.rc == 0, first.failure_messages() or first.stderr[-3000:]
    for node in aks.gpu_nodes():
        name, labels = node["metadata"]["name"], node["metadata"]["labels"]
        assert labels.get("nvidia.com/gpu.present") == "true", name
        assert labels.get("nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3", name
        assert node["status"]["allocatable"].get("nvidia.com/gpu") == "8", name
        assert node["status"]["allocatable"].get("rdma/ib") == "8", name
    assert "Smoke tests passed for gpu_operator, scheduling and network_operator" in aks.summary(first)
    policy = aks.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"]["driver"]["rdma"]["enabled"] is True  # the operator's driver loads peermem
    # the pool's taint reached the operands through the charts' values, and the real controllers placed them: every
    # GPU node runs the operator's driver and the NicClusterPolicy's pods; no controller runs on a GPU node
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in \
        policy["spec"]["daemonsets"]["tolerations"]
    gpu_names = {n["metadata"]["name"] for n in aks.gpu_nodes()}
    pods = aks.get("v1", "Pod")["items"]
    on_gpu = {(p["metadata"]["namespace"], p["metadata"]["labels"].get("app") or p["metadata"]["name"])
              for p in pods if p["spec"].get("nodeName") in gpu_names}
    assert {node for node in gpu_names if ("gpu-operator", "nvidia-driver-daemonset") not in
            {(p["metadata"]["namespace"], p["metadata"]["labels"].get("app")) for p in pods
             if p["spec"].get("nodeName") == node}} == set()
    controllers = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") in gpu_names
                   and p["metadata"]["namespace"] in ("volcano-system", "kueue-system")]
    assert controllers == [], (controllers, sorted(on_gpu))
    second = aks.run()
    assert second.rc == 0, second.failure_messages()
    assert second.changed == 0, [task for task, res in second.tasks() if res.get("changed")]
    # check and diff mode on the converged, tainted pool: nothing to change, and the API server records no write
    mark = aks_cluster.audit.mark()
    checked = aks.run("--check", "--diff", user=RUN_USER)
    assert checked.rc == 0 and checked.changed == 0, checked.failure_messages() or checked.changed_tasks()
    assert aks_cluster.audit.writes(mark, user=RUN_USER) == []


def test_a_layout_the_mig_config_map_lacks_fails_naming_the_node(aks_cluster, tmp_path):
    """The MIG manager reads its ConfigMap (the ClusterPolicy's migManager.config.name): a layout missing there ends
    ``failed`` on the node, and mig_profile stops naming the node and the state."""
    aks = BareFleet(aks_cluster, tmp_path)
    namespace = "gpu-operator"
    aks.dyn.resources.get(api_version="v1", kind="ConfigMap").create(namespace=namespace, body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "partial-mig-parted-config"},
        "data": {"config.yaml": "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n"
                                "      mig-enabled: false\n"}})
    policies = aks.dyn.resources.get(api_version="nvidia.com/v1", kind="ClusterPolicy")
    # inventories/aks turns the MIG manager off while no pool uses MIG (gpu_operator_disable_unused_operands, as the
    # AKS guide's values do): on again here, as a MIG pool would have it
    policies.patch(name="cluster-policy", content_type="application/merge-patch+json",
                   body={"spec": {"migManager": {"enabled": True, "config": {"name": "partial-mig-parted-config"}}}})
    node = aks.gpu_nodes()[0]["metadata"]["name"]
    play = tmp_path / "mig.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - gpu_platform.cluster.mig_profile:\n"
        "        kubeconfig: %s\n        nodes: [%s]\n        profile: all-1g.10gb\n        wait_timeout: 60\n"
        % (aks_cluster.kubeconfig, node))
    # an inventory that names localhost gives it Ansible's default connection (ssh): local, as the collection's
    # inventories set it, so the module runs in the controller process
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
               "-e", "ansible_python_interpreter=" + sys.executable, str(play)]
    result = PlayResult(subprocess.run(command, env=aks.env, capture_output=True, text=True, cwd=str(ROOT),
                                       check=False, timeout=300))
    assert result.rc != 0, result.stdout[-3000:]
    message = " ".join(result.failure_messages())
    assert node in message and "failed" in message, message
    labels = aks.get("v1", "Node", node)["metadata"]["labels"]
    assert labels["nvidia.com/mig.config.state"] == "failed"


def test_nfd_with_the_gpu_operator_is_refused_before_any_write_and_shown_to_hang_without_the_check(
        aks_fault_cluster, tmp_path):
    """The ordering the bare pool broke: with NFD in the GPU Operator (installed after the Network Operator), the
    NicClusterPolicy's components have no node to run on. site.yml now refuses it before any write; the network
    layer run alone (no preflight) shows what it prevents. With the real Network Operator chart (v26.4.0, when
    ``CLUSTER_OPERATORS`` names it) it fails sooner than with the fixture chart (whose release goes through and leaves
    the SR-IOV device plugin without a node):
    its ``nfd.deployNodeFeatureRules`` (default true, not tied to ``nfd.enabled``) renders a NodeFeatureRule, whose CRD
    only an NFD brings, and the GPU Operator's comes after the network layer."""
    aks = BareFleet(aks_fault_cluster, tmp_path)
    mark = aks_fault_cluster.audit.mark()
    refused = aks.run("-e", "gpu_platform_nfd_in_gpu_operator=true", user=RUN_USER)
    assert refused.rc != 0
    message = " ".join(refused.failure_messages())
    assert "gpu_platform_nfd_in_gpu_operator: is true while the network layer is on" in message, message
    written = aks_fault_cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], "the refused run wrote:\n" + describe(written)
    assert aks_fault_cluster.audit.requests(mark, user=RUN_USER), "the run read nothing with its own credential"
    alone = aks.run("-e", "gpu_platform_nfd_in_gpu_operator=true", "-e", "network_operator_wait_timeout=30",
                    playbook="playbooks/network_operator.yml")
    assert alone.rc != 0
    message = " ".join(alone.failure_messages())
    real_chart = 'no matches for kind "NodeFeatureRule" in version "nfd.k8s-sigs.io/v1alpha1"'  # CLUSTER_OPERATORS
    fixture_chart = "network-operator-sriov-device-plugin: no node matches its node affinity and selector"
    assert real_chart in message or fixture_chart in message, message


def test_a_stuck_sriov_device_plugin_stops_site_in_the_network_layer(aks_fault_cluster, tmp_path):
    aks = BareFleet(aks_fault_cluster, tmp_path)
    node = aks.gpu_nodes()[0]["metadata"]["name"]
    proc = cluster_command("fault", "sriov-device-plugin:stuck:" + node, env=aks_fault_cluster.env())
    assert proc.returncode == 0, proc.stderr
    result = aks.run("-e", "network_operator_wait_timeout=45")
    assert result.rc != 0, result.stdout[-3000:]
    message = " ".join(result.failure_messages())
    assert "state-SRIOV-device-plugin=notReady" in message, message
    assert "DaemonSet nvidia-network-operator/network-operator-sriov-device-plugin: pods not Ready on node %s " \
           "(CrashLoopBackOff" % node in message, message
    assert aks.get("v1", "Namespace", "gpu-operator") is None  # nothing of the GPU Operator was installed
    assert aks.get("nvidia.com/v1", "ClusterPolicy") is None or aks.get("nvidia.com/v1", "ClusterPolicy")["items"] == []


def test_the_peermem_loader_runs_after_the_nic_driver_on_the_pool_with_aks_driver(aks_driver_cluster, tmp_path):
    """The loader DaemonSet needs NFD's labels and the DOCA driver, both from the Network Operator: run before it (as
    site.yml did), it finds no GPU node; site.yml runs it after the network layer and converges."""
    aks = BareFleet(aks_driver_cluster, tmp_path)
    driver = ("-e", "gpu_platform_cloud_driver=present", "-e", "gpu_platform_driver_mode=auto")
    old_order = tmp_path / "old-order.yml"  # the driver decision, then peermem before the network layer
    old_order.write_text("- import_playbook: %s/playbooks/driver_mode.yml\n- import_playbook: %s/playbooks/peermem.yml\n"
                         % (ROOT, ROOT))
    early = aks.run(*driver, playbook=str(old_order))
    assert early.rc != 0
    message = " ".join(early.failure_messages())
    assert "no GPU node matched the node selector feature.node.kubernetes.io/pci-10de.present=true" in message, message
    site = aks.run(*driver)
    assert site.rc == 0, site.failure_messages() or site.stderr[-3000:]
    loader = aks.get("apps/v1", "DaemonSet", "nvidia-peermem-loader", "nvidia-peermem")
    assert loader["status"]["numberReady"] == GPU_NODES
    policy = aks.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"]["driver"]["enabled"] is False  # AKS's driver stays the owner


def test_aks_no_rdma_converges_from_the_bare_nc_pool(aks_nc_cluster, tmp_path):
    """inventories/aks-no-rdma as it is, on the pool it names: the GPU Operator's driver, no network layer, each
    node's one H100 NVL labelled and allocatable, the smoke tests passing; the second run changes nothing."""
    fleet = BareFleet(aks_nc_cluster, tmp_path, inventory="aks-no-rdma", args=())
    fleet.assert_bare()
    for node in fleet.gpu_nodes():
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "Standard_NC40ads_H100_v5"
        assert labels["kubernetes.azure.com/accelerator"] == "nvidia"
        assert declared_hardware(node)["nics"] is None and declared_hardware(node)["driver"] is None
    first = fleet.run()
    assert first.rc == 0, first.failure_messages() or first.stderr[-3000:]
    for node in fleet.gpu_nodes():
        name, labels = node["metadata"]["name"], node["metadata"]["labels"]
        assert labels.get("nvidia.com/gpu.product") == "NVIDIA-H100-NVL", name
        assert node["status"]["allocatable"].get("nvidia.com/gpu") == "1", name
        assert [k for k in node["status"]["allocatable"] if k.startswith("rdma/")] == [], name
    assert "Smoke tests passed for gpu_operator and scheduling." in fleet.summary(first)
    policy = fleet.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"]["driver"]["enabled"] is True and policy["spec"]["driver"]["rdma"]["enabled"] is False
    assert fleet.get("v1", "Namespace", "nvidia-network-operator") is None  # gpu_platform_network_mode: none
    second = fleet.run()
    assert second.rc == 0, second.failure_messages()
    assert second.changed == 0, second.changed_tasks()


def test_baremetal_converges_with_the_hosts_driver_and_keeps_it_on_the_second_run(baremetal_cluster, tmp_path):
    """inventories/baremetal without its host tier (``--limit k8s_api``): the hosts own the driver, the GPU Operator
    gets driver.enabled=false. The second run decides again from the cluster, where the GPU nodes now show GFD's
    driver labels and no operator driver pod: a host driver, so host mode stands (it was refused, "no NVIDIA driver
    found", while the fake's GFD wrote only the new label names and gpu_driver_mode read only the old one)."""
    fleet = BareFleet(baremetal_cluster, tmp_path, inventory="baremetal", args=("--limit", "k8s_api"))
    fleet.assert_bare()
    assert {declared_hardware(n)["driver"]["installed_by"] for n in fleet.gpu_nodes()} == {"host"}
    first = fleet.run()
    assert first.rc == 0, first.failure_messages() or first.stderr[-3000:]
    products = set()
    for node in fleet.gpu_nodes():
        name, labels = node["metadata"]["name"], node["metadata"]["labels"]
        products.add(labels.get("nvidia.com/gpu.product"))
        assert labels.get("nvidia.com/cuda.driver-version.major") == "580", name
        assert labels.get("nvidia.com/mig.strategy") == "mixed", name
        assert node["status"]["allocatable"].get("nvidia.com/gpu") == "8", name
    assert products == {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}
    assert "Smoke tests passed for gpu_operator and scheduling." in fleet.summary(first)
    policy = fleet.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["spec"]["driver"]["enabled"] is False  # the hosts own it
    second = fleet.run()
    assert second.rc == 0, second.failure_messages()
    assert second.changed == 0, second.changed_tasks()
    decided = second.result("Decide who owns the NVIDIA driver (a conflict fails here, naming each node, before "
                            "any change)")
    assert decided["owner"] == "host"
    assert {n["name"]: n["host_driver"] for n in decided["nodes"]} == {
        n["metadata"]["name"]: True for n in fleet.gpu_nodes()}
