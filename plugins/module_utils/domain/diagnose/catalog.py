# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The known failure signatures of a GPU platform: what each matches, its cause, its fix and where it is reported.

Private to the collection: not a public API. Pure: standard library only, no I/O.

One entry per stable id (docs/diagnose.md lists them). ``logs``: regular expressions searched in every log line read
(pods' container logs, nodes' journal and dmesg lines, events' messages); ``matches`` says, for the docs, what else
``findings.diagnose`` reads for the id (a pod's state, a node's label, allocatable against capacity, a DaemonSet's
counts). The log strings and references are those of the upstream research (../shared/research/upstream-2026-11.md,
section 3, with its row number). Where the host preflight (domain.host_checks) knows the same failure, its fix text
is the one given here.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import findings as host

TROUBLESHOOTING = "NVIDIA/gpu-operator docs troubleshooting.rst"
MIG_STATE, UPGRADE_STATE = "nvidia.com/mig.config.state", "nvidia.com/gpu-driver-upgrade-state"


def _entry(matches, cause, fix, reference, logs=()):
    return {"matches": matches, "cause": cause, "fix": fix, "reference": reference,
            "logs": tuple(re.compile(p) for p in logs)}


SIGNATURES = {
    "driver-not-ready": _entry(
        "an operand pod on a node stuck in Init while that node's driver pod is not ready, or the validator's "
        "'waiting for nvidia container stack to be setup'",
        "the driver pod on this node is not ready (its build or load failed), so every operand waits on it",
        "fix the driver pod: read its nvidia-driver-ctr and k8s-driver-manager logs and dmesg (NVRM, Xid); check the "
        "node reaches its package mirror; the other findings on this node may name the reason",
        "%s 'GPU Operator pods are stuck in Init'; NVIDIA/gpu-operator#378, #448, #1982 (research section 3, row 1)"
        % TROUBLESHOOTING,
        logs=(r"waiting for nvidia container stack to be setup",)),
    "driver-no-kernel-headers": _entry(
        "the driver container's log", "the running kernel has no headers or precompiled driver package in the "
        "node's repositories (a fresh kernel from unattended upgrades, a custom kernel, an air-gapped node)",
        host.HEADERS_OPERATOR_FIX + "; pin the kernel and turn unattended kernel upgrades off",
        "NVIDIA/gpu-operator#85, #155, #457, #541; %s (research section 3, row 2)" % host.CHECKS["no-kernel-headers"],
        logs=(r"Could not resolve Linux kernel version", r"Unable to locate package linux-(headers|objects-nvidia)-\S+",
              r"linux-modules-extra-\S+.*not installable")),
    "containerd-dropin-version": _entry(
        "containerd's journal or the toolkit's log", "the container toolkit wrote its containerd drop-in at a config "
        "version higher than the root config's (or an old toolkit cannot read a version 3 config), so containerd "
        "refuses it and stops: the node goes NotReady",
        host.CONTAINERD_SOURCE_FIX, "%s; azimuth-cloud/capi-helm-charts PR #838 (research section 3, row 3)"
        % host.CHECKS["containerd-dropin-version"],
        logs=(r"drop-in config version \d+ higher than root config version \d+",
              r"unable to load config: unsupported config version: 3", r"container\.Runtime\.Name must be set")),
    "runtime-handler-missing": _entry(
        "an event (FailedCreatePodSandBox) or a log line", "the pod asks for the nvidia runtime class or handler and "
        "the node's containerd has none: the toolkit has not configured it, or a scheduler's webhook (KAI's "
        "admission.gpuPodRuntimeClassName) injects runtimeClassName: nvidia where CDI is the default",
        "fix the toolkit on the node (see containerd-dropin-version); with KAI upgrade it or set "
        "admission.gpuPodRuntimeClassName=null and binder.cdiEnabled=true",
        "%s 'No runtime for nvidia'; kai-scheduler/KAI-Scheduler#1543, #1035 (research section 3, row 4)"
        % TROUBLESHOOTING,
        logs=(r'no runtime for "?nvidia"? is configured', r'RuntimeClass "?nvidia"? not found')),
    "nvml-not-found": _entry(
        "the device plugin's log", "the device plugin's container was not started with the NVIDIA runtime or CDI, "
        "or with a wrong driver root, so it cannot load NVML and advertises no GPU",
        "configure the toolkit for the distribution's containerd paths (CONTAINERD_CONFIG, CONTAINERD_SOCKET), set "
        "the driver root (/run/nvidia/driver when the operator owns the driver, / for a host driver), regenerate CDI",
        "NVIDIA/k8s-device-plugin#478, #444, #826, #1011 (research section 3, row 5)",
        logs=(r"could not load NVML library", r"libnvidia-ml\.so\.1: cannot open shared object file")),
    "cdi-unresolvable": _entry(
        "a pod event or log line", "the CDI spec on the node is stale or incomplete (generated before the driver was "
        "ready, or without the device the pod asks for)",
        "restart the toolkit pod on the node so that it regenerates /var/run/cdi/*.yaml and check the spec lists "
        "each GPU by UUID and index (nvidia-ctk cdi list)",
        "NVIDIA/nvidia-container-toolkit#1239, #1895; kubernetes-sigs/dra-driver-nvidia-gpu#736 "
        "(research section 3, row 6)",
        logs=(r"unresolvable CDI devices", r"invalid device, empty device edits")),
    "nvml-unknown-error": _entry(
        "a container's log", "systemctl daemon-reload (or a package upgrade) rewrote the container's device cgroup "
        "under the systemd cgroup driver because the /dev/char links for the NVIDIA devices are missing",
        "use CDI injection, or create the links (nvidia-ctk system create-dev-char-symlinks), then restart the pods",
        "NVIDIA/nvidia-container-toolkit#48 and NVIDIA/gpu-operator#485 (pinned notices) "
        "(research section 3, row 7)",
        logs=(r"Failed to initialize NVML: Unknown Error",)),
    "gpu-fallen-off-bus": _entry(
        "an Xid 79 line (dmesg or the device plugin), or nvidia.com/gpu allocatable below capacity",
        "a hardware, PCIe or thermal fault took a GPU off the bus; the device plugin marks it unhealthy",
        "cordon and drain the node, reset the GPU or reboot, and send it for repair if it recurs",
        "%s 'GPU Node does not have the expected number of GPUs'; docs.nvidia.com/nvsentinel "
        "(research section 3, row 8)" % TROUBLESHOOTING,
        logs=(r"Xid \(PCI:[^)]*\): 79\b", r"GPU has fallen off the bus", r"Xid=79\b")),
    "secure-boot-rejected": _entry(
        "the driver container's log or dmesg", "Secure Boot enforces module signatures and the driver module built "
        "on the node is not signed by a key the kernel trusts",
        host.SECURE_BOOT_SIGN_FIX + "; or use signed precompiled drivers (driver.usePrecompiled)",
        "NVIDIA/gpu-operator#1726, #497, #1142; NVIDIA/gpu-driver-container#44 (research section 3, row 9)",
        logs=(r"Key was rejected by service", r"Loading of unsigned module is rejected",
              r"not signed by a key that is trusted by the kernel", r"Kernel module load error: Operation not permitted")),
    "peermem-load-failed": _entry(
        "the peermem container's log or dmesg, or nvidia-peermem-ctr in CrashLoopBackOff",
        "nvidia_peermem was built against another ib_core than the one loaded (a NIC driver upgrade after the GPU "
        "driver), or its container crash-loops after a driver pod restart",
        "cordon and drain the node and delete its driver pod so that it rebuilds against the loaded NIC driver "
        "(upgrade the Network Operator before the GPU driver); better, use DMA-BUF (open modules) instead of peermem",
        "NVIDIA/gpu-operator#2868, #2844, release notes 26.3.0 known issues (research section 3, row 10)",
        logs=(r"could not insert 'nvidia_peermem': Invalid argument",
              r"nvidia_peermem: disagrees about version of symbol")),
    "mig-reset-blocked": _entry(
        "the MIG manager's log, or the node label %s=failed" % MIG_STATE,
        "the MIG manager could not reset the GPUs for the new layout: nvidia_drm or another host client holds them",
        host.MIG_DRM_FIX, "%s, PR #182 (README Known Issues) (research section 3, row 12)"
        % host.CHECKS["mig-blocked-by-nvidia-drm"],
        logs=(r"In use by another client", r"error resetting all GPUs")),
    "nouveau-loaded": _entry(
        "'Failed to enable MSI-X' in the journal, or nouveau among the node's loaded modules",
        "nouveau holds the GPU, so the NVIDIA driver cannot load", host.NOUVEAU_FIX,
        "%s (two sections) (research section 3, row 13)" % TROUBLESHOOTING,
        logs=(r"Failed to enable MSI-X",)),
    "driver-in-use": _entry(
        "the driver manager's log", "the operator's driver container cannot unload the driver modules: host GPU "
        "clients (a host driver, persistenced, DCGM) or gdrdrv hold them",
        "remove the host driver or set driver.enabled=false (gpu_platform_driver_mode: host); stop host GPU clients",
        "NVIDIA/gpu-driver-container PR #869; NVIDIA/gpu-operator#137, #258 (research section 3, row 14)",
        logs=(r"Could not unload NVIDIA driver kernel modules, driver is in use",)),
    "fabric-manager-missing": _entry(
        "the CUDA validator's log", "an NVSwitch system without a running Fabric Manager: CUDA cannot initialise",
        "install and start the Fabric Manager of the driver's exact version (the GPU Operator's driver container "
        "runs it when it owns the driver)", "%s; NVIDIA/gpu-operator#1043 (research section 3, further items)"
        % TROUBLESHOOTING,
        logs=(r"error code system not yet initialized",)),
    "driver-upgrade-failed": _entry(
        "the node label %s=upgrade-failed" % UPGRADE_STATE, "the operator's driver upgrade failed on the node",
        "relabel the node %s=upgrade-required, or delete its driver pod" % UPGRADE_STATE,
        "%s (research section 3, further items)" % TROUBLESHOOTING),
    "operands-blocked-by-taint": _entry(
        "a GPU Operator DaemonSet scheduling fewer pods than there are GPU nodes, and a GPU node with a taint it "
        "does not tolerate", "a taint on the GPU node keeps the operand DaemonSets off it",
        "add the taint's toleration to the operands (daemonsets.tolerations in the GPU Operator's values) or remove "
        "the taint", "%s (research section 3, further items)" % TROUBLESHOOTING),
    "operator-oomkilled": _entry(
        "the gpu-operator pod's container terminated OOMKilled", "the operator's memory limit is too small for the "
        "cluster (seen from about 300 nodes)", "raise operator.resources to about 600Mi requested and 1400Mi limit "
        "in the GPU Operator's values", "%s (research section 3, further items)" % TROUBLESHOOTING),
    "rdma-resource-zero": _entry(
        "an rdma/* resource at 0 in the node's capacity or allocatable, or the RDMA device plugin's log",
        "the RDMA shared device plugin's selectors (ifNames, vendors, deviceIDs) match no NIC of the node",
        "fix the NicClusterPolicy's rdmaSharedDevicePlugin selectors to name this node's NICs (ibdev2netdev, "
        "lspci -nn) and restart the plugin",
        "Mellanox/network-operator#438, #738; Mellanox/k8s-rdma-shared-dev-plugin#44, #108 "
        "(research section 3, further items)",
        logs=(r"missing RDMA device spec", r'RDMA device "\S+" not found')),
}
IDS = tuple(SIGNATURES)
