#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: helm_pinned_release
short_description: A Helm release whose chart version is always pinned
version_added: 0.1.0
description:
  - Installs, upgrades, repairs or uninstalls one Helm release with an exact chart version, or renders it as
    Flux or Argo CD objects for GitOps.
  - Option names follow M(kubernetes.core.helm), so a task can switch by changing the module name.
  - A run whose release is already deployed with the same chart, version and user values is a no-op that
    never contacts the chart repository and starts no C(helm) process. The releases are read from helm's
    release Secrets through the Kubernetes API (one list, the one C(helm list -A) makes), so no chart is
    downloaded and no helm is run; with C(HELM_DRIVER) set to another storage (C(configmap), C(sql)) helm
    reads them instead.
  - A release left C(failed), C(pending-install), C(pending-upgrade), C(pending-rollback) or C(uninstalling) is
    reported and repaired (rolled back to its last good revision, upgraded, or reinstalled), never skipped.
  - Refuses to install a second release of the same chart in another namespace and names the existing one.
  - Check mode and diff mode work without the helm-diff plugin; the diff shows chart, version, status and
    user values before and after (values from O(values_files) and O(release_values) both count).
  - Works with Helm 3 and Helm 4 and detects which; rollback on failure uses C(--atomic) on Helm 3 and
    C(--rollback-on-failure) on Helm 4.
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
    description: Nothing is written to the cluster, the host or O(render_to); the namespace is checked with server-side dry-run.
  diff_mode:
    support: full
    description: Chart, version, status and user values before and after; with O(render_to), each file before and after.
