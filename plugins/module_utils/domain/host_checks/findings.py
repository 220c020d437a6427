# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The host preflight's verdict: what each GPU host's readings mean for what the platform will do to it.

Private to the collection: not a public API. Pure: standard library only, no I/O.

``evaluate`` takes each host's ``gpu_host_checks`` fact (host_checks.readings.summarize, read by gpu_host_facts with
``checks``) and what the platform will do (who owns the driver, RDMA, the Network Operator's NIC driver, MIG, the
GPU Operator's values: GDS, GDRCopy, precompiled drivers, the toolkit's config source) and returns findings, each
``{id, host, severity, found, why, fix, issue}``. A blocking finding stops the run before any write; a warning is
printed; ``gpu_platform_host_checks_skip`` acknowledges an id (its findings are then listed as skipped). An unknown
reading never blocks. docs/preflight.md describes every check; CHECKS is the list it documents.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import readings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

SKIP_VARIABLE = "gpu_platform_host_checks_skip"
BLOCKING, WARNING = "blocking", "warning"
# Every check: its id (stable: gpu_platform_host_checks_skip names it) and the reports it comes from.
CHECKS = {
    "containerd-dropin-version": "NVIDIA/nvidia-container-toolkit#1222, NVIDIA/gpu-operator#1323, NVIDIA/aicr#1688",
    "mig-blocked-by-nvidia-drm": "NVIDIA/mig-parted#181, NVIDIA/gpu-operator#2376",
    "mig-reset-in-vm": "NVIDIA/gpu-operator#1606",
    "nouveau-loaded": "gpu_platform.cluster issue 34",
    "secure-boot-unsigned": "NVIDIA/gpu-operator#1726, gpu_platform.cluster issue 34",
    "driver-already-loaded": "gpu_platform.cluster issue 34",
    "no-kernel-headers": "NVIDIA/gpu-operator#2884, NVIDIA/gpu-operator#1203",
    "default-route-on-mlx5": "Mellanox/network-operator#2176",
    "iommu-blocks-p2p": "gpu_platform.cluster issue 34",
    "acs-enabled": "gpu_platform.cluster issue 34",
    "gds-unsupported": "NVIDIA/gpu-operator#2911, NVIDIA/gpu-operator#2416",
}
# Fixes that domain.diagnose also gives when it finds the same failure on a running cluster (one text for both).
CONTAINERD_SOURCE_FIX = ("set RUNTIME_CONFIG_SOURCE=file in gpu_operator_extra_values.toolkit.env (the toolkit then "
                         "writes the root file's version), or migrate the root config to the current version")
MIG_DRM_FIX = ("stop what uses the display (the display manager: systemctl isolate multi-user.target), unload them "
               "(modprobe -r nvidia_drm nvidia_modeset) and keep nvidia_drm from loading at boot (blacklist it in "
               "/etc/modprobe.d), or take this host out of the MIG pools")
NOUVEAU_FIX = ("blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d/"
               "blacklist-nouveau.conf), rebuild the initramfs (update-initramfs -u or dracut -f) and reboot")
SECURE_BOOT_SIGN_FIX = ("sign the module with a key enrolled in the MOK list (or install the distribution's signed "
                        "modules), or turn Secure Boot off")
HEADERS_OPERATOR_FIX = ("let the host own the driver (gpu_platform_driver_mode: host, with a driver installed on it), "
                        "boot a kernel whose headers the mirror has, or set driver.usePrecompiled in "
                        "gpu_operator_extra_values where NVIDIA publishes a precompiled driver for this kernel")
# The OS the GPU Operator's GDS (nvidia-fs) and GDRCopy (gdrdrv) driver images are published for (gpu-operator#2911:
# Ubuntu, and OpenShift's Red Hat CoreOS).
GDS_OS = ("ubuntu", "rhcos")
MODES = ("host", "operator", "auto")


def check_skip(skip):
    """``gpu_platform_host_checks_skip``: a list of known check ids."""
    if skip is None:
        return []
    if not isinstance(skip, list):
        raise ParamError(SKIP_VARIABLE, "%r is not a list" % (skip,), "give a list of check ids, such as "
                         "[no-kernel-headers] (docs/preflight.md)")
    for index, item in enumerate(skip):
        if item not in CHECKS:
            raise ParamError("%s[%d]" % (SKIP_VARIABLE, index), "%r is not a host check id" % (item,),
                             "use one of %s" % ", ".join(sorted(CHECKS)))
    return list(skip)


