# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""RDMA GPU node types: how many GPUs and InfiniBand NICs a node of each type has.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Data, one entry per node type, each fact with its source. The network layer uses ``nics`` as
the default number of RDMA NICs a pod claims (SR-IOV: one VF per NIC of the node), and the
NCCL smoke test uses ``gpus`` as the ranks per node. A node type is named by its cloud VM size
(``Standard_ND96isr_H100_v5``) or by the short name the guides use (``nd-h100-v5``).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

AZURE_ND_H100_V5 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h100-v5-series "
                    "(8 NVIDIA H100 80GB; InfiniBand: GPUDirect RDMA, 8 x 400 Gb/s NDR)")
AZURE_ND_H200_V5 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h200-v5-series "
                    "(8 NVIDIA H200 141GB; InfiniBand: GPUDirect RDMA, 8 x 400 Gb/s NDR)")
AZURE_ND_A100_V4 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nda100v4-series "
                    "(8 NVIDIA A100 40GB; InfiniBand: GPUDirect RDMA, 8 x 200 Gb/s HDR)")
AZURE_NDM_A100_V4 = ("https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndma100v4-series "
                     "(8 NVIDIA A100 80GB; InfiniBand: GPUDirect RDMA, 8 x 200 Gb/s HDR)")

NODE_TYPES = {
    "nd-h100-v5": {"vm_sizes": ("Standard_ND96isr_H100_v5",), "gpus": 8, "gpu_product": "H100-80GB",
                   "nics": 8, "nic_gbps": 400, "link": "NDR", "source": AZURE_ND_H100_V5},
    "nd-h200-v5": {"vm_sizes": ("Standard_ND96isr_H200_v5",), "gpus": 8, "gpu_product": "H200-141GB",
                   "nics": 8, "nic_gbps": 400, "link": "NDR", "source": AZURE_ND_H200_V5},
    "nd-a100-v4": {"vm_sizes": ("Standard_ND96asr_v4",), "gpus": 8, "gpu_product": "A100-40GB",
                   "nics": 8, "nic_gbps": 200, "link": "HDR", "source": AZURE_ND_A100_V4},
    "ndm-a100-v4": {"vm_sizes": ("Standard_ND96amsr_A100_v4",), "gpus": 8, "gpu_product": "A100-80GB",
                    "nics": 8, "nic_gbps": 200, "link": "HDR", "source": AZURE_NDM_A100_V4},
}


def _aliases():
    out = {}
    for name, facts in NODE_TYPES.items():
        out[name] = name
        for size in facts["vm_sizes"]:
            out[size.lower()] = name
    return out


def lookup(field, value, required=False):
    """The node type's name and facts ``(name, dict)`` for a short name or VM size (case-insensitive).

    Empty ``value``: ``(None, None)`` unless ``required``. An unknown type is a ParamError naming ``field``
    and the known types.
    """
    if value is None or value == "":
        if required:
            raise ParamError(field, "is required", "give one of %s, or set the count yourself" % ", ".join(known()))
        return None, None
    if not isinstance(value, str):
        raise ParamError(field, "%r is not a node type name" % (value,), "give one of %s" % ", ".join(known()))
    name = _aliases().get(value.strip().lower())
    if name is None:
        raise ParamError(field, "%r is not a known RDMA node type" % value,
                         "give one of %s (or a VM size such as %s), or set the NIC count and bandwidth "
                         "threshold yourself" % (", ".join(known()), NODE_TYPES["nd-h100-v5"]["vm_sizes"][0]))
    return name, dict(NODE_TYPES[name])


def known():
    return sorted(NODE_TYPES)


MAX_NICS_PER_POD = 32
SRIOV = "sriov"


def nics_per_pod(field, mode, node_type, given, type_field="gpu_platform_rdma_node_type"):
    """How many RDMA NICs one pod claims in network ``mode``.

    ``given`` (non-empty) wins: a whole number from 1 to MAX_NICS_PER_POD. Otherwise SR-IOV takes every
    NIC of ``node_type`` (one VF per NIC, as the AKS guide's pods do) and refuses when no node type is
    known; the shared modes (rdma_shared, ipoib) claim one shared resource, which reaches every HCA of
    the pool. ``field`` names ``given`` in errors, ``type_field`` names ``node_type``.
    """
    if given not in (None, ""):
        if isinstance(given, bool) or not isinstance(given, (int, str)) or not str(given).strip().isdigit():
            raise ParamError(field, "%r is not a whole number" % (given,), "give a NIC count such as 8")
        count = int(str(given).strip())
        if not 1 <= count <= MAX_NICS_PER_POD:
            raise ParamError(field, "is %d; it must be from 1 to %d" % (count, MAX_NICS_PER_POD),
                             "give the number of RDMA NICs a pod claims, such as 8")
        return count
    if mode != SRIOV:
        return 1
    _name, facts = lookup(type_field, node_type)
    if facts is None:
        raise ParamError(field, "is empty and %s is not set, so the NICs per pod are unknown for mode sriov"
                         % type_field,
                         "set %s (one of %s) or give %s" % (type_field, ", ".join(known()), field))
    return facts["nics"]


