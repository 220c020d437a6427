"""Table-driven tests of the host_driver domain: the plan (repository, packages, apt pin, record) per
distribution, source and kernel-module flavour, and the refusals of bad settings and unsupported systems."""
import copy
import re

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import host_driver
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

OWNER = "gpu_platform.cluster.host_driver"
CUDA = "https://developer.download.nvidia.com/compute/cuda/repos"
# The role's defaults (roles/host_driver/defaults/main.yml) without the host_driver_ prefix.
DEFAULTS = {
    "branch": "535", "source": "distribution", "kernel_modules": "proprietary",
    "debian_mirror": "http://deb.debian.org/debian", "debian_security_mirror": "http://deb.debian.org/debian-security",
    "vendor_repo_url": CUDA, "kernel_headers": True, "extra_packages": [], "persistenced": True,
}


def settings(**changes):
    out = copy.deepcopy(DEFAULTS)
    out.update(changes)
    return out


def debian(major, arch="x86_64", kernel="6.1.0-28-amd64"):
    return {"family": "Debian", "distribution": "Debian", "major": major, "version": major,
            "architecture": arch, "kernel": kernel}


def ubuntu(version, arch="x86_64", kernel="6.8.0-45-generic"):
    return {"family": "Debian", "distribution": "Ubuntu", "major": version.split(".")[0], "version": version,
            "architecture": arch, "kernel": kernel}


def rhel(major, distribution="RedHat", arch="x86_64", kernel="5.14.0-427.13.1.el9_4.x86_64"):
    return {"family": "RedHat", "distribution": distribution, "major": major, "version": major + ".4",
            "architecture": arch, "kernel": kernel}


# ---------------------------------------------------------------- Debian, distribution packages

@pytest.mark.parametrize("major, branch, codename, flavour, kernel_package", [
    ("11", "470", "bullseye", "proprietary", "nvidia-kernel-dkms"),
    ("12", "535", "bookworm", "proprietary", "nvidia-kernel-dkms"),
    ("12", "535", "bookworm", "open", "nvidia-open-kernel-dkms"),
    ("13", "550", "trixie", "proprietary", "nvidia-kernel-dkms"),
    ("13", "550", "trixie", "open", "nvidia-open-kernel-dkms"),
])
def test_debian_distribution(major, branch, codename, flavour, kernel_package):
    got = host_driver.plan(debian(major), settings(branch=branch, kernel_modules=flavour))
    assert got["manager"] == "apt"
    assert (got["branch"], got["source"], got["kernel_modules"]) == (branch, "distribution", flavour)
    assert got["packages"] == [kernel_package, "nvidia-smi", "libcuda1", "libnvidia-ml1", "nvidia-persistenced",
                               "linux-headers-6.1.0-28-amd64"]
    assert got["peermem_module"] == "nvidia-current-peermem"
    assert got["persistenced_service"] == "nvidia-persistenced"
    assert got["initramfs"] == ["update-initramfs", "-u"]
    repo = got["repository"]
    assert repo["kind"] == "apt_sources"
    assert repo["file"] == "/etc/apt/sources.list.d/gpu-platform-debian-non-free.sources"
    text = repo["content"]
    assert text.startswith("# Managed by %s" % OWNER)
    stanzas = [dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith("#"))
               for block in text.strip().split("\n\n")]
    # non-free-firmware exists from Debian 12 on; bullseye has no such component.
    components = "contrib non-free" if major == "11" else "contrib non-free non-free-firmware"
    assert stanzas == [
        {"Types": "deb", "URIs": "http://deb.debian.org/debian", "Suites": "%s %s-updates" % (codename, codename),
         "Components": components,
         "Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"},
        {"Types": "deb", "URIs": "http://deb.debian.org/debian-security", "Suites": "%s-security" % codename,
         "Components": components,
         "Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"},
    ]
    assert got["record"] == {"managed_by": OWNER, "branch": branch, "source": "distribution",
                             "kernel_modules": flavour, "peermem_module": "nvidia-current-peermem"}
    assert "Pin: version %s.*\n" % branch in got["pin"]


