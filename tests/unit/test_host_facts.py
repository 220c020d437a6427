"""Table-driven tests of the gpu_host_facts domain: parsing /proc/driver/nvidia/version, /proc/modules,
dpkg-query and rpm output and PCI attributes, which package names count as a driver or a toolkit, and
the summary gpu_driver_mode reads."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_host_facts

# Real /proc/driver/nvidia/version texts (two lines each; the second is the compiler).
PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:45:16 UTC 2025\n"
               "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")
OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Thu Sep 25 22:06:53 UTC 2025\n"
        "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
OPEN_ARM = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.172.08  Release Build  "
            "(dvs-builder@U16-I1-N07-12-3)  Fri Jul 11 23:47:08 UTC 2025\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n")
ARM = ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.163.01  Tue Apr  8 12:46:34 UTC 2025\n"
       "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")
DEBIAN_470 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02  Thu May  2 14:37:44 UTC 2024\n"
              "GCC version:  gcc version 10.2.1 20210110 (Debian 10.2.1-6)\n")


@pytest.mark.parametrize("text, version", [
    (PROPRIETARY, "535.247.01"),
    (OPEN, "580.95.05"),
    (OPEN_ARM, "570.172.08"),
    (ARM, "550.163.01"),
    (DEBIAN_470, "470.256.02"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54  Tue Jun  6 22:20:39 UTC 2023\n", "535.54"),
    ("", ""),
    (None, ""),
    ("GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n", ""),
    # a version-looking number elsewhere is not the module's version
    ("NVRM version: something else 535.247.01\n", ""),
])
def test_driver_version(text, version):
    assert gpu_host_facts.driver_version(text) == version


@pytest.mark.parametrize("text, module_type", [
    (PROPRIETARY, "proprietary"),
    (OPEN, "open"),
    (OPEN_ARM, "open"),
    (ARM, "proprietary"),
    (DEBIAN_470, "proprietary"),
    ("", ""),
    (None, ""),
    # no driver version: no module loaded, whatever the text says
    ("NVRM version: Open Kernel Module\n", ""),
])
def test_kernel_module_type_is_what_gpudirect_over_dma_buf_needs(text, module_type):
    """DMA-BUF needs the open kernel modules: their /proc/driver/nvidia/version says "Open Kernel Module"."""
    assert gpu_host_facts.kernel_module_type(text) == module_type
    facts = gpu_host_facts.summarize("gpu-a", {}, text, "", {}, "")
    assert facts["kernel_module_type"] == module_type


PROC_MODULES = """\
nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)
nvidia_uvm 4956160 4 - Live 0x0000000000000000 (POE)
nvidia_drm 122880 0 - Live 0x0000000000000000 (POE)
nvidia_modeset 1355776 1 nvidia_drm, Live 0x0000000000000000 (POE)
nvidia 54308864 12 nvidia_peermem,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)
ib_uverbs 155648 3 nvidia_peermem,rdma_ucm,mlx5_ib, Live 0x0000000000000000
mlx5_ib 405504 0 - Live 0x0000000000000000
ib_core 430080 9 nvidia_peermem,rdma_cm,ib_ipoib,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm, Live 0x0000000000000000
video 65536 1 nvidia_modeset, Live 0x0000000000000000
"""
# Debian's packaged driver: the modules are nvidia-current*, peermem is nvidia_current_peermem.
DEBIAN_MODULES = """\
nvidia_current_peermem 16384 0 - Live 0x0000000000000000 (POE)
nvidia_current_uvm 1507328 0 - Live 0x0000000000000000 (POE)
nvidia 56778752 2 nvidia_current_peermem,nvidia_current_uvm, Live 0x0000000000000000 (POE)
"""


@pytest.mark.parametrize("text, modules", [
    (PROC_MODULES, ["ib_core", "nvidia", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm"]),
    (DEBIAN_MODULES, ["nvidia", "nvidia_current_peermem"]),
    ("nouveau 2899968 0 - Live 0x0000000000000000\nttm 98304 1 nouveau, Live 0x0000000000000000\n", ["nouveau"]),
    # 'nvidia' only in another module's dependency column is not loaded
    ("nvidia_uvm 1789952 0 - Live 0x0000000000000000 (POE)\nvideo 65536 1 nvidia, Live 0x0\n", ["nvidia_uvm"]),
    # look-alikes are not the modules of interest
    ("nvidiafb 53248 0 - Live 0x0\nnvidia_drm 122880 0 - Live 0x0\nnvidia_fs 258048 0 - Live 0x0\n", []),
    ("\n\n", []),
    ("", []),
    (None, []),
])
def test_loaded_modules(text, modules):
    assert gpu_host_facts.loaded_modules(text) == modules


DPKG = "\n".join([
    "nvidia-driver-535-server\t535.247.01-0ubuntu0.22.04.1\tii ",
    "nvidia-dkms-535-server\t535.247.01-0ubuntu0.22.04.1\tii ",
    "nvidia-driver-525-server\t525.147.05-0ubuntu2.22.04.1\trc ",    # removed, configuration files left
    "nvidia-headless-470-server\t\tun ",                               # known, never installed
    "nvidia-container-toolkit\t1.17.8-1\tii ",
    "nvidia-container-toolkit-base\t1.17.8-1\tii ",
    "libnvidia-compute-535-server:amd64\t535.247.01-0ubuntu0.22.04.1\tii ",  # ${binary:Package} spelling
    "libc6\t2.35-0ubuntu3.8\tii ",
    "nvidia-utils-535-server\t535.247.01-0ubuntu0.22.04.1\tiU ",       # unpacked, not configured yet
    "broken line without tabs",
    "",
]) + "\n"


def test_parse_dpkg_keeps_installed_packages_only():
    assert gpu_host_facts.parse_dpkg(DPKG) == {
        "nvidia-driver-535-server": "535.247.01-0ubuntu0.22.04.1",
        "nvidia-dkms-535-server": "535.247.01-0ubuntu0.22.04.1",
        "nvidia-container-toolkit": "1.17.8-1",
        "nvidia-container-toolkit-base": "1.17.8-1",
        "libnvidia-compute-535-server": "535.247.01-0ubuntu0.22.04.1",
        "libc6": "2.35-0ubuntu3.8",
    }


@pytest.mark.parametrize("text", ["", None, "\n", "nvidia-kernel-dkms\t535.216.01-1~deb12u1\trc \n"])
def test_parse_dpkg_nothing_installed(text):
    assert gpu_host_facts.parse_dpkg(text) == {}


def test_parse_dpkg_keeps_held_packages():
    text = "nvidia-driver-535-server\t535.247.01-0ubuntu0.22.04.1\thi \n"
    assert gpu_host_facts.parse_dpkg(text) == {"nvidia-driver-535-server": "535.247.01-0ubuntu0.22.04.1"}


RPM = "\n".join([
    "kmod-nvidia-latest-dkms\t535.247.01-1.el8",
    "nvidia-driver\t580.95.05-1.el9",
    "nvidia-driver-cuda\t580.95.05-1.el9",
    "nvidia-container-toolkit\t1.17.8-1",
    "glibc\t2.34-100.el9_4.2",
    "three\tcolumns\there",
    "\tno-name",
    "",
]) + "\n"


def test_parse_rpm():
    assert gpu_host_facts.parse_rpm(RPM) == {
        "kmod-nvidia-latest-dkms": "535.247.01-1.el8",
        "nvidia-driver": "580.95.05-1.el9",
        "nvidia-driver-cuda": "580.95.05-1.el9",
        "nvidia-container-toolkit": "1.17.8-1",
        "glibc": "2.34-100.el9_4.2",
    }
    assert gpu_host_facts.parse_rpm("") == {} and gpu_host_facts.parse_rpm(None) == {}


DRIVER_PACKAGES = [
    # Debian non-free
    "nvidia-driver", "nvidia-kernel-dkms", "nvidia-open-kernel-dkms", "nvidia-kernel-source",
    "nvidia-tesla-470-driver", "nvidia-tesla-470-kernel-dkms", "nvidia-driver-libs",
    # Ubuntu
    "nvidia-driver-535-server", "nvidia-driver-535-server-open", "nvidia-driver-580-open", "nvidia-driver-570",
    "nvidia-headless-580-open", "nvidia-headless-535-server", "nvidia-dkms-535-server",
    "linux-modules-nvidia-535-server-generic", "linux-modules-nvidia-550-server-6.8.0-45-generic",
    # NVIDIA's CUDA repositories (Debian/Ubuntu and RHEL)
    "cuda-drivers", "cuda-drivers-535", "kmod-nvidia-latest-dkms", "kmod-nvidia-open-dkms", "nvidia-driver-cuda",
    "nvidia-kmod-common", "nvidia-open", "nvidia-open-580",
]
NOT_DRIVER_PACKAGES = [
    "nvidia-smi", "nvidia-settings", "libnvidia-ml1", "libcuda1", "nvidia-container-toolkit",
    "nvidia-container-toolkit-base", "libnvidia-container1", "nvidia-persistenced", "nvidia-modprobe",
    "nvidia-utils-535-server", "libnvidia-compute-535-server", "nvidia-fabricmanager-535", "firmware-nvidia-gsp",
    "nvidia-driver-local-repo-ubuntu2204-535.247.01",  # NVIDIA's local repository package, not a driver
    "xserver-xorg-video-nvidia-535", "nvidia-driver-assistant", "cuda-keyring", "nvidia-peermem-loader",
    "my-nvidia-driver", "nvidia-kernel-common-535-server", "nvidia-kernel-support", "nvidia-driver-bin",
    "nvidia-opencl-icd", "nvidia-opencl-common", "nvidia-open-kernel-support",  # Debian, not the driver itself
]


@pytest.mark.parametrize("name", DRIVER_PACKAGES)
def test_driver_packages(name):
    assert gpu_host_facts.DRIVER_PACKAGE.match(name)
    assert gpu_host_facts.select_packages({name: "1", "libc6": "2"}, gpu_host_facts.DRIVER_PACKAGE) == {name: "1"}


@pytest.mark.parametrize("name", NOT_DRIVER_PACKAGES)
def test_not_driver_packages(name):
    assert not gpu_host_facts.DRIVER_PACKAGE.match(name)
    assert gpu_host_facts.select_packages({name: "1"}, gpu_host_facts.DRIVER_PACKAGE) == {}


@pytest.mark.parametrize("name, toolkit", [
    ("nvidia-container-toolkit", True), ("nvidia-container-toolkit-base", True),
    ("libnvidia-container1", False), ("libnvidia-container-tools", False), ("nvidia-docker2", False),
    ("nvidia-container-toolkit-operator-extensions", False), ("nvidia-driver-535-server", False),
])
def test_toolkit_packages(name, toolkit):
    assert bool(gpu_host_facts.TOOLKIT_PACKAGE.match(name)) is toolkit


def test_select_packages_returns_sorted_matches():
    packages = {"nvidia-kernel-dkms": "535.216.01-1~deb12u1", "nvidia-smi": "535.216.01-1~deb12u1",
                "nvidia-driver": "535.216.01-1~deb12u1", "libc6": "2.36-9+deb12u9"}
    got = gpu_host_facts.select_packages(packages, gpu_host_facts.DRIVER_PACKAGE)
    assert list(got.items()) == [("nvidia-driver", "535.216.01-1~deb12u1"),
                                 ("nvidia-kernel-dkms", "535.216.01-1~deb12u1")]


PCI = {
    "0000:3b:00.0": {"vendor": "0x10de\n", "class": "0x030200\n", "device": "0x2330\n"},  # H100 SXM, 3D controller
    "0000:17:00.0": {"vendor": "0x10de\n", "class": "0x030000\n", "device": "0x1EB8\n"},  # T4 as VGA controller
    "0000:17:00.1": {"vendor": "0x10de\n", "class": "0x040300\n", "device": "0x10f9\n"},  # NVIDIA HD audio
    "0000:5e:00.0": {"vendor": "0x10de\n", "class": "0x068000\n", "device": "0x22a3\n"},  # NVSwitch (bridge)
    "0000:1a:00.0": {"vendor": "0x15b3\n", "class": "0x020700\n", "device": "0x101b\n"},  # ConnectX-6 IB
    "0000:1a:00.1": {"vendor": "0x15b3\n", "class": "0x020000\n", "device": "0x101d\n"},  # ConnectX-6 Dx Ethernet
    "0000:00:02.0": {"vendor": "0x8086\n", "class": "0x030000\n", "device": "0x3e92\n"},  # Intel VGA
    "0000:03:00.0": {"vendor": "0x102b\n", "class": "0x030000\n", "device": "0x0536\n"},  # Matrox BMC VGA
}


def test_gpu_devices_counts_nvidia_vga_and_3d_controllers_only():
    assert gpu_host_facts.gpu_devices(PCI) == [{"address": "0000:17:00.0", "device": "0x1eb8"},
                                               {"address": "0000:3b:00.0", "device": "0x2330"}]


@pytest.mark.parametrize("vendor, klass, counts", [
    ("0x10de", "0x030200", True),
    ("0x10de", "0x030000", True),
    ("0x10DE\n", "0x0302 ", True),
    ("0x10de", "0x040300", False),
    ("0x10de", "0x068000", False),
    ("0x15b3", "0x030200", False),
    ("0x15b3", "0x020700", False),
    ("", "0x030200", False),
    ("0x10de", "", False),
])
def test_gpu_devices_vendor_and_class(vendor, klass, counts):
    got = gpu_host_facts.gpu_devices({"0000:01:00.0": {"vendor": vendor, "class": klass, "device": "0x20b5"}})
    assert got == ([{"address": "0000:01:00.0", "device": "0x20b5"}] if counts else [])


def test_gpu_devices_of_nothing():
    assert gpu_host_facts.gpu_devices({}) == [] and gpu_host_facts.gpu_devices(None) == []
    assert gpu_host_facts.gpu_devices({"0000:01:00.0": {}}) == []


# ---------------------------------------------------------------- summarize


def test_summarize_ubuntu_host_with_a_loaded_driver():
    packages = gpu_host_facts.parse_dpkg(DPKG)
    got = gpu_host_facts.summarize("gpu-a", PCI, PROPRIETARY, PROC_MODULES, packages, "/usr/bin/nvidia-smi")
    relevant = got.pop("packages")
    assert "libc6" not in relevant and relevant["libnvidia-compute-535-server"] == "535.247.01-0ubuntu0.22.04.1"
    assert got == {
        "node_name": "gpu-a",
        "gpu_present": True,
        "gpus": [{"address": "0000:17:00.0", "device": "0x1eb8"}, {"address": "0000:3b:00.0", "device": "0x2330"}],
        "driver_loaded": True,
        "driver_version": "535.247.01",
        "kernel_module_type": "proprietary",
        "modules": ["ib_core", "nvidia", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm"],
        "peermem_loaded": True,
        "nouveau_loaded": False,
        "driver_packages": {"nvidia-dkms-535-server": "535.247.01-0ubuntu0.22.04.1",
                            "nvidia-driver-535-server": "535.247.01-0ubuntu0.22.04.1"},
        "toolkit_packages": {"nvidia-container-toolkit": "1.17.8-1", "nvidia-container-toolkit-base": "1.17.8-1"},
        "nvidia_smi": "/usr/bin/nvidia-smi",
    }


def test_summarize_debian_peermem_is_nvidia_current_peermem():
    got = gpu_host_facts.summarize("gpu-b", PCI, DEBIAN_470, DEBIAN_MODULES, {}, "")
    assert got["peermem_loaded"] is True and got["driver_version"] == "470.256.02"


@pytest.mark.parametrize("version_text, modules_text, loaded, version", [
    (OPEN, "", True, "580.95.05"),                                           # version file alone
    ("", "nvidia 54308864 0 - Live 0x0 (POE)\n", True, ""),                 # module alone
    ("", "nvidia_uvm 4956160 0 - Live 0x0 (POE)\n", False, ""),             # not the core module
    ("", "nouveau 2899968 0 - Live 0x0\n", False, ""),
])
def test_summarize_driver_loaded(version_text, modules_text, loaded, version):
    got = gpu_host_facts.summarize("n", {}, version_text, modules_text, {}, None)
    assert got["driver_loaded"] is loaded and got["driver_version"] == version
    assert got["nvidia_smi"] == ""


def test_summarize_bare_host_with_nouveau_and_only_tools():
    packages = {"nvidia-smi": "535.216.01-1~deb12u1", "nvidia-settings": "535.171.04-1", "libnvidia-ml1": "1",
                "nvidia-container-toolkit": "1.17.8-1"}
    got = gpu_host_facts.summarize("n", {"0000:3b:00.0": PCI["0000:3b:00.0"]}, None,
                                   "nouveau 2899968 0 - Live 0x0\n", packages, "")
    assert got["gpu_present"] is True and got["nouveau_loaded"] is True
    assert got["driver_loaded"] is False and got["driver_packages"] == {}
    assert got["toolkit_packages"] == {"nvidia-container-toolkit": "1.17.8-1"}
    assert got["peermem_loaded"] is False


def test_summarize_host_without_gpu():
    got = gpu_host_facts.summarize("n", {k: PCI[k] for k in ("0000:1a:00.0", "0000:17:00.1", "0000:00:02.0")},
                                   "", "", {}, "")
    assert got["gpu_present"] is False and got["gpus"] == []


# ---------------------------------------------------------------- packages reported, OS from /etc/os-release


def test_packages_reported_are_the_driver_related_ones_and_those_asked_for():
    packages = {"nvidia-kernel-dkms": "535", "libcuda1": "535", "linux-headers-6.1.0-28-amd64": "6.1", "dkms": "3.0",
                "firmware-nvidia-gsp": "535", "cuda-drivers-580": "580", "kmod-nvidia-latest-dkms": "580",
                "kernel-devel-5.14.0": "5.14", "libc6": "2.36", "make": "4.3", "python3": "3.11"}
    got = gpu_host_facts.summarize("n", {}, "", "", packages, "", extra_names=("make",))["packages"]
    assert sorted(got) == ["cuda-drivers-580", "dkms", "firmware-nvidia-gsp", "kernel-devel-5.14.0",
                           "kmod-nvidia-latest-dkms", "libcuda1", "linux-headers-6.1.0-28-amd64", "make",
                           "nvidia-kernel-dkms"]


DEBIAN_OS_RELEASE = """PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
"""
UBUNTU_OS_RELEASE = 'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n'
RHEL_OS_RELEASE = 'NAME="Red Hat Enterprise Linux"\nVERSION_ID="9.4"\nID="rhel"\nID_LIKE="fedora"\n'
ROCKY_OS_RELEASE = 'NAME="Rocky Linux"\nVERSION_ID="8.10"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
POP_OS_RELEASE = 'NAME="Pop!_OS"\nVERSION_ID="22.04"\nID=pop\nID_LIKE="ubuntu debian"\n'
SLES_OS_RELEASE = 'NAME="SLES"\nVERSION_ID="15.6"\nID="sles"\nID_LIKE="suse"\n'


@pytest.mark.parametrize("text, debian_version, expected", [
    (DEBIAN_OS_RELEASE, "12.11\n", ("Debian", "Debian", "12", "12.11")),
    (DEBIAN_OS_RELEASE, "trixie/sid\n", ("Debian", "Debian", "12", "12")),   # testing: no point release
    (UBUNTU_OS_RELEASE, "bookworm/sid\n", ("Debian", "Ubuntu", "22", "22.04")),
    (RHEL_OS_RELEASE, "", ("RedHat", "RedHat", "9", "9.4")),
    (ROCKY_OS_RELEASE, "", ("RedHat", "Rocky", "8", "8.10")),
    (POP_OS_RELEASE, "", ("Debian", "Pop!_OS", "22", "22.04")),             # unknown ID, family from ID_LIKE
    (SLES_OS_RELEASE, "", ("Suse", "SLES", "15", "15.6")),
    ("", "", ("unknown", "unknown", "", "")),
])
def test_os_info_from_os_release(text, debian_version, expected):
    got = gpu_host_facts.os_info(text, "x86_64", "6.1.0-28-amd64", debian_version)
    assert (got["family"], got["distribution"], got["major"], got["version"]) == expected
    assert got["architecture"] == "x86_64" and got["kernel"] == "6.1.0-28-amd64"


def test_os_info_feeds_the_host_driver_plan():
    """The OS read from /etc/os-release is what host_driver plans from (Debian 12: branch 535 from non-free)."""
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import host_driver
    got = host_driver.plan(gpu_host_facts.os_info(DEBIAN_OS_RELEASE, "x86_64", "6.1.0-28-amd64", "12.11"),
                           {"branch": "535", "source": "distribution", "kernel_headers": False,
                            "debian_mirror": "http://deb.debian.org/debian",
                            "debian_security_mirror": "http://deb.debian.org/debian-security"})
    assert got["packages"][0] == "nvidia-kernel-dkms" and got["peermem_module"] == "nvidia-current-peermem"
