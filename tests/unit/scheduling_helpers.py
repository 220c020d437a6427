"""Shared input of the scheduling domain tests: flavors, teams, a realistic spec and builders of changed specs."""
import copy

H100 = {"name": "h100", "gpu_product": "NVIDIA-H100-80GB-HBM3",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
A100 = {"name": "a100", "gpu_product": "NVIDIA-A100-SXM4-80GB", "node_labels": {"pool": "a100"}}
RESEARCH = {"name": "research", "namespaces": ["ml-research", "ml-eval"], "quota": {"h100": 8, "a100": 4},
            "borrowing_limit": {"h100": 4}, "lending_limit": {"a100": 2}}
PROD = {"name": "prod", "namespaces": ["inference"], "quota": {"h100": 16, "a100": 0}}
SPEC = {"flavors": [H100, A100], "teams": [RESEARCH, PROD], "cohort": "gpu-shared"}


def changed(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def spec_with(teams=None, flavors=None, **top):
    out = copy.deepcopy(SPEC)
    if teams is not None:
        out["teams"] = teams
    if flavors is not None:
        out["flavors"] = flavors
    out.update(top)
    return out


def by_kind(result, kind, api=None):
    return [o for o in result["objects"] if o["kind"] == kind and (api is None or o["apiVersion"] == api)]
