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
  - With O(checks), also what the host preflight judges (C(docs/preflight.md)), under C(gpu_host_checks) - the
    container runtime's configuration (containerd's root config version and its drop-ins, CRI-O's files), the modules
    that hold the GPU (C(nvidia_drm), C(nvidia_modeset) and its users, C(nouveau)), Secure Boot and whether the loaded
    C(nvidia) module is signed, the kernel release and its headers, the interface of the default route and its
    driver, the IOMMU mode, ACS on the PCIe ports between each GPU and each ConnectX NIC, the kernel module type
    (open or proprietary) and the OS. The filter C(gpu_platform.cluster.host_checks) turns them into findings.
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
    description:
      - The file system root to read from (for chroots and tests). C(playbooks/driver_mode.yml) passes the host
        variable C(gpu_platform_host_root).
      - A root that is not a folder fails, naming it.
    type: path
    default: /
  packages:
    description: More package names to report in C(packages) when installed (besides the NVIDIA, CUDA, kernel header
      and DKMS packages that are always reported).
    type: list
    elements: str
    default: []
  checks:
    description:
      - Also read what the host preflight checks, into C(gpu_host_checks). Read only, like the rest.
      - C(apt-cache policy linux-headers-<release>) (where the headers are not on disk), C(modinfo -F signer nvidia)
        and C(containerd --version) run only when O(root) is C(/) (they read the running system); where they are
        missing, fail or do not run, their answers are unknown (C(null)).
      - ACS is read from each PCIe port's config space (C(/sys/bus/pci/devices/<port>/config)), whose extended part
        only root reads; without it the ACS state is unknown.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Gather the driver evidence of a GPU host
  gpu_platform.cluster.gpu_host_facts:
    node_name: "{{ gpu_platform_node_name | default(omit) }}"

- name: Gather the driver evidence and what the host preflight checks
  gpu_platform.cluster.gpu_host_facts:
    checks: true

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
        C(driver_version), C(kernel_module_type) (V(open) where C(/proc/driver/nvidia/version) says "Open Kernel
        Module", V(proprietary), or empty without a loaded driver), C(modules) (of interest, loaded), C(peermem_loaded), C(nouveau_loaded), C(driver_packages)
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
        kernel_module_type: proprietary
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
    gpu_host_checks:
      description:
        - With O(checks) only. C(node_name), C(os) (C(ID), C(VERSION_ID) and C(PRETTY_NAME) of C(/etc/os-release), and C(virtual)), C(gpus), C(driver)
          (C(loaded), C(version), C(module_type) open, proprietary or empty, C(packages), C(toolkit_packages),
          C(nvidia_smi), C(operator_root) whether the GPU Operator's driver root is mounted, C(unsigned)), C(modules)
          (C(nvidia_drm), C(nvidia_modeset), C(nvidia_modeset_users), C(nvidia_modeset_refcount), C(nouveau)),
          C(secure_boot), C(kernel) (C(release), C(modules_dir), C(headers), C(headers_candidate)), C(containerd)
          (C(config), C(version), C(imports), C(dropins), C(binary_major)), C(crio) (C(config), C(files),
          C(runtimes)), C(default_routes) (C(interface), C(drivers), C(mlx5)), C(iommu) (C(groups), C(cmdline),
          C(passthrough), C(gpu_domains)), C(nics) (ConnectX PCI addresses) and C(acs) (C(bridges), C(readable),
          C(redirecting)). C(null) is unknown.
      type: dict
      returned: when O(checks)
      sample:
        node_name: gpu-node-01
        secure_boot: false
        driver: {loaded: true, version: 580.159.04, module_type: open, packages: {}, unsigned: false}
        modules: {nvidia_drm: false, nvidia_modeset: false, nvidia_modeset_users: [], nouveau: false}
        kernel: {release: 6.8.0-90-generic, modules_dir: true, headers: true, headers_candidate: null}
        containerd: {config: true, version: 2, imports: [], dropins: [], binary_major: 1}
        default_routes: [{interface: eno1, drivers: {eno1: ixgbe}, mlx5: false}]
"""

import json
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import host_reader
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_host_facts
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import readings

FACTS_FILE = "etc/ansible/facts.d/gpu_platform_driver.fact"
ARGUMENT_SPEC = {"node_name": {"type": "str"}, "root": {"type": "path", "default": "/"},
                 "packages": {"type": "list", "elements": "str", "default": []},
                 "checks": {"type": "bool", "default": False}}
INITRAMFS_TOOLS = ("update-initramfs", "dracut")


def _pci(files):
    """Each PCI device under the root: its vendor, class and device ids (empty where unreadable)."""
    return {os.path.basename(device): {attr: files.text("%s/%s" % (device, attr)) or ""
                                       for attr in ("vendor", "class", "device")}
            for device in files.glob("/sys/bus/pci/devices/*")}


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
    if not os.path.isdir(root):
        module.fail_json(msg="root: %r is not a folder on %s. Fix: set root (gpu_platform_host_root, a host variable, in "
                             "playbooks/driver_mode.yml) to the folder where this host's / is mounted, or leave it at /"
                         % (root, platform.node()))
    files = host_reader.LocalFiles(root)
    manager, packages = _packages(module)
    record = files.text(FACTS_FILE) or ""
    try:
        record = json.loads(record) if record.strip() else {}
    except ValueError:
        module.warn("%s is not JSON; ignoring it" % os.path.join(root, FACTS_FILE))
        record = {}
    smi = module.get_bin_path("nvidia-smi") or ""
    node_name = module.params["node_name"] or platform.node().split(".")[0].lower()
    pci = _pci(files)
    proc_version = files.text("proc/driver/nvidia/version") or ""
    proc_modules = files.text("proc/modules") or ""
    facts = gpu_host_facts.summarize(node_name, pci, proc_version, proc_modules, packages, smi, module.params["packages"])
    facts["package_manager"] = manager
    facts["host_driver"] = record
    facts["os"] = gpu_host_facts.os_info(files.text("etc/os-release") or "", platform.machine(),
                                         platform.release(), files.text("etc/debian_version") or "")
    facts["initramfs_tool"] = next((path for path in (module.get_bin_path(tool, opt_dirs=["/usr/sbin", "/sbin"])
                                                      for tool in INITRAMFS_TOOLS) if path), "")
    found = {"gpu_host": facts}
    if module.params["checks"]:
        found["gpu_host_checks"] = readings.summarize(host_reader.read(
            module, root, node_name, pci, proc_modules, proc_version, packages, smi))
    module.exit_json(changed=False, ansible_facts=found)


if __name__ == "__main__":
    main()
