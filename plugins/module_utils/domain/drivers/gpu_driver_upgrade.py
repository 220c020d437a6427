# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GPU Operator's driver upgrade: its policy values, the upgrade module's inputs, and host mode's decision
(pure).

Private to the collection: not a public API. Standard library only, no I/O. The per-node upgrade states and
following them over time are in ``domain.drivers.gpu_driver_upgrade_state``.
"""

from __future__ import annotations

import copy
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate, version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# -- the policy values ------------------------------------------------------------------------------------------

POLICY_FIELD = "gpu_operator_driver_upgrade_policy"
# The chart's driver.upgradePolicy defaults (GPU Operator v26.7.0 values.yaml).
POLICY_DEFAULTS = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 1,
    "maxUnavailable": "25%",
    "waitForCompletion": {"timeoutSeconds": 0, "podSelector": ""},
    "gpuPodDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
    "drain": {"enable": False, "force": False, "podSelector": "", "timeoutSeconds": 300, "deleteEmptyDir": False},
}
_KINDS = {
    "autoUpgrade": "bool", "maxParallelUpgrades": "count", "maxUnavailable": "unavailable",
    "waitForCompletion.timeoutSeconds": "count", "waitForCompletion.podSelector": "selector",
    "gpuPodDeletion.force": "bool", "gpuPodDeletion.timeoutSeconds": "count", "gpuPodDeletion.deleteEmptyDir": "bool",
    "drain.enable": "bool", "drain.force": "bool", "drain.podSelector": "selector", "drain.timeoutSeconds": "count",
    "drain.deleteEmptyDir": "bool",
}
PERCENT = re.compile(r"^(\d{1,3})%$")


def check_selector(field, value):
    """A label selector string (empty allowed); ParamError naming the field otherwise."""
    if not isinstance(value, str):
        raise ParamError(field, "%r is not a label selector string" % (value,),
                         "give a selector such as app=training or leave it empty")
    try:
        validate.parse_selector(field, value)
    except ParamError as err:
        raise ParamError(field, "%r is not a label selector (%s)" % (value, err.msg.split(": ", 1)[-1].split(". Fix:")[0]),
                         "use key=value, key!=value, key in (a,b) or !key, joined by commas")
    return value


def _check_value(path, kind, value):
    if kind == "bool":
        if not isinstance(value, bool):
            raise ParamError(path, "%r is not true or false" % (value,), "set it to true or false")
    elif kind == "count":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamError(path, "%r is not a whole number" % (value,), "give a whole number of 0 or more")
        if value < 0:
            raise ParamError(path, "%d is negative" % value, "give 0 or more")
    elif kind == "unavailable":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ParamError(path, "%r is neither a number of nodes nor a percentage" % (value,),
                             "give a number of nodes (2) or a percentage of the GPU nodes (\"25%\")")
        if isinstance(value, int):
            if value < 1:
                raise ParamError(path, "%d lets no node be unavailable, so no node would ever be upgraded" % value,
                                 "give 1 or more, or a percentage such as \"25%\"")
        else:
            match = PERCENT.match(value.strip())
            if not match:
                raise ParamError(path, "%r is not a percentage such as \"25%%\"" % value,
                                 "give a number of nodes (2, not quoted) or a percentage from \"1%\" to \"100%\"")
            if not 1 <= int(match.group(1)) <= 100:
                raise ParamError(path, "%s is outside 1%% to 100%%" % value, "give a percentage from \"1%\" to \"100%\"")
    elif kind == "selector":
        check_selector(path, value)
    return value


def check_policy(policy, field=POLICY_FIELD, defaults=None, kinds=None, what="the chart's driver.upgradePolicy"):
    """The chart's ``driver.upgradePolicy`` from ``policy`` (keys the user leaves out take the chart's
    defaults). Raises ParamError naming the field path (``<field>.drain.timeoutSeconds``) on an unknown
    key, a wrong type, a negative number or a bad maxUnavailable. ``defaults`` and ``kinds`` describe another
    policy of the same shape (the NicClusterPolicy's DOCA driver upgrade policy)."""
    defaults = POLICY_DEFAULTS if defaults is None else defaults
    kinds = _KINDS if kinds is None else kinds
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise ParamError(field, "%r is not a dictionary" % (policy,),
                         "give a dictionary with keys among %s" % ", ".join(defaults))
    out = copy.deepcopy(defaults)
    for key, value in policy.items():
        path = "%s.%s" % (field, key)
        if key not in defaults:
            raise ParamError(path, "is not an upgrade policy setting",
                             "use keys among %s (%s)" % (", ".join(defaults), what))
        if isinstance(defaults[key], dict):
            if not isinstance(value, dict):
                raise ParamError(path, "%r is not a dictionary" % (value,),
                                 "give a dictionary with keys among %s" % ", ".join(defaults[key]))
            for sub, subvalue in value.items():
                subpath = "%s.%s" % (path, sub)
                if sub not in defaults[key]:
                    raise ParamError(subpath, "is not a setting of %s" % key,
                                     "use keys among %s" % ", ".join(defaults[key]))
                out[key][sub] = _check_value(subpath, kinds["%s.%s" % (key, sub)], subvalue)
        else:
            out[key] = _check_value(path, kinds[key], value)
    if isinstance(out.get("maxUnavailable"), str):
        out["maxUnavailable"] = out["maxUnavailable"].strip()
    return out


def cluster_policy_spec(values_policy):
    """The ClusterPolicy's ``spec.driver.upgradePolicy`` the chart renders from its values: the same keys,
    except that the chart's ``gpuPodDeletion`` is the custom resource's ``podDeletion``."""
    spec = copy.deepcopy(values_policy)
    if "gpuPodDeletion" in spec:
        spec["podDeletion"] = spec.pop("gpuPodDeletion")
    for section in ("waitForCompletion", "drain"):
        if isinstance(spec.get(section), dict) and spec[section].get("podSelector") == "":
            del spec[section]["podSelector"]  # the chart leaves an empty selector out
    return spec


def max_in_parallel(policy, gpu_nodes):
    """How many nodes the operator upgrades at once: maxParallelUpgrades (0: no limit), capped by
    maxUnavailable (a percentage of the GPU nodes, rounded up)."""
    parallel = policy.get("maxParallelUpgrades", 1)
    unavailable = policy.get("maxUnavailable", "25%")
    if isinstance(unavailable, str) and unavailable.endswith("%"):
        unavailable = -(-int(unavailable[:-1]) * gpu_nodes // 100)
    limit = gpu_nodes if parallel == 0 else parallel
    return max(0, min(limit, int(unavailable), gpu_nodes))


# -- the module's inputs ----------------------------------------------------------------------------------------


def is_driver_version(text):
    """True for a full driver version (what a ClusterPolicy's driver.version names), False for anything else."""
    return version_parse.is_full_driver_version(str(text or "").strip())


def check_version(field, value):
    if value in (None, ""):
        return ""
    text = str(value).strip()
    if not version_parse.is_full_driver_version(text):
        raise ParamError(field, "%r is not a full driver version" % (value,),
                         "give the version the driver pods run, such as 595.91.07")
    return text


# -- host mode ------------------------------------------------------------------------------------------------


def host_upgrade_needed(gpu_host, plan):
    """Whether a host-mode GPU host must be drained and upgraded: ``plan`` is host_driver's own plan (its
    ``missing`` packages, its ``branch``), ``gpu_host`` what gpu_host_facts read. A host with every package of
    the pinned branch and (when a driver is loaded) that branch's driver loaded is left alone: not drained.

    Returns {needed: bool, reason: str}.
    """
    branch = str((plan or {}).get("branch") or "")
    missing = list((plan or {}).get("missing") or [])
    loaded = str((gpu_host or {}).get("driver_version") or "")
    name = (gpu_host or {}).get("node_name") or "the host"
    if missing:
        return {"needed": True, "reason": "%s lacks %s of branch %s" % (name, ", ".join(missing), branch)}
    if (gpu_host or {}).get("driver_loaded") and loaded and loaded.split(".", maxsplit=1)[0] != branch:
        return {"needed": True, "reason": "%s runs driver %s, not branch %s" % (name, loaded, branch)}
    return {"needed": False, "reason": "%s already has branch %s%s" % (
        name, branch, " (driver %s loaded)" % loaded if loaded else "")}