def test_debian_sources_use_the_given_mirrors():
    got = host_driver.plan(debian("12"), settings(debian_mirror="https://mirror.example.com/debian",
                                                  debian_security_mirror="https://mirror.example.com/security"))
    text = got["repository"]["content"]
    assert "URIs: https://mirror.example.com/debian\nSuites: bookworm bookworm-updates\n" in text
    assert "URIs: https://mirror.example.com/security\nSuites: bookworm-security\n" in text
    assert "deb.debian.org" not in text


@pytest.mark.parametrize("major, shipped, branch", [
    ("11", "470", "535"), ("12", "535", "550"), ("12", "535", "580"), ("13", "550", "535"), ("12", "535", 470),
])
def test_debian_distribution_needs_the_shipped_branch(major, shipped, branch):
    with pytest.raises(ParamError) as info:
        host_driver.plan(debian(major), settings(branch=branch))
    err = info.value
    assert err.field == "gpu_platform_driver_branch"
    assert str(err).startswith("gpu_platform_driver_branch: Debian %s ships driver branch %s in non-free, not %s" % (
        major, shipped, branch))
    fix = str(err).split(". Fix: ", 1)[1]
    assert "gpu_platform_driver_branch: %s" % shipped in fix and "host_driver_source: vendor" in fix


# ---------------------------------------------------------------- vendor (NVIDIA's CUDA repository) on apt

@pytest.mark.parametrize("os_info, distro", [
    (debian("11"), "debian11"), (debian("12"), "debian12"), (debian("13"), "debian13"),
    (ubuntu("20.04"), "ubuntu2004"), (ubuntu("22.04"), "ubuntu2204"), (ubuntu("24.04"), "ubuntu2404"),
])
@pytest.mark.parametrize("arch, repo_arch", [("x86_64", "x86_64"), ("amd64", "x86_64"), ("aarch64", "sbsa"),
                                             ("arm64", "sbsa")])
def test_vendor_on_apt_uses_the_cuda_keyring(os_info, distro, arch, repo_arch):
    os_info = dict(os_info, architecture=arch)
    got = host_driver.plan(os_info, settings(branch="580", source="vendor"))
    base = "%s/%s/%s" % (CUDA, distro, repo_arch)
    assert got["repository"] == {"kind": "cuda_keyring", "base": base, "url": base + "/cuda-keyring_1.1-1_all.deb"}
    assert got["packages"] == ["cuda-drivers-580", "linux-headers-%s" % os_info["kernel"]]
    assert got["peermem_module"] == "nvidia-peermem"
    assert got["manager"] == "apt" and got["pin"].count("580") == 2


def test_vendor_repo_url_trailing_slash():
    got = host_driver.plan(debian("12"), settings(source="vendor", vendor_repo_url="https://mirror.example.com/cuda/"))
    assert got["repository"]["url"] == "https://mirror.example.com/cuda/debian12/x86_64/cuda-keyring_1.1-1_all.deb"


def test_debian12_vendor_example_urls():
    got = host_driver.plan(debian("12"), settings(source="vendor"))
    assert got["repository"]["url"] == ("https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
                                        "cuda-keyring_1.1-1_all.deb")
    got = host_driver.plan(debian("12", arch="aarch64"), settings(source="vendor"))
    assert got["repository"]["url"] == ("https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/"
                                        "cuda-keyring_1.1-1_all.deb")


@pytest.mark.parametrize("os_info", [ubuntu("22.04"), debian("12")], ids=["ubuntu2204", "debian12"])
def test_vendor_apt_follows_the_kernel_module_flavour(os_info):
    got = host_driver.plan(os_info, settings(branch="580", source="vendor", kernel_modules="open"))
    assert any("open" in package for package in got["packages"]), got["packages"]


# ---------------------------------------------------------------- Ubuntu, distribution packages

@pytest.mark.parametrize("version", ["20.04", "22.04", "24.04"])
@pytest.mark.parametrize("branch", ["535", "550", "570", "580"])
@pytest.mark.parametrize("flavour, suffix", [("proprietary", "-server"), ("open", "-server-open")])
def test_ubuntu_distribution(version, branch, flavour, suffix):
    got = host_driver.plan(ubuntu(version), settings(branch=branch, kernel_modules=flavour))
    assert got["repository"] == {"kind": "none"}
    assert got["packages"] == ["nvidia-headless-%s%s" % (branch, suffix), "nvidia-utils-%s-server" % branch,
                               "linux-headers-6.8.0-45-generic"]
    assert got["peermem_module"] == "nvidia-peermem" and got["manager"] == "apt"
    assert got["persistenced_service"] == "nvidia-persistenced"
    assert got["record"]["kernel_modules"] == flavour
    assert "Pin: version %s.*\n" % branch in got["pin"]


