#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bundle_files
short_description: Write plain files into a folder of the GitOps bundle, only those whose text changes
version_added: 0.2.0
description:
  - Writes each entry of O(files) (a file name and its text) into O(dest), creating the folder if needed. A file
    whose text is already the same is not written, so a second run changes nothing.
  - For the files a bundle carries beside its manifests, which no reconciler applies, such as the Grafana dashboards
    as plain JSON (C(dashboards/)) for importing by hand. Kubernetes objects go through
    M(gpu_platform.cluster.manifests) and node labels through M(gpu_platform.cluster.node_labels) with their
    C(render_to).
  - With a local connection (the bundle is the controller's) it runs in the controller process, with no module
    upload; delegated to a host reached otherwise, it writes there. It never contacts a cluster.
  - Every name is checked before the first write. A name that is not one plain file name (a C(/), C(..)) or a symbolic
    link that points outside O(dest) is refused, naming it.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.controller
  - gpu_platform.cluster.attributes.files
options:
  dest:
    description: The folder the files go into.
    type: path
    required: true
  files:
    description: The files, by name (a plain file name, no folder), with their text. Files of O(dest) not named here
      are left alone.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The Grafana dashboard as plain JSON beside the bundle's units, for importing by hand
  gpu_platform.cluster.bundle_files:
    dest: "{{ playbook_dir }}/build/platform/dashboards"
    files:
      gpu-platform.json: "{{ {'title': 'GPU platform', 'panels': []} | to_json }}"
  register: dashboards

- name: What was written
  ansible.builtin.debug:
    msg: "{{ dashboards.changed_files }}"
"""

RETURN = r"""
files:
  description: The names of O(files), sorted.
  returned: always
  type: list
  elements: str
  sample: [gpu-platform.json]
changed_files:
  description: The files written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils.ansible_run import execute
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import bundle_files

ARGUMENT_SPEC = {
    "dest": {"type": "path", "required": True},
    "files": {"type": "dict", "required": True},
}


def call(params, check_mode, runtime):  # pylint: disable=unused-argument  # the same signature for every module
    """The work, in the module process or the controller's (the action plugin of the same name)."""
    return bundle_files.run(params, check_mode)


def main():
    execute(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True), call)


if __name__ == "__main__":
    main()
