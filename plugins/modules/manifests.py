#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: manifests
short_description: Put Kubernetes objects on the cluster (only what changes) or into a GitOps folder
version_added: 0.1.0
description:
  - The layers' own objects (ConfigMaps, DaemonSets, queues, rules, smoke-test objects) go through this one module.
    It takes the same path to the cluster and to a GitOps bundle that the collection's other modules take.
  - On the cluster, each object is first applied with server-side dry-run and compared with what the cluster holds.
    Only objects that would change are applied (server-side apply, field manager C(gpu-platform)), so a second run
    writes nothing.
  - With O(render_to), nothing contacts a cluster. Each object is written to its own file with a stable name
    (C(kind-namespace-name.yaml), or C(kind-name.yaml) for cluster-scoped objects), and a file is written only when its
    content changes.
  - O(state=absent) deletes the objects in reverse order (or removes their files).
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
    description: Server-side dry-run on the cluster; the files' diff without writing them.
  diff_mode:
    support: full
    description: Each changed object's before and after (YAML).
options:
  objects:
    description: The Kubernetes objects, in apply order (each with C(apiVersion), C(kind) and C(metadata.name)).
    type: list
    elements: dict
    required: true
  state:
    description: V(present) applies or renders; V(absent) deletes or removes the files.
    type: str
    choices: [present, absent]
    default: present
  unserved:
    description:
      - What to do with an object whose kind the cluster does not serve (its operator or CRD is not installed).
        Every object's kind is checked before any write.
      - V(fail) stops before anything is applied, naming each kind the cluster lacks.
      - V(skip) leaves those objects out and names them in RV(left_out), for optional kinds such as the Prometheus
        Operator's.
      - Not used with O(render_to) (nothing asks a cluster there). With O(state=absent), an unserved kind has
        nothing left to delete and is passed over.
    type: str
    choices: [fail, skip]
    default: fail
  missing:
    description:
      - What to do with an object that does not exist on the cluster yet.
      - V(create) applies it like any other.
      - V(skip) leaves it out and names it in RV(left_out). This is for a partial object that patches someone else's
        object, such as an annotation on an operator's DaemonSet, which must never be created from the partial.
      - Not used with O(render_to) or O(state=absent).
    type: str
    choices: [create, skip]
    default: create
  source:
    description: Named in the header of rendered files (which layer wrote them).
    type: str
    default: ""
requirements:
  - kubernetes (Python library; not needed with O(render_to))
"""

EXAMPLES = r"""
- name: Team queues on the cluster (applied only when they change)
  gpu_platform.cluster.manifests:
    objects:
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: gpu, namespace: vision}
        spec: {clusterQueue: vision}

- name: Prometheus Operator objects where its CRDs are installed (left out, and named, where they are not)
  gpu_platform.cluster.manifests:
    objects: "{{ my_service_monitors }}"
    unserved: skip
  register: monitors

- name: The same, into a GitOps folder
  gpu_platform.cluster.manifests:
    objects: "{{ my_objects }}"
    source: scheduling
    render_to: "{{ playbook_dir }}/build/platform"
"""

RETURN = r"""
objects:
  description: The objects' identities (C(kind-namespace-name)).
  returned: success
  type: list
  elements: str
changed_objects:
  description: The objects that were (or in check mode would be) applied.
  returned: on the cluster, state present
  type: list
  elements: str
left_out:
  description: >-
    The objects left out (C(Kind namespace/name)), with O(unserved=skip) because the cluster does not serve their kind,
    with O(missing=skip) because they do not exist yet.
  returned: on the cluster, state present
  type: list
  elements: str
removed:
  description: The objects that were deleted.
  returned: on the cluster, state absent
  type: list
  elements: str
rendered:
  description: With O(render_to), the directory, every file and the changed files.
  returned: with O(render_to)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.RENDER,
    objects={"type": "list", "elements": "dict", "required": True},
    state={"type": "str", "choices": ["present", "absent"], "default": "present"},
    source={"type": "str", "default": ""},
    unserved={"type": "str", "choices": ["fail", "skip"], "default": "fail"},
    missing={"type": "str", "choices": ["create", "skip"], "default": "create"},
)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return manifests.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