def _get(values, *path):
    for key in path:
        if not isinstance(values, dict):
            return None
        values = values.get(key)
    return values


def operator_settings(values):
    """What the GPU Operator's values (gpu_operator_extra_values) say that the checks need."""
    env = _get(values, "toolkit", "env") or []
    source = next((str(e.get("value", "")) for e in env if isinstance(e, dict) and e.get("name") ==
                   "RUNTIME_CONFIG_SOURCE"), "")
    return {
        "precompiled": _get(values, "driver", "usePrecompiled") is True,
        "kernel_module_type": _get(values, "driver", "kernelModuleType") or "auto",
        "gds": _get(values, "gds", "enabled") is True,
        "gdrcopy": _get(values, "gdrcopy", "enabled") is True,
        "toolkit": _get(values, "toolkit", "enabled") is not False,
        "config_source_file": source.split(",")[0].strip() == "file",
    }


def owner(mode, cloud_driver, checks):
    """Who will own this host's driver: host or operator. Under auto, as the decision will find it: a host with a
    driver of its own (loaded, packaged, or nvidia-smi) keeps it, one with the GPU Operator's driver root or none
    gets the operator's (gpu_driver_mode refuses a mix later, naming the nodes)."""
    if mode in ("host", "operator"):
        return mode
    driver = checks.get("driver") or {}
    if driver.get("operator_root"):
        return "operator"
    evidence = {"driver_loaded": driver.get("loaded"), "driver_version": driver.get("version"),
                "driver_packages": driver.get("packages"), "nvidia_smi": driver.get("nvidia_smi")}
    return "host" if cloud_driver == "present" or gpu_driver_mode.host_driver_findings(evidence) else "operator"


def _builds(who, checks, operator):
    """Whether a driver will be built on this host for its kernel: by the GPU Operator's driver container (not
    precompiled, not running yet), or by host_driver's DKMS install where no driver is loaded."""
    driver = checks.get("driver") or {}
    if who == "operator":
        return not operator["precompiled"] and not driver.get("operator_root")
    return not driver.get("loaded")


def _finding(check_id, severity, found, why, fix):
    return {"id": check_id, "severity": severity, "found": found, "why": why, "fix": fix, "issue": CHECKS[check_id]}


def _containerd(checks, operator):
    containerd = checks.get("containerd") or {}
    if not containerd.get("config"):
        return []
    root_version = containerd.get("version") or 1
    higher = [d for d in containerd.get("dropins") or [] if (d.get("version") or 0) > root_version]
    if higher:
        return [_finding(
            "containerd-dropin-version", BLOCKING,
            "containerd drop-in %s has version = %s, higher than /etc/containerd/config.toml's version = %s" % (
                ", ".join(d["path"] for d in higher), max(d["version"] for d in higher), root_version),
            "containerd refuses a drop-in whose config version is higher than the root file's and exits at its next "
            "restart (the GPU Operator's toolkit restarts it): the node goes NotReady",
            "rewrite the drop-in at version %s (or move the root config to the drop-in's version with containerd "
            "config migrate), or remove it" % root_version)]
    major = containerd.get("binary_major")
    if operator["toolkit"] and not operator["config_source_file"] and major and major >= 2 \
            and root_version < 3 and not (checks.get("driver") or {}).get("toolkit_packages"):
        return [_finding(
            "containerd-dropin-version", WARNING,
            "containerd %s.x with /etc/containerd/config.toml at version = %s" % (major, root_version),
            "the GPU Operator's container toolkit may write its drop-in at the version containerd config dump "
            "migrates to (3 or 4), higher than the root file's, and containerd then stops",
            CONTAINERD_SOURCE_FIX)]
    return []


