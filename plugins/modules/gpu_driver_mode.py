#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_driver_mode
short_description: Decide who owns the NVIDIA driver on the GPU nodes, the hosts or the GPU Operator, and refuse a conflict
version_added: 0.1.0
description:
  - Reads the evidence for each GPU node and decides the driver owner for the cluster. Host evidence comes from
    O(hosts) (the facts that M(gpu_platform.cluster.gpu_host_facts) gathers on each GPU host). Cluster evidence is read
    when O(read_cluster=true) and is never written to. It covers the GPU nodes (by O(node_selector)) with their
    C(nvidia.com/gpu.deploy.driver) label and GPU Feature Discovery's driver version label
    (C(nvidia.com/cuda.driver-version.major), or the deprecated C(nvidia.com/cuda.driver.major)), the GPU Operator's
    driver pods, the C(ClusterPolicy) driver settings and any C(NVIDIADriver) objects.
  - A host driver and the operator's driver container are mutually exclusive. Running both leaves nodes NotReady
    (gpu-operator#188), and removing the operator later cannot restore a host's containerd configuration
    (container-toolkit#1328). Every conflict fails before anything is changed, with a message that names each node, what
    was found on it, and the two ways out.
  - V(auto) picks V(host) when every GPU node has a host driver, V(operator) when none has, and fails on a mix.
  - Returns the GPU Operator values that follow from the decision. With a host driver these are C(driver.enabled=false)
    and C(driver.nvidiaDriverCRD.enabled=false); the NVIDIADriver CRD path ignores C(driver.enabled) alone
    (gpu-operator#1795). With the operator driver they include C(driver.rdma) for GPUDirect RDMA. C(toolkit.enabled)
    is false when every node already has the NVIDIA Container Toolkit.
  - Also returns how nvidia-peermem gets loaded. V(host) means the peermem role loads it on the hosts; V(daemonset)
    means a DaemonSet loads it, for cloud-managed or uninventoried host drivers; V(operator) means the operator's
    driver container loads it; V(none) means GPUDirect RDMA goes over DMA-BUF and nothing loads it.
  - With O(rdma), decides the GPUDirect RDMA path (O(gpudirect_path)) from each GPU node's evidence. DMA-BUF needs
    the open kernel modules, Linux 5.12 or newer and a Turing-or-newer GPU, and no nvidia-peermem or MOFED; nvidia-peermem
    works with any driver but needs MOFED/DOCA-OFED (NVIDIA's gpu-operator-rdma.rst). The evidence is the driver owner,
    the kernel module type (C(/proc/driver/nvidia/version) on the host, or O(kernel_module_type) and O(driver_version)
    for the operator's driver), the kernel release (the host's, or the node's C(status.nodeInfo.kernelVersion)) and the
    GPU generation (GPU Feature Discovery's C(nvidia.com/gpu.compute.major)/C(.minor), C(nvidia.com/gpu.family) or
    C(nvidia.com/gpu.product) label, or the pool's C(gpu_product)). V(dmabuf) that the evidence rules out on a node
    (the proprietary module, a cloud-managed driver, an older kernel, a pre-Turing GPU) fails before anything changes,
    naming the pool, the evidence and the fix.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode returns the same decision.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
options:
  mode:
    description: The requested owner. V(auto) decides from the evidence.
    type: str
    choices: [host, operator, auto]
    required: true
  hosts:
    description:
      - The C(gpu_host) facts of each GPU host in the inventory, as M(gpu_platform.cluster.gpu_host_facts) returns them
        (each has C(node_name)). A host listed here counts as a GPU node that C(host_driver) can manage.
    type: list
    elements: dict
    default: []
  read_cluster:
    description: Read the cluster's evidence. False when nothing can be reached (GitOps rendering); the decision then
      rests on O(hosts) and O(cloud_driver) alone.
    type: bool
    default: true
  node_selector:
    description: Label selector of the GPU nodes.
    type: str
    default: nvidia.com/gpu.present=true
  cloud_driver:
    description:
      - Whether the cloud's GPU node image ships the driver. V(present) is a default AKS GPU node pool, whose image has
        the driver and the container toolkit. V(absent) is an AKS pool created with C(--gpu-driver none) (formerly
        C(--skip-gpu-driver-install)). V(unknown) leaves it to the other evidence.
    type: str
    choices: [unknown, present, absent]
    default: unknown
  rdma:
    description: GPUDirect RDMA is wanted, over the path O(gpudirect_path) decides. With nvidia-peermem and the
      operator driver this sets C(driver.rdma.enabled); with a host driver the peermem role loads nvidia-peermem
      instead.
    type: bool
    default: false
  host_mofed:
    description: The RDMA stack (MOFED/DOCA-OFED) is on the hosts or comes from the Network Operator; sets
      C(driver.rdma.useHostMofed) with the operator driver.
    type: bool
    default: false
  gpudirect_path:
    description:
      - How GPUDirect RDMA reaches GPU memory when O(rdma) is true. V(dmabuf) is the Linux kernel's DMA-BUF, which NVIDIA
        recommends; the GPU Operator then gets C(driver.rdma.enabled=false) and C(driver.kernelModuleType=open), and
        nvidia-peermem is not loaded. V(peermem) is the legacy nvidia-peermem module (C(driver.rdma.enabled=true)).
      - V(auto) picks V(dmabuf) when every GPU node's evidence shows that DMA-BUF can work, else V(peermem), and says
        why in the C(reason) of RV(gpudirect).
    type: str
    choices: [auto, dmabuf, peermem]
    default: auto
  node_pools:
    description:
      - The platform's node pools (C(gpu_platform_node_pools)); a refusal names the pool whose C(node_selector) a node's
        labels match, and a pool's C(gpu_product) tells its GPU generation where GPU Feature Discovery has not labelled
        the node yet. Only C(name), C(node_selector) and C(gpu_product) are read.
    type: list
    elements: dict
    default: []
  kernel_module_type:
    description:
      - The GPU Operator's C(driver.kernelModuleType) (from C(gpu_operator_extra_values)), V(auto), V(open) or
        V(proprietary); read when the operator owns the driver. V(auto) counts as the open modules for driver branches
        R570 and newer, and for the chart's default driver.
      - Another value fails naming C(gpu_operator_extra_values.driver.kernelModuleType).
    type: str
    default: auto
  driver_version:
    description: The operator's pinned driver version (C(gpu_platform_driver_version)); empty is the chart's default.
    type: str
    default: ""
  host_kernel_modules:
    description: The kernel module flavour C(host_driver) installs on a host that has no driver yet
      (C(host_driver_kernel_modules)); empty when unknown.
    type: str
    choices: ["", open, proprietary]
    default: ""
requirements:
  - kubernetes (Python library; only with O(read_cluster=true))
"""

EXAMPLES = r"""
- name: Gather driver evidence on each GPU host (read only)
  gpu_platform.cluster.gpu_host_facts:
  delegate_to: "{{ item }}"
  delegate_facts: true
  loop: "{{ groups['gpu_hosts'] }}"

- name: Decide the driver owner from the hosts and the cluster; fails on a conflict before anything changes
  gpu_platform.cluster.gpu_driver_mode:
    mode: auto
    hosts: "{{ groups['gpu_hosts'] | map('extract', hostvars) | selectattr('gpu_host', 'defined')
               | map(attribute='gpu_host') | list }}"
    rdma: true
  register: driver

- name: Use the decision for the GPU Operator's values
  ansible.builtin.debug:
    msg: "{{ driver.mode }} owns the driver; GPU Operator values {{ driver.gpu_operator_values }}"

- name: An AKS pool created with --gpu-driver none, offline (GitOps rendering)
  gpu_platform.cluster.gpu_driver_mode:
    mode: operator
    cloud_driver: absent
    read_cluster: false
"""

RETURN = r"""
mode:
  description: The decided owner, V(host) or V(operator).
  returned: success
  type: str
  sample: host
requested:
  description: The requested O(mode).
  returned: success
  type: str
owner:
  description: V(host) (a host driver, e.g. installed by host_driver), V(cloud) (the cloud's node image) or
    V(operator).
  returned: success
  type: str
peermem:
  description: How nvidia-peermem gets loaded, V(host), V(daemonset) or V(operator); V(none) with DMA-BUF.
  returned: success
  type: str
gpudirect:
  description:
    - The GPUDirect RDMA path, C(path) (V(dmabuf), V(peermem), or V(none) when O(rdma) is false), C(requested)
      (O(gpudirect_path)), C(reason), C(evidence) (what the nodes share, in words, with DMA-BUF) and C(nodes).
    - Each node has C(name), C(pool), C(module_type) and C(module_source), C(kernel) and C(kernel_source),
      C(architecture), C(compute) and C(gpu_source), C(branch), C(blocks) (the DMA-BUF conditions its evidence rules
      out, each with C(condition), C(found) and C(fix)) and C(unknown) (the conditions nothing showed).
  returned: success
  type: dict
  sample:
    path: dmabuf
    requested: auto
    reason: "auto: every GPU node (2) has an open kernel module driver, Linux 5.12 or newer, a Turing-or-newer GPU
      (compute capability 7.5)"
    evidence: open kernel modules 595, kernel 6.8, Hopper
reason:
  description: Why this mode.
  returned: success
  type: str
gpu_operator_values:
  description: The GPU Operator chart values that follow from the decision (C(driver), C(toolkit)).
  returned: success
  type: dict
  sample: {driver: {enabled: false, nvidiaDriverCRD: {enabled: false}}, toolkit: {enabled: true}}
nodes:
  description: Per GPU node, C(name), C(managed) (a host in the inventory), C(host_driver), C(operator_driver),
    C(host_toolkit), C(in_cluster) and C(findings) (what was found, in words).
  returned: always, also on a refusal
  type: list
  elements: dict
cluster_read:
  description: Whether the cluster's evidence was read.
  returned: success
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import gpu_driver_mode

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH,
    mode={"type": "str", "choices": ["host", "operator", "auto"], "required": True},
    hosts={"type": "list", "elements": "dict", "default": []},
    read_cluster={"type": "bool", "default": True},
    node_selector={"type": "str", "default": "nvidia.com/gpu.present=true"},
    cloud_driver={"type": "str", "choices": ["unknown", "present", "absent"], "default": "unknown"},
    rdma={"type": "bool", "default": False},
    host_mofed={"type": "bool", "default": False},
    gpudirect_path={"type": "str", "choices": ["auto", "dmabuf", "peermem"], "default": "auto"},
    node_pools={"type": "list", "elements": "dict", "default": []},
    kernel_module_type={"type": "str", "default": "auto"},
    driver_version={"type": "str", "default": ""},
    host_kernel_modules={"type": "str", "choices": ["", "open", "proprietary"], "default": ""},
)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return gpu_driver_mode.run(params, lambda: KubeClient(**shared.kube_auth_params(params)))


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
