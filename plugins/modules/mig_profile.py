#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mig_profile
short_description: Put a MIG layout on GPU nodes through the GPU Operator's MIG manager, a few nodes at a time
version_added: 0.1.0
description:
  - Validates, before any write, that every selected node is MIG capable and that the layout fits its GPU (from the
    GFD label C(nvidia.com/gpu.product) and the collection's MIG catalog), naming each node that does not.
  - Labels C(nvidia.com/mig.config=PROFILE) in batches of at most O(max_unavailable) nodes and waits for each batch's
    C(nvidia.com/mig.config.state) to reach C(success) before the next; stops at the first C(failed), naming the
    nodes, and leaves the rest untouched.
  - Nodes already at the profile with state C(success) are not touched. Nodes at the profile but stuck (C(pending),
    C(failed), or C(nvidia.com/gpu.deploy.*) labels left at C(paused-for-mig-change)) are reported before anything is
    written; O(retrigger_stuck) re-triggers them.
  - A custom mig-parted config (the operator's ConfigMap format) can be installed with O(mig_config); it is validated
    against the catalog for every node's GPU.
  - Turning MIG on or off may need a node reboot (gpu-operator#668); the result says when.
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
    description: Nodes are read and validated, the plan is returned; no label or ConfigMap is written.
  diff_mode:
    support: full
    description: Each node's C(nvidia.com/mig.config) label before and after.
options:
  nodes:
    description: Node names. Exactly one of O(nodes) and O(node_selector).
    type: list
    elements: str
  node_selector:
    description: A label selector for the nodes, e.g. C(nodepool=training).
    type: str
  profile:
    description: A named layout (C(all-1g.10gb), C(all-balanced), C(all-disabled), ...) or a config name in O(mig_config).
    type: str
    required: true
  strategy:
    description: The cluster's MIG strategy (for the expected resources in the result).
    type: str
    choices: [single, mixed]
    default: single
  mig_config:
    description: A custom mig-parted config (C(version), C(mig-configs)) to install as the operator's ConfigMap.
    type: dict
  config_map_name:
    description: Name of the ConfigMap for O(mig_config).
    type: str
    default: custom-mig-parted-config
  operator_namespace:
    description: The GPU Operator's namespace.
    type: str
    default: gpu-operator
  max_unavailable:
    description: How many nodes may reconfigure at once.
    type: int
    default: 1
  wait_timeout:
    description: How long one batch may take, as seconds or a duration (V(15m)).
    type: str
    default: 15m
  retrigger_stuck:
    description: Re-trigger nodes that are at the profile but stuck, instead of failing.
    type: bool
    default: false
requirements:
  - kubernetes (Python library; not needed with O(render_to))
"""

EXAMPLES = r"""
- name: Seven 1g.10gb instances per GPU on the training pool, two nodes at a time
  gpu_platform.cluster.mig_profile:
    node_selector: nodepool=training
    profile: all-1g.10gb
    strategy: mixed
    max_unavailable: 2
    wait_timeout: 20m
  register: mig

- name: Render the node label patches for GitOps
  gpu_platform.cluster.mig_profile:
    nodes: [gpu-node-01, gpu-node-02]
    profile: all-balanced
    render_to: "{{ playbook_dir }}/build/platform"
"""

RETURN = r"""
nodes:
  description: Per node, the product, the label before and after, the action (keep, change, retrigger), the layout,
    the resources the node should advertise once the layout is applied (from GFD's C(nvidia.com/gpu.count)), and
    whether a reboot may be needed.
  returned: when a cluster was contacted
  type: list
  elements: dict
batches:
  description: The nodes of each batch, in the order they were (or would be) written.
  returned: when a cluster was contacted
  type: list
  elements: list
reboot_needed:
  description: Whether turning MIG on or off may need a node reboot on some node (gpu-operator#668).
  returned: when a cluster was contacted
  type: bool
rendered:
  description: With O(render_to), the directory and files.
  returned: with O(render_to)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import mig_profile

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.RENDER,
    nodes={"type": "list", "elements": "str"},
    node_selector={"type": "str"},
    profile={"type": "str", "required": True},
    strategy={"type": "str", "choices": ["single", "mixed"], "default": "single"},
    mig_config={"type": "dict"},
    config_map_name={"type": "str", "default": "custom-mig-parted-config"},
    operator_namespace={"type": "str", "default": "gpu-operator"},
    max_unavailable={"type": "int", "default": 1},
    wait_timeout={"type": "str", "default": "15m"},
    retrigger_stuck={"type": "bool", "default": False},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them before site.yml writes anything."""
    return mig_profile.request(params)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return mig_profile.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
