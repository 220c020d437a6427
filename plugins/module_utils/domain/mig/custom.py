# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A custom mig-parted config for the GPU Operator's MIG manager (the gpu_sharing role's gpu_platform_mig_config).

Private to the collection: not a public API. Pure: standard library only.

Facts this follows [GPU Operator chart values.yaml migManager.config.{default,create,name,data}; ClusterPolicy
CRD spec.migManager.config {name, default (all-disabled or "")}]: the MIG manager reads a ConfigMap whose key
``config.yaml`` holds a mig-parted config; with ``migManager.config.name`` set it uses that config "instead of
auto-generated one", so every layout a node may be given must be in it, and ``default: all-disabled`` names the
layout of unlabelled nodes, which the config must define too. The config itself is checked by
mig.validate_mig_parted_config (mig-parted's spec v1, counts and fit per GPU).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

FIELD = "gpu_platform_mig_config"
CONFIG_MAP = "custom-mig-parted-config"
CONFIG_KEY = "config.yaml"
DISABLED = "all-disabled"
DEFAULT_NAMESPACE = "gpu-operator"


def _object_name(value):
    if not isinstance(value, str) or not value or len(value) > 253 or not validate.DNS1123_SUBDOMAIN.match(value):
        raise ParamError("gpu_platform_mig_config_map", "%r is not a valid ConfigMap name" % (value,),
                         "use lower-case letters, digits, '-' and '.', e.g. %s" % CONFIG_MAP)
    return value


def config_error(exc):
    """The validator's ParamError (field mig_config, message starting with the path) as one naming
    ``gpu_platform_mig_config.<path>``, e.g. ``gpu_platform_mig_config.mig-configs.custom-1[0].mig-devices``."""
    problem, fix = exc.msg[len(exc.field) + 2:].split(". Fix: ", 1)
    token = problem.split(" ", 1)[0].rstrip(":")
    field = FIELD
    if token.startswith("mig-configs") or token == "version":
        field += "." + token
    return ParamError(field, problem, fix)


def check_config(config):
    """The role's ``gpu_platform_mig_config``: None when unset ({} or None), else the config after mig-parted's
    checks (mig.validate_mig_parted_config) plus ``all-disabled``, which the GPU Operator's MIG manager applies
    to unlabelled nodes (ClusterPolicy migManager.config.default). Errors name ``gpu_platform_mig_config.<path>``."""
    if config is None or config == {}:
        return None
    try:
        mig.validate_mig_parted_config(config)
    except ParamError as exc:
        raise config_error(exc)
    disabled = config["mig-configs"].get(DISABLED)
    if disabled is None or any(entry["mig-enabled"] for entry in disabled):
        raise ParamError(FIELD + ".mig-configs." + DISABLED,
                         "is missing or enables MIG; the MIG manager applies it to every node without a "
                         "nvidia.com/mig.config label (ClusterPolicy migManager.config.default)",
                         "add %s: [{devices: all, mig-enabled: false}]" % DISABLED)
    return config


def config_map(config, text, name=CONFIG_MAP, namespace=DEFAULT_NAMESPACE):
    """The ConfigMap the MIG manager reads (key ``config.yaml``), or None without a custom config.

    ``text`` is the config as YAML; the filter renders it with the same renderer as mig_profile, so the role and
    the module write the same bytes and neither undoes the other.
    """
    _object_name(name)
    validate.dns_label("gpu_sharing_namespace", namespace)
    if check_config(config) is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
            "data": {CONFIG_KEY: text}}


def chart_values(config, name=CONFIG_MAP):
    """GPU Operator chart values pointing the MIG manager at the custom config, or {} without one.

    ``create`` stays false: the role applies the ConfigMap itself (as for the device-plugin config).
    """
    _object_name(name)
    if check_config(config) is None:
        return {}
    return {"migManager": {"config": {"name": name, "default": DISABLED, "create": False}}}
