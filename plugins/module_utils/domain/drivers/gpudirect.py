# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Which kernel path carries GPUDirect RDMA: DMA-BUF where every GPU node can run it, nvidia-peermem where one cannot.

Private to the collection: not a public API. Pure: standard library only.

NVIDIA recommends DMA-BUF for GPUDirect RDMA. Its conditions (NVIDIA/cloud-native-docs
``gpu-operator/gpu-operator-rdma.rst``, "Common Prerequisites", HEAD 52dcb7b, 2026-08-21): the open kernel module
driver, CUDA 11.7 or newer, a Turing-or-newer GPU and Linux 5.12 or newer; MLNX_OFED/DOCA-OFED is optional (inbox
drivers work) and nvidia-peermem is not used. Legacy nvidia-peermem works with any supported driver but needs
MLNX_OFED/DOCA-OFED; in the GPU Operator it is ``driver.rdma.enabled=true``.

CUDA 11.7 is not checked on its own: the CUDA runtime comes with the driver, and the open kernel modules were first
published with branch R515, which is CUDA 11.7's driver (host_driver.OPEN_SINCE). Open modules imply it.

The path is one for the cluster: the GPU Operator's ``driver.rdma.enabled`` is one ClusterPolicy setting, and
nvidia-peermem loaded beside DMA-BUF is harmless where a node needs it. ``decide`` reads each GPU node's evidence
(the driver owner, the kernel module type, the kernel release, the GPU generation) and returns the path and why; an
explicit ``dmabuf`` that a node's evidence rules out is a Refusal naming the pool (or node), the evidence and the
fix. Evidence that is not known does not refuse an explicit choice, but ``auto`` picks DMA-BUF only on evidence.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

PATHS = ("auto", "dmabuf", "peermem")
KERNEL_MODULE_TYPES = ("auto", "open", "proprietary")
HOST_KERNEL_MODULES = ("", "open", "proprietary")
MIN_KERNEL = (5, 12)
MIN_COMPUTE = (7, 5)
# driver.kernelModuleType=auto picks the open modules from branch R570 on: the same page says to add
# driver.kernelModuleType=open "if you are using a driver version from a branch earlier than R570"
# (gpu-operator-rdma.rst, "Installing the GPU Operator and Enabling GPUDirect RDMA"). The CRD's description says auto
# chooses "based on the GPU devices on the host and the driver branch used" (api/nvidia/v1/clusterpolicy_types.go,
# v26.3.3): on pre-Turing GPUs it stays proprietary, which the GPU check below rules out anyway. With no pinned
# driver the chart's default is assumed to be R570 or newer: every GPU Operator release with kernelModuleType=auto
# (v25.3.0 on) defaults to an R580 driver or newer (research upstream-2026-11 §1.2: 580.82.07 in v25.3.4 to 595.91.07
# in v26.7.0).
AUTO_OPEN_BRANCH = 570
# GFD's labels (k8s-device-plugin's gpu-feature-discovery).
COMPUTE_MAJOR, COMPUTE_MINOR = "nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor"
FAMILY, PRODUCT = "nvidia.com/gpu.family", "nvidia.com/gpu.product"
DRIVER_MAJOR = ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")
# Architecture by compute capability (major, minor) ranges, oldest first: the name and the first capability.
ARCHITECTURES = (("Kepler", (3, 0)), ("Maxwell", (5, 0)), ("Pascal", (6, 0)), ("Volta", (7, 0)), ("Turing", (7, 5)),
                 ("Ampere", (8, 0)), ("Ada Lovelace", (8, 9)), ("Hopper", (9, 0)), ("Blackwell", (10, 0)))
# GFD's family label values (lower case) -> the architecture.
FAMILIES = {"kepler": "Kepler", "maxwell": "Maxwell", "pascal": "Pascal", "volta": "Volta", "turing": "Turing",
            "ampere": "Ampere", "ada": "Ada Lovelace", "ada-lovelace": "Ada Lovelace", "lovelace": "Ada Lovelace",
            "hopper": "Hopper", "blackwell": "Blackwell"}
