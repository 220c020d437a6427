"""The host preflight end to end on file-system trees: gpu_host_facts (checks=true) reads a crafted root, or the real
H100 host's capture laid out as one, and the host_checks filter judges what it read. Each bad state of issue 34 is a
tree; the clean tree passes; every blocking finding of every host is in one message; the skip list acknowledges ids."""
from __future__ import annotations

import os

import pytest

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_hosts import host_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings, readings
from tests.modules.harness import run_module
from tests.unit.host_capture import capture_root

RELEASE = "6.8.0-90-generic"
GPU, NIC, BRIDGE_UP, BRIDGE_GPU, BRIDGE_NIC = "0000:03:00.0", "0000:04:00.0", "0000:01:00.0", "0000:02:08.0", "0000:02:10.0"
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:45:16 UTC 2025\n"
MODULES = "nvidia_uvm 4956160 0 - Live 0x0 (POE)\nnvidia 54308864 2 nvidia_uvm, Live 0x0 (POE)\n"
ROUTE_HEADER = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
SECURE_BOOT = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# Everything the platform could ask of a host: RDMA with the Network Operator's NIC driver, MIG pools.
EVERYTHING = {"driver_mode": "auto", "cloud_driver": "unknown", "rdma": True, "nic_driver": True, "mig": True,
              "gpu_operator_values": {}}


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


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
        os.symlink(real, link)
    return real


def netdev(root, name, driver=None, lower=()):
    base = root / "sys/class/net" / name
    base.mkdir(parents=True, exist_ok=True)
    if driver:
        target = root / "sys/bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (base / "device").mkdir()
        os.symlink(target, base / "device" / "driver")
    for other in lower:
        os.symlink(root / "sys/class/net" / other, base / ("lower_" + other))


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
    os.symlink(root / "sys/kernel/iommu_groups/7", gpu / "iommu_group")
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


def read(root, name="gpu-node-01"):
    failed, result = run_module("gpu_host_facts", {"root": str(root), "node_name": name, "checks": True})
    assert not failed, result.get("msg")
    assert result["changed"] is False
    return result["ansible_facts"]["gpu_host_checks"]


def judge(root, **platform):
    return host_checks([read(root)], dict(EVERYTHING, **platform))


def ids(found):
    return sorted(f["id"] for f in found)


def test_the_clean_host_passes(tmp_path):
    checks = read(clean_tree(tmp_path))
    assert checks["containerd"] == {"config": True, "version": 2, "imports": ["/etc/containerd/conf.d/*.toml"],
                                    "dropins": [{"path": "/etc/containerd/conf.d/99-nvidia.toml", "version": 2,
                                                 "imported": True}], "binary_major": None}
    assert checks["acs"] == {"bridges": [BRIDGE_UP, BRIDGE_GPU, BRIDGE_NIC], "readable": True, "redirecting": []}
    assert checks["iommu"]["gpu_domains"] == {GPU: "identity"} and checks["nics"] == [NIC]
    assert checks["kernel"] == {"release": RELEASE, "modules_dir": True, "headers": True, "headers_candidate": None}
    assert checks["secure_boot"] is False and checks["driver"]["unsigned"] is False
    for mode in ("auto", "host"):
        verdict = judge(tmp_path, driver_mode=mode)
        assert verdict["blocking"] == [] and verdict["warnings"] == [] and verdict["message"] == ""
        assert verdict["checked"] == ["gpu-node-01"]


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


