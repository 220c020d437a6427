# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What a GPU host's preflight reads, parsed: the text of /proc, /sys and /etc files and of optional commands.

Private to the collection: not a public API. Pure: standard library only, no I/O. The gpu_host_facts module (option
``checks``) reads the files through adapters/host_reader.py and hands their contents here; ``summarize`` builds the
``gpu_host_checks`` fact that ``host_checks.findings.evaluate`` judges. A value that could not be read is ``None``
(unknown), never a guess: the evaluation does not turn an unknown into a finding that blocks.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_host_facts

MELLANOX_VENDOR = "0x15b3"
MLX5 = "mlx5_core"
# PCI class of network (0x0200 Ethernet) and InfiniBand (0x0207) controllers.
NIC_CLASSES = ("0x0200", "0x0207")
# The extended capability id of PCIe Access Control Services, and its control register's redirect bits:
# P2P Request Redirect (bit 2) and P2P Completion Redirect (bit 3) send peer-to-peer traffic up to the root complex.
ACS_CAP_ID = 0x000D
ACS_REDIRECT = 0x0004 | 0x0008
# IOMMU domain types (/sys/kernel/iommu_groups/N/type): identity is passthrough, DMA and DMA-FQ translate.
IOMMU_TRANSLATED = ("DMA", "DMA-FQ")
_VERSION = re.compile(r"^\s*version\s*=\s*(\d+)\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")
_IMPORTS = re.compile(r"^\s*imports\s*=\s*\[(.*?)\]", re.S | re.M)
_STRING = re.compile(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'")
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_CRIO_RUNTIME = re.compile(r"^\s*\[\s*crio\.runtime\.runtimes\.\"?([\w.-]+?)\"?\s*\]", re.M)


def _top_level(text):
    """The lines of a TOML text before its first table header (where ``version`` and ``imports`` live)."""
    out = []
    for line in (text or "").splitlines():
        if _TABLE.match(line):
            break
        out.append(line)
    return "\n".join(out)


def toml_version(text):
    """A containerd config's top-level ``version = N`` (an int), or None when it has none."""
    for line in _top_level(text).splitlines():
        match = _VERSION.match(line)
        if match:
            return int(match.group(1))
    return None


def toml_imports(text):
    """A containerd config's top-level ``imports = [...]`` (the paths or globs, as written)."""
    match = _IMPORTS.search(_top_level(text))
    if not match:
        return []
    body = "\n".join(line.split("#", 1)[0] for line in match.group(1).splitlines())
    return [a if a else b for a, b in _STRING.findall(body)]


def containerd_major(version_text):
    """``containerd --version`` -> its major version (an int), or None."""
    match = re.search(r"\sv?(\d+)\.\d+\.\d+", version_text or "")
    return int(match.group(1)) if match else None


def crio_runtimes(text):
    """The runtime handlers a CRI-O config file defines ([crio.runtime.runtimes.<name>])."""
    return _CRIO_RUNTIME.findall(text or "")


def proc_modules(text):
    """/proc/modules -> {name: {refcount (int or None), users: [module names]}}."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        refcount = int(parts[2]) if parts[2].isdigit() else None
        users = [u for u in parts[3].split(",") if u and u != "-"]
        out[parts[0]] = {"refcount": refcount, "users": users}
    return out


# The loaded NVIDIA kernel module's type from /proc/driver/nvidia/version: open, proprietary, or '' (none).
module_type = gpu_host_facts.kernel_module_type


def secure_boot(efivar):
    """The SecureBoot EFI variable's content (bytes: 4 bytes of attributes, then the value) -> True (on), False (off),
    or None when there is no such variable (legacy BIOS boot or not readable: the caller tells them apart)."""
    if not efivar:
        return None
    return efivar[-1:] == b"\x01"


def module_unsigned(taint_text, signer=None):
    """Whether a loaded module is unsigned: its /sys/module/<name>/taint has E (unsigned module loaded), or modinfo
    found no signer. None when neither was readable."""
    if signer is not None:
        return not signer.strip()
    if taint_text is None:
        return None
    return "E" in taint_text


def default_routes(route_text, ipv6_route_text=""):
    """The interfaces that carry a default route: /proc/net/route (destination and mask 00000000) and
    /proc/net/ipv6_route (destination ::/0)."""
    out = []
    for line in (route_text or "").splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 8 and parts[1] == "00000000" and parts[7] == "00000000" and parts[0] not in out:
            out.append(parts[0])
    for line in (ipv6_route_text or "").splitlines():
        parts = line.split()
        if len(parts) >= 10 and parts[0] == "0" * 32 and parts[1] == "00" and parts[9] != "lo" and parts[9] not in out:
            out.append(parts[9])
    return out


def cmdline_iommu(text):
    """The IOMMU settings of the kernel command line: {iommu, intel_iommu, amd_iommu, iommu.passthrough} as given
    (absent keys left out)."""
    out = {}
    for word in (text or "").split("--", 1)[0].split():
        key, dummy, value = word.partition("=")
        if key in ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough"):
            out[key] = value
    return out


def iommu_passthrough(cmdline):
    """Whether the command line puts the IOMMU in passthrough or off (None: it says nothing)."""
    if cmdline.get("iommu") in ("pt", "off") or cmdline.get("iommu.passthrough") in ("1", "y", "on"):
        return True
    if "off" in cmdline.get("intel_iommu", "").split(",") or cmdline.get("amd_iommu") == "off":
        return True
    if cmdline.get("iommu") in ("nopt", "force") or cmdline.get("iommu.passthrough") in ("0", "n", "off"):
        return False
    return None


def apt_candidate(text):
    """``apt-cache policy <package>`` -> the candidate version, 'none' (no repository has it), or None (unknown)."""
    if text is None:
        return None
    if not text.strip():
        return "none"  # apt-cache prints nothing for a package no repository knows
    match = re.search(r"^\s*Candidate:\s*(\S+)", text, re.M)
    if not match:
        return None
    return "none" if match.group(1) == "(none)" else match.group(1)


def acs_control(config):
    """A PCI device's config space (bytes, as /sys/bus/pci/devices/<address>/config gives it) -> its ACS control
    register (int), 0 when it has no ACS capability, or None when the extended config space (from offset 0x100,
    readable by root only) is not there."""
    if not config or len(config) < 0x104:
        return None
    offset, seen = 0x100, set()
    while offset and offset not in seen and offset + 8 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return 0
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return 0


def pci_chain(device_path):
    """The PCI addresses on a device's path from its root port down to itself, from the real path of
    /sys/bus/pci/devices/<address> (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/...)."""
    return [part for part in (device_path or "").split("/") if _PCI_ADDRESS.match(part)]


def between(chain_a, chain_b):
    """The bridges peer-to-peer traffic between two devices crosses: below their lowest common upstream port, on
    either side (the ports whose ACS redirects it), and that port itself. [] when they share no port below the root
    complex (the traffic crosses the CPU's root complex, where ACS on the ports does not decide it)."""
    common = 0
    while common < min(len(chain_a), len(chain_b)) - 1 and chain_a[common] == chain_b[common]:
        common += 1
    if common == 0:
        return []
    return [chain_a[common - 1]] + chain_a[common:-1] + chain_b[common:-1]


def virtual(cpuinfo_text):
    """Whether the host is a virtual machine (the CPU flags say hypervisor)."""
    for line in (cpuinfo_text or "").splitlines():
        if line.startswith("flags"):
            return "hypervisor" in line.split(":", 1)[-1].split()
    return False


def summarize(raw):
    """The ``gpu_host_checks`` fact from what adapters/host_reader.py read (``raw``: see ``host_reader.read``)."""
    modules = proc_modules(raw.get("proc_modules"))
    modeset = modules.get("nvidia_modeset") or {}
    proc_version = raw.get("proc_driver_version") or ""
    version = gpu_host_facts.driver_version(proc_version)
    packages = raw.get("packages") or {}
    gpus = gpu_host_facts.gpu_devices(raw.get("pci") or {})
    root_text = raw.get("containerd_config")
    root_version = toml_version(root_text) if root_text is not None else None
    dropins = [{"path": path, "version": toml_version(text), "imported": imported}
               for path, (text, imported) in sorted((raw.get("containerd_dropins") or {}).items())]
    crio_files = raw.get("crio_files") or {}
    release = raw.get("kernel_release") or ""
    cmdline = cmdline_iommu(raw.get("cmdline"))
    routes = []
    for interface in default_routes(raw.get("route"), raw.get("ipv6_route")):
        drivers = (raw.get("net_drivers") or {}).get(interface) or {}
        routes.append({"interface": interface, "drivers": drivers,
                       "mlx5": any(driver == MLX5 for driver in drivers.values())})
    pci = raw.get("pci") or {}
    nics = [address for address, attrs in sorted(pci.items())
            if (attrs.get("vendor") or "").strip().lower() == MELLANOX_VENDOR
            and (attrs.get("class") or "").strip().lower()[:6] in NIC_CLASSES]
    chains = raw.get("pci_chains") or {}
    acs = raw.get("acs") or {}
    bridges = sorted({bridge for gpu in gpus for nic in nics
                      for bridge in between(chains.get(gpu["address"]) or [], chains.get(nic) or [])})
    controls = {bridge: acs.get(bridge) for bridge in bridges}
    return {
        "node_name": raw.get("node_name") or "",
        "os": dict({key: value for key, value in gpu_host_facts.parse_os_release(raw.get("os_release")).items()
                    if key in ("ID", "VERSION_ID", "PRETTY_NAME")}, virtual=virtual(raw.get("cpuinfo"))),
        "gpus": gpus,
        "driver": {
            "loaded": bool(version) or "nvidia" in modules,
            "version": version,
            "module_type": module_type(proc_version),
            "packages": gpu_host_facts.select_packages(packages, gpu_host_facts.DRIVER_PACKAGE),
            "toolkit_packages": gpu_host_facts.select_packages(packages, gpu_host_facts.TOOLKIT_PACKAGE),
            "nvidia_smi": raw.get("nvidia_smi") or "",
            # The GPU Operator's driver container mounts its root here: a driver it loaded is its own.
            "operator_root": bool(raw.get("operator_driver_root")),
            "unsigned": module_unsigned(raw.get("nvidia_taint"), raw.get("nvidia_signer")) if "nvidia" in modules
            else None,
        },
        "modules": {
            "nvidia_drm": "nvidia_drm" in modules,
            "nvidia_modeset": bool(modeset),
            "nvidia_modeset_users": modeset.get("users") or [],
            "nvidia_modeset_refcount": modeset.get("refcount"),
            "nouveau": "nouveau" in modules,
        },
        "secure_boot": raw.get("secure_boot"),
        "kernel": {
            "release": release,
            "modules_dir": bool(raw.get("kernel_modules_dir")),
            "headers": bool(raw.get("kernel_headers")),
            "headers_candidate": apt_candidate(raw.get("apt_headers_policy")),
        },
        "containerd": {
            "config": root_text is not None,
            "version": root_version,
            "imports": toml_imports(root_text),
            "dropins": dropins,
            "binary_major": containerd_major(raw.get("containerd_version")),
        },
        "crio": {
            "config": bool(crio_files),
            "files": sorted(crio_files),
            "runtimes": sorted({name for text in crio_files.values() for name in crio_runtimes(text)}),
        },
        "default_routes": routes,
        "iommu": {
            "groups": raw.get("iommu_groups") or 0,
            "cmdline": cmdline,
            "passthrough": iommu_passthrough(cmdline),
            "gpu_domains": {gpu["address"]: (raw.get("iommu_types") or {}).get(gpu["address"]) for gpu in gpus},
        },
        "nics": nics,
        "acs": {
            "bridges": bridges,
            "readable": all(value is not None for value in controls.values()) if controls else None,
            "redirecting": sorted(b for b, value in controls.items() if value is not None and value & ACS_REDIRECT),
        },
    }
