# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The host_driver role's plan: which repository, packages, pin and files put a pinned NVIDIA driver
branch on a host of a given distribution.

Private to the collection: not a public API. Pure: standard library only.
Facts: Debian ships one branch per release in non-free (11: 470, 12: 535, 13: 550), built by DKMS and
installed as ``nvidia-current*`` modules (so nvidia-peermem is ``nvidia-current-peermem``). Ubuntu
ships several ``-server`` branches (``nvidia-headless-NNN-server``). RHEL ships none; NVIDIA's CUDA
repository has one ``nvidia-driver`` module stream per branch (``NNN-dkms``, ``NNN-open``) on RHEL 8/9.
On Debian/Ubuntu, NVIDIA's CUDA repository is enabled by its ``cuda-keyring`` package and has
``cuda-drivers-NNN``.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SOURCES = ("distribution", "vendor")
KERNEL_MODULES = ("proprietary", "open")
BRANCH = re.compile(r"\d{3}")
# NVIDIA's open GPU kernel modules were first published with branch 515.
OPEN_SINCE = 515
DEBIAN_BRANCH = {"11": "470", "12": "535", "13": "550"}
DEBIAN_CODENAME = {"11": "bullseye", "12": "bookworm", "13": "trixie"}
UBUNTU_VERSIONS = ("20.04", "22.04", "24.04")
RHEL_LIKE = ("RedHat", "Rocky", "AlmaLinux", "OracleLinux", "CentOS")
RHEL_MAJORS = ("8", "9")
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}
KEYRING = "cuda-keyring_1.1-1_all.deb"
OWNER = "gpu_platform.cluster.host_driver"


# The settings' variables: the branch is the platform contract's (the DRA driver reads it too), the rest the role's.
CONTRACT_FIELDS = {"branch": "gpu_platform_driver_branch"}


def _field(name):
    return CONTRACT_FIELDS.get(name, "host_driver_" + name)


def check_settings(settings):
    branch = str(settings.get("branch", ""))
    if not BRANCH.fullmatch(branch):
        raise ParamError(_field("branch"), "%r is not a driver branch number" % (settings.get("branch"),),
                         "give the three-digit branch, such as 535 or 580 (not a full version like 535.247.01)")
    source = settings.get("source")
    if source not in SOURCES:
        raise ParamError(_field("source"), "%r is not a driver source" % (source,),
                         "use distribution (the OS vendor's packages) or vendor (NVIDIA's CUDA repository)")
    flavour = settings.get("kernel_modules", "proprietary")
    if flavour not in KERNEL_MODULES:
        raise ParamError(_field("kernel_modules"), "%r is not a kernel module flavour" % (flavour,),
                         "use proprietary or open")
    if flavour == "open" and int(branch) < OPEN_SINCE:
        raise ParamError(_field("kernel_modules"), "open kernel modules start with branch %d, not %s" % (
            OPEN_SINCE, branch), "use proprietary with branch %s, or a branch of %d or later" % (branch, OPEN_SINCE))
    return branch, source, flavour


def _unsupported(os_info):
    return ParamError(
        "the host's operating system", "%s %s (%s family) is not supported" % (
            os_info.get("distribution"), os_info.get("major"), os_info.get("family")),
        "use Debian 11/12/13, Ubuntu %s, or RHEL/Rocky/AlmaLinux %s, or install the driver yourself and use "
        "gpu_platform_driver_mode: host without the host_driver role" % (
            "/".join(UBUNTU_VERSIONS), "/".join(RHEL_MAJORS)))


def _debian(os_info, branch, source, flavour, settings):
    major = str(os_info.get("major"))
    if major not in DEBIAN_BRANCH:
        raise _unsupported(os_info)
    if source == "distribution":
        shipped = DEBIAN_BRANCH[major]
        if branch != shipped:
            raise ParamError(_field("branch"), "Debian %s ships driver branch %s in non-free, not %s" % (
                major, shipped, branch), "set gpu_platform_driver_branch: %s, or host_driver_source: vendor for NVIDIA's "
                "repository" % shipped)
        codename = DEBIAN_CODENAME[major]
        kernel = "nvidia-open-kernel-dkms" if flavour == "open" else "nvidia-kernel-dkms"
        packages = [kernel, "nvidia-smi", "libcuda1", "libnvidia-ml1"]
        repository = {"kind": "apt_sources", "file": "/etc/apt/sources.list.d/gpu-platform-debian-non-free.sources",
                      "content": _debian_sources(settings, codename, major)}
        peermem = "nvidia-current-peermem"
    else:
        repository = _cuda_keyring(settings, "debian%s" % major, os_info)
        packages = _vendor_apt_packages(branch, flavour)
        peermem = "nvidia-peermem"
    return packages, repository, peermem


def _debian_sources(settings, codename, major):
    # non-free-firmware exists from Debian 12 on.
    components = "contrib non-free" if major == "11" else "contrib non-free non-free-firmware"
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    return ("# Managed by %s: the non-free components that carry the NVIDIA driver.\n"
            "Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: %s\nSigned-By: %s\n\n"
            "Types: deb\nURIs: %s\nSuites: %s-security\nComponents: %s\nSigned-By: %s\n" % (
                OWNER, settings.get("debian_mirror"), codename, codename, components, keyring,
                settings.get("debian_security_mirror"), codename, components, keyring))


