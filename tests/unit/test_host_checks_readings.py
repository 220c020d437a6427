"""The host preflight's parsers (domain/host_checks/readings.py) on strings: the real H100 host's capture
(../shared/real-hosts) and the shapes each bad state takes."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode, gpu_host_facts
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import readings
from tests.unit.host_capture import capture


def capture_pci():
    out = {}
    for line in capture("pci.txt").splitlines():
        address, vendor, device, klass = line.split()[:4]
        out[address] = {"vendor": vendor, "device": device, "class": klass}
    return out


def test_the_real_h100_reads_as_a_gpu_with_an_open_580_driver_and_no_package():
    gpus = gpu_host_facts.gpu_devices(capture_pci())
    assert gpus == [{"address": "0000:00:06.0", "device": "0x2330"}]
    version_text = capture("proc-driver-version.txt")
    assert gpu_host_facts.driver_version(version_text) == "580.159.04"
    assert readings.module_type(version_text) == "open"
    packages = gpu_host_facts.parse_dpkg(capture("dpkg.txt"))
    assert "cuda-compat-13-0" in packages, "the capture's package list was read"
    assert gpu_host_facts.select_packages(packages, gpu_host_facts.DRIVER_PACKAGE) == {}
    modules = readings.proc_modules(capture("proc-modules.txt"))
    assert set(modules) == {"nvidia", "nvidia_uvm"} and "nvidia_drm" not in modules
    facts = gpu_host_facts.summarize("h100", capture_pci(), version_text, capture("proc-modules.txt"), packages, "")
    assert facts["driver_loaded"] and facts["driver_packages"] == {}
    # The driver decision's evidence: a loaded driver, not "no NVIDIA driver found".
    node = gpu_driver_mode.classify({"name": "h100", "host": facts})
    assert node["host_driver"] and node["findings"] == ["driver 580.159.04 loaded (/proc/driver/nvidia/version)"]


def test_the_real_h100s_route_cmdline_and_kernel():
    route = "\n".join(line for line in capture("ip-route.txt").splitlines() if not line.startswith("bash:"))
    assert readings.default_routes(route) == ["eth0"]
    assert readings.cmdline_iommu(capture("proc-cmdline.txt")) == {}
    assert readings.iommu_passthrough({}) is None
    assert "No such file" in capture("kernel-headers.txt")


@pytest.mark.parametrize("text, version, imports", [
    ('version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n[plugins]\n  version = 9\n', 2,
     ["/etc/containerd/conf.d/*.toml"]),
    ('# generated\nversion=3 # v2 daemon\nimports = [\n  "conf.d/*.toml", # ours\n  \'/opt/x.toml\',\n]\n', 3,
     ["conf.d/*.toml", "/opt/x.toml"]),
    ("[plugins]\nversion = 2\nimports = ['a']\n", None, []),   # inside a table: not the file's version
    ("", None, []),
])
def test_containerd_version_and_imports(text, version, imports):
    assert readings.toml_version(text) == version
    assert readings.toml_imports(text) == imports


@pytest.mark.parametrize("text, major", [
    ("containerd github.com/containerd/containerd/v2 v2.1.5 fcd43222d6b07379a4be9786bda52438f0dd16a1\n", 2),
    ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", 1),
    ("", None), (None, None),
])
def test_containerd_major(text, major):
    assert readings.containerd_major(text) == major


def test_crio_runtimes():
    text = '[crio.runtime]\ndefault_runtime = "crun"\n[crio.runtime.runtimes.nvidia]\n[crio.runtime.runtimes."crun"]\n'
    assert readings.crio_runtimes(text) == ["nvidia", "crun"]


def test_proc_modules_users():
    text = ("nvidia_drm 122880 2 - Live 0x0 (POE)\n"
            "nvidia_modeset 1355776 3 nvidia_drm, Live 0x0 (POE)\n"
            "nvidia 54308864 12 nvidia_uvm,nvidia_modeset, Live 0x0 (POE)\n")
    modules = readings.proc_modules(text)
    assert modules["nvidia_modeset"] == {"refcount": 3, "users": ["nvidia_drm"]}
    assert modules["nvidia_drm"] == {"refcount": 2, "users": []}


@pytest.mark.parametrize("data, state", [
    (b"\x06\x00\x00\x00\x01", True), (b"\x06\x00\x00\x00\x00", False), (b"", None), (None, None)])
def test_secure_boot(data, state):
    assert readings.secure_boot(data) is state


@pytest.mark.parametrize("taint, signer, unsigned", [
    ("OE\n", None, True), ("O\n", None, False), (None, None, None), ("O", "", True), ("OE", "Build key", False)])
def test_module_unsigned(taint, signer, unsigned):
    assert readings.module_unsigned(taint, signer) is unsigned


@pytest.mark.parametrize("text, candidate", [
    ("linux-headers-6.8.0-90-generic:\n  Installed: (none)\n  Candidate: 6.8.0-90.91\n", "6.8.0-90.91"),
    ("linux-headers-6.18.44:\n  Installed: (none)\n  Candidate: (none)\n", "none"),
    ("", "none"),   # apt-cache knows no such package
    (None, None),   # not run
    ("garbage\n", None),
])
def test_apt_candidate(text, candidate):
    assert readings.apt_candidate(text) == candidate


def acs_config(control, cap_at=0x100, first=0x0001):
    """A config space with a first extended capability (AER, id 1) pointing at ACS (id 0x0D)."""
    data = bytearray(0x1000)
    data[0x100:0x104] = (first | (1 << 16) | ((cap_at if cap_at != 0x100 else 0) << 20)).to_bytes(4, "little")
    if cap_at != 0x100:
        data[cap_at:cap_at + 4] = (readings.ACS_CAP_ID | (1 << 16)).to_bytes(4, "little")
    data[cap_at + 4:cap_at + 6] = (0x5f).to_bytes(2, "little")
    data[cap_at + 6:cap_at + 8] = control.to_bytes(2, "little")
    return bytes(data)


def test_acs_control():
    assert readings.acs_control(acs_config(0x001d, cap_at=0x148)) == 0x001d
    assert readings.acs_control(acs_config(0x0000, cap_at=0x148)) == 0
    assert readings.acs_control(bytes(64)) is None, "a non-root read gets 64 bytes: unknown"
    assert readings.acs_control(bytes(0x1000)) == 0, "no extended capability at all"


def test_pci_path_and_the_ports_between():
    gpu = readings.pci_chain("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0")
    nic = readings.pci_chain("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0")
    assert gpu == ["0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"]
    assert readings.between(gpu, nic) == ["0000:01:00.0", "0000:02:08.0", "0000:02:10.0"]
    other_root = readings.pci_chain("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0")
    assert readings.between(gpu, other_root) == [], "through the CPU: not the ports' ACS"


@pytest.mark.parametrize("text, virtual", [
    ("processor : 0\nflags : fpu vme hypervisor sse\n", True), ("flags : fpu vme sse\n", False), ("", False)])
def test_virtual(text, virtual):
    assert readings.virtual(text) is virtual