# Data center products by a token of GFD's product label (NVIDIA-H100-80GB-HBM3, Tesla-T4) or a pool's gpu_product.
PRODUCTS = {
    "Blackwell": ("B100", "B200", "B300", "GB200", "GB300", "BLACKWELL"),
    "Hopper": ("H100", "H200", "H800", "H20", "GH200", "H100NVL"),
    "Ada Lovelace": ("L4", "L20", "L40", "L40S", "ADA"),
    "Ampere": ("A100", "A800", "A40", "A30", "A16", "A10", "A10G", "A2", "A6000", "A5000", "A4000"),
    "Turing": ("T4", "T4G"),
    "Volta": ("V100", "V100S"),
    "Pascal": ("P100", "P40", "P4", "P6"),
    "Maxwell": ("M60", "M40", "M10"),
    "Kepler": ("K80", "K40", "K20"),
}
KERNEL = re.compile(r"^v?(\d+)\.(\d+)")
BRANCH = re.compile(r"^(\d{3})(?:\.|$)")
CONDITIONS = ("the open kernel modules", "Linux 5.12 or newer", "a Turing-or-newer GPU")
EVERY_NODE = "every GPU node"
OTHER_WAY = "or set gpu_platform_gpudirect_path: peermem (legacy nvidia-peermem, with MLNX_OFED/DOCA-OFED)"


def check_inputs(path, kernel_module_type, driver_version, host_kernel_modules):
    if path not in PATHS:
        raise ParamError("gpudirect_path", "%r is not a GPUDirect RDMA path" % (path,),
                         "use auto (DMA-BUF where every GPU node can run it), dmabuf or peermem")
    if kernel_module_type not in KERNEL_MODULE_TYPES:
        raise ParamError("gpu_operator_extra_values.driver.kernelModuleType", "%r is not a kernel module type"
                         % (kernel_module_type,), "use auto, open or proprietary (the GPU Operator's choices)")
    if not isinstance(driver_version, str):
        raise ParamError("driver_version", "%r is not a string" % (driver_version,),
                         "give the pinned driver version (such as 580.126.20) or leave it empty")
    if host_kernel_modules not in HOST_KERNEL_MODULES:
        raise ParamError("host_kernel_modules", "%r is not a kernel module flavour" % (host_kernel_modules,),
                         "use open or proprietary (host_driver_kernel_modules), or leave it empty")


def check_pools(pools):
    """``node_pools``: gpu_platform_node_pools entries; only ``name``, ``node_selector`` and ``gpu_product`` are read."""
    if pools is None:
        return []
    if not isinstance(pools, list):
        raise ParamError("node_pools", "%r is not a list" % (pools,), "pass gpu_platform_node_pools (a list of pools)")
    out = []
    for index, pool in enumerate(pools):
        if not isinstance(pool, dict) or not isinstance(pool.get("name"), str) or not pool["name"]:
            raise ParamError("node_pools[%d]" % index, "has no name", "give each gpu_platform_node_pools entry a name")
        selector = pool.get("node_selector") or {}
        if not isinstance(selector, dict):
            raise ParamError("node_pools[%d].node_selector" % index, "%r is not a dictionary" % (selector,),
                             "give the pool's node labels, e.g. {nodepool: h100}")
        out.append({"name": pool["name"], "node_selector": {str(k): str(v) for k, v in selector.items()},
                    "gpu_product": str(pool.get("gpu_product") or "")})
    return out


def pool_of(labels, pools):
    """The first pool whose (non-empty) node selector the node's labels match, or None."""
    labels = labels or {}
    for pool in pools:
        selector = pool["node_selector"]
        if selector and all(labels.get(key) == value for key, value in selector.items()):
            return pool
    return None


