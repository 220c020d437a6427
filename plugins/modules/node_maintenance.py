#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_maintenance
short_description: Cordon, drain (through the Eviction API) and uncordon a Kubernetes node
version_added: 0.1.0
description:
  - O(state=cordoned) marks the node unschedulable (C(spec.unschedulable=true)).
  - O(state=drained) cordons the node, then evicts its pods through the Eviction API (C(pods/NAME/eviction),
    C(policy/v1)), so PodDisruptionBudgets are respected. An eviction a budget refuses (HTTP 429) is retried until
    O(wait_timeout); then the module waits until every evicted pod is gone. A time-out names each pod still on the
    node and why (the budget's refusal, or the finalizers that keep a terminating pod).
  - The pods are chosen by the rules C(kubectl drain) documents. DaemonSet pods, mirror pods of static pods
    (annotation C(kubernetes.io/config.mirror)) and pods that already finished (C(Succeeded), C(Failed)) are
    skipped, with the reason in RV(not_evicted). Pods with C(emptyDir) volumes (their data would be lost) are refused
    unless O(delete_emptydir_data=true). Pods that no controller manages (nothing would recreate them) are refused
    unless O(force=true). A refusal names the pods and the option, and it happens before anything is written, so
    the node stays schedulable.
  - Pods that are already terminating are not evicted again; the module waits for them to be gone.
  - O(state=uncordoned) makes the node schedulable again (C(spec.unschedulable) removed).
  - A second run with the same options changes nothing. A node that is cordoned, with nothing left to evict,
    reports C(changed=false).
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
attributes:
  check_mode:
    support: full
    description:
      - Reports the plan and writes nothing. The cordon is sent as a server-side dry-run. With O(state=drained),
        each planned pod also gets a server-side dry-run eviction. Budgets that refuse an eviction now are listed
        under C(refused_by_budget_now) in RV(plan).
  diff_mode:
    support: full
    description: The node's C(spec.unschedulable) and the pods on the node, before and after.
options:
  name:
    description: The node's name, as C(kubectl get nodes) prints it.
    type: str
    required: true
  state:
    description: What the node should be.
    type: str
    choices: [cordoned, drained, uncordoned]
    default: drained
  delete_emptydir_data:
    description: Evict pods with C(emptyDir) volumes too. Their C(emptyDir) data is deleted (C(kubectl drain
      --delete-emptydir-data)).
    type: bool
    default: false
  force:
    description: Evict pods that no controller manages too. Nothing recreates them (C(kubectl drain --force)).
    type: bool
    default: false
  pod_selector:
    description:
      - A label selector, in the syntax C(kubectl -l) takes (C(app=trainer), C(tier!=system),
        C(app in (a,b)), C(!key)). Only matching pods are evicted. The others are skipped, and the result says so.
      - Like the C(podSelector) of the GPU Operator's driver upgrade drain.
    type: str
  wait_timeout:
    description:
      - How long O(state=drained) may take, as seconds (V(300)) or a duration (V(5m), V(1m30s)). It covers
        retrying evictions that a PodDisruptionBudget refuses and waiting until the evicted pods are gone.
    type: str
    default: 5m
requirements:
  - kubernetes (Python library)
notes:
  - Unlike C(kubectl drain), finished pods are left on the node (they use no resources) rather than deleted.
  - DaemonSet pods are always skipped, as with C(kubectl drain --ignore-daemonsets).
seealso:
  - name: kubectl drain
    description: The rules this module follows to choose which pods to evict.
    link: https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain/
  - name: Safely Drain a Node
    description: Evictions, PodDisruptionBudgets and the Eviction API.
    link: https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
"""

EXAMPLES = r"""
- name: Drain a GPU node before its driver is replaced (emptyDir scratch data may go)
  gpu_platform.cluster.node_maintenance:
    name: gpu-node-01
    state: drained
    delete_emptydir_data: true
    wait_timeout: 10m
  register: drain

- name: Evict only the GPU workloads, leave the rest running
  gpu_platform.cluster.node_maintenance:
    name: gpu-node-01
    state: drained
    pod_selector: gpu-platform.io/workload=training

- name: Cordon only (no evictions)
  gpu_platform.cluster.node_maintenance:
    name: gpu-node-02
    state: cordoned

- name: Make the node schedulable again once nvidia-smi passes
  gpu_platform.cluster.node_maintenance:
    name: gpu-node-01
    state: uncordoned
"""

RETURN = r"""
node:
  description: The node's name.
  returned: always
  type: str
  sample: gpu-node-01
cordoned:
  description: Whether the node is (in check mode, would be) unschedulable after the task.
  returned: always
  type: bool
evicted:
  description: The pods evicted (in check mode, that would be evicted), as C(namespace/name).
  returned: always
  type: list
  elements: str
  sample: [team-a/trainer-0]
not_evicted:
  description: The pods left on the node, each with the reason (DaemonSet, mirror pod, finished, not matching
    O(pod_selector)).
  returned: always
  type: list
  elements: dict
  sample: [{pod: gpu-operator/nvidia-device-plugin-daemonset-x7k2p, reason: "DaemonSet-managed (DaemonSet
    nvidia-device-plugin-daemonset)"}]
plan:
  description:
    - The plan. C(cordon) and C(uncordon) say whether that write is (or would be) made. C(evict) lists the pods to
      evict and C(skip) the pods left, with reasons. C(blocking) lists the refused pods, each with the reason and
      the option that allows it. C(terminating) lists pods already being deleted, which are waited for.
    - It also holds C(node), C(state), C(unschedulable_before), and in check mode with O(state=drained)
      C(refused_by_budget_now), the dry-run evictions a PodDisruptionBudget refused, with its message.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import node_maintenance

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH,
    name={"type": "str", "required": True},
    state={"type": "str", "choices": ["cordoned", "drained", "uncordoned"], "default": "drained"},
    delete_emptydir_data={"type": "bool", "default": False},
    force={"type": "bool", "default": False},
    pod_selector={"type": "str"},
    wait_timeout={"type": "str", "default": "5m"},
)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return node_maintenance.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
