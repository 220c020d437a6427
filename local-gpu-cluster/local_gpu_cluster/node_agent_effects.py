"""What each node agent leaves on its node, as pure functions of the node's declared hardware and the component's
own configuration (``local_gpu_cluster/node_agents.py`` runs them while the component's pod runs on the node).

The facts (label names and values, resource names) are the components' own, as their docs and sources give them;
every function takes plain dicts and returns plain dicts, so each is tested on its own (local-gpu-cluster/tests/test_node_agents.py).
"""

import hashlib
import json

import yaml

from .node_agent_logs import SMI_NAMES

GPU_VENDOR = "10de"
NFD = "feature.node.kubernetes.io/"
# MIG profiles of the 80 GB A100 and H100 (NVIDIA's MIG user guide): profile -> the most instances of it on one GPU.
# The fake's own facts, kept apart from the collection's MIG catalog so that the two can disagree.
MIG_80GB = {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}
MIG_PROFILES = {"NVIDIA-A100-SXM4-80GB": MIG_80GB, "NVIDIA-H100-80GB-HBM3": MIG_80GB}
# The GPUs' PCI device ids as mig-parted's device-filter spells them (device then vendor).
DEVICE_FILTER_IDS = {"NVIDIA-A100-SXM4-80GB": "0x20B210DE", "NVIDIA-H100-80GB-HBM3": "0x233010DE"}


def rdma_driver(policy_spec):
    """Whether a ClusterPolicy's spec builds the operator's driver with GPUDirect RDMA (``driver.rdma.enabled``): its
    driver container then loads nvidia-peermem."""
    return bool(((policy_spec.get("driver") or {}).get("rdma") or {}).get("enabled"))


def nfd_labels(hardware):
    """NFD worker: PCI vendors present (the classes the GPU and Network Operators' NFD configs list: display,
    network, InfiniBand), the kernel, the OS release, RDMA capability."""
    labels = {}
    kernel = hardware.get("kernel") or ""
    if kernel:
        numbers = kernel.split("-", 1)[0].split(".")
        labels[NFD + "kernel-version.full"] = kernel
        for key, value in zip(("major", "minor", "revision"), numbers):
            labels[NFD + "kernel-version." + key] = value
    release = hardware.get("os") or {}
    if release.get("id"):
        labels[NFD + "system-os_release.ID"] = release["id"]
    if release.get("version_id"):
        version = release["version_id"]
        labels[NFD + "system-os_release.VERSION_ID"] = version
        parts = version.split(".")
        labels[NFD + "system-os_release.VERSION_ID.major"] = parts[0]
        if len(parts) > 1:
            labels[NFD + "system-os_release.VERSION_ID.minor"] = parts[1]
    if hardware.get("gpus"):
        labels[NFD + "pci-%s.present" % GPU_VENDOR] = "true"
    nics = hardware.get("nics")
    if nics:
        labels[NFD + "pci-%s.present" % nics["vendor"]] = "true"
        if nics.get("link_type") == "infiniband":
            labels[NFD + "rdma.capable"] = "true"
    return labels


def sharing_replicas(config_text, config_name):
    """(resource name, replicas, renamed) of a device plugin config's time-slicing, or None."""
    if not config_text:
        return None
    config = json.loads(config_text) if config_text.lstrip().startswith("{") else yaml.safe_load(config_text)
    slicing = ((config or {}).get("sharing") or {}).get("timeSlicing") or {}
    for resource in slicing.get("resources") or []:
        if resource.get("name") == "nvidia.com/gpu" and int(resource.get("replicas", 1)) > 1:
            return resource["name"], int(resource["replicas"]), bool(slicing.get("renameByDefault"))
    del config_name
    return None


