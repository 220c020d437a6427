#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gitops_bundle
short_description: Tie a rendered GitOps bundle's units together, in the platform's order
version_added: 0.2.0
description:
  - After the layers wrote their objects into O(render_to) (one folder per unit, such as C(gpu-operator/)), this
    module writes the files that make the folder one bundle Flux or Argo CD reconciles in order - each unit's
    C(kustomization.yaml), and for Flux one C(Kustomization) per unit (C(gpu-platform-<unit>.yaml)) whose
    C(dependsOn) follows the platform's order, listed by the root C(kustomization.yaml); for Argo CD the root lists
    the unit folders, whose objects carry their sync waves. See C(docs/gitops.md).
  - Flux - each unit's C(Kustomization) is ready only when what it holds is - C(wait), and C(healthCheckExprs) for the
    custom resources that report readiness in C(status.state) (the C(NicClusterPolicy), and the C(ClusterPolicy) the
    GPU Operator's chart makes, which its unit names in C(healthChecks)). The unit folders' manifests are read for
    that.
  - Argo CD - C(monitoring) (the Prometheus Operator's kinds, CRDs from outside the platform) is left out of the root's
    C(kustomization.yaml) - its folder is synced by an Application of its own, so that a cluster without those CRDs
    still reaches the later waves.
  - A file is written only when its text changes, so a second run changes nothing. Node label patch lists
    (C(*-node-labels.yaml)) are instructions for C(kubectl label) and stay out of the kustomizations.
  - With a local connection (the folder is the controller's) it runs in the controller process; delegated to a host
    reached otherwise, it writes there. It never contacts a cluster.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.attributes.files
options:
  render_to:
    description: The bundle's folder, as the layers' O(render_to) wrote it.
    type: path
    required: true
  render_format:
    description: V(flux) writes Flux C(Kustomization)s that order the units; V(argocd) a kustomization over the unit folders.
    type: str
    choices: [flux, argocd]
    default: flux
  flux_path:
    description:
      - Flux only. The bundle's folder in the Git repository Flux reads, from the repository's root (C(./) and a path).
      - Defaults to C(./) and the name of O(render_to).
    type: str
  flux_source:
    description: Flux only. The Flux source of that repository, C({kind, name, namespace}); the GitRepository C(flux-system) by default.
    type: dict
"""

EXAMPLES = r"""
- name: Tie the bundle the layers rendered together, for Flux
  gpu_platform.cluster.gitops_bundle:
    render_to: "{{ playbook_dir }}/build/platform"
    flux_path: ./clusters/prod/gpu-platform
    flux_source: {kind: GitRepository, name: fleet, namespace: flux-system}
  register: bundle

- name: The units, in the order they are applied
  ansible.builtin.debug:
    msg: "{{ bundle.units }}"

- name: The same bundle for Argo CD (sync waves order the units)
  gpu_platform.cluster.gitops_bundle:
    render_to: "{{ playbook_dir }}/build/platform"
    render_format: argocd
"""

RETURN = r"""
files:
  description: Every file of the bundle's layout, relative to O(render_to).
  returned: always
  type: list
  elements: str
  sample: [gpu-operator/kustomization.yaml, gpu-platform-gpu-operator.yaml, kustomization.yaml]
changed_files:
  description: The files written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
units:
  description: The bundle's units that have manifests, in the order they are applied.
  returned: always
  type: list
  elements: str
  sample: [network-operator, gpu-operator, gpu-sharing]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import gitops_bundle

ARGUMENT_SPEC = shared.combine(
    shared.RENDER,
    render_to=dict(shared.RENDER["render_to"], required=True),
    flux_path={"type": "str"},
    flux_source={"type": "dict"},
)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return gitops_bundle.run(params, check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
