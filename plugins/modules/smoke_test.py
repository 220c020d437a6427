#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: smoke_test
short_description: Prove one GPU platform layer works by running a workload and reading what it printed
version_added: 0.1.0
description:
  - Runs one smoke test on the cluster and judges it from the pods' logs, not from their exit codes alone.
  - V(cuda) runs C(nvidia-smi) in a pod that asks for O(resources) (a whole GPU, a time-sliced or a MIG resource);
    it passes when the log shows the GPU table.
  - V(dra) runs C(nvidia-smi) in a pod that gets its GPU from a DRA ResourceClaimTemplate of O(device_class).
  - V(gang) starts O(replicas) one-GPU pods as one gang (a Volcano Job with C(minAvailable), or a KAI Scheduler
    PodGroup with C(minMember)). It passes when every pod started, all within O(window_seconds).
  - V(nccl) runs nccl-tests C(all_reduce_perf) across O(nodes) nodes with C(NCCL_DEBUG=INFO), an C(mpirun) launcher
    and one worker per node. Under O(scheduler=volcano) it is a Volcano Job (its ssh and svc plugins). Under V(kai)
    it is bare pods in a KAI PodGroup, under V(none) bare pods, with a headless Service for the workers' names and
    an SSH key pair made on the controller for this run, kept only in a Secret that is deleted with the run.
  - V(nccl) passes only when a C(via NET/IB.../GDRDMA) channel line shows GPUDirect RDMA over InfiniBand (not
    C(NET/Socket)), no result was wrong, and the average bus bandwidth reaches O(min_busbw_gbps).
  - V(allocatable) creates nothing. It waits until the nodes advertise the expected GPU resources (time-slicing
    replicas per GPU, or the instances of a MIG layout), or until O(timeout).
  - Objects left behind by an interrupted earlier run are removed first. The check's objects are removed again
    afterwards, pass or fail (unless O(cleanup=false)).
  - A pod that stays Pending does not hang the task. After O(timeout) the test fails with the reason the pod was held
    (for example C(Unschedulable) and the scheduler's message, or C(ImagePullBackOff)).
  - A failed test fails the task. The message is one line naming the layer, the object, the reason and the log line
    that decided. The same fields are returned in RV(smoke).
  - With O(render_to) nothing runs. The objects are written to a GitOps folder, with bare Pods as C(batch/v1) Jobs.
    V(nccl) under V(kai) or V(none) writes nothing (its SSH key is made at run time and never goes to a file).
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
  - gpu_platform.cluster.render
attributes:
  check_mode:
    support: full
    description: Nothing is created. Each object goes through server-side dry-run, so a wrong field or a missing CRD shows.
  diff_mode:
    support: partial
    description: >-
      With O(render_to), each file's before and after. On the cluster a smoke test leaves nothing behind, so there is no
      diff.
options:
  check:
    description: Which smoke test to run.
    type: str
    required: true
    choices: [cuda, dra, gang, nccl, allocatable]
  layer:
    description:
      - The layer this test proves, named in the result and the failure message.
      - Defaults to V(gpu_operator) (cuda), V(dra_driver), V(scheduling) (gang), V(network_operator) (nccl), or
        V(gpu_sharing) (allocatable).
    type: str
  namespace:
    description: The namespace the test's objects go into. It must exist.
    type: str
    default: gpu-platform-smoke
  image:
    description:
      - The pinned image of the test's pods (a tag other than C(latest), or a digest). Required except for V(allocatable).
      - For V(nccl) it needs nccl-tests (C(all_reduce_perf)), Open MPI C(mpirun) and the OpenSSH server and client.
    type: str
  resources:
    description: "V(cuda) only. The extended resources the pod asks for, for example C({nvidia.com/mig-1g.10gb: 1})."
    type: dict
  suffix:
    description:
      - V(cuda) only. Names the pod C(gpu-platform-smoke-cuda-<suffix>), so the tests of several sharing pools do not
        share a name (in a GitOps bundle, or when one is kept with O(cleanup=false)).
    type: str
  device_class:
    description: V(dra) only. The DeviceClass of the claim.
    type: str
    default: gpu.nvidia.com
  scheduler:
    description:
      - V(gang) and V(nccl). The scheduler of the pods. V(none) (the default scheduler, no gang) is for V(nccl) only.
    type: str
    choices: [volcano, kai, none]
    default: volcano
  replicas:
    description: V(gang) only. How many one-GPU pods must start together (at least 2).
    type: int
    default: 2
  queue:
    description:
      - V(gang) and V(nccl). The scheduler queue. Volcano creates V(default) itself. For KAI, name a leaf queue
        (one with a parent).
    type: str
    default: default
  window_seconds:
    description: V(gang) only. The most seconds between the first and the last member's start.
    type: float
    default: 30
  nodes:
    description: V(nccl) only. How many nodes (one worker pod each, at least 2).
    type: int
    default: 2
  gpus_per_node:
    description: V(nccl) only. GPUs per worker, one MPI rank each.
    type: int
    default: 8
  rdma_resource:
    description:
      - >-
        V(nccl) only. The RDMA resource per worker (default C({rdma/shared_ib: 1})). Give C({}) when an SR-IOV
        network's resource injector adds it.
    type: dict
  network:
    description: V(nccl) only. The Multus attachments of the workers (C(ns/name), comma-separated or a list).
    type: raw
  min_busbw_gbps:
    description:
      - V(nccl) only. The least average bus bandwidth, in GB/s as nccl-tests prints it.
      - The smoke_tests role passes its node type's threshold (see the docs); the default suits no real fabric.
    type: float
    default: 10
  node_selector:
    description:
      - V(allocatable) checks the nodes with these labels (all nodes when unset).
      - V(cuda) runs its pod on a node with these labels, for example the nodes of one sharing pool.
    type: dict
  tolerations:
    description:
      - >-
        Tolerations the check's pods get besides C(nvidia.com/gpu)'s, for the GPU pools' own taints (e.g.
        C({key: sku, operator: Equal, value: gpu, effect: NoSchedule}) on AKS). The roles pass
        C(gpu_platform_gpu_tolerations).
    type: list
    elements: dict
  expected_per_gpu:
    description:
      - >-
        V(allocatable) only. Resources each physical GPU should give, for example C({nvidia.com/gpu: 4}) for 4
        time-slicing replicas.
      - The node's GPU count is GPU Feature Discovery's C(nvidia.com/gpu.count) label.
    type: dict
  mig_layout:
    description:
      - V(allocatable) only. A standard MIG layout name (V(all-1g.10gb), V(all-balanced)). Each node must advertise
        what that layout gives on its GPUs (GFD's C(nvidia.com/gpu.product) and C(nvidia.com/gpu.count) labels), under
        O(mig_strategy).
    type: str
  image_pull_secrets:
    description:
      - Names of image pull Secrets in O(namespace) the test's pods pull their images with (a private mirror).
    type: list
    elements: str
  mig_config:
    description:
      - V(allocatable) with O(mig_layout). A custom mig-parted config (mig-parted's C(config.yaml) format, as the
        gpu_sharing role's C(gpu_platform_mig_config)); O(mig_layout) then names one of its configs.
    type: dict
  mig_strategy:
    description: V(allocatable) with O(mig_layout). The GPU Operator's MIG strategy.
    type: str
    choices: [single, mixed]
    default: single
  expected_allocatable:
    description: >-
      V(allocatable) only. Exact counts per node, C({node: {resource: count}}), instead of O(expected_per_gpu).
    type: dict
  timeout:
    description: Seconds the test may take, from its objects' creation to its verdict.
    type: int
    default: 300
  cleanup:
    description: Remove the test's objects afterwards. Set V(false) to keep a failed test's pods for debugging.
    type: bool
    default: true
  source:
    description: Named in the header of rendered files.
    type: str
    default: smoke_tests
requirements:
  - kubernetes (Python library; not needed with O(render_to))
notes:
  - The task reports no change, because a smoke test leaves nothing behind. Rendered files are a change.
seealso:
  - name: Smoke tests
    description: What each layer's smoke test proves, and how to run them on their own.
    link: https://github.com/gpu-platform/cluster/blob/main/docs/smoke_tests.md
"""

EXAMPLES = r"""
- name: A whole GPU runs nvidia-smi
  gpu_platform.cluster.smoke_test:
    check: cuda
    image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04

- name: A MIG instance on the MIG pool runs nvidia-smi
  gpu_platform.cluster.smoke_test:
    check: cuda
    layer: gpu_sharing
    image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
    resources: {nvidia.com/mig-1g.10gb: 1}
    node_selector: {nodepool: mig}

- name: Time-sliced nodes advertise 4 GPUs per physical GPU
  gpu_platform.cluster.smoke_test:
    check: allocatable
    node_selector: {nodepool: shared}
    expected_per_gpu: {nvidia.com/gpu: 4}
    timeout: 120

- name: MIG nodes advertise the instances of their layout
  gpu_platform.cluster.smoke_test:
    check: allocatable
    node_selector: {nodepool: mig}
    mig_layout: all-1g.10gb
    mig_strategy: mixed

- name: Two pods start together under Volcano
  gpu_platform.cluster.smoke_test:
    check: gang
    scheduler: volcano
    replicas: 2
    image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04

- name: GPUDirect RDMA between two nodes at 40 GB/s or more
  gpu_platform.cluster.smoke_test:
    check: nccl
    image: registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9
    nodes: 2
    gpus_per_node: 8
    network: default/rdma-shared
    min_busbw_gbps: 40
    timeout: 900

- name: The same under KAI Scheduler (bare pods in a PodGroup, a key pair made for this run)
  gpu_platform.cluster.smoke_test:
    check: nccl
    scheduler: kai
    queue: vision
    image: registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9
    network: default/rdma-shared
    min_busbw_gbps: 140
    timeout: 900

- name: Run every test, collect the results, and judge at the end
  gpu_platform.cluster.smoke_test:
    check: cuda
    image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
  register: cuda_smoke
  failed_when: false
"""

RETURN = r"""
smoke:
  description: The verdict.
  returned: always
  type: dict
  contains:
    layer:
      description: The layer the test proves.
      type: str
    check:
      description: The test.
      type: str
    object:
      description: The main object (C(kind-namespace-name)), or C(nodes) for V(allocatable).
      type: str
    passed:
      description: True or false; null when the test was not run (check mode, render mode).
      type: bool
    reason:
      description: Why it passed or failed.
      type: str
    evidence:
      description: The log lines (or node facts) that decided.
      type: list
      elements: str
    skipped_reason:
      description: Why the test was not run, when it was not.
      type: str
    removed:
      description: The objects deleted afterwards.
      type: list
      elements: str
  sample:
    layer: gpu_operator
    check: cuda
    object: pod-gpu-platform-smoke-gpu-platform-smoke-cuda
    passed: true
    reason: "nvidia-smi saw 1 GPU(s) (NVIDIA A100-SXM4-80GB), driver 580.95.05"
    evidence: ["| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |"]
    skipped_reason: null
rendered:
  description: With O(render_to), the directory, every file and the changed files.
  returned: with O(render_to), except V(allocatable)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as smoke

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.RENDER,
    check={"type": "str", "required": True, "choices": list(smoke.CHECKS)},
    layer={"type": "str"},
    namespace={"type": "str", "default": "gpu-platform-smoke"},
    image={"type": "str"},
    resources={"type": "dict"},
    suffix={"type": "str"},
    device_class={"type": "str", "default": "gpu.nvidia.com"},
    scheduler={"type": "str", "choices": ["volcano", "kai", "none"], "default": "volcano"},
    replicas={"type": "int", "default": 2},
    queue={"type": "str", "default": "default"},
    window_seconds={"type": "float", "default": 30},
    nodes={"type": "int", "default": 2},
    gpus_per_node={"type": "int", "default": 8},
    rdma_resource={"type": "dict"},
    network={"type": "raw"},
    min_busbw_gbps={"type": "float", "default": 10},
    node_selector={"type": "dict"},
    tolerations={"type": "list", "elements": "dict"},
    expected_per_gpu={"type": "dict"},
    mig_layout={"type": "str"},
    mig_config={"type": "dict"},
    image_pull_secrets={"type": "list", "elements": "str", "no_log": False},
    mig_strategy={"type": "str", "choices": ["single", "mixed"], "default": "single"},
    expected_allocatable={"type": "dict"},
    timeout={"type": "int", "default": 300},
    cleanup={"type": "bool", "default": True},
    source={"type": "str", "default": "smoke_tests"},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them before site.yml writes anything."""
    return smoke.request(params)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return smoke.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
