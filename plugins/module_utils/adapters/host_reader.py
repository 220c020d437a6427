# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The host preflight's reads on a GPU host: files under a root, and three optional read-only commands.

Private to the collection: not a public API. An adapter: it reads files and runs commands, and changes nothing. What
it read goes to domain/host_checks/readings.py (``summarize``) as text; a file that is not there is ``None``.

The commands (``apt-cache policy``, ``modinfo -F signer``, ``containerd --version``) describe the running system,
not the tree under another root, so they run only when the root is ``/``; elsewhere (a crafted tree in a test, a
chroot) their answers are unknown.
"""

from __future__ import annotations

import glob
import os

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_host_facts
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import readings

SECURE_BOOT_GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
CONTAINERD_CONFIG = "etc/containerd/config.toml"
CONTAINERD_DROPINS = "etc/containerd/conf.d/*.toml"
CRIO_FILES = ("etc/crio/crio.conf", "etc/crio/crio.conf.d/*")
OPERATOR_DRIVER_ROOT = "run/nvidia/driver"


class LocalFiles:
    """The host's files under ``root`` (``/`` on the host itself; a crafted tree in a test). Paths are the host's
    (``/etc/...``); the probe Job's log answers the same questions (domain/host_checks/probe.py ``LoggedFiles``)."""

    def __init__(self, root):
        self.root = root

    def _under(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def text(self, path):
        try:
            with open(self._under(path), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    def data(self, path, size=4096):
        try:
            with open(self._under(path), "rb") as handle:
                return handle.read(size)
        except OSError:
            return None

    def glob(self, pattern):
        """The host paths that match ``pattern``, sorted."""
        return sorted("/" + os.path.relpath(path, self.root) for path in glob.glob(self._under(pattern)))

    def real(self, path):
        return os.path.realpath(self._under(path))

    def link_name(self, path):
        try:
            return os.path.basename(os.readlink(self._under(path)))
        except OSError:
            return ""

    def isdir(self, path):
        return os.path.isdir(self._under(path))

    def isfile(self, path):
        return os.path.isfile(self._under(path))

    def exists(self, path):
        return os.path.exists(self._under(path))


def _containerd_dropins(files, config_text, imports):
    """{host path: (text, imported)} for the drop-ins the root config imports (globs relative to its folder) and the
    files of conf.d (which the container toolkit writes, adding the import)."""
    out = {}
    config_dir = "/" + os.path.dirname(CONTAINERD_CONFIG)
    for pattern in imports if config_text is not None else []:
        host_pattern = pattern if pattern.startswith("/") else os.path.join(config_dir, pattern)
        for path in files.glob(host_pattern):
            out[path] = (files.text(path) or "", True)
    for path in files.glob("/" + CONTAINERD_DROPINS):
        out.setdefault(path, (files.text(path) or "", False))
    return out


def _net_drivers(files, interface, depth=0):
    """{interface: driver} for a netdev and, when it has no device of its own (a bond, a VLAN, a bridge), the
    interfaces under it (its lower_* links)."""
    base = "/sys/class/net/%s" % interface
    driver = files.link_name(base + "/device/driver")
    if driver or depth > 3:
        return {interface: driver}
    out = {}
    for lower in files.glob(base + "/lower_*"):
        out.update(_net_drivers(files, os.path.basename(lower)[len("lower_"):], depth + 1))
    return out or {interface: ""}


def _command(module, root, tool, arguments):
    """The output of a read-only command, or None (another root, no such tool, or it failed)."""
    if module is None or os.path.realpath(root) != "/":
        return None
    path = module.get_bin_path(tool, opt_dirs=["/usr/sbin", "/sbin"])
    if not path:
        return None
    rc, out, dummy = module.run_command([path] + arguments)
    return out if rc == 0 else None


def read(module, root, node_name, pci, proc_modules, proc_version, packages, nvidia_smi):
    """What ``readings.summarize`` takes: the files under ``root`` and the commands' outputs. ``pci``,
    ``proc_modules``, ``proc_version``, ``packages`` and ``nvidia_smi`` are what gpu_host_facts read already."""
    return collect(LocalFiles(root), lambda tool, arguments: _command(module, root, tool, arguments), node_name, pci,
                   proc_modules, proc_version, packages, nvidia_smi)


def collect(files, command, node_name, pci, proc_modules, proc_version, packages, nvidia_smi, operator_root=None):
    """``read`` on any ``files`` (``LocalFiles``, or the probe Job's log) and ``command(tool, arguments)`` (its output
    or None). ``operator_root``, when given, replaces the look at /run/nvidia/driver."""
    config_text = files.text("/" + CONTAINERD_CONFIG)
    release = (files.text("/proc/sys/kernel/osrelease") or "").strip()
    modules = readings.proc_modules(proc_modules)
    route, ipv6_route = files.text("/proc/net/route"), files.text("/proc/net/ipv6_route")
    efivars = files.glob("/sys/firmware/efi/efivars/SecureBoot-%s" % SECURE_BOOT_GUID)
    secure_boot = readings.secure_boot(files.data(efivars[0])) if efivars else None
    if secure_boot is None and not files.isdir("/sys/firmware/efi"):
        secure_boot = False  # booted by a legacy BIOS: there is no Secure Boot
    devices = "/sys/bus/pci/devices"
    chains, acs, iommu_types = {}, {}, {}
    for address in sorted(pci):
        chains[address] = readings.pci_chain(files.real(os.path.join(devices, address)))
        group_type = files.text(os.path.join(devices, address, "iommu_group", "type"))
        iommu_types[address] = group_type.strip() if group_type else None
    gpus = {gpu["address"] for gpu in gpu_host_facts.gpu_devices(pci)}
    if gpus and any((attrs.get("vendor") or "").strip().lower() == readings.MELLANOX_VENDOR for attrs in pci.values()):
        for chain in chains.values():
            for bridge in chain[:-1]:
                if bridge not in acs:
                    acs[bridge] = readings.acs_control(files.data(os.path.join(devices, bridge, "config")))
    signer = None
    if "nvidia" in modules:
        signer = command("modinfo", ["-F", "signer", "nvidia"])
    headers = any(files.exists(path % release) for path in (
        "/lib/modules/%s/build", "/usr/src/linux-headers-%s", "/usr/src/kernels/%s")) if release else False
    policy = None
    if release and not headers:
        policy = command("apt-cache", ["policy", "linux-headers-%s" % release])
    crio = {}
    for pattern in CRIO_FILES:
        for path in files.glob("/" + pattern):
            if files.isfile(path):
                crio[path] = files.text(path) or ""
    if operator_root is None:
        operator_root = files.isdir("/" + OPERATOR_DRIVER_ROOT)
    return {
        "node_name": node_name, "nvidia_smi": nvidia_smi,
        "pci": pci, "proc_modules": proc_modules, "proc_driver_version": proc_version, "packages": packages,
        "os_release": files.text("/etc/os-release"), "cpuinfo": files.text("/proc/cpuinfo"),
        "operator_driver_root": operator_root,
        "nvidia_taint": files.text("/sys/module/nvidia/taint"), "nvidia_signer": signer,
        "secure_boot": secure_boot,
        "kernel_release": release,
        "kernel_modules_dir": bool(release) and files.isdir("/lib/modules/%s" % release),
        "kernel_headers": headers, "apt_headers_policy": policy,
        "containerd_config": config_text,
        "containerd_dropins": _containerd_dropins(files, config_text, readings.toml_imports(config_text)),
        "containerd_version": command("containerd", ["--version"]),
        "crio_files": crio,
        "route": route, "ipv6_route": ipv6_route,
        "net_drivers": {interface: _net_drivers(files, interface)
                        for interface in readings.default_routes(route, ipv6_route)},
        "cmdline": files.text("/proc/cmdline"),
        "iommu_groups": len(files.glob("/sys/kernel/iommu_groups/*")),
        "iommu_types": iommu_types, "pci_chains": chains, "acs": acs,
    }