# ---------------------------------------------------------------- RHEL family (vendor only)

@pytest.mark.parametrize("distribution", ["RedHat", "Rocky", "AlmaLinux", "OracleLinux", "CentOS"])
@pytest.mark.parametrize("major", ["8", "9"])
@pytest.mark.parametrize("branch, flavour, stream", [("535", "proprietary", "nvidia-driver:535-dkms"),
                                                     ("580", "open", "nvidia-driver:580-open"),
                                                     ("550", "proprietary", "nvidia-driver:550-dkms")])
def test_rhel_vendor(distribution, major, branch, flavour, stream):
    os_info = rhel(major, distribution)
    got = host_driver.plan(os_info, settings(branch=branch, source="vendor", kernel_modules=flavour))
    assert got["manager"] == "dnf"
    assert got["repository"] == {
        "kind": "repo_file", "module_stream": stream,
        "url": "%s/rhel%s/x86_64/cuda-rhel%s.repo" % (CUDA, major, major),
        "file": "/etc/yum.repos.d/cuda-rhel%s.repo" % major}
    assert got["packages"] == ["@" + stream, "kernel-devel-5.14.0-427.13.1.el9_4.x86_64"]
    assert got["peermem_module"] == "nvidia-peermem"
    assert got["initramfs"] == ["dracut", "--force"]
    assert "pin" not in got
    assert got["record"] == {"managed_by": OWNER, "branch": branch, "source": "vendor", "kernel_modules": flavour,
                             "peermem_module": "nvidia-peermem"}


def test_rhel_aarch64_is_sbsa():
    got = host_driver.plan(rhel("9", arch="aarch64"), settings(source="vendor"))
    assert got["repository"]["url"] == "%s/rhel9/sbsa/cuda-rhel9.repo" % CUDA


@pytest.mark.parametrize("distribution", ["RedHat", "Rocky", "AlmaLinux"])
def test_rhel_distribution_is_refused(distribution):
    with pytest.raises(ParamError) as info:
        host_driver.plan(rhel("9", distribution), settings(source="distribution"))
    err = info.value
    assert err.field == "host_driver_source"
    assert str(err).startswith("host_driver_source: %s ships no NVIDIA driver. Fix: " % distribution)
    assert "host_driver_source: vendor" in str(err)


# ---------------------------------------------------------------- packages: headers, persistenced, extras

@pytest.mark.parametrize("os_info, source, headers", [
    (debian("12"), "distribution", "linux-headers-6.1.0-28-amd64"),
    (debian("12"), "vendor", "linux-headers-6.1.0-28-amd64"),
    (ubuntu("24.04"), "distribution", "linux-headers-6.8.0-45-generic"),
    (rhel("9"), "vendor", "kernel-devel-5.14.0-427.13.1.el9_4.x86_64"),
])
def test_kernel_headers_only_when_asked_and_known(os_info, source, headers):
    assert host_driver.plan(os_info, settings(source=source))["packages"][-1] == headers
    assert headers not in host_driver.plan(os_info, settings(source=source, kernel_headers=False))["packages"]
    assert headers not in host_driver.plan(dict(os_info, kernel=""), settings(source=source))["packages"]
    no_default = settings(source=source)
    del no_default["kernel_headers"]
    assert host_driver.plan(os_info, no_default)["packages"][-1] == headers


@pytest.mark.parametrize("os_info, source, has_package", [
    (debian("12"), "distribution", True),
    (debian("12"), "vendor", False),
    (ubuntu("22.04"), "distribution", False),
    (ubuntu("22.04"), "vendor", False),
    (rhel("8"), "vendor", False),
])
def test_persistenced_package_only_from_debian_non_free(os_info, source, has_package):
    got = host_driver.plan(os_info, settings(source=source))
    assert ("nvidia-persistenced" in got["packages"]) is has_package
    assert got["persistenced_service"] == "nvidia-persistenced"
    off = host_driver.plan(os_info, settings(source=source, persistenced=False))
    assert "nvidia-persistenced" not in off["packages"] and off["persistenced_service"] == ""


