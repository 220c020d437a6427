#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
short_description: Every enabled layer's inputs checked in one pass, one line per mistake, before anything is written
version_added: 0.1.0
description:
  - >-
    What C(playbooks/checks.yml) runs before site.yml's first write. It checks, in one pass, and reports every mistake
    it finds, each on a line of its own (C(<variable>: <what is wrong>. Fix: <how>)), without the words Ansible puts
    around a failed task argument or filter.
  - O(roles) - each role's C(meta/argument_specs.yml) (entry point C(main)) against the variables the play defines,
    as Ansible checks them when the role starts.
  - O(requests) - the options a role's task gives one of this collection's modules, through the module's own argument
    spec and its own checks (the function the module runs first), so an option a module refuses is refused here,
    under the inventory variable its value came from.
  - O(values) - variables whose evaluation runs a layer's own checks (its plan, its chart values).
  - Each variable is evaluated on its own, so one mistake does not hide another. It reads the play's variables by
    name, so it runs on the controller only (its action plugin); it reads nothing from a cluster and writes nothing.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
attributes:
  check_mode:
    support: full
    description: It only reads variables; check mode gives the same verdict.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
  action:
    support: full
    description: Runs in the controller process through the action plugin of the same name.
  platform:
    support: full
    platforms: posix
    description: The Ansible controller.
options:
  roles:
    description: Names of this collection's roles whose argument spec (entry point C(main)) is checked.
    type: list
    elements: str
    default: []
  requests:
    description: The module options to check, one entry per module call.
    type: list
    elements: dict
    default: []
    suboptions:
      module:
        description: The module, by its short name (C(nic_cluster_policy), C(helm_pinned_release), C(node_labels)).
        type: str
        required: true
      options:
        description:
          - The name of the variable that holds the module's options, as the role's task gives them. The inventory
            variable each option comes from is read from its template, and names the mistake.
        type: str
        required: true
      loop:
        description: The name of a variable holding a list of options; each item is merged over O(requests[].options) and checked as one call.
        type: str
  values:
    description: Names of variables to evaluate; a mistake their filters find is reported with the others.
    type: list
    elements: str
    default: []
notes:
  - The roles' and modules' checks are theirs, not copies; this only runs them early and collects what they find.
seealso:
  - module: gpu_platform.cluster.nic_cluster_policy
  - module: gpu_platform.cluster.helm_pinned_release
  - module: gpu_platform.cluster.node_labels
"""

EXAMPLES = r"""
- name: Every enabled layer's inputs, before anything is written
  gpu_platform.cluster.preflight:
    roles: [network_operator, gpu_operator]
    requests:
      - module: nic_cluster_policy
        options: _network_operator_policy_options
      - module: helm_pinned_release
        options: _gpu_operator_release_options
    values: [_gpu_operator_values]
"""

RETURN = r"""
msg:
  description:
    - "When a check fails, one line per mistake (C(<variable>: <what is wrong>. Fix: <how>)), and the task fails."
  returned: always
  type: str
  sample: "network_operator_ip_range: '192.168.100.0/33' is not a CIDR subnet. Fix: give a CIDR such as 192.168.100.0/24"
"""

from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC = {
    "roles": {"type": "list", "elements": "str", "default": []},
    "requests": {"type": "list", "elements": "dict", "default": [], "options": {
        "module": {"type": "str", "required": True},
        "options": {"type": "str", "required": True},
        "loop": {"type": "str"},
    }},
    "values": {"type": "list", "elements": "str", "default": []},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="gpu_platform.cluster.preflight reads the play's variables, so it runs on the controller "
                         "(its action plugin); it cannot run as a module on a host")


if __name__ == "__main__":
    main()