# -- NCCL bus bandwidth thresholds ------------------------------------------------------------------
# The least ``# Avg bus bandwidth`` (GB/s, as nccl-tests prints it) of the smoke test's two-node all_reduce_perf
# over 512 MiB to 8 GiB. No guide gives a number for that average, so each threshold is derived, the same way for
# every type: BUSBW_FRACTION of the node's InfiniBand line rate, nics x nic_gbps / 8 (Gb/s to GB/s), from the
# sources above. All-reduce bus bandwidth between nodes is bounded by that line rate (nccl-tests
# doc/PERFORMANCE.md: busbw is comparable to the hardware's peak bandwidth); a healthy run reaches most of it, a TCP
# fallback or a missing NIC falls far below. Cross-check for nd-a100-v4: the AKS guide's own run on
# Standard_ND96asr_v4 printed busbw 174.75, 184.32 and 187.22 GB/s at 512 MiB, 2 GiB and 8 GiB and says a last
# value below 180 GB/s indicates a problem (Azure/aks-rdma-infiniband tests/expected-output.md, section 1.1
# mpijob; tests/README.md NODE_POOL_VM_SIZE); 0.7 x 200 GB/s = 140 GB/s sits below all of them.
BUSBW_FRACTION = 0.7
AKS_GUIDE_NCCL = ("https://github.com/Azure/aks-rdma-infiniband/blob/main/tests/expected-output.md "
                  "(section 1.1 mpijob, run on Standard_ND96asr_v4 per tests/README.md: busbw 174.75-187.22 GB/s "
                  "at 512 MiB-8 GiB; below 180 GB/s at the largest size indicates a problem)")


def derived_min_busbw(facts):
    """BUSBW_FRACTION of the node's InfiniBand line rate in GB/s (``nics`` x ``nic_gbps`` / 8), whole GB/s."""
    return float(int(BUSBW_FRACTION * facts["nics"] * facts["nic_gbps"] / 8))


for _type_name, _facts in NODE_TYPES.items():
    _facts["min_busbw_gbps"] = derived_min_busbw(_facts)
    _facts["min_busbw_source"] = (
        "derived: %g x %d x %d Gb/s / 8 = %g GB/s (%s)"
        % (BUSBW_FRACTION, _facts["nics"], _facts["nic_gbps"], _facts["min_busbw_gbps"], _facts["source"])
        + ("; cross-checked with %s" % AKS_GUIDE_NCCL if _type_name == "nd-a100-v4" else ""))


# -- Fabric validation floors (playbooks/fabric.yml, domain/fabric) ---------------------------------------------------
# Per link type: the least per-port ib_write_bw (Gb/s, --report_gbits, 8 MB messages) a healthy NIC reaches. Azure's
# node health checks hold these floors on these very VM sizes (upstream-2026-11 research, section 5.2).
AZURE_NHC_NDR = ("https://github.com/Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf (ib_write_bw GDR, 8 MB, "
                 "--report_gbits: 380 Gb/s per NDR port on ND H100 v5)")
AZURE_NHC_HDR = ("https://github.com/Azure/azurehpc-health-checks conf/nd96asr_v4.conf (ib_write_bw GDR, 8 MB, "
                 "--report_gbits: 180 Gb/s per HDR port on ND A100 v4)")
LINK_TYPES = {
    "NDR": {"gbps": 400, "ib_write_bw_gbps": 380.0, "source": AZURE_NHC_NDR},
    "HDR": {"gbps": 200, "ib_write_bw_gbps": 180.0, "source": AZURE_NHC_HDR},
}
# Per node type: the least peak busbw (GB/s) of a two-node all_reduce_perf with NCCL_ALGO=Ring over sizes of 1 GB and
# more. Ring keeps NVLink from carrying part of the reduction on two nodes, so the number measures the fabric
# (NVIDIA/nccl-tests#196); FABRIC_BUSBW_FRACTION of the node's InfiniBand line rate, as NVIDIA's readiness engine
# accepts about 92% of theoretical (NVIDIA/cluster-readiness-engine docs/designs/021-performance-threshold-enforcement.md).
FABRIC_BUSBW_FRACTION = 0.9
FABRIC_BUSBW_SOURCE = ("NCCL_ALGO=Ring so that two nodes measure the fabric (https://github.com/NVIDIA/nccl-tests/issues/"
                       "196); about 92%% of theoretical is accepted (NVIDIA/cluster-readiness-engine docs/designs/"
                       "021-performance-threshold-enforcement.md): %g x %d x %d Gb/s / 8 = %g GB/s (%s)")

for _type_name, _facts in NODE_TYPES.items():
    _facts["fabric_busbw_gbps"] = float(int(FABRIC_BUSBW_FRACTION * _facts["nics"] * _facts["nic_gbps"] / 8))
    _facts["fabric_busbw_source"] = FABRIC_BUSBW_SOURCE % (
        FABRIC_BUSBW_FRACTION, _facts["nics"], _facts["nic_gbps"], _facts["fabric_busbw_gbps"], _facts["source"])
