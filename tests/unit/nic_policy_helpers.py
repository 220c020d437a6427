"""Shared input of the NicClusterPolicy domain tests: a base parameter set and a copy of it with changes."""
import copy

BASE = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ofed_driver": True, "ipam": "nv-ipam",
        "ip_range": "192.168.100.0/24", "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}}


def params(**changes):
    out = copy.deepcopy(BASE)
    out.update(changes)
    return out