def _mig(checks, platform):
    if not platform.get("mig") or not checks.get("gpus"):
        return []
    out = []
    modules = checks.get("modules") or {}
    holders = []
    if modules.get("nvidia_drm"):
        holders.append("nvidia_drm is loaded")
    if modules.get("nvidia_modeset_users") or (modules.get("nvidia_modeset_refcount") or 0) > 0:
        users = ", ".join(modules.get("nvidia_modeset_users") or []) or "%s users" % modules.get(
            "nvidia_modeset_refcount")
        holders.append("nvidia_modeset is in use (by %s)" % users)
    if holders:
        out.append(_finding(
            "mig-blocked-by-nvidia-drm", BLOCKING, "; ".join(holders),
            "MIG mode cannot change while the display modules hold the GPU: the MIG manager's reconfiguration fails "
            "and the GPU sharing layer's MIG pools never get their layout",
            MIG_DRM_FIX))
    if (checks.get("os") or {}).get("virtual"):
        out.append(_finding(
            "mig-reset-in-vm", WARNING, "the host is a virtual machine (its CPU flags say hypervisor)",
            "turning MIG mode on needs a GPU reset, which GPU passthrough may not allow; the MIG manager then "
            "waits for a reset or reboot that does not come",
            "check that the hypervisor lets the VM reset the GPU (nvidia-smi -r), or turn MIG mode on from the "
            "hypervisor's side; then acknowledge this with %s: [mig-reset-in-vm]" % SKIP_VARIABLE))
    return out


def _driver(checks, who, operator):
    out = []
    driver = checks.get("driver") or {}
    modules = checks.get("modules") or {}
    if modules.get("nouveau"):
        out.append(_finding(
            "nouveau-loaded", BLOCKING, "the nouveau module is loaded",
            "nouveau holds the GPU, so the NVIDIA module (host_driver's or the GPU Operator's driver container's) "
            "cannot bind it and its install fails",
            NOUVEAU_FIX))
    if who == "operator" and not driver.get("operator_root") and (driver.get("loaded") or driver.get("packages")):
        what = []
        if driver.get("loaded"):
            what.append("driver %s (%s kernel module) is loaded" % (
                driver.get("version") or "?", driver.get("module_type") or "unknown"))
        if driver.get("packages"):
            what.append("driver packages are installed: %s" % ", ".join(sorted(driver["packages"])))
        elif driver.get("loaded"):
            what.append("from no package (a driver installed outside the package manager)")
        out.append(_finding(
            "driver-already-loaded", BLOCKING, ", ".join(what),
            "the GPU Operator is asked to own the driver, but its driver container cannot load its module while "
            "the host's holds the GPU: the driver pod restarts forever and the node gets no GPU capacity",
            "let the host own the driver (gpu_platform_driver_mode: host, or auto), or remove the host's driver "
            "(its packages, or whatever loads it) and reboot"))
    secure = checks.get("secure_boot")
    if secure and _builds(who, checks, operator):
        builder = ("the GPU Operator's driver container" if who == "operator"
                   else "host_driver's DKMS install")
        out.append(_finding(
            "secure-boot-unsigned", BLOCKING,
            "Secure Boot is on and no NVIDIA module is loaded yet; %s builds one" % builder,
            "a module built on the host is not signed with a key the firmware trusts, so the kernel refuses to "
            "load it (Loading of unsigned module is rejected) and the node gets no GPU",
            "turn Secure Boot off, or sign the module with a key enrolled in the host's MOK list (host driver: "
            "enroll the DKMS key with mokutil --import and reboot) and acknowledge this with %s: "
            "[secure-boot-unsigned]" % SKIP_VARIABLE))
    elif secure and driver.get("unsigned"):
        out.append(_finding(
            "secure-boot-unsigned", WARNING,
            "Secure Boot is on and the loaded nvidia module is unsigned (taint E, or modinfo shows no signer)",
            "it loads only because module signatures are not enforced; a kernel that enforces them (lockdown) "
            "refuses it at the next boot and the node loses its GPUs",
            SECURE_BOOT_SIGN_FIX))
    return out


