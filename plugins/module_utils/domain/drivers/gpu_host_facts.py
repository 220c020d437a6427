# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What a GPU host has: NVIDIA PCI devices, loaded modules, driver and toolkit packages.

Private to the collection: not a public API. Pure: parses the text of /proc and /sys files and of
package queries; the gpu_host_facts module does the reading.
"""

from __future__ import annotations

import re

NVIDIA_VENDOR = "0x10de"
# PCI classes of NVIDIA compute devices: VGA controller (0x0300xx) and 3D controller (0x0302xx).
GPU_CLASSES = ("0x0300", "0x0302")
DRIVER_VERSION = re.compile(r"Kernel Module(?: for [\w-]+)?\s+(\d+\.\d+(?:\.\d+)?)")
MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_peermem", "nvidia_current_peermem", "nouveau",
           "ib_core")
# Package names that mean "a host-installed NVIDIA kernel driver", per distribution family:
# Debian (nvidia-driver, nvidia-kernel-dkms, nvidia-open-kernel-dkms, nvidia-tesla-*), Ubuntu
# (nvidia-driver-NNN[-server|-open], nvidia-headless-NNN*, nvidia-dkms-NNN*, linux-modules-nvidia-NNN*)
# and NVIDIA's CUDA repositories on RHEL (nvidia-driver, kmod-nvidia*, cuda-drivers*, nvidia-kmod-*).
DRIVER_PACKAGE = re.compile(
    r"^(nvidia-driver(-\d+.*|-cuda|-libs)?|nvidia-(open-)?kernel-(dkms|source|open-dkms)|nvidia-tesla-\d+-(driver|"
    r"kernel-dkms)|nvidia-headless-\d+.*|nvidia-dkms-\d+.*|linux-modules-nvidia-\d+.*|kmod-nvidia.*|cuda-drivers.*|"
    r"nvidia-kmod-.*|nvidia-open(-\d+)?)$")
TOOLKIT_PACKAGE = re.compile(r"^nvidia-container-toolkit(-base)?$")
# Installed packages reported by name and version: everything a driver install may bring.
RELEVANT_PACKAGE = re.compile(r"^(nvidia-.*|libnvidia-.*|libcuda.*|cuda-.*|firmware-nvidia-.*|linux-headers-.*|"
                              r"kernel-devel.*|kmod-nvidia.*|dkms)$")
# /etc/os-release ID -> the distribution name Ansible's facts use, and the family.
DISTRIBUTIONS = {
    "debian": ("Debian", "Debian"), "ubuntu": ("Ubuntu", "Debian"), "rhel": ("RedHat", "RedHat"),
    "rocky": ("Rocky", "RedHat"), "almalinux": ("AlmaLinux", "RedHat"), "ol": ("OracleLinux", "RedHat"),
    "centos": ("CentOS", "RedHat"), "sles": ("SLES", "Suse"), "opensuse-leap": ("openSUSE Leap", "Suse"),
}


def parse_os_release(text):
    """/etc/os-release -> {key: value} (quotes removed)."""
    out = {}
    for line in (text or "").splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out


def os_info(os_release_text, machine, kernel, debian_version_text=""):
    """The OS as the host_driver plan reads it: {family, distribution, major, version, architecture, kernel}.

    Debian's /etc/os-release has only the major release; /etc/debian_version gives the point release."""
    release = parse_os_release(os_release_text)
    os_id = release.get("ID", "").lower()
    distribution, family = DISTRIBUTIONS.get(os_id, (release.get("NAME") or os_id or "unknown", "unknown"))
    if family == "unknown":
        like = release.get("ID_LIKE", "").lower().split()
        family = "Debian" if "debian" in like else "RedHat" if ("rhel" in like or "fedora" in like) else family
    version = release.get("VERSION_ID", "")
    point = (debian_version_text or "").strip()
    if os_id == "debian" and re.match(r"^\d+(\.\d+)*$", point):
        version = point
    return {"family": family, "distribution": distribution, "major": version.split(".")[0] if version else "",
            "version": version, "architecture": machine, "kernel": kernel}


def gpu_devices(pci):
    """``pci``: {address: {vendor, class, device}} from /sys/bus/pci/devices -> sorted NVIDIA GPU addresses."""
    out = []
    for address, attrs in sorted((pci or {}).items()):
        vendor = (attrs.get("vendor") or "").strip().lower()
        klass = (attrs.get("class") or "").strip().lower()
        if vendor == NVIDIA_VENDOR and klass[:6] in GPU_CLASSES:
            out.append({"address": address, "device": (attrs.get("device") or "").strip().lower()})
    return out


def driver_version(proc_version_text):
    """The kernel module version from /proc/driver/nvidia/version, or ''."""
    match = DRIVER_VERSION.search(proc_version_text or "")
    return match.group(1) if match else ""


def kernel_module_type(proc_version_text):
    """The loaded NVIDIA kernel module's type from /proc/driver/nvidia/version: open (its first line says "Open Kernel
    Module"), proprietary, or '' (no driver loaded)."""
    text = proc_version_text or ""
    if not driver_version(text):
        return ""
    return "open" if "Open Kernel Module" in text else "proprietary"


def loaded_modules(proc_modules_text):
    """The modules of interest that /proc/modules lists."""
    names = {line.split(" ", 1)[0] for line in (proc_modules_text or "").splitlines() if line.strip()}
    return sorted(m for m in MODULES if m in names)


def parse_dpkg(text):
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` -> {name: version} installed.

    The second letter of the status is the package's state: ``i`` is installed, whatever is wanted
    of it (``ii`` install, ``hi`` held)."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2][1:2] == "i":
            out[parts[0].split(":", 1)[0]] = parts[1]
    return out


def parse_rpm(text):
    """``rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\n'`` -> {name: version}."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0]:
            out[parts[0]] = parts[1]
    return out


def select_packages(packages, pattern):
    return {name: version for name, version in sorted(packages.items()) if pattern.match(name)}


def summarize(node_name, pci, proc_version_text, proc_modules_text, packages, nvidia_smi, extra_names=()):
    """The facts gpu_driver_mode and the host roles read for one host."""
    modules = loaded_modules(proc_modules_text)
    version = driver_version(proc_version_text)
    devices = gpu_devices(pci)
    return {
        "node_name": node_name,
        "gpu_present": bool(devices),
        "gpus": devices,
        "driver_loaded": bool(version) or "nvidia" in modules,
        "driver_version": version,
        # open, proprietary or '': whether GPUDirect RDMA can use DMA-BUF (domain/drivers/gpudirect.py).
        "kernel_module_type": kernel_module_type(proc_version_text),
        "modules": modules,
        "peermem_loaded": "nvidia_peermem" in modules or "nvidia_current_peermem" in modules,
        "nouveau_loaded": "nouveau" in modules,
        "driver_packages": select_packages(packages, DRIVER_PACKAGE),
        "toolkit_packages": select_packages(packages, TOOLKIT_PACKAGE),
        "nvidia_smi": nvidia_smi or "",
        # What a driver install may bring (and the names asked for): host_driver installs only what is missing.
        "packages": {name: version for name, version in sorted(packages.items())
                     if RELEVANT_PACKAGE.match(name) or name in extra_names},
    }