options:
  release_name:
    description: The release name (lower-case DNS-1123, at most 53 characters).
    type: str
    required: true
    aliases: [name]
  release_namespace:
    description: The namespace of the release.
    type: str
    required: true
    aliases: [namespace]
  chart_ref:
    description:
      - The chart. A bare chart name with O(chart_repo_url); an C(oci://REGISTRY/PATH/CHART) reference (no tag);
        or the path of a local chart directory or C(.tgz) archive (air-gapped installs).
      - Required when O(release_state=present).
    type: str
  chart_repo_url:
    description: The chart repository URL, for a bare chart name in O(chart_ref).
    type: str
  chart_version:
    description:
      - The exact chart version, such as V(v26.3.3) or V(1.2.3-rc.1). Required when O(release_state=present).
      - Ranges, V(latest), empty values and partial versions are refused before anything runs.
      - For a local chart it must equal the version in its C(Chart.yaml).
    type: str
  chart_sha256:
    description:
      - SHA-256 of the chart archive. The chart is fetched (C(helm pull)) and checked before it is installed;
        a mismatch fails without installing. Checked whenever the chart is fetched; a no-op fetches nothing.
      - Not possible for a chart directory.
    type: str
  release_values:
    description: Values as a structured dictionary; applied after O(values_files). Never a C(--set) string.
    type: dict
    default: {}
    aliases: [values]
  values_files:
    description: Values files read on the host that runs the task, merged in order before O(release_values).
    type: list
    elements: path
    default: []
  create_namespace:
    description: Create the namespace (server-side apply) if it is missing, and add O(namespace_labels).
    type: bool
    default: false
  namespace_labels:
    description:
      - Labels the namespace must carry, such as C(pod-security.kubernetes.io/enforce=privileged) for the GPU
        Operator. Needs O(create_namespace=true). Existing labels are kept.
    type: dict
  release_state:
    description: V(present) installs or upgrades; V(absent) uninstalls.
    type: str
    choices: [present, absent]
    default: present
    aliases: [state]
  atomic:
    description: Roll back to the previous revision when an install or upgrade fails (implies waiting).
    type: bool
    default: false
  binary_path:
    description: The helm binary (3.x or 4.x). Defaults to C(helm) on the E(PATH).
    type: path
  plain_http:
    description: Use plain HTTP for an C(oci://) registry (a local air-gapped mirror). Off by default.
    type: bool
    default: false
  argocd_namespace:
    description: The namespace of the Argo CD C(Application) when O(render_format=argocd).
    type: str
    default: argocd
  flux_interval:
    description: The reconcile interval of the rendered Flux C(HelmRelease) and C(OCIRepository).
    type: str
    default: 10m
  depends_on:
    description:
      - With O(render_to) and O(render_format=flux), the C(HelmRelease)s this one waits for (Flux's
        C(spec.dependsOn)); Flux installs or upgrades this release only when each of them is Ready.
      - Argo CD has no such field; its sync waves order the bundle's units instead.
      - Ignored without O(render_to); on a cluster the play's order is the dependency.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The release's name.
        type: str
        required: true
      namespace:
        description: Its namespace; defaults to O(release_namespace).
        type: str
notes:
  - "Helm runs on the host that runs the task; for a cluster task that is usually the controller
    (C(connection: local) or C(delegate_to: localhost)). Delegated to a host reached over SSH, the module runs
    there and uses that host's helm (O(binary_path)) and kubeconfig."
  - The no-op check compares the deployed chart name, version, status and user-supplied values
    (what C(helm get values) prints); changes made to live objects outside Helm are not detected.
  - Reading the releases needs the right to list Secrets in every namespace, as C(helm list -A) does; the
    cross-namespace check (a second release of the same chart) needs it too.
  - With O(render_to), O(chart_sha256) is recorded as an annotation; Flux and Argo CD do not verify an archive digest.
requirements:
  - helm 3.x or 4.x (not needed with O(render_to))
  - kubernetes (Python library; not needed with O(render_to))
  - PyYAML
seealso:
  - module: kubernetes.core.helm
"""

EXAMPLES = r"""
- name: Install the GPU Operator, pinned, into a privileged namespace
  gpu_platform.cluster.helm_pinned_release:
    name: gpu-operator
    namespace: gpu-operator
    chart_ref: gpu-operator
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_version: v26.7.0
    create_namespace: true
    namespace_labels:
      pod-security.kubernetes.io/enforce: privileged
    values:
      driver:
        enabled: false
      dcgmExporter:
        serviceMonitor:
          enabled: true
    wait: true
    wait_timeout: 10m
    atomic: true

- name: Install a chart from an OCI registry, checking the archive digest
  gpu_platform.cluster.helm_pinned_release:
    name: network-operator
    namespace: nvidia-network-operator
    chart_ref: oci://registry.example.com/charts/network-operator
    chart_version: 26.4.1
    chart_sha256: 0f4c4b1e3c5d8a2b7e6f9a1c3d5e7f9b2a4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f
    values_files:
      - files/network-operator-values.yaml

- name: Install from a local archive in an air-gapped site
  gpu_platform.cluster.helm_pinned_release:
    name: gpu-operator
    namespace: gpu-operator
    chart_ref: /srv/charts/gpu-operator-v26.7.0.tgz
    chart_version: v26.7.0

- name: Render the release as Flux objects for a GitOps repository (no cluster needed)
  gpu_platform.cluster.helm_pinned_release:
    name: gpu-operator
    namespace: gpu-operator
    chart_ref: gpu-operator
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_version: v26.7.0
    create_namespace: true
    namespace_labels:
      pod-security.kubernetes.io/enforce: privileged
    render_to: "{{ playbook_dir }}/build/platform"
    # Flux installs it once the Network Operator's HelmRelease is Ready.
    depends_on:
      - name: network-operator
        namespace: nvidia-network-operator

- name: Render an Argo CD Application instead
  gpu_platform.cluster.helm_pinned_release:
    name: gpu-operator
    namespace: gpu-operator
    chart_ref: gpu-operator
    chart_repo_url: https://helm.ngc.nvidia.com/nvidia
    chart_version: v26.7.0
    render_to: "{{ playbook_dir }}/build/platform-argocd"
    render_format: argocd

- name: Uninstall
  gpu_platform.cluster.helm_pinned_release:
    name: gpu-operator
    namespace: gpu-operator
    state: absent
"""

RETURN = r"""
action:
  description: What was (or in check mode would be) done.
  returned: always
  type: str
  sample: upgrade
  choices: [none, install, upgrade, repair, uninstall, render]
reasons:
  description: Why, e.g. which of chart, version and values differ.
  returned: when a cluster was contacted
  type: list
  elements: str
  sample: ["version v26.3.2 -> v26.3.3", "values differ"]
repair:
  description: How a failed or stuck release was repaired (V(rollback), V(upgrade) or V(uninstall) then install).
  returned: when the release was failed or pending
  type: str
release:
  description: The release after the run (before it, in check mode).
  returned: when a cluster was contacted
  type: dict
  sample: {name: gpu-operator, namespace: gpu-operator, chart: gpu-operator, version: v26.3.3,
           app_version: v26.3.3, revision: 2, status: deployed}
namespace:
  description: The namespace and whether it was created or labelled.
  returned: when O(release_state=present) and a cluster was contacted
  type: dict
commands:
  description: The helm commands that ran, with tokens hidden.
  returned: when a cluster was contacted
  type: list
  elements: str
rendered:
  description: With O(render_to), the directory, the format, the files of this release and those that changed.
  returned: with O(render_to)
  type: dict
objects:
  description: With O(render_to), the rendered objects.
  returned: with O(render_to) and O(release_state=present)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.helm import Helm, find_helm, kube_flags
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import helm_pinned_release

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH, shared.WAIT, shared.RENDER,
    release_name={"type": "str", "required": True, "aliases": ["name"]},
    release_namespace={"type": "str", "required": True, "aliases": ["namespace"]},
    chart_ref={"type": "str"},
    chart_repo_url={"type": "str"},
    chart_version={"type": "str"},
    chart_sha256={"type": "str"},
    release_values={"type": "dict", "default": {}, "aliases": ["values"]},
    values_files={"type": "list", "elements": "path", "default": []},
    create_namespace={"type": "bool", "default": False},
    namespace_labels={"type": "dict"},
    release_state={"type": "str", "choices": ["present", "absent"], "default": "present", "aliases": ["state"]},
    atomic={"type": "bool", "default": False},
    binary_path={"type": "path"},
    plain_http={"type": "bool", "default": False},
    argocd_namespace={"type": "str", "default": "argocd"},
    flux_interval={"type": "str", "default": "10m"},
    depends_on={"type": "list", "elements": "dict", "default": [], "options": {
        "name": {"type": "str", "required": True},
        "namespace": {"type": "str"},
    }},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them before site.yml writes anything."""
    return helm_pinned_release.prepare_request(params)


def call(params, check_mode, runtime):
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    auth = shared.kube_auth_params(params)

    def helm_factory():
        # Credentials go to helm in a 0600 file in the runtime's private folder (removed at the end) or its
        # environment, never on its command line.
        flags, env = kube_flags(tmpdir=runtime.tmpdir, **auth)
        return Helm(find_helm(params["binary_path"]), run=runtime.run_command, env=env, kube_flags=flags)

    return helm_pinned_release.run(params, helm_factory, lambda: KubeClient(**auth), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