def gfd_labels(hardware, mig=None, strategy="single", replicas=None):
    """GPU Feature Discovery on a node whose driver is loaded: the ``nvidia.com/gpu.*`` labels, the MIG labels
    for ``mig`` ({profile: instances per GPU} applied by the MIG manager) under ``strategy``, and time-slicing's
    replicas; a time-sliced GPU not renamed (``renameByDefault: false``) has ``-SHARED`` appended to its product
    (k8s-device-plugin's README, "Deploying with gpu-feature-discovery")."""
    gpus = hardware.get("gpus")
    if not gpus:
        return {}
    count = gpus["count"]
    labels = {"nvidia.com/gpu.product": gpus["product"], "nvidia.com/gpu.count": str(count),
              "nvidia.com/gpu.memory": str(gpus["memory_mib"]), "nvidia.com/gpu.family": gpus["family"],
              "nvidia.com/gpu.compute.major": str(gpus["compute"][0]),
              "nvidia.com/gpu.compute.minor": str(gpus["compute"][1]),
              "nvidia.com/mig.capable": "true" if gpus.get("mig_capable") else "false",
              "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
              "nvidia.com/mig.strategy": strategy}
    driver = hardware.get("driver_version")
    if driver:
        major, minor, rev = (driver.split(".") + ["0", "0"])[:3]
        labels.update({"nvidia.com/cuda.driver-version.major": major, "nvidia.com/cuda.driver-version.minor": minor,
                       "nvidia.com/cuda.driver-version.revision": rev, "nvidia.com/cuda.driver-version.full": driver,
                       # the deprecated names, which GFD still writes beside the new ones (k8s-device-plugin v0.20.0,
                       # internal/lm/nvml.go newVersionLabeler)
                       "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor,
                       "nvidia.com/cuda.driver.rev": rev})
    if mig and strategy == "single" and len(mig) == 1:
        (profile, per_gpu), = mig.items()
        labels.update({"nvidia.com/gpu.product": "%s-MIG-%s" % (gpus["product"], profile),
                       "nvidia.com/gpu.count": str(count * per_gpu)})
    elif mig and strategy == "mixed":
        for profile, per_gpu in sorted(mig.items()):
            labels["nvidia.com/mig-%s.count" % profile] = str(count * per_gpu)
    if replicas:
        labels.update({"nvidia.com/gpu.replicas": str(replicas[1]), "nvidia.com/gpu.sharing-strategy": "time-slicing"})
        if not replicas[2]:  # renameByDefault false: the product says SHARED (after any MIG suffix)
            labels["nvidia.com/gpu.product"] += "-SHARED"
    return labels


def device_plugin_resources(hardware, mig=None, strategy="single", replicas=None):
    """The NVIDIA device plugin's allocatable: whole GPUs, MIG instances (``nvidia.com/gpu`` under the single
    strategy, ``nvidia.com/mig-<profile>`` under mixed) or time-slicing's replicas (``nvidia.com/gpu.shared`` when
    renamed)."""
    gpus = hardware.get("gpus")
    if not gpus:
        return {}
    count = gpus["count"]
    if mig:
        if strategy == "mixed":
            resources = {"nvidia.com/mig-%s" % p: str(count * n) for p, n in mig.items()}
            resources["nvidia.com/gpu"] = "0"
            return resources
        return {"nvidia.com/gpu": str(count * sum(mig.values()))}
    if replicas:
        name, factor, renamed = replicas
        if renamed:
            return {name + ".shared": str(count * factor), "nvidia.com/gpu": "0"}
        return {name: str(count * factor)}
    return {"nvidia.com/gpu": str(count)}


def mig_layout(hardware, config_text, layout):
    """The MIG manager applying ``layout`` from a mig-parted config (the ConfigMap's ``config.yaml``):
    ``("success", {profile: instances per GPU})`` or ``("failed", why)``."""
    gpus = hardware.get("gpus") or {}
    if not gpus.get("mig_capable"):
        return "failed", "the node's GPU (%s) is not MIG capable" % (gpus.get("product") or "none")
    try:
        config = yaml.safe_load(config_text or "") or {}
    except yaml.YAMLError as exc:
        return "failed", "the mig-parted config is not YAML: %s" % exc
    entries = (config.get("mig-configs") or {}).get(layout)
    if not entries:
        return "failed", "no config %r in the mig-parted ConfigMap" % layout
    product = gpus["product"]
    valid = MIG_PROFILES.get(product, {})
    own_id = DEVICE_FILTER_IDS.get(product, "").lower()
    applied = None
    for entry in entries:
        filters = entry.get("device-filter")
        filters = [filters] if isinstance(filters, str) else filters or []
        if filters and own_id not in [f.lower() for f in filters]:
            continue
        applied = {}
        if entry.get("mig-enabled"):
            for profile, instances in (entry.get("mig-devices") or {}).items():
                if profile not in valid or int(instances) > valid[profile]:
                    return "failed", "%s x%s is not a valid MIG layout for %s" % (profile, instances, product)
                applied[profile] = int(instances)
        break
    if applied is None:
        return "failed", "no entry of config %r applies to %s" % (layout, product)
    return "success", applied


