#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_read
short_description: Read Kubernetes objects, Helm's releases and the API server's version
version_added: 0.1.0
description:
  - The layers' reads and readiness checks (the cluster's version, its nodes, a ClusterPolicy's state, what the
    nodes advertise) go through this module. It answers in the shapes of C(kubernetes.core.k8s_info) (RV(resources),
    RV(api_found)) and C(kubernetes.core.k8s_cluster_info) (RV(version)), so a task's C(until) reads the same.
  - With a local connection it runs in the controller process like the collection's other cluster-facing modules,
    so a read costs one API request, not a new Python process. Inside a C(retries)/C(until) loop each try is one request.
  - Objects are read by O(name), or with one list request and the selectors. A kind the cluster does not serve
    (its CRD is not installed) gives an empty RV(resources) and RV(api_found=false), not an error.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode reads the same.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
options:
  api_version:
    description: The objects' API version (C(v1), C(apps/v1), C(nvidia.com/v1)).
    type: str
    default: v1
  kind:
    description: The objects' kind. Not needed when only O(version) is read.
    type: str
  name:
    description: One object's name. Not together with O(label_selectors) or O(field_selectors).
    type: str
  namespace:
    description: The namespace of namespaced objects; all namespaces when not set.
    type: str
  label_selectors:
    description: Label selectors, all of which must match (C(nvidia.com/gpu.present=true)).
    type: list
    elements: str
    default: []
  field_selectors:
    description: Field selectors, all of which must match (C(spec.nodeName=gpu-a)).
    type: list
    elements: str
    default: []
  version:
    description: Also read the API server's version (RV(version)).
    type: bool
    default: false
  helm_releases:
    description:
      - Also read the Helm releases (RV(helm_releases)) from helm's release Secrets, in O(namespace) or in all
        namespaces, as C(helm list) shows them. A release's values are not returned.
    type: bool
    default: false
    version_added: 0.3.0
requirements:
  - kubernetes (Python library, on the host the task runs on; the controller with a local connection)
"""

EXAMPLES = r"""
- name: Read the cluster's Kubernetes version and its GPU nodes
  gpu_platform.cluster.cluster_read:
    version: true
    kind: Node
    label_selectors: ["nvidia.com/gpu.present=true"]
  register: cluster

- name: Show them
  ansible.builtin.debug:
    msg: "{{ cluster.version.server.kubernetes.gitVersion }}: {{ cluster.resources | map(attribute='metadata.name') | list }}"

- name: Read the Helm releases on the cluster (name, namespace, chart, status; no values)
  gpu_platform.cluster.cluster_read:
    helm_releases: true
  register: releases

- name: Wait until the GPU Operator's ClusterPolicy is ready (each try is one request)
  gpu_platform.cluster.cluster_read:
    api_version: nvidia.com/v1
    kind: ClusterPolicy
  register: policy
  until: policy.resources | map(attribute='status.state', default='') | reject('equalto', 'ready') | list | length == 0
  retries: 60
  delay: 10
"""

RETURN = r"""
resources:
  description: The objects read (an empty list when none matched or the kind is not served).
  returned: when O(kind) is set
  type: list
  elements: dict
api_found:
  description: Whether the cluster serves O(api_version) O(kind).
  returned: when O(kind) is set
  type: bool
helm_releases:
  description: The latest revision of each Helm release whose status C(helm list) shows, as C(helm list -o json)
    prints it (C(name), C(namespace), C(revision), C(updated), C(status), C(chart) as NAME-VERSION, C(app_version)).
  returned: when O(helm_releases=true)
  type: list
  elements: dict
  sample: [{name: gpu-operator, namespace: gpu-operator, revision: "1", status: deployed, chart: gpu-operator-v26.7.0,
            app_version: v26.7.0, updated: "2026-12-01T10:00:00Z"}]
version:
  description: The API server's version document under C(server.kubernetes) (C(gitVersion), C(major), C(minor), ...).
  returned: when O(version=true)
  type: dict
  sample: {server: {kubernetes: {gitVersion: v1.35.8, major: "1", minor: "35", platform: linux/amd64}}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import cluster_read

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH,
    api_version={"type": "str", "default": "v1"},
    kind={"type": "str"},
    name={"type": "str"},
    namespace={"type": "str"},
    label_selectors={"type": "list", "elements": "str", "default": []},
    field_selectors={"type": "list", "elements": "str", "default": []},
    version={"type": "bool", "default": False},
    helm_releases={"type": "bool", "default": False},
)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return cluster_read.run(params, lambda: KubeClient(**shared.kube_auth_params(params)))


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
