#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_probe
short_description: Read the GPU nodes' host state for the host preflight through a probe Job, without SSH
version_added: 0.2.0
description:
  - The host preflight (C(docs/preflight.md)) where the hosts are not reached over SSH (no host in C(gpu_hosts)).
    Per GPU node, one C(batch/v1) Job runs a pod pinned to the node (C(nodeName), every taint tolerated) on the
    node's network (C(hostNetwork), so C(/proc/net/route) is the node's) with C(/etc), C(/proc), C(/sys), C(/usr)
    and C(/lib) of the host mounted read-only (hostPath, type C(Directory)) under C(/host).
  - Its script prints the files C(gpu_platform.cluster.gpu_host_facts) with O(gpu_platform.cluster.gpu_host_facts#module:checks)
    reads (of containerd's and CRI-O's configs only the top-level lines and the table headers). The log is parsed into
    the same RV(gpu_host_checks) facts, which the filter C(gpu_platform.cluster.host_checks) judges.
  - The Jobs go into a namespace of their own (O(namespace)), labelled C(gpu-platform.io/host-probe) and
    pod-security C(privileged) (the baseline level refuses hostPath volumes and hostNetwork; the container itself
    is not privileged, drops every capability and has a read-only root file system). The namespace is deleted
    afterwards, pass or fail, and waited for until it is gone. One left by an interrupted run is deleted first.
  - The probe runs no command on the node and reads no package database. The C(apt-cache), C(modinfo) and
    C(containerd --version) answers are unknown, as on a root other than C(/). Whether the GPU Operator's driver runs
    on a node is read from the cluster (its C(app=nvidia-driver-daemonset) pod running there).
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.kube_auth
attributes:
  check_mode:
    support: full
    description: Nothing is created and no node is read; RV(skipped_reason) says so.
  diff_mode:
    support: none
    description: The probe leaves nothing behind, so there is nothing to diff.
options:
  image:
    description:
      - The pinned image of the probe's pod (a tag other than C(latest), or a digest). It needs a POSIX C(sh),
        C(sed), C(grep), C(head), C(od) and C(readlink), as the smoke tests' CUDA base image has.
      - It must be pullable on the node without a pull Secret (a mirror without credentials, or a public registry).
    type: str
    required: true
  node_selectors:
    description:
      - The GPU nodes are those whose labels match any of these label maps.
    type: list
    elements: dict
    default: []
  nodes:
    description: Probe these nodes instead of O(node_selectors).
    type: list
    elements: str
    default: []
  exclude_nodes:
    description: Nodes not to probe (those already read over SSH, by their node names).
    type: list
    elements: str
    default: []
  namespace:
    description: The probe's own namespace. It must not be one anything else uses; it is deleted afterwards.
    type: str
    default: gpu-platform-host-probe
  timeout:
    description: Seconds the probe pods may take, from the Jobs' creation to the last pod's end.
    type: int
    default: 300
requirements:
  - kubernetes (Python library, on the host the task runs on; the controller with a local connection)
notes:
  - The task reports no change, because the probe leaves nothing behind.
seealso:
  - name: Host preflight
    description: Every check, what it reads, and the probe Job.
    link: https://github.com/gpu-platform/cluster/blob/main/docs/preflight.md
"""

EXAMPLES = r"""
- name: Read the GPU nodes through probe Jobs
  gpu_platform.cluster.host_probe:
    image: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
    node_selectors:
      - {nvidia.com/gpu.present: "true"}
      - {node-role.kubernetes.io/gpu: ""}
  register: probed

- name: Judge them as the hosts read over SSH
  ansible.builtin.debug:
    msg: "{{ probed.gpu_host_checks | gpu_platform.cluster.host_checks({'driver_mode': 'auto'}, []) }}"
"""

RETURN = r"""
gpu_host_checks:
  description: One node's C(gpu_host_checks) fact per node probed, as gpu_host_facts returns it for a host.
  returned: always
  type: list
  elements: dict
nodes:
  description: The nodes probed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
removed:
  description: Whether the probe's namespace was deleted (and is gone).
  returned: always
  type: bool
skipped_reason:
  description: Why no node was probed (none matched, or check mode).
  returned: when nothing was probed
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils import args as shared
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import host_probe

ARGUMENT_SPEC = shared.combine(
    shared.KUBE_AUTH,
    image={"type": "str", "required": True},
    node_selectors={"type": "list", "elements": "dict", "default": []},
    nodes={"type": "list", "elements": "str", "default": []},
    exclude_nodes={"type": "list", "elements": "str", "default": []},
    namespace={"type": "str", "default": "gpu-platform-host-probe"},
    timeout={"type": "int", "default": 300},
)


def request(params):
    """The checks of the options that need no cluster: call() runs them first, and the preflight
    (plugins/action/preflight.py, playbooks/checks.yml) runs them too."""
    return host_probe.request(params)


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return host_probe.run(params, lambda: KubeClient(**shared.kube_auth_params(params)), check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
