#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_cluster_policy
short_description: The Network Operator's NicClusterPolicy and secondary network for RDMA into pods
version_added: 0.1.0
description:
  - Renders, validates, applies (server-side apply) and waits for the NVIDIA Network Operator's C(NicClusterPolicy)
    (the cluster singleton C(nic-cluster-policy)) and the secondary network object that goes with it, for one of
    three modes.
  - V(sriov) - SR-IOV device plugin; pods claim C(rdma/ib) N times (one VF per NIC, N is O(nics_per_pod), by default
    every NIC of O(node_type)) and attach a C(HostDeviceNetwork).
  - V(rdma_shared) - RDMA shared device plugin; pods claim one C(rdma/shared_ib) and up to O(rdma_hca_max) pods share
    all selected NICs.
  - V(ipoib) - the AKS RDMA/InfiniBand guide's IPoIB policy, the RDMA shared device plugin plus the IPoIB CNI; pods
    claim one C(rdma/shared_ib) and join an C(IPoIBNetwork) through the annotation C(k8s.v1.cni.cncf.io/networks).
  - Component images are pinned and belong to O(network_operator_version); an unknown version is refused.
  - Every bad input is refused before anything is written, with a message that names the option and the fix.
  - With O(wait), waits until C(status.state) is C(ready); a time-out reports each component's state.
  - Network Operator 26.4 no longer deploys whereabouts from the policy; with O(ipam=whereabouts) the network uses it
    and a warning says to install it separately.
  - Returns the resources pods must request and a ready-to-use example pod for the mode.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
  - gpu_platform.cluster.wait
  - gpu_platform.cluster.render
attributes:
  check_mode:
    support: full
    description: Objects are applied with server-side dry-run only; nothing is written.
  diff_mode:
    support: full
    description: Each object that would change, before and after.