def _cuda_keyring(settings, distro, os_info):
    arch = ARCH.get(str(os_info.get("architecture")))
    if arch is None:
        raise _unsupported(os_info)
    base = "%s/%s/%s" % (str(settings.get("vendor_repo_url")).rstrip("/"), distro, arch)
    return {"kind": "cuda_keyring", "url": "%s/%s" % (base, KEYRING), "base": base}


def _vendor_apt_packages(branch, flavour):
    """NVIDIA's CUDA repository: ``nvidia-open`` (open modules) or ``cuda-drivers-NNN`` (proprietary); the
    apt pin keeps either on the branch."""
    return ["nvidia-open"] if flavour == "open" else ["cuda-drivers-%s" % branch]


def _ubuntu(os_info, branch, source, flavour, settings):
    version = str(os_info.get("version"))
    if version not in UBUNTU_VERSIONS:
        raise _unsupported(os_info)
    if source == "distribution":
        suffix = "-server-open" if flavour == "open" else "-server"
        packages = ["nvidia-headless-%s%s" % (branch, suffix), "nvidia-utils-%s-server" % branch]
        repository = {"kind": "none"}
    else:
        repository = _cuda_keyring(settings, "ubuntu%s" % version.replace(".", ""), os_info)
        packages = _vendor_apt_packages(branch, flavour)
    return packages, repository, "nvidia-peermem"


def _redhat(os_info, branch, source, flavour, settings):
    major = str(os_info.get("major"))
    if major not in RHEL_MAJORS:
        raise _unsupported(os_info)
    if source == "distribution":
        raise ParamError(_field("source"), "%s ships no NVIDIA driver" % os_info.get("distribution"),
                         "set host_driver_source: vendor (NVIDIA's CUDA repository)")
    arch = ARCH.get(str(os_info.get("architecture")))
    if arch is None:
        raise _unsupported(os_info)
    base = "%s/rhel%s/%s" % (str(settings.get("vendor_repo_url")).rstrip("/"), major, arch)
    repository = {"kind": "repo_file", "url": "%s/cuda-rhel%s.repo" % (base, major),
                  "file": "/etc/yum.repos.d/cuda-rhel%s.repo" % major}
    stream = "nvidia-driver:%s-%s" % (branch, "open" if flavour == "open" else "dkms")
    packages = ["@" + stream]
    return packages, dict(repository, module_stream=stream), "nvidia-peermem"


def plan(os_info, settings, installed=None):
    """``os_info``: {family, distribution, major, version, architecture, kernel}; ``settings``: the role's
    variables without the ``host_driver_`` prefix; ``installed``: {package: version} of the host (gpu_host_facts),
    so that ``missing`` lists what the package manager has to install (a dnf module stream is always listed: dnf
    itself is idempotent there). Raises ParamError naming the variable or the OS."""
    branch, source, flavour = check_settings(settings)
    family = os_info.get("family")
    if family == "Debian" and os_info.get("distribution") == "Debian":
        packages, repository, peermem = _debian(os_info, branch, source, flavour, settings)
    elif family == "Debian" and os_info.get("distribution") == "Ubuntu":
        packages, repository, peermem = _ubuntu(os_info, branch, source, flavour, settings)
    elif family == "RedHat" and os_info.get("distribution") in RHEL_LIKE:
        packages, repository, peermem = _redhat(os_info, branch, source, flavour, settings)
    else:
        raise _unsupported(os_info)
    manager = "apt" if family == "Debian" else "dnf"
    if settings.get("persistenced", True) and manager == "apt" and source == "distribution" and \
            os_info.get("distribution") == "Debian":
        packages.append("nvidia-persistenced")
    if settings.get("kernel_headers", True) and os_info.get("kernel"):
        packages.append(("linux-headers-%s" if manager == "apt" else "kernel-devel-%s") % os_info["kernel"])
    packages.extend(settings.get("extra_packages") or [])
    out = {
        "manager": manager,
        "branch": branch,
        "source": source,
        "kernel_modules": flavour,
        "repository": repository,
        "packages": packages,
        "missing": [p for p in packages if installed is None or p.startswith("@") or p not in installed],
        "peermem_module": peermem,
        "persistenced_service": "nvidia-persistenced" if settings.get("persistenced", True) else "",
        "initramfs": ["update-initramfs", "-u"] if manager == "apt" else ["dracut", "--force"],
        "record": {"managed_by": OWNER, "branch": branch, "source": source, "kernel_modules": flavour,
                   "peermem_module": peermem},
    }
    if manager == "apt":
        out["pin"] = apt_pin(branch)
    return out


def apt_pin(branch):
    """An apt preferences file that keeps every NVIDIA driver package on ``branch``: the branch's
    versions get priority 1001, so neither an upgrade nor another branch's higher version replaces them."""
    return ("# Managed by %s: keep the NVIDIA driver on branch %s.\n"
            "Package: nvidia-* libnvidia-* libcuda* firmware-nvidia-* cuda-drivers*\n"
            "Pin: version %s.*\n"
            "Pin-Priority: 1001\n" % (OWNER, branch, branch))