def test_extra_packages_come_last():
    got = host_driver.plan(ubuntu("22.04"), settings(extra_packages=["nvidia-fabricmanager-535", "datacenter-gpu-manager"]))
    assert got["packages"][-2:] == ["nvidia-fabricmanager-535", "datacenter-gpu-manager"]


def test_plan_does_not_change_its_inputs():
    os_info, given = debian("12"), settings(extra_packages=["x"])
    before = copy.deepcopy((os_info, given))
    host_driver.plan(os_info, given)
    host_driver.plan(os_info, given)
    assert (os_info, given) == before


# ---------------------------------------------------------------- the apt pin

@pytest.mark.parametrize("branch", ["470", "535", "580"])
def test_apt_pin(branch):
    text = host_driver.apt_pin(branch)
    lines = text.splitlines()
    assert lines[0] == "# Managed by %s: keep the NVIDIA driver on branch %s." % (OWNER, branch), lines
    assert lines[1:] == ["Package: nvidia-* libnvidia-* libcuda* firmware-nvidia-* cuda-drivers*",
                         "Pin: version %s.*" % branch, "Pin-Priority: 1001"]
    assert text.endswith("\n")
    # the pin's glob matches this branch's package versions and not another branch's
    glob = re.compile(re.escape(branch) + r"\..*")
    assert glob.fullmatch("%s.216.01-1~deb12u1" % branch)
    assert not glob.fullmatch("5%s.1-1" % branch)


def test_plan_pin_is_apt_pin():
    assert host_driver.plan(ubuntu("22.04"), settings(branch="570"))["pin"] == host_driver.apt_pin("570")


# ---------------------------------------------------------------- bad settings

@pytest.mark.parametrize("branch, accepted", [
    ("535", True), (535, True), (580, True),  # an integer branch (YAML 535 unquoted) is read as its digits
    ("53", False), ("5350", False), ("535.247.01", False), ("535.247", False), ("abc", False), ("", False),
    (None, False), (535.0, False), (True, False), (" 535", False), ("535-server", False), ("r535", False),
])
def test_branch(branch, accepted):
    if accepted:
        got = host_driver.plan(ubuntu("22.04"), settings(branch=branch))
        assert got["branch"] == str(branch) and got["packages"][0] == "nvidia-headless-%s-server" % branch
        assert isinstance(got["branch"], str) and got["record"]["branch"] == str(branch)
        return
    with pytest.raises(ParamError) as info:
        host_driver.plan(ubuntu("22.04"), settings(branch=branch))
    err = info.value
    assert err.field == "gpu_platform_driver_branch"
    assert str(err).startswith("gpu_platform_driver_branch: %r is not a driver branch number. Fix: " % (branch,))
    assert "three-digit branch" in str(err)


def test_missing_branch():
    given = settings()
    del given["branch"]
    with pytest.raises(ParamError) as info:
        host_driver.plan(debian("12"), given)
    assert info.value.field == "gpu_platform_driver_branch" and "None is not a driver branch number" in str(info.value)


def test_a_branch_with_a_trailing_newline_is_refused():
    with pytest.raises(ParamError):
        host_driver.plan(ubuntu("22.04"), settings(branch="535\n"))


@pytest.mark.parametrize("changes, field, words, fix", [
    ({"source": "nvidia"}, "host_driver_source", "'nvidia' is not a driver source", "distribution"),
    ({"source": None}, "host_driver_source", "None is not a driver source", "vendor"),
    ({"source": "Vendor"}, "host_driver_source", "'Vendor' is not a driver source", "vendor"),
    ({"kernel_modules": "closed"}, "host_driver_kernel_modules", "'closed' is not a kernel module flavour",
     "use proprietary or open"),
    ({"kernel_modules": None}, "host_driver_kernel_modules", "None is not a kernel module flavour", "open"),
    ({"kernel_modules": "Open"}, "host_driver_kernel_modules", "'Open' is not a kernel module flavour", "open"),
    # the branch is checked first
    ({"branch": "5", "source": "nvidia"}, "gpu_platform_driver_branch", "'5' is not a driver branch number", "535"),
])
def test_bad_settings_name_the_variable(changes, field, words, fix):
    with pytest.raises(ParamError) as info:
        host_driver.plan(debian("12"), settings(**changes))
    err = info.value
    assert err.field == field and str(err).startswith(field + ": ")
    assert words in str(err)
    assert fix in str(err).split(". Fix: ", 1)[1]