def _headers(checks, who, operator):
    if not _builds(who, checks, operator):
        return []
    kernel = checks.get("kernel") or {}
    release = kernel.get("release") or ""
    candidate = kernel.get("headers_candidate")
    if not release or kernel.get("headers") or candidate not in (None, "none"):
        return []
    if candidate == "none":
        where, severity = "the repositories have none (apt-cache policy linux-headers-%s: no candidate)" % release, \
            BLOCKING
    elif not kernel.get("modules_dir"):
        where, severity = ("none on disk and no /lib/modules/%s at all: a kernel not installed from a package, "
                           "whose headers no repository has" % release), BLOCKING
    else:
        where, severity = "none on disk; whether the repositories have them is unknown (no apt-cache)", WARNING
    if who == "operator":
        why = ("the GPU Operator's driver container compiles the driver against this kernel's headers, fetched from "
               "the node's package mirror, and no precompiled driver is asked for: without them the driver never "
               "builds and the node gets no GPU")
        fix = HEADERS_OPERATOR_FIX
    else:
        why = ("host_driver installs linux-headers-%s so that DKMS builds the driver for the running kernel; "
               "the install fails without them" % release)
        fix = "boot a kernel whose headers the host's repositories have, or add the repository that has them"
    return [_finding("no-kernel-headers", severity, "no kernel headers for %s: %s" % (release, where), why, fix)]


def _rdma(checks, platform):
    out = []
    if platform.get("nic_driver"):
        on_mlx5 = [r for r in checks.get("default_routes") or [] if r.get("mlx5")]
        if on_mlx5:
            out.append(_finding(
                "default-route-on-mlx5", BLOCKING,
                "the default route is on %s" % ", ".join(
                    "%s (%s)" % (r["interface"], ", ".join("%s: %s" % item for item in sorted(r["drivers"].items())))
                    for r in on_mlx5),
                "the Network Operator's DOCA driver container reloads mlx5_core as it installs; the port carrying "
                "the node's management traffic goes down and the node goes NotReady before the driver is ready",
                "carry the default route on a NIC that is not a ConnectX port, or keep the hosts' own NIC driver "
                "(gpu_platform_host_mofed: true with MOFED on the hosts, or network_operator_ofed_driver: false)"))
    if not platform.get("rdma") or not checks.get("gpus") or (checks.get("os") or {}).get("virtual"):
        return out
    iommu = checks.get("iommu") or {}
    domains = iommu.get("gpu_domains") or {}
    translated = sorted(address for address, kind in domains.items() if kind in readings.IOMMU_TRANSLATED)
    fix = ("boot with the IOMMU in passthrough (iommu=pt, with intel_iommu=on or amd_iommu=on) or off, and reboot")
    why = ("GPUDirect RDMA moves data between the NIC and GPU memory peer to peer; an IOMMU that translates DMA "
           "makes those transfers fault or go through host memory, so the RDMA smoke test (nccl-tests) fails or "
           "runs slow")
    if translated:
        out.append(_finding("iommu-blocks-p2p", BLOCKING, "the IOMMU translates DMA for GPU(s) %s (domain type %s)" % (
            ", ".join(translated), ", ".join(sorted({domains[a] for a in translated}))), why, fix))
    elif iommu.get("groups") and iommu.get("passthrough") is not True and all(k is None for k in domains.values()):
        out.append(_finding("iommu-blocks-p2p", WARNING,
                            "the IOMMU is on (%s groups) and its mode is unknown (no iommu_group/type, no iommu=pt "
                            "on the kernel command line)" % iommu["groups"], why, fix))
    acs = checks.get("acs") or {}
    if acs.get("redirecting"):
        out.append(_finding(
            "acs-enabled", BLOCKING,
            "ACS redirects peer-to-peer traffic on PCIe port(s) %s between the GPUs and the ConnectX NICs" % (
                ", ".join(acs["redirecting"])),
            "peer-to-peer requests between a GPU and a NIC under the same switch are sent up to the root complex, "
            "so GPUDirect RDMA is slow or fails",
            "turn ACS off on those ports (the BIOS setting, or setpci -s <port> ECAP_ACS+0x6.w=0000 at every boot); "
            "bare metal only"))
    elif acs.get("readable") is False:
        out.append(_finding(
            "acs-enabled", WARNING,
            "ACS on PCIe port(s) %s between the GPUs and the ConnectX NICs could not be read (their extended config "
            "space is root's)" % ", ".join(acs.get("bridges") or []),
            "ACS that redirects peer-to-peer traffic makes GPUDirect RDMA slow or fail",
            "read the hosts as root (become: true), or check ACSCtl with lspci -vvv"))
    return out


