"""Shared input of the gpu_sharing domain tests: a time-slicing, a whole-GPU and a MIG pool, and builders of
pools and of a validated pool list."""
import copy

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.sharing import pools as sharing

TS = {"name": "inference", "node_selector": {"nodepool": "inference"}, "sharing": "time-slicing", "replicas": 4}
WHOLE = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "none"}
MIGP = {"name": "notebooks", "node_selector": {"nodepool": "notebooks"}, "sharing": "mig", "mig_profile": "all-1g.10gb"}


def pool(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def one(base, **changes):
    return sharing.validate_pools([pool(base, **changes)])[0]
