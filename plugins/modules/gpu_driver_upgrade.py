#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_driver_upgrade
short_description: Follow the GPU Operator's node-by-node driver upgrade until every GPU node is done
version_added: 0.1.0
description:
  - Read only. After a change of the GPU Operator's driver (a new C(driver.version), a new chart), the operator's
    upgrade controller moves each GPU node through the states of the node label
    C(nvidia.com/gpu-driver-upgrade-state) (C(upgrade-required), C(cordon-required), C(wait-for-jobs-required),
    C(pod-deletion-required), C(drain-required), C(node-maintenance-required), C(post-maintenance-required),
    C(pod-restart-required), C(validation-required), C(uncordon-required), then C(upgrade-done) or C(upgrade-failed)),
    a few nodes at a time under the ClusterPolicy's C(driver.upgradePolicy). This module follows those states.
  - Done means both that every driver DaemonSet (pods labelled O(driver_selector) in O(operator_namespace), update
    strategy C(OnDelete)) is at its current template (C(observedGeneration), C(updatedNumberScheduled) and
    C(numberAvailable) against C(desiredNumberScheduled)) and that every selected node says C(upgrade-done) with a driver
    pod of the current template. A DaemonSet just changed whose nodes still say C(upgrade-done) from the last upgrade
    is not done.
  - Fails at once when a node reaches C(upgrade-failed), naming the node and its driver pod and saying how to retry;
    fails when a node's state has not changed for O(stuck_timeout), naming the node, the state, how long, and what that
    state waits for; fails after O(wait_timeout) naming every node not done with its state.
  - With C(autoUpgrade) false in the ClusterPolicy the operator does not upgrade nodes by itself; the module says so
    and fails when driver pods are outdated, unless O(report_only).
  - Nodes labelled C(nvidia.com/gpu-driver-upgrade.skip=true) are reported but not waited for.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
  - gpu_platform.cluster.wait
attributes:
  check_mode:
    support: full
    description: Reports the current per-node states once, without waiting or failing on them.
  diff_mode:
    support: none
    description: Nothing is ever changed, so there is nothing to show.
options:
  nodes:
    description: Node names to follow. Default is every node O(node_selector) selects. Not with O(node_selector).
    type: list
    elements: str
  node_selector:
    description: A label selector for the GPU nodes to follow.
    type: str
    default: nvidia.com/gpu.present=true
  operator_namespace:
    description: The GPU Operator's namespace, where its driver DaemonSet runs.
    type: str
    default: gpu-operator
  driver_selector:
    description: The label selector of the driver DaemonSet(s) and their pods.
    type: str
    default: app=nvidia-driver-daemonset
  expected_driver_version:
    description:
      - A full driver version (V(595.91.07)). Every followed node's driver must run it, read from the driver pod's
        image tag on that node or, without one, from GPU Feature Discovery's node labels
        (C(nvidia.com/cuda.driver-version.full), or the older C(nvidia.com/cuda.driver.major/minor/rev)).
      - When the driver DaemonSet's template runs another version, fails at once (the ClusterPolicy was not changed).
    type: str
  wait:
    description:
      - Follow the upgrade until every node is done (V(true)), or read the states once and return (V(false); an
        C(upgrade-failed) node still fails the task).
    type: bool
    default: true
  wait_timeout:
    description: The longest the whole upgrade may take, as seconds or a duration (V(2h), V(90m)).
    type: str
    default: 60m
  stuck_timeout:
    description: A node whose state does not change for this long is reported as stuck, as seconds or a duration.
    type: str
    default: 15m
  poll_interval:
    description: Seconds between two reads of the nodes.
    type: int
    default: 10
  report_only:
    description: Read the states once and report them; never fail on what is found (failed, outdated, pending nodes).
    type: bool
    default: false
requirements:
  - kubernetes (Python library)
notes:
  - Facts from NVIDIA's k8s-operator-libs (package upgrade) and the GPU Operator documentation (GPU Driver Upgrades).
  - The module never changes anything; C(changed) is always false.
seealso:
  - name: GPU Operator driver upgrades
    description: The upgrade controller, its policy and its states.
    link: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-driver-upgrades.html
"""

EXAMPLES = r"""
- name: Follow the driver upgrade on every GPU node until each is done
  gpu_platform.cluster.gpu_driver_upgrade:
    expected_driver_version: 595.91.07
    wait_timeout: 2h
    stuck_timeout: 20m
  register: upgrade

- name: Report each GPU node's upgrade state, without waiting or failing
  gpu_platform.cluster.gpu_driver_upgrade:
    report_only: true
  register: states

- name: Follow two nodes only, reading every 30 seconds
  gpu_platform.cluster.gpu_driver_upgrade:
    nodes: [gpu-node-1, gpu-node-2]
    poll_interval: 30
    wait_timeout: 45m
"""

RETURN = r"""
done:
  description: Every driver DaemonSet at its current template and every followed node C(upgrade-done).
  returned: always
  type: bool
auto_upgrade:
  description: The ClusterPolicy's C(driver.upgradePolicy.autoUpgrade).
  returned: always
  type: bool
upgrade_policy:
  description: The ClusterPolicy's C(spec.driver.upgradePolicy), as the operator reads it.
  returned: always
  type: dict
nodes:
  description:
    - Per node at the end, C(name), C(state) (the label's value, empty when not yet seen), C(cordoned), C(skipped),
      C(driver_pod) (namespace/name), C(pod_current) (the pod runs the DaemonSet's current template; null when
      unknown), C(pod_version), C(gfd_version) and C(driver_version).
  returned: always
  type: list
  elements: dict
transitions:
  description: Every state change seen, as C(node), C(from), C(to), C(at) (seconds since the module started).
  returned: always
  type: list
  elements: dict
  sample: [{"node": "gpu-node-1", "from": "upgrade-required", "to": "cordon-required", "at": 20.0}]
daemonsets:
  description:
    - Per driver DaemonSet, C(name), C(namespace), C(generation), C(observed_generation), C(desired), C(updated),
      C(available), C(update_strategy), C(images), C(version), C(current) and C(not_current) (why not).
  returned: always
  type: list
  elements: dict
pending:
  description: The nodes not done yet.
  returned: always
  type: list
  elements: str
failed_nodes:
  description: The nodes in C(upgrade-failed).
  returned: always
  type: list
  elements: str
stuck:
  description: On a stuck failure, each stuck node with its C(state) and C(seconds) in it.
  returned: when a node is stuck
  type: list
  elements: dict
elapsed:
  description: Seconds the module followed the upgrade.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import gpu_driver_upgrade

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.WAIT,
    nodes={"type": "list", "elements": "str"},
    node_selector={"type": "str", "default": "nvidia.com/gpu.present=true"},
    operator_namespace={"type": "str", "default": "gpu-operator"},
    driver_selector={"type": "str", "default": "app=nvidia-driver-daemonset"},
    expected_driver_version={"type": "str"},
    wait={"type": "bool", "default": True},
    wait_timeout={"type": "str", "default": "60m"},
    stuck_timeout={"type": "str", "default": "15m"},
    poll_interval={"type": "int", "default": 10},
    report_only={"type": "bool", "default": False},
)


SPEC_OPTIONS = {"mutually_exclusive": [("nodes", "node_selector")]}


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    params = dict(params)
    if params.get("nodes"):
        params["node_selector"] = None  # the default selector gives way to a list of names
    return gpu_driver_upgrade.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True, **SPEC_OPTIONS), call)


if __name__ == "__main__":
    main()