def test_kernel_modules_defaults_to_proprietary():
    given = settings()
    del given["kernel_modules"]
    got = host_driver.plan(debian("12"), given)
    assert got["kernel_modules"] == "proprietary" and got["packages"][0] == "nvidia-kernel-dkms"


# ---------------------------------------------------------------- unsupported systems

@pytest.mark.parametrize("os_info, source, named", [
    ({"family": "Suse", "distribution": "SLES", "major": "15", "version": "15.5", "architecture": "x86_64"},
     "vendor", "SLES 15 (Suse family)"),
    (debian("10"), "distribution", "Debian 10 (Debian family)"),
    (debian("10"), "vendor", "Debian 10 (Debian family)"),
    (ubuntu("18.04"), "distribution", "Ubuntu 18 (Debian family)"),
    (ubuntu("18.04"), "vendor", "Ubuntu 18 (Debian family)"),
    (ubuntu("23.10"), "distribution", "Ubuntu 23 (Debian family)"),
    (rhel("7"), "vendor", "RedHat 7 (RedHat family)"),
    (rhel("7"), "distribution", "RedHat 7 (RedHat family)"),
    (rhel("10"), "vendor", "RedHat 10 (RedHat family)"),
    (rhel("9", "Fedora"), "vendor", "Fedora 9 (RedHat family)"),
    ({"family": "Debian", "distribution": "Linuxmint", "major": "21", "version": "21.3", "architecture": "x86_64"},
     "distribution", "Linuxmint 21 (Debian family)"),
    (debian("12", arch="ppc64le"), "vendor", "Debian 12 (Debian family)"),
    (rhel("9", arch="s390x"), "vendor", "RedHat 9 (RedHat family)"),
    (ubuntu("22.04", arch="armv7l"), "vendor", "Ubuntu 22 (Debian family)"),
])
def test_unsupported_systems_are_named(os_info, source, named):
    with pytest.raises(ParamError) as info:
        host_driver.plan(os_info, settings(source=source))
    err = info.value
    assert err.field == "the host's operating system"
    assert str(err).startswith("the host's operating system: %s is not supported. Fix: " % named)
    fix = str(err).split(". Fix: ", 1)[1]
    assert "Debian 11/12/13" in fix and "Ubuntu 20.04/22.04/24.04" in fix and "8/9" in fix
    assert "gpu_platform_driver_mode: host" in fix


@pytest.mark.parametrize("os_info, branch, source", [
    (debian("11"), "470", "distribution"),   # -> nvidia-open-kernel-dkms on bullseye (470)
    (ubuntu("22.04"), "470", "distribution"),  # -> nvidia-headless-470-server-open
    (rhel("8"), "470", "vendor"),             # -> @nvidia-driver:470-open
], ids=["debian11", "ubuntu2204", "rhel8"])
def test_open_kernel_modules_before_515_are_refused(os_info, branch, source):
    with pytest.raises(ParamError) as info:
        host_driver.plan(os_info, settings(branch=branch, source=source, kernel_modules="open"))
    assert info.value.field == "host_driver_kernel_modules"


# ---------------------------------------------------------------- what is missing on the host


def test_missing_lists_only_what_the_host_lacks():
    installed = {"nvidia-kernel-dkms": "535.261.03-1", "nvidia-smi": "535.261.03-1", "libcuda1": "535.261.03-1"}
    got = host_driver.plan(debian("12"), settings(kernel_headers=False), installed)
    assert got["missing"] == ["libnvidia-ml1", "nvidia-persistenced"]
    assert got["packages"][:3] == ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1"]


def test_nothing_missing_on_a_converged_host_and_everything_without_facts():
    full = host_driver.plan(debian("12"), settings(kernel_headers=False))
    assert full["missing"] == full["packages"]
    installed = {name: "535.261.03-1" for name in full["packages"]}
    assert host_driver.plan(debian("12"), settings(kernel_headers=False), installed)["missing"] == []


def test_a_dnf_module_stream_is_always_left_to_dnf():
    got = host_driver.plan(rhel("9"), settings(source="vendor", kernel_headers=False), {"nvidia-driver": "535"})
    assert got["missing"] == ["@nvidia-driver:535-dkms"]