def default_mig_parted_config():
    """The GPU Operator's default mig-parted ConfigMap (the part for the fleet's 80 GB GPUs): all-disabled,
    all-enabled, all-balanced, and one ``all-<profile>`` per MIG profile."""
    configs = {"all-disabled": [{"devices": "all", "mig-enabled": False}],
               "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
               "all-balanced": [{"device-filter": sorted(DEVICE_FILTER_IDS.values()), "devices": "all",
                                 "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}]}
    for profile, instances in MIG_80GB.items():
        configs["all-" + profile] = [{"device-filter": sorted(DEVICE_FILTER_IDS.values()), "devices": "all",
                                      "mig-enabled": True, "mig-devices": {profile: instances}}]
    return yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=True)


def _selected(nics, selectors):
    """Whether the node's NICs match a device plugin's selectors (vendors, deviceIDs, linkTypes, ifNames)."""
    if not nics:
        return False
    checks = (("vendors", nics["vendor"]), ("deviceIDs", nics["device"]), ("devices", nics["device"]),
              ("linkTypes", nics["link_type"]))
    for key, value in checks:
        wanted = [str(v).lower() for v in selectors.get(key) or []]
        if wanted and value.lower() not in wanted:
            return False
    names = selectors.get("ifNames") or selectors.get("pfNames") or []
    return not names or any(name in nics.get("netdevs", []) for name in names)


def rdma_shared_resources(hardware, config):
    """The RDMA shared device plugin: ``rdma/<resourceName>`` = rdmaHcaMax for each resource whose selectors
    match the node's NICs. ``config``: the NicClusterPolicy's ``rdmaSharedDevicePlugin.config`` (JSON text)."""
    try:
        parsed = json.loads(config or "{}")
    except ValueError:
        return {}
    out = {}
    for resource in parsed.get("configList") or []:
        if _selected(hardware.get("nics"), resource.get("selectors") or {}):
            prefix = resource.get("resourcePrefix") or "rdma"
            out["%s/%s" % (prefix, resource["resourceName"])] = str(resource.get("rdmaHcaMax", 1000))
    return out


def sriov_resources(hardware, config):
    """The SR-IOV network device plugin: ``<resourcePrefix>/<resourceName>`` = the matching NICs (one VF each, as
    Azure presents its InfiniBand NICs). ``config``: the NicClusterPolicy's ``sriovDevicePlugin.config``."""
    try:
        parsed = json.loads(config or "{}")
    except ValueError:
        return {}
    out = {}
    nics = hardware.get("nics")
    for resource in parsed.get("resourceList") or []:
        if _selected(nics, resource.get("selectors") or {}):
            prefix = resource.get("resourcePrefix") or "nvidia.com"
            out["%s/%s" % (prefix, resource["resourceName"])] = str(nics["count"])
    return out


# The DRA driver's kubelet plugin (k8s-dra-driver-gpu v25.12.0, cmd/gpu-kubelet-plugin) names each GPU as NVML does
# (SMI_NAMES); the CUDA version each driver branch ships with (CUDA's release notes).
CUDA_OF_DRIVER = {"535": "12.2", "550": "12.4", "560": "12.6", "565": "12.7", "570": "12.8", "575": "12.9",
                  "580": "13.0"}
DRA_DRIVER = "gpu.nvidia.com"


def _semver(text):
    """A version as the plugin announces it (semver, leading zeros dropped): 580.159.04 -> 580.159.4."""
    parts = [str(int(p)) for p in str(text).split(".") if p.isdigit()][:3]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def _quantity(mebibytes):
    """A memory size in the API server's canonical form (so that comparing a slice finds no change)."""
    return "%dGi" % (mebibytes // 1024) if mebibytes % 1024 == 0 else "%dMi" % mebibytes


def dra_devices(hardware, node_name, driver_version, mig=None):
    """The devices the GPU kubelet plugin announces in its node's ResourceSlice: one ``gpu-<minor>`` per full GPU
    (attributes type, uuid, productName, brand, architecture, cudaComputeCapability, driverVersion,
    cudaDriverVersion, resource.kubernetes.io/pciBusID; capacity memory). GPUs in MIG mode (``mig``: a layout the MIG
    manager applied) are not announced as full GPUs; their MIG devices are not modelled, so none is announced."""
    gpus = hardware.get("gpus")
    if not gpus or mig or not driver_version:
        return []
    cuda = CUDA_OF_DRIVER.get(str(driver_version).split(".", maxsplit=1)[0], "12.0")
    devices = []
    for minor in range(gpus["count"]):
        digest = hashlib.sha256(("%s/%d" % (node_name, minor)).encode()).hexdigest()
        uuid = "GPU-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])
        attributes = {"type": {"string": "gpu"}, "uuid": {"string": uuid},
                      "productName": {"string": SMI_NAMES.get(gpus["product"], gpus["product"])},
                      "brand": {"string": "Nvidia"}, "architecture": {"string": gpus["family"].capitalize()},
                      "cudaComputeCapability": {"version": _semver("%d.%d" % tuple(gpus["compute"]))},
                      "driverVersion": {"version": _semver(driver_version)},
                      "cudaDriverVersion": {"version": _semver(cuda)},
                      "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x18 + 0x10 * minor)}}
        devices.append({"name": "gpu-%d" % minor, "attributes": attributes,
                        "capacity": {"memory": {"value": _quantity(gpus["memory_mib"])}}})
    return devices
