"""GPU host file-system trees for the host preflight's tests: a healthy bare-metal GPU host (``clean_tree``) and each
bad state of issue 34 as a function that changes one (``drop_in_higher``, ``nvidia_drm``, ...).

gpu_host_facts reads a tree under its ``root`` as it reads a host's ``/``. The module tests read trees made here in a
temporary folder; tests/remote/test_host_preflight_podman.py copies them into podman hosts (under
``gpu_platform_host_root``). Links are relative, so a tree reads the same wherever it is copied.
"""
from __future__ import annotations

import os

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import readings

RELEASE = "6.8.0-90-generic"
GPU, NIC, BRIDGE_UP, BRIDGE_GPU, BRIDGE_NIC = "0000:03:00.0", "0000:04:00.0", "0000:01:00.0", "0000:02:08.0", "0000:02:10.0"
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:45:16 UTC 2025\n"
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)\n"
MODULES = "nvidia_uvm 4956160 0 - Live 0x0 (POE)\nnvidia 54308864 2 nvidia_uvm, Live 0x0 (POE)\n"
ROUTE_HEADER = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
SECURE_BOOT = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def symlink(target, link):
    """``link`` pointing at ``target`` relative to its folder, as sysfs's links are."""
    os.symlink(os.path.relpath(target, link.parent), link)


def pci_device(root, chain, vendor, klass, device="0x0000", config=None):
    """A PCI device at the end of ``chain`` (its ports above it), as sysfs has it: the device folder under
    sys/devices and its link in sys/bus/pci/devices."""
    real = root / "sys/devices/pci0000:00" / "/".join(chain)
    for attr, value in (("vendor", vendor), ("class", klass), ("device", device)):
        write(real / attr, value + "\n")
    if config is not None:
        write(real / "config", config)
    link = root / "sys/bus/pci/devices" / chain[-1]
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        symlink(real, link)
    return real


def netdev(root, name, driver=None, lower=()):
    base = root / "sys/class/net" / name
    base.mkdir(parents=True, exist_ok=True)
    if driver:
        target = root / "sys/bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (base / "device").mkdir()
        symlink(target, base / "device" / "driver")
    for other in lower:
        symlink(root / "sys/class/net" / other, base / ("lower_" + other))


def acs(control):
    data = bytearray(0x1000)
    data[0x100:0x104] = (readings.ACS_CAP_ID | (1 << 16)).to_bytes(4, "little")
    data[0x106:0x108] = control.to_bytes(2, "little")
    return bytes(data)


def clean_tree(root):
    """A healthy bare-metal GPU host: a host driver loaded, headers for its kernel, containerd's drop-in at the root
    config's version, the default route on an Intel NIC, the IOMMU in passthrough, ACS off on the PCIe switch that
    holds a GPU and a ConnectX NIC, Secure Boot off."""
    for bridge in ([BRIDGE_UP], [BRIDGE_UP, BRIDGE_GPU], [BRIDGE_UP, BRIDGE_NIC]):
        pci_device(root, ["0000:00:01.0"] + bridge, "0x10b5", "0x060400", config=acs(0x0000))
    gpu = pci_device(root, ["0000:00:01.0", BRIDGE_UP, BRIDGE_GPU, GPU], "0x10de", "0x030200", "0x2330")
    pci_device(root, ["0000:00:01.0", BRIDGE_UP, BRIDGE_NIC, NIC], "0x15b3", "0x020700", "0x1021")
    write(root / "sys/kernel/iommu_groups/7/type", "identity\n")
    symlink(root / "sys/kernel/iommu_groups/7", gpu / "iommu_group")
    write(root / "proc/driver/nvidia/version", PROPRIETARY)
    write(root / "proc/modules", MODULES)
    write(root / "sys/module/nvidia/taint", "O\n")
    write(root / "proc/sys/kernel/osrelease", RELEASE + "\n")
    (root / "lib/modules" / RELEASE / "build").mkdir(parents=True)
    write(root / "etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n')
    write(root / "etc/containerd/config.toml", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n[plugins]\n')
    write(root / "etc/containerd/conf.d/99-nvidia.toml", "version = 2\n[plugins]\n")
    write(root / "proc/net/route", ROUTE_HEADER + "eno1\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n")
    netdev(root, "eno1", "ixgbe")
    netdev(root, "ens1f0", "mlx5_core")
    write(root / "proc/cmdline", "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt\n")
    write(root / "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse\n")
    write(root / SECURE_BOOT, b"\x06\x00\x00\x00\x00")
    return root


def drop_in_higher(root):
    write(root / "etc/containerd/conf.d/99-nvidia.toml", "version = 3\n[plugins]\n")


def nvidia_drm(root):
    write(root / "proc/modules", "nvidia_drm 122880 0 - Live 0x0 (POE)\n"
                                 "nvidia_modeset 1355776 1 nvidia_drm, Live 0x0 (POE)\n" + MODULES)


def nouveau(root):
    write(root / "proc/modules", "nouveau 2899968 0 - Live 0x0\n")
    (root / "proc/driver/nvidia/version").unlink()


def default_route_on_mlx5(root):
    write(root / "proc/net/route", ROUTE_HEADER + "ens1f0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n")


def default_route_on_a_bond_of_mlx5(root):
    netdev(root, "bond0", lower=["ens1f0"])
    write(root / "proc/net/route", ROUTE_HEADER + "bond0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n")


def iommu_translating(root):
    write(root / "sys/kernel/iommu_groups/7/type", "DMA-FQ\n")


def acs_redirecting(root):
    write(root / "sys/devices/pci0000:00/0000:00:01.0" / BRIDGE_UP / BRIDGE_GPU / "config", acs(0x001d))


def gds_on_debian(root):
    write(root / "etc/os-release", 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n')


def no_driver(root):
    (root / "proc/driver/nvidia/version").unlink()
    write(root / "proc/modules", "")


def no_modules_dir(root):
    no_driver(root)
    (root / "lib/modules" / RELEASE / "build").rmdir()
    (root / "lib/modules" / RELEASE).rmdir()


def no_headers_on_disk(root):
    no_driver(root)
    (root / "lib/modules" / RELEASE / "build").rmdir()


def secure_boot_on(root):
    write(root / SECURE_BOOT, b"\x06\x00\x00\x00\x01")


def secure_boot_on_unsigned_loaded(root):
    secure_boot_on(root)
    write(root / "sys/module/nvidia/taint", "OE\n")


def operator_driver_running(root):
    """The GPU Operator's driver container runs here already: its driver root is mounted at /run/nvidia/driver, and
    its driver (the open kernel module, the operator's default) is loaded."""
    (root / "run/nvidia/driver").mkdir(parents=True)
    write(root / "proc/driver/nvidia/version", OPEN)
