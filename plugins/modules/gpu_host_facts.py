#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_host_facts
short_description: Gather a GPU host's NVIDIA driver evidence (PCI devices, loaded modules, driver packages)
version_added: 0.1.0
description:
  - Reads, and never changes, what M(gpu_platform.cluster.gpu_driver_mode) needs from a GPU host. That is the NVIDIA
    PCI devices (vendor C(0x10de), VGA or 3D controller class) under C(/sys/bus/pci/devices), the loaded driver
    version from C(/proc/driver/nvidia/version), the modules C(nvidia), C(nvidia_peermem) and C(nouveau) in
    C(/proc/modules), the installed NVIDIA driver and container toolkit packages (dpkg or rpm), and where C(nvidia-smi)
    is.
  - Also returns the record that the C(host_driver) role leaves in C(/etc/ansible/facts.d/gpu_platform_driver.fact),
    the OS from C(/etc/os-release) (so the host roles need no fact gathering), and the initramfs tool.
  - One module call instead of a handful of probe tasks, so that fact gathering stays cheap on large inventories.
author:
  - gpu_platform maintainers (@gpu-platform)
extends_documentation_fragment:
  - gpu_platform.cluster.attributes
  - gpu_platform.cluster.attributes.host
attributes:
  check_mode:
    support: full
    description: The module only reads.
  diff_mode:
    support: none
    description: Nothing is changed.
  facts:
    support: full
    description: Returns the facts under C(gpu_host).
options:
  node_name:
    description: The Kubernetes node name of this host. Defaults to the host name, lower-cased.
    type: str
  root:
    description: The file system root to read from (for chroots and tests).
    type: path
    default: /
  packages:
    description: More package names to report in C(packages) when installed (besides the NVIDIA, CUDA, kernel header
      and DKMS packages that are always reported).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Gather the driver evidence of a GPU host
  gpu_platform.cluster.gpu_host_facts:
    node_name: "{{ gpu_platform_node_name | default(omit) }}"

- name: Say what was found
  ansible.builtin.debug:
    msg: >-
      {{ gpu_host.node_name }}: {{ gpu_host.gpus | length }} GPU(s), driver {{ gpu_host.driver_version or 'not loaded' }},
      packages {{ gpu_host.driver_packages }}
"""

RETURN = r"""
ansible_facts:
  description: The facts, under C(gpu_host).
  returned: always
  type: dict
  contains:
    gpu_host:
      description: C(node_name), C(gpu_present), C(gpus) (PCI address and device id), C(driver_loaded),
        C(driver_version), C(modules) (of interest, loaded), C(peermem_loaded), C(nouveau_loaded), C(driver_packages)
        and C(toolkit_packages) (name to version), C(packages) (installed NVIDIA, CUDA, kernel header and DKMS packages
        and the O(packages) asked for), C(nvidia_smi) (path or empty), C(package_manager), C(host_driver) (the
        host_driver role's record, or empty), C(os) (C(family), C(distribution), C(major), C(version),
        C(architecture), C(kernel) from C(/etc/os-release)) and C(initramfs_tool) (path or empty).
      type: dict
      returned: always
      sample:
        node_name: gpu-node-01
        gpu_present: true
        gpus: [{address: "0000:17:00.0", device: "0x2330"}]
        driver_loaded: true
        driver_version: 535.247.01
        modules: [nvidia, nvidia_peermem]
        peermem_loaded: true
        nouveau_loaded: false
        driver_packages: {nvidia-kernel-dkms: 535.247.01-1~deb12u1}
        toolkit_packages: {}
        nvidia_smi: /usr/bin/nvidia-smi
        package_manager: dpkg
        host_driver: {branch: "535", source: distribution}
        packages: {nvidia-kernel-dkms: 535.247.01-1~deb12u1, nvidia-smi: 535.247.01-1~deb12u1}
        os: {family: Debian, distribution: Debian, major: "12", version: "12.11", architecture: x86_64,
             kernel: 6.1.0-28-amd64}
        initramfs_tool: /usr/sbin/update-initramfs
"""

import glob
import json
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_host_facts

FACTS_FILE = "etc/ansible/facts.d/gpu_platform_driver.fact"
ARGUMENT_SPEC = {"node_name": {"type": "str"}, "root": {"type": "path", "default": "/"},
                 "packages": {"type": "list", "elements": "str", "default": []}}
INITRAMFS_TOOLS = ("update-initramfs", "dracut")


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _pci(root):
    out = {}
    for device in glob.glob(os.path.join(root, "sys/bus/pci/devices/*")):
        out[os.path.basename(device)] = {attr: _read(os.path.join(device, attr))
                                         for attr in ("vendor", "class", "device")}
    return out


# The package managers' queries, tried in order: (tool, arguments, parser, name in the result).
PACKAGE_QUERIES = (
    ("dpkg-query", ["-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"], gpu_host_facts.parse_dpkg, "dpkg"),
    ("rpm", ["-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"], gpu_host_facts.parse_rpm, "rpm"),
)


def _packages(module):
    for tool, arguments, parse, manager in PACKAGE_QUERIES:
        path = module.get_bin_path(tool)
        if path:
            rc, out, err = module.run_command([path] + arguments)
            if rc != 0:
                module.fail_json(msg="%s %s failed: %s" % (tool, arguments[0], err.strip()))
            return manager, parse(out)
    return "", {}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["root"]
    manager, packages = _packages(module)
    record = _read(os.path.join(root, FACTS_FILE))
    try:
        record = json.loads(record) if record.strip() else {}
    except ValueError:
        module.warn("%s is not JSON; ignoring it" % os.path.join(root, FACTS_FILE))
        record = {}
    smi = module.get_bin_path("nvidia-smi") or ""
    facts = gpu_host_facts.summarize(
        module.params["node_name"] or platform.node().split(".")[0].lower(), _pci(root),
        _read(os.path.join(root, "proc/driver/nvidia/version")), _read(os.path.join(root, "proc/modules")),
        packages, smi, module.params["packages"])
    facts["package_manager"] = manager
    facts["host_driver"] = record
    facts["os"] = gpu_host_facts.os_info(_read(os.path.join(root, "etc/os-release")), platform.machine(),
                                         platform.release(), _read(os.path.join(root, "etc/debian_version")))
    facts["initramfs_tool"] = next((path for path in (module.get_bin_path(tool, opt_dirs=["/usr/sbin", "/sbin"])
                                                      for tool in INITRAMFS_TOOLS) if path), "")
    module.exit_json(changed=False, ansible_facts={"gpu_host": facts})


if __name__ == "__main__":
    main()