def kernel_release(text):
    """(major, minor) of a kernel release (6.8.0-60-generic, 5.15.0-1079-azure), or None."""
    match = KERNEL.match(str(text or "").strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_branch(version):
    """The branch (580) of a driver version (580.126.20) or major label (580), or None."""
    match = BRANCH.match(str(version or "").strip())
    return int(match.group(1)) if match else None


def architecture_of(compute):
    name = None
    for arch, first in ARCHITECTURES:
        if compute >= first:
            name = arch
    return name


def _product_architecture(product):
    tokens = {t for t in re.split(r"[-_\s]+", str(product or "").upper()) if t}
    for arch, names in PRODUCTS.items():
        if tokens & set(names):
            return arch
    return None


def first_compute(arch):
    return dict(ARCHITECTURES).get(arch)


def gpu_generation(labels, pool):
    """{architecture, compute: (major, minor) or None, source} of a node's GPUs, or None when nothing says."""
    labels = labels or {}
    major, minor = labels.get(COMPUTE_MAJOR), labels.get(COMPUTE_MINOR)
    if str(major or "").isdigit():
        compute = (int(major), int(minor) if str(minor or "").isdigit() else 0)
        return {"architecture": architecture_of(compute), "compute": compute,
                "source": "%s=%s, %s=%s" % (COMPUTE_MAJOR, major, COMPUTE_MINOR, minor if minor is not None else "?")}
    family = FAMILIES.get(str(labels.get(FAMILY) or "").lower())
    if family:
        return {"architecture": family, "compute": first_compute(family),
                "source": "%s=%s" % (FAMILY, labels[FAMILY])}
    for product, source in ((labels.get(PRODUCT), PRODUCT), ((pool or {}).get("gpu_product"), "gpu_product")):
        arch = _product_architecture(product)
        if arch:
            where = "%s=%s" % (source, product) if source == PRODUCT else \
                "the pool's gpu_product %s" % product
            return {"architecture": arch, "compute": first_compute(arch), "source": where}
    return None


def _packaged_flavour(packages):
    names = sorted(packages or {})
    if any("open" in name for name in names):
        return "open", "open driver packages installed (%s)" % ", ".join(n for n in names if "open" in n)
    return None, None


def module_type(owner, host, kernel_module_type, driver_version, host_kernel_modules):
    """(open | proprietary | None, where it was read) for one node, by who owns its driver."""
    host = host or {}
    loaded = host.get("kernel_module_type") or ""
    if owner == "operator":
        if kernel_module_type in ("open", "proprietary"):
            return kernel_module_type, "driver.kernelModuleType=%s" % kernel_module_type
        if loaded:
            return loaded, "the running driver's /proc/driver/nvidia/version (driver.kernelModuleType=auto)"
        branch = driver_branch(driver_version)
        if branch is None:
            return "open", "driver.kernelModuleType=auto with the chart's default driver (R570 or newer)"
        if branch >= AUTO_OPEN_BRANCH:
            return "open", "driver.kernelModuleType=auto with driver %s (R%d or newer)" % (driver_version,
                                                                                           AUTO_OPEN_BRANCH)
        return "proprietary", "driver.kernelModuleType=auto with driver %s (before R%d)" % (driver_version,
                                                                                            AUTO_OPEN_BRANCH)
    if loaded:
        return loaded, "/proc/driver/nvidia/version"
    flavour, where = _packaged_flavour(host.get("driver_packages"))
    if flavour:
        return flavour, where
    if host and not host.get("driver_packages") and not host.get("driver_loaded") and host_kernel_modules:
        return host_kernel_modules, "host_driver_kernel_modules=%s (host_driver installs it)" % host_kernel_modules
    return None, None


def _branch_of(owner, host, labels, driver_version):
    branch = driver_branch((host or {}).get("driver_version"))
    for label in DRIVER_MAJOR:
        if branch is None:
            branch = driver_branch((labels or {}).get(label))
    if branch is None and owner == "operator":
        branch = driver_branch(driver_version)
    return branch


CLOUD_BLOCK = {
    "condition": CONDITIONS[0],
    "found": "the cloud's node image ships its own driver (gpu_platform_cloud_driver: present), which this collection "
             "cannot switch to the open kernel modules",
    "fix": "create the node pool without the cloud's driver (on AKS --gpu-driver none) and set "
           "gpu_platform_cloud_driver: absent so that the GPU Operator's driver owns it"}


def _kernel(node):
    """(release, where it was read): the host's own (gpu_host_facts' uname) first, then the node's."""
    host_os = (node.get("host") or {}).get("os")
    for release, source in ((host_os.get("kernel") if isinstance(host_os, dict) else None, "the host's uname"),
                            (node.get("kernel"), "status.nodeInfo.kernelVersion")):
        if kernel_release(release):
            return release, source
    return None, None


def node_evidence(node, owner, pools, kernel_module_type="auto", driver_version="", host_kernel_modules=""):
    """One GPU node's DMA-BUF evidence: {name, pool, module_type, module_source, kernel, kernel_source, architecture,
    compute, gpu_source, branch, blocks: [{condition, found, fix}], unknown: [condition]}.

    ``node``: {name, host: gpu_host facts or None, labels: dict or None, kernel: status.nodeInfo.kernelVersion}."""
    host = node.get("host") or None
    labels = node.get("labels")
    pool = pool_of(labels, pools)
    blocks, unknown = [], []
    flavour, source = None, None
    if owner == "cloud":
        blocks.append(dict(CLOUD_BLOCK))
    else:
        flavour, source = module_type(owner, host, kernel_module_type, driver_version, host_kernel_modules)
        if flavour is None:
            unknown.append("the kernel module type")
        elif flavour == "proprietary":
            fix = ("set driver.kernelModuleType: open in gpu_operator_extra_values" if owner == "operator" else
                   "install the open kernel modules (host_driver_kernel_modules: open) and reboot")
            blocks.append({"condition": CONDITIONS[0], "found": "the proprietary kernel module (%s)" % source,
                           "fix": fix})
    release, kernel_source = _kernel(node)
    if release is None:
        unknown.append("the kernel release")
    elif kernel_release(release) < MIN_KERNEL:
        blocks.append({"condition": CONDITIONS[1], "found": "kernel %s (%s) is older than 5.12" % (release, kernel_source),
                       "fix": "boot a kernel 5.12 or newer"})
    gpu = gpu_generation(labels, pool) or {"architecture": None, "compute": None, "source": None}
    if gpu["compute"] is None:
        unknown.append("the GPU generation")
    elif tuple(gpu["compute"]) < MIN_COMPUTE:
        blocks.append({"condition": CONDITIONS[2],
                       "found": "%s GPUs (%s) are older than Turing (compute capability 7.5)" % (
                           gpu["architecture"], gpu["source"]),
                       "fix": "run GPUDirect RDMA on Turing-or-newer GPUs"})
    return {"name": node["name"], "pool": pool["name"] if pool else None,
            "module_type": flavour, "module_source": source, "kernel": release, "kernel_source": kernel_source,
            "architecture": gpu["architecture"], "compute": list(gpu["compute"]) if gpu["compute"] else None,
            "gpu_source": gpu["source"], "branch": _branch_of(owner, host, labels, driver_version),
            "blocks": blocks, "unknown": unknown}


def _all(items):
    items = list(items)
    return items[0] if len(items) == 1 else "%s and %s" % (", ".join(items[:-1]), items[-1])


def where(node):
    if node["name"] == EVERY_NODE:
        return EVERY_NODE
    return "pool %s, node %s" % (node["pool"], node["name"]) if node.get("pool") else "node %s" % node["name"]


def _block_text(node):
    return "%s: %s" % (where(node), "; ".join("%s - fix: %s" % (b["found"], b["fix"]) for b in node["blocks"]))


def _unknown_text(nodes):
    return "; ".join("%s: %s unknown" % (where(n), " and ".join(n["unknown"])) for n in nodes)


def evidence_words(nodes):
    """'open kernel modules 595, kernel 6.8, Hopper': what the nodes share, for the summary."""
    parts = []
    types = sorted({n["module_type"] for n in nodes if n.get("module_type")})
    branches = sorted({n["branch"] for n in nodes if n.get("branch")})
    if types:
        text = "%s kernel modules" % "/".join(types)
        if branches:
            text += " " + "/".join(str(b) for b in branches)
        parts.append(text)
    kernels = [kernel_release(n["kernel"]) for n in nodes if kernel_release(n.get("kernel"))]
    if kernels:
        shown = sorted(set(kernels))
        parts.append("kernel %d.%d" % shown[0] if len(shown) == 1 else
                     "kernels %d.%d to %d.%d" % (shown[0] + shown[-1]))
    archs = [a for a, dummy in ARCHITECTURES if a in {n.get("architecture") for n in nodes}]
    if archs:
        parts.append(" and ".join(archs))
    return ", ".join(parts)


def decide(path, owner, nodes, rdma, pools=None, kernel_module_type="auto", driver_version="",
           host_kernel_modules="", running_peermem=""):
    """The GPUDirect RDMA path for the cluster: {path: dmabuf | peermem | none, requested, reason, evidence, nodes}.

    ``owner``: who owns the driver (host, cloud, operator, from gpu_driver_mode); ``nodes``: the GPU nodes' evidence
    as gpu_driver_mode.decide takes it (each may carry ``kernel``, the node's status.nodeInfo.kernelVersion);
    ``pools``: gpu_platform_node_pools. Raises Refusal when ``path`` is dmabuf and a node's evidence rules it out,
    before anything is written.

    ``running_peermem``: where the cluster already runs nvidia-peermem through the GPU Operator, what shows it (the
    ClusterPolicy's driver.rdma.enabled). ``auto`` then keeps nvidia-peermem even where DMA-BUF would work: moving a
    running cluster's path rolls out new driver pods, which is for the user to ask (``dmabuf``), not for a re-run or
    a collection upgrade to do, and the evidence auto reads grows as the platform goes on (GFD's labels come with the
    GPU Operator), so without this a second run could change what the first one installed.
    """
    check_inputs(path, kernel_module_type, driver_version, host_kernel_modules)
    pools = check_pools(pools)
    seen = [node_evidence(n, owner, pools, kernel_module_type, driver_version, host_kernel_modules)
            for n in sorted(nodes, key=lambda n: n["name"])]
    if not seen and owner in ("cloud", "operator"):
        # Evidence that holds for GPU nodes not seen yet too (a pool at zero, a render): the cloud's image ships its
        # driver on every GPU node, and the GPU Operator's driver.kernelModuleType is one setting for all of them.
        every = node_evidence({"name": EVERY_NODE, "host": None, "labels": None}, owner, pools, kernel_module_type,
                              driver_version, host_kernel_modules)
        seen = [every] if every["blocks"] else []
    result = {"requested": path, "nodes": seen}
    if not rdma:
        return dict(result, path="none", reason="GPUDirect RDMA is off", evidence="")
    blocked = [n for n in seen if n["blocks"]]
    unknown = [n for n in seen if n["unknown"] and not n["blocks"]]
    if path == "peermem":
        return dict(result, path="peermem", reason="requested: peermem", evidence="")
    if path == "dmabuf":
        if blocked:
            count = "" if blocked[0]["name"] == EVERY_NODE else "%d GPU node(s): " % len(blocked)
            raise Refusal("gpu_platform_gpudirect_path is dmabuf but DMA-BUF cannot work on %s%s. Fix that, %s. "
                          "Nothing was changed." % (count, "; ".join(_block_text(n) for n in blocked), OTHER_WAY),
                          gpudirect=seen)
        reason = "requested: dmabuf"
        if unknown or not seen:
            reason += " (not verified: %s)" % (_unknown_text(unknown) if unknown else "no GPU node seen yet")
        return dict(result, path="dmabuf", reason=reason, evidence=evidence_words(seen))
    if not seen:
        return dict(result, path="peermem", evidence="", reason=(
            "auto: no GPU node seen yet, so DMA-BUF's conditions cannot be checked (%s); set "
            "gpu_platform_gpudirect_path: dmabuf to choose it" % _all(CONDITIONS)))
    if blocked or unknown:
        why = []
        if blocked:
            why.append("not met on %s" % "; ".join(
                "%s: %s" % (where(n), "; ".join(b["found"] for b in n["blocks"])) for n in blocked))
        if unknown:
            why.append("not known on %s" % _unknown_text(unknown))
        return dict(result, path="peermem", evidence="", reason="auto: DMA-BUF needs %s; %s" % (
            _all(CONDITIONS), "; and ".join(why)))
    if running_peermem:
        return dict(result, path="peermem", evidence="", reason=(
            "auto: DMA-BUF would work on every GPU node (%d), but the cluster already runs nvidia-peermem (%s) and auto "
            "does not move it; set gpu_platform_gpudirect_path: dmabuf to move it" % (len(seen), running_peermem)))
    return dict(result, path="dmabuf", evidence=evidence_words(seen), reason=(
        "auto: every GPU node (%d) has %s" % (len(seen), _all(CONDITIONS))))