options:
  mode:
    description: How RDMA reaches pods.
    type: str
    required: true
    choices: [sriov, rdma_shared, ipoib]
  network_operator_version:
    description: The Network Operator version in use; the component images are pinned for it.
    type: str
    required: true
  ofed_driver:
    description: Run the DOCA/OFED driver container. V(false) uses the host's MOFED.
    type: bool
    default: true
  ipam:
    description: IP address management of the secondary network.
    type: str
    choices: [nv-ipam, whereabouts]
    default: nv-ipam
  ip_range:
    description: CIDR of the secondary network, e.g. C(192.168.100.0/24).
    type: str
    required: true
  ip_gateway:
    description: Gateway inside O(ip_range), if any.
    type: str
  selectors:
    description: Which NICs to use.
    type: dict
    default: {}
    suboptions:
      vendors:
        description: PCI vendor IDs (4 hex digits). Mellanox/NVIDIA is C(15b3).
        type: list
        elements: str
      device_ids:
        description: PCI device IDs (4 hex digits).
        type: list
        elements: str
      interfaces:
        description: Interface names.
        type: list
        elements: str
      link_type:
        description: V(infiniband) or V(ether) (RoCE).
        type: str
  rdma_hca_max:
    description: How many pods may share the NICs (V(rdma_shared) and V(ipoib), which run the RDMA shared device plugin).
    type: int
  resource_name:
    description: Resource name after the C(rdma/) prefix; defaults to C(shared_ib) (rdma_shared, ipoib) or C(ib) (sriov).
    type: str
  nics_per_pod:
    description:
      - How many RDMA NICs one pod claims, 1 to 32. With V(sriov) pods request C(rdma/<resource_name>) this many times
        (one VF per NIC).
      - Unset, V(sriov) takes every NIC of O(node_type) (8 on ND H100 v5, as the AKS guide's pods request), and one of
        the two is required. The shared modes claim one slot, which reaches every selected NIC; more is refused.
      - Above the NICs of O(node_type) is refused (no node could run the pod).
    type: int
  node_type:
    description:
      - The RDMA node type of the pool, a short name (V(nd-h100-v5), V(nd-h200-v5), V(nd-a100-v4), V(ndm-a100-v4)) or
        its Azure VM size (V(Standard_ND96isr_H100_v5)), case-insensitive. Gives O(nics_per_pod) its default in
        V(sriov) mode and its ceiling.
    type: str
  network_name:
    description: Name of the secondary network object, used in the pods' network annotation.
    type: str
    default: rdma-net
  network_namespace:
    description: Namespace of the pods that attach to the network.
    type: str
    default: default
  ipoib_master:
    description: The IPoIB parent interface (required for V(ipoib)), e.g. C(ibs1f0).
    type: str
  nv_ipam_pool:
    description: NV-IPAM pool name; defaults to O(network_name).
    type: str
  nv_ipam_block_size:
    description: Addresses NV-IPAM hands each node from O(ip_range) (C(perNodeBlockSize)); default 16, capped by the range.
    type: int
  operator_namespace:
    description: Namespace of the Network Operator (where NV-IPAM pools live).
    type: str
    default: nvidia-network-operator
  image_mirrors:
    description:
      - Registry mirrors for the component images, a map of registry to mirror, for example
        C(nvcr.io) to C(harbor.example.com/nvcr). An image of a listed registry is pulled from its mirror
        (C(nvcr.io/nvidia/mellanox) becomes C(harbor.example.com/nvcr/nvidia/mellanox)); the image names
        and the pinned versions do not change.
      - A mirror is C(host[:port][/path]), without a scheme or credentials.
    type: dict
    default: {}
  node_affinity:
    description:
      - Where the policy's pods (DOCA driver, device plugins, CNI) run, a Kubernetes C(NodeAffinity).
      - Unset, the nodes Node Feature Discovery labels C(feature.node.kubernetes.io/pci-15b3.present=true) (an NVIDIA
        network adapter), so they stay off CPU and system nodes. C({}) means every node.
    type: dict
  tolerations:
    description:
      - >-
        Tolerations of the GPU pools' own taints (e.g. C({key: sku, operator: Equal, value: gpu, effect: NoSchedule})):
        the policy's pods (C(spec.tolerations)) then tolerate these and C(nvidia.com/gpu)'s taint. Unset or empty, the
        policy carries no tolerations of its own. The network_operator role passes C(gpu_platform_gpu_tolerations).
    type: list
    elements: dict
  driver_upgrade_policy:
    description:
      - The DOCA driver container's upgrade policy (C(ofedDriver.upgradePolicy)); keys left out keep the safe
        default, which upgrades one drained node at a time (C(autoUpgrade) true, C(maxParallelUpgrades) 1,
        C(safeLoad) false, C(drain) enabled and forced with a 300 s time-out, emptyDir data deleted).
      - Keys are C(autoUpgrade), C(maxParallelUpgrades), C(safeLoad), C(waitForCompletion) and C(drain), as the
        NicClusterPolicy CRD has them. Refused with O(ofed_driver=false).
    type: dict
  image_pull_secrets:
    description:
      - Names of image pull Secrets in O(operator_namespace) that every component of the policy pulls its image
        with (C(imagePullSecrets) of each), for a private registry or mirror.
    type: list
    elements: str
    default: []
  render_ipam_to:
    description:
      - With O(render_to), a directory for the objects whose CRDs the Network Operator installs itself when it
        reconciles the policy (NV-IPAM's C(IPPool)); by default O(render_to). A GitOps reconciler dry-runs a unit
        before applying it, and these fail that dry-run until the policy is reconciled, so site.yml writes them
        to the bundle's C(network-ipam) unit, applied once the policy is ready (docs/gitops.md).
      - Their files left in O(render_to) by an earlier render are removed.
    type: path
    version_added: 0.2.0
  state:
    description: V(present) applies; V(absent) removes the policy and the network objects.
    type: str
    choices: [present, absent]
    default: present
requirements:
  - kubernetes (Python library; not needed with O(render_to))
seealso:
  - module: gpu_platform.cluster.helm_pinned_release
"""

EXAMPLES = r"""
- name: RDMA shared device plugin over InfiniBand, DOCA driver container, NV-IPAM
  gpu_platform.cluster.nic_cluster_policy:
    mode: rdma_shared
    network_operator_version: 26.4.1
    ip_range: 192.168.100.0/24
    selectors:
      vendors: ["15b3"]
      link_type: infiniband
      interfaces: [ibs1f0]
    rdma_hca_max: 63
    wait: true
    wait_timeout: 15m
  register: rdma

- name: Show what pods must request
  ansible.builtin.debug:
    msg: "{{ rdma.pod_resources }}"

- name: IPoIB with the host's MOFED and whereabouts, rendered for GitOps
  gpu_platform.cluster.nic_cluster_policy:
    mode: ipoib
    network_operator_version: 26.4.1
    ofed_driver: false
    ipam: whereabouts
    ip_range: 10.10.0.0/16
    ipoib_master: ibs1f0
    render_to: "{{ playbook_dir }}/build/platform"

- name: IPoIB as the AKS guide has it, pods claim rdma/shared_ib and join the IPoIBNetwork
  gpu_platform.cluster.nic_cluster_policy:
    mode: ipoib
    network_operator_version: 26.4.1
    ip_range: 192.168.0.0/16
    ipoib_master: ibP257p0s0
    rdma_hca_max: 63
    network_name: aks-infiniband

- name: SR-IOV on ND H100 v5 nodes, each pod claims all 8 NICs (rdma/ib 8)
  gpu_platform.cluster.nic_cluster_policy:
    mode: sriov
    network_operator_version: 26.4.1
    ip_range: 10.20.0.0/16
    node_type: Standard_ND96isr_H100_v5
  register: sriov

- name: SR-IOV with 4 NICs per pod (two pods per node)
  gpu_platform.cluster.nic_cluster_policy:
    mode: sriov
    network_operator_version: 26.4.1
    ip_range: 10.20.0.0/16
    node_type: nd-h100-v5
    nics_per_pod: 4

- name: SR-IOV on an air-gapped cluster, the component images pulled from a Harbor proxy of nvcr.io
  gpu_platform.cluster.nic_cluster_policy:
    mode: sriov
    network_operator_version: 26.4.1
    ip_range: 10.20.0.0/16
    selectors:
      vendors: ["15b3"]
      device_ids: ["101e"]
    nics_per_pod: 8
    image_mirrors:
      nvcr.io: harbor.example.com/nvcr
    image_pull_secrets: [harbor-pull]
"""

RETURN = r"""
objects:
  description: The objects applied (or rendered), in order.
  returned: when O(state=present)
  type: list
  elements: dict
changed_objects:
  description: Which objects changed (or would change in check mode).
  returned: when a cluster was contacted and O(state=present)
  type: list
  elements: str
pod_resources:
  description: Extended resources a pod must request for the mode, one C(rdma/shared_ib) in the shared modes, O(nics_per_pod) C(rdma/ib) in V(sriov).
  returned: when O(state=present)
  type: dict
  sample: {"rdma/ib": 8}
example_pod:
  description: A ready-to-use Pod manifest for the mode (IPC_LOCK, GPU and RDMA requests, network annotation).
  returned: when O(state=present)
  type: dict
network:
  description: The secondary network's name and namespace.
  returned: when O(state=present)
  type: dict
states:
  description: Each component's state from the policy's status, after the wait.
  returned: when O(wait=true)
  type: dict
rendered:
  description: With O(render_to), the directory, the files and those that changed; with O(render_ipam_to) another
    folder, C(ipam) the same for it.
  returned: with O(render_to)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import nic_cluster_policy

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.WAIT, shared.RENDER,
    mode={"type": "str", "required": True, "choices": ["sriov", "rdma_shared", "ipoib"]},
    network_operator_version={"type": "str", "required": True},
    ofed_driver={"type": "bool", "default": True},
    ipam={"type": "str", "choices": ["nv-ipam", "whereabouts"], "default": "nv-ipam"},
    ip_range={"type": "str", "required": True},
    ip_gateway={"type": "str"},
    selectors={"type": "dict", "default": {}, "options": {
        "vendors": {"type": "list", "elements": "str"},
        "device_ids": {"type": "list", "elements": "str"},
        "interfaces": {"type": "list", "elements": "str"},
        "link_type": {"type": "str"},
    }},
    rdma_hca_max={"type": "int"},
    resource_name={"type": "str"},
    nics_per_pod={"type": "int"},
    node_type={"type": "str"},
    network_name={"type": "str", "default": "rdma-net"},
    network_namespace={"type": "str", "default": "default"},
    ipoib_master={"type": "str"},
    nv_ipam_pool={"type": "str"},
    nv_ipam_block_size={"type": "int"},
    operator_namespace={"type": "str", "default": "nvidia-network-operator"},
    image_mirrors={"type": "dict", "default": {}},
    # Names of Secrets, not secrets: no_log would hide them from the result for nothing.
    image_pull_secrets={"type": "list", "elements": "str", "default": [], "no_log": False},
    node_affinity={"type": "dict"},
    tolerations={"type": "list", "elements": "dict"},
    driver_upgrade_policy={"type": "dict"},
    render_ipam_to={"type": "path"},
    state={"type": "str", "choices": ["present", "absent"], "default": "present"},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them before site.yml writes anything."""
    return nic_cluster_policy.request(params)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return nic_cluster_policy.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