@pytest.mark.parametrize("states, platform, blocking, warnings", [
    ([drop_in_higher], {}, ["containerd-dropin-version"], []),
    ([nvidia_drm], {}, ["mig-blocked-by-nvidia-drm"], []),
    ([nvidia_drm], {"mig": False}, [], []),
    ([nouveau], {"driver_mode": "host"}, ["nouveau-loaded"], []),
    ([default_route_on_mlx5], {}, ["default-route-on-mlx5"], []),
    ([default_route_on_a_bond_of_mlx5], {}, ["default-route-on-mlx5"], []),
    ([default_route_on_mlx5], {"nic_driver": False}, [], []),
    ([iommu_translating], {}, ["iommu-blocks-p2p"], []),
    ([iommu_translating], {"rdma": False, "nic_driver": False}, [], []),
    ([acs_redirecting], {}, ["acs-enabled"], []),
    ([gds_on_debian], {"driver_mode": "operator", "gpu_operator_values": {"gds": {"enabled": True}}},
     ["driver-already-loaded", "gds-unsupported"], []),
    ([no_driver], {"driver_mode": "operator", "gpu_operator_values": {"gdrcopy": {"enabled": True}}}, [], []),
    ([no_driver], {"driver_mode": "operator", "gpu_operator_values": {
        "gds": {"enabled": True}, "driver": {"kernelModuleType": "proprietary"}}}, ["gds-unsupported"], []),
    ([no_modules_dir], {"driver_mode": "operator"}, ["no-kernel-headers"], []),
    ([no_headers_on_disk], {"driver_mode": "operator"}, [], ["no-kernel-headers"]),
    ([no_modules_dir], {"driver_mode": "operator", "gpu_operator_values": {"driver": {"usePrecompiled": True}}}, [],
     []),
    ([no_modules_dir], {"driver_mode": "host"}, ["no-kernel-headers"], []),   # host_driver's DKMS install
    ([no_driver, secure_boot_on], {}, ["secure-boot-unsigned"], []),          # auto: the operator builds one
    ([secure_boot_on_unsigned_loaded], {}, [], ["secure-boot-unsigned"]),
    ([secure_boot_on], {}, [], []),                                            # a signed driver is loaded
])
def test_each_bad_state_read_from_its_tree(tmp_path, states, platform, blocking, warnings):
    root = clean_tree(tmp_path)
    for state in states:
        state(root)
    verdict = judge(root, **platform)
    assert ids(verdict["blocking"]) == blocking, verdict["lines"]
    assert ids(verdict["warnings"]) == warnings, verdict["warning_lines"]
    for text in verdict["lines"]:
        assert text.startswith("gpu-node-01: [") and ". Fix: " in text and "(see " in text
    if blocking:
        assert verdict["message"].count("\n") == len(blocking)


def test_the_findings_words(tmp_path):
    root = clean_tree(tmp_path)
    for state in (drop_in_higher, nvidia_drm, default_route_on_mlx5, acs_redirecting):
        state(root)
    lines = "\n".join(judge(root)["lines"])
    assert "/etc/containerd/conf.d/99-nvidia.toml has version = 3, higher than /etc/containerd/config.toml's " \
           "version = 2" in lines
    assert "nvidia_drm is loaded; nvidia_modeset is in use (by nvidia_drm)" in lines
    assert "the default route is on ens1f0 (ens1f0: mlx5_core)" in lines
    assert "on PCIe port(s) %s between the GPUs and the ConnectX NICs" % BRIDGE_GPU in lines
    assert "Mellanox/network-operator#2176" in lines and "NVIDIA/aicr#1688" in lines


def test_a_drop_in_not_imported_yet_counts(tmp_path):
    """The toolkit adds the import when it writes its drop-in: a conf.d file with a higher version is found too."""
    root = clean_tree(tmp_path)
    write(root / "etc/containerd/config.toml", "version = 2\n")
    drop_in_higher(root)
    checks = read(root)
    assert checks["containerd"]["dropins"] == [{"path": "/etc/containerd/conf.d/99-nvidia.toml", "version": 3,
                                                "imported": False}]
    assert ids(host_checks([checks], EVERYTHING)["blocking"]) == ["containerd-dropin-version"]


