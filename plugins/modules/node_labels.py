#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_labels
short_description: Label the nodes that label selectors pick, writing only the nodes whose labels differ
version_added: 0.1.0
description:
  - Each entry of O(nodes) gives a label selector and the labels its nodes get, for example a node pool and its
    device-plugin config label, or the nodes that move to DRA.
  - One list of nodes per selector, whatever the number of nodes. Only the nodes whose labels differ are written.
    Each gets a server-side apply of a label-only Node (field manager C(gpu-platform)), so the labels it already
    carries, and every other field, are left alone. A converged run writes nothing.
  - Every entry is checked before anything is read or written. A node that two entries pick with different values
    for one label, or a selector that picks no node (unless O(require_match=false)), fails before any write and is
    named.
  - The result names the nodes each selector picked, so a role needs no separate node read.
  - With O(render_to) no cluster is contacted. The entries are written into that folder as a C(NodeLabelPatchList)
    file, C(<render_name>-node-labels.yaml), for C(kubectl label) (see C(docs/gitops.md)); it is written only when
    its text changes.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
attributes:
  check_mode:
    support: full
    description: Each write goes through server-side dry-run; the result says which nodes would change. With
      O(render_to), nothing is written.
  diff_mode:
    support: full
    description: Each changed node's labels before and after (only the labels this task sets); with O(render_to),
      the file's text.
options:
  nodes:
    description: Which nodes get which labels.
    type: list
    elements: dict
    required: true
    suboptions:
      selector:
        description: A label selector as C(kubectl -l) takes it (C(nodepool=dra), C(tier in (a,b))). It may not be empty.
        type: str
        required: true
      labels:
        description:
          - The labels the selected nodes get. Values are strings (quote C(true) and numbers in YAML).
          - A label given C(null) is removed from the selected nodes that carry it, whoever set it (a JSON merge patch
            of the node's labels, for example when a layer is uninstalled).
        type: dict
        required: true
      name:
        description: Names the entry in messages and in RV(selected), for example the pool's name. Defaults to the selector.
        type: str
  require_match:
    description: A selector that picks no node fails the task, naming it, before any write.
    type: bool
    default: true
  render_to:
    description: Write the entries into this folder (a unit of the GitOps bundle) instead of labelling nodes.
    type: path
  render_name:
    description: With O(render_to), the file's name before C(-node-labels.yaml), for example the unit's name.
    type: str
notes:
  - Labels are added, changed, or removed when given C(null); the node's other labels are left alone.
requirements:
  - kubernetes (Python library; not needed with O(render_to))
"""

EXAMPLES = r"""
- name: Move the dra pool to the DRA kubelet plugin (and its device plugin off)
  gpu_platform.cluster.node_labels:
    nodes:
      - selector: nodepool=dra
        labels:
          nvidia.com/dra-kubelet-plugin: "true"
          nvidia.com/gpu.deploy.device-plugin: "false"
  register: dra_nodes

- name: Each pool's device-plugin config, an empty pool allowed
  gpu_platform.cluster.node_labels:
    nodes:
      - name: inference
        selector: nodepool=inference
        labels: {nvidia.com/device-plugin.config: inference}
      - name: training
        selector: nodepool=training
        labels: {nvidia.com/device-plugin.config: default}
    require_match: false

- name: Take the device-plugin config label off every node that carries it
  gpu_platform.cluster.node_labels:
    nodes:
      - selector: nvidia.com/device-plugin.config
        labels: {nvidia.com/device-plugin.config: null}
    require_match: false

- name: The same labels for GitOps, as gpu-sharing/gpu-sharing-node-labels.yaml in the bundle
  gpu_platform.cluster.node_labels:
    nodes:
      - name: inference
        selector: nodepool=inference
        labels: {nvidia.com/device-plugin.config: inference}
    render_to: "{{ playbook_dir }}/build/platform/gpu-sharing"
    render_name: gpu-sharing
"""

RETURN = r"""
selected:
  description: Per entry, its name, selector and the names of the nodes it picked.
  returned: success
  type: list
  elements: dict
  sample: [{"name": "inference", "selector": "nodepool=inference", "nodes": ["gpu-node-1", "gpu-node-3"]}]
changed_nodes:
  description: The nodes that were (or in check mode would be) labelled.
  returned: success
  type: list
  elements: str
rendered:
  description: With O(render_to), the folder, the file and whether it was (or would be) written.
  returned: with O(render_to)
  type: dict
  sample: {"directory": "build/platform/gpu-sharing", "files": ["gpu-sharing-node-labels.yaml"], "changed_files": []}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import node_labels

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH,
    nodes={"type": "list", "elements": "dict", "required": True, "options": {
        "selector": {"type": "str", "required": True},
        "labels": {"type": "dict", "required": True},
        "name": {"type": "str"},
    }},
    require_match={"type": "bool", "default": True},
    render_to={"type": "path"},
    render_name={"type": "str"},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them before site.yml writes anything."""
    return node_labels.request(params)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return node_labels.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