def _gds(checks, who, operator):
    wanted = [name for name in ("gds", "gdrcopy") if operator[name]]
    if not wanted or not checks.get("gpus"):
        return []
    names = " and ".join({"gds": "GDS", "gdrcopy": "GDRCopy"}[w] for w in wanted)
    if who != "operator":
        return [_finding(
            "gds-unsupported", WARNING, "%s asked of the GPU Operator while the host owns the driver" % names,
            "the GPU Operator runs GDS (nvidia-fs) and GDRCopy (gdrdrv) in its driver pod, which it does not run "
            "when the host owns the driver: they are not installed",
            "install nvidia-fs and gdrdrv on the hosts, or let the GPU Operator own the driver")]
    os_release = checks.get("os") or {}
    os_id = (os_release.get("ID") or "").lower()
    if os_id not in GDS_OS:
        return [_finding(
            "gds-unsupported", BLOCKING,
            "%s asked on %s" % (names, os_release.get("PRETTY_NAME") or os_id or "an unknown OS"),
            "the GPU Operator publishes the nvidia-fs and gdrdrv images for Ubuntu (and OpenShift) only; elsewhere "
            "their containers crash-loop, the driver pod never becomes ready and the node loses its GPUs",
            "turn %s off for these hosts (gpu_operator_extra_values), or run them on Ubuntu" % names)]
    module = operator["kernel_module_type"]
    if "gds" in wanted and module == "auto" and (checks.get("driver") or {}).get("operator_root"):
        module = (checks.get("driver") or {}).get("module_type") or "auto"
    if "gds" in wanted and module == "proprietary":
        return [_finding(
            "gds-unsupported", BLOCKING, "GDS asked with the proprietary NVIDIA kernel module",
            "GDS (nvidia-fs) needs NVIDIA's open kernel modules",
            "set driver.kernelModuleType: open in gpu_operator_extra_values")]
    return []


def check_platform(platform):
    mode = platform.get("driver_mode", "auto")
    if mode not in MODES:
        raise ParamError("gpu_platform_driver_mode", "%r is not a driver mode" % (mode,), "use host, operator or auto")
    return mode


def evaluate_host(checks, platform):
    """Every finding of one host (``checks``: its gpu_host_checks fact), unsorted by severity."""
    operator = operator_settings(platform.get("gpu_operator_values") or {})
    who = owner(check_platform(platform), platform.get("cloud_driver", "unknown"), checks)
    found = (_containerd(checks, operator) + _mig(checks, platform) + _driver(checks, who, operator)
             + _headers(checks, who, operator) + _rdma(checks, platform) + _gds(checks, who, operator))
    host = checks.get("node_name") or "?"
    return [dict(f, host=host) for f in found]


def line(finding):
    """One line: ``<host>: [<id>] <what was found>: <why>. Fix: <how> (see <reports>)``."""
    return "%s: [%s] %s: %s. Fix: %s (see %s)" % (
        finding["host"], finding["id"], finding["found"], finding["why"], finding["fix"], finding["issue"])


def evaluate(hosts, platform, skip=None):
    """The verdict on every host: {blocking, warnings, skipped (findings), lines (blocking), warning_lines,
    checked (host names), message (one text naming every blocking finding of every host, or '')}."""
    skip = check_skip(skip)
    findings = [f for checks in sorted(hosts or [], key=lambda c: c.get("node_name") or "")
                for f in evaluate_host(checks, platform)]
    kept = [f for f in findings if f["id"] not in skip]
    blocking = [f for f in kept if f["severity"] == BLOCKING]
    warnings = [f for f in kept if f["severity"] == WARNING]
    lines = [line(f) for f in blocking]
    message = ""
    if lines:
        message = ("%d blocking finding(s) on the GPU hosts, before anything was written (acknowledge one with %s: "
                   "[<id>], see docs/preflight.md):\n%s" % (len(lines), SKIP_VARIABLE, "\n".join(lines)))
    return {
        "blocking": blocking, "warnings": warnings, "skipped": [f for f in findings if f["id"] in skip],
        "lines": lines, "warning_lines": [line(f) for f in warnings],
        "checked": sorted(c.get("node_name") or "?" for c in hosts or []), "message": message,
    }