def test_every_host_in_one_message_and_the_skip_list(tmp_path):
    first = clean_tree(tmp_path / "a")
    drop_in_higher(first)
    nvidia_drm(first)
    second = clean_tree(tmp_path / "b")
    default_route_on_mlx5(second)
    hosts = [read(second, "gpu-node-02"), read(first, "gpu-node-01")]
    verdict = host_checks(hosts, EVERYTHING)
    assert verdict["message"].splitlines()[0].startswith("3 blocking finding(s) on the GPU hosts")
    assert [line.split(" ", 2)[:2] for line in verdict["message"].splitlines()[1:]] == [
        ["gpu-node-01:", "[containerd-dropin-version]"], ["gpu-node-01:", "[mig-blocked-by-nvidia-drm]"],
        ["gpu-node-02:", "[default-route-on-mlx5]"]]
    skipped = host_checks(hosts, EVERYTHING, ["mig-blocked-by-nvidia-drm", "default-route-on-mlx5"])
    assert ids(skipped["blocking"]) == ["containerd-dropin-version"]
    assert ids(skipped["skipped"]) == ["default-route-on-mlx5", "mig-blocked-by-nvidia-drm"]
    assert host_checks(hosts, EVERYTHING, sorted(findings.CHECKS))["message"] == ""


@pytest.mark.parametrize("skip, words", [
    (["no-headers"], "gpu_platform_host_checks_skip[0]: 'no-headers' is not a host check id. Fix: use one of "),
    ("nouveau-loaded", "gpu_platform_host_checks_skip: 'nouveau-loaded' is not a list"),
])
def test_a_wrong_skip_entry_names_the_variable(skip, words):
    from ansible.errors import AnsibleFilterError  # pylint: disable=import-outside-toplevel
    with pytest.raises(AnsibleFilterError) as error:
        host_checks([], EVERYTHING, skip)
    assert words in str(error.value)


# -- the real H100 host (../shared/real-hosts), laid out as a tree and read by the module ------------------------

def test_the_real_h100_read_by_the_module(tmp_path):
    checks = read(capture_root(tmp_path), "h100")
    assert checks["gpus"] == [{"address": "0000:00:06.0", "device": "0x2330"}]
    assert checks["driver"]["loaded"] and checks["driver"]["version"] == "580.159.04"
    assert checks["driver"]["module_type"] == "open" and checks["driver"]["operator_root"] is False
    assert checks["kernel"] == {"release": "6.18.44-fc-v657-gpu", "modules_dir": False, "headers": False,
                                "headers_candidate": None}
    assert checks["default_routes"] == [{"interface": "eth0", "drivers": {"eth0": "virtio_net"}, "mlx5": False}]
    assert checks["containerd"]["config"] is False and checks["crio"]["config"] is False
    assert checks["iommu"]["groups"] == 0


@pytest.mark.parametrize("mode", ["host", "auto"])
def test_the_real_h100_owning_its_driver_has_no_blocking_finding(tmp_path, mode):
    verdict = host_checks([read(capture_root(tmp_path), "h100")], dict(EVERYTHING, driver_mode=mode, mig=False))
    assert verdict["blocking"] == [], verdict["lines"]


def test_the_real_h100_with_the_operator_asked_to_own_the_driver_is_blocked(tmp_path):
    verdict = host_checks([read(capture_root(tmp_path), "h100")], dict(EVERYTHING, driver_mode="operator", mig=False))
    assert ids(verdict["blocking"]) == ["driver-already-loaded", "no-kernel-headers"]
    assert "h100: [driver-already-loaded] driver 580.159.04 (open kernel module) is loaded, from no package" \
        in verdict["message"]
    assert "no kernel headers for 6.18.44-fc-v657-gpu: none on disk and no /lib/modules/6.18.44-fc-v657-gpu" \
        in verdict["message"]


# -- the optional commands: they read the running system, so they run only with the root / ----------------------

def test_commands_run_only_on_the_real_root(tmp_path, monkeypatch):
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "containerd"
    fake.write_text("#!/bin/sh\necho 'containerd github.com/containerd/containerd/v2 v2.1.5 abc'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    assert read(clean_tree(tmp_path / "root"))["containerd"]["binary_major"] is None
    failed, result = run_module("gpu_host_facts", {"root": "/", "checks": True})
    assert not failed, result.get("msg")
    assert result["ansible_facts"]["gpu_host_checks"]["containerd"]["binary_major"] == 2


def test_without_checks_nothing_more_is_read(tmp_path):
    failed, result = run_module("gpu_host_facts", {"root": str(clean_tree(tmp_path))})
    assert not failed and "gpu_host_checks" not in result["ansible_facts"]
