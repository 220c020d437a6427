# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU Operator chart values from the gpu_operator role's choices, and operand readiness.

Private to the collection: not a public API. Pure: standard library only.
Value keys follow the values.yaml of the GPU Operator charts the release pairs pin (v26.7.0, v26.3.3, read by the
tests from their source archives in shared/upstream/src); the schema tests check every key this produces against each
of those files, and render each pair's chart with these values (helm template). Helm ignores a key the chart lacks, so
a key only a newer release has would do nothing.
"""

from __future__ import annotations

import base64
import copy
import json

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images, validate, version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm.helm_pinned_release import deep_merge
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import placement
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

MIG_STRATEGIES = ("none", "single", "mixed")
# Components whose chart values take imagePullSecrets in v26.3.3, as in v26.7 (dcgmExporter does not).
PULL_SECRET_COMPONENTS = ("operator", "validator", "driver", "toolkit", "devicePlugin", "gfd", "migManager",
                          "nodeStatusExporter", "gds", "gdrcopy")


def _bool(settings, key):
    value = settings.get(key)
    if not isinstance(value, bool):
        raise ParamError("gpu_operator_" + key, "%r is not true or false" % (value,), "set it to true or false")
    return value


def _driver_values(settings):
    """The ``driver`` and ``toolkit`` values decided by gpu_driver_mode (``gpu_operator_values``)."""
    decided = settings.get("driver_values")
    if not isinstance(decided, dict) or not isinstance(decided.get("driver"), dict) or \
            not isinstance(decided["driver"].get("enabled"), bool):
        raise ParamError("gpu_operator_driver_values", "%r is not a gpu_driver_mode decision" % (decided,),
                         "pass the gpu_operator_values that gpu_platform.cluster.gpu_driver_mode returns")
    return copy.deepcopy(decided["driver"]), copy.deepcopy(decided.get("toolkit") or {"enabled": True})


# Operands that serve only vGPU and sandboxed (VFIO passthrough, Kata) workloads, which the platform does not run: the
# chart deploys them for its sandboxWorkloads. Azure's AKS RDMA/InfiniBand guide turns them off in its GPU Operator
# values, and the MIG manager with them when no pool uses MIG (Azure/aks-rdma-infiniband,
# configs/values/gpu-operator/values.yaml).
SANDBOX_OPERANDS = ("vgpuDeviceManager", "vfioManager", "sandboxDevicePlugin")
TRIM_FIELD = "gpu_operator_disable_unused_operands"


def unused_operands(settings, extra):
    """The values that turn off the operands nothing here needs, when the role is asked to (``disable_unused_operands``):
    the MIG manager unless a pool shares its GPUs with MIG or a custom mig-parted config is set (``mig_pools``,
    ``mig_config``: the sharing layer's plan), and the sandbox operands unless ``extra`` turns sandboxWorkloads on."""
    trim = settings.get("disable_unused_operands", False)
    if not isinstance(trim, bool):
        raise ParamError(TRIM_FIELD, "%r is not true or false" % (trim,), "set it to true or false")
    if not trim:
        return {}
    out = {}
    if not settings.get("mig_pools") and not settings.get("mig_config"):
        out["migManager"] = {"enabled": False}
    sandbox = extra.get("sandboxWorkloads") if isinstance(extra.get("sandboxWorkloads"), dict) else {}
    if sandbox.get("enabled") is not True:
        out.update({name: {"enabled": False} for name in SANDBOX_OPERANDS})
    return out


# Values only gpu_driver_mode may set: an override in extra_values would bypass its conflict check.
DECIDED_KEYS = (("driver", "enabled"), ("driver", "nvidiaDriverCRD", "enabled"), ("toolkit", "enabled"))


def _check_overrides(extra, values):
    for path in DECIDED_KEYS:
        given, decided = extra, values
        for key in path:
            given = given.get(key) if isinstance(given, dict) else None
            decided = decided.get(key) if isinstance(decided, dict) else None
        if given is not None and given != decided:
            raise ParamError("gpu_operator_extra_values.%s" % ".".join(path),
                             "%r contradicts the driver owner that gpu_driver_mode decided (%s=%r)" % (
                                 given, ".".join(path), decided),
                             "set gpu_platform_driver_mode (host, operator or auto) instead; the owner is decided "
                             "there and checked against every node")


def build_values(settings):
    """Chart values from the role's settings (keys without the ``gpu_operator_`` prefix) and the
    ``driver_values`` that gpu_driver_mode decided.

    Raises ParamError naming the role variable for any bad or contradictory choice.
    """
    driver_values, toolkit_values = _driver_values(settings)
    driver = driver_values["enabled"]
    rdma = _bool(settings, "rdma_enabled")
    host_mofed = _bool(settings, "rdma_use_host_mofed")
    strategy = settings.get("mig_strategy")
    if strategy not in MIG_STRATEGIES:
        raise ParamError("gpu_platform_mig_strategy", "%r is not a MIG strategy" % (strategy,),
                         "use one of %s" % ", ".join(MIG_STRATEGIES))
    if host_mofed and not rdma:
        raise ParamError("gpu_platform_host_mofed", "is true but gpu_platform_gpudirect_rdma is false",
                         "enable RDMA (gpu_platform_gpudirect_rdma: true) or drop the host MOFED setting")
    driver_version = settings.get("driver_version") or ""
    if driver_version and not version_parse.is_full_driver_version(str(driver_version)):
        raise ParamError("gpu_platform_driver_version", "%r is not a driver version" % (driver_version,),
                         "give a full version such as 580.95.05, or leave it empty for the chart's default")
    if driver_version and not driver:
        raise ParamError("gpu_platform_driver_version", "is %s but the hosts own the driver (gpu_driver_mode decided "
                         "host)" % driver_version, "pin the hosts' branch with gpu_platform_driver_branch and leave "
                         "gpu_platform_driver_version empty")
    values = {
        "driver": driver_values,
        "toolkit": toolkit_values,
        "nfd": {"enabled": _bool(settings, "nfd_enabled")},
        "mig": {"strategy": strategy},
        "dcgmExporter": {
            "enabled": _bool(settings, "dcgm_exporter_enabled"),
            "serviceMonitor": {"enabled": _bool(settings, "dcgm_exporter_service_monitor")},
        },
    }
    if driver and driver_version:
        values["driver"]["version"] = str(driver_version)
    if "driver_upgrade_policy" in settings:
        # Checked whoever owns the driver (a bad value is refused either way); used only when the operator does.
        policy = gpu_driver_upgrade.check_policy(settings["driver_upgrade_policy"])
        if driver:
            values["driver"]["upgradePolicy"] = policy
    if values["dcgmExporter"]["serviceMonitor"]["enabled"] and not values["dcgmExporter"]["enabled"]:
        raise ParamError("gpu_operator_dcgm_exporter_service_monitor", "is true but the DCGM exporter is disabled",
                         "enable gpu_operator_dcgm_exporter_enabled or turn the ServiceMonitor off")
    config = settings.get("device_plugin_config") or {}
    if config:
        name = validate.dns_label("gpu_operator_device_plugin_config.name", config.get("name"), 253)
        plugin = {"config": {"name": name, "default": str(config.get("default") or "")}}
        values["devicePlugin"] = plugin
    names = validate.secret_names("gpu_operator_image_pull_secrets", settings.get("image_pull_secrets"))
    if names:
        for component in PULL_SECRET_COMPONENTS:
            values.setdefault(component, {})["imagePullSecrets"] = list(names)
    values = deep_merge(values, images.chart_values("gpu-operator", images.check_mirrors(
        settings.get("image_mirrors"), "gpu_operator_image_mirrors")))
    values = deep_merge(values, placement.chart_values("gpu-operator", settings.get("placement")))
    extra = settings.get("extra_values") or {}
    if not isinstance(extra, dict):
        raise ParamError("gpu_operator_extra_values", "must be a dictionary of chart values",
                         "give structured values, e.g. {operator: {defaultRuntime: containerd}}")
    _check_overrides(extra, values)
    images.check_pins({"gpu_operator_extra_values": ("gpu-operator", extra)},
                      settings.get("allow_image_overrides", False))
    values = deep_merge(values, unused_operands(settings, extra))
    return deep_merge(values, extra)


def parse_kube_version(text):
    """(major, minor) of a Kubernetes version as the cluster's /version reports it (v1.34.1, v1.34.1-eks-123, 1.34)."""
    try:
        parts = version_parse.parse_version("kubernetes", str(text or "").strip()).parts
    except ParamError:
        parts = None
    if parts is None:
        raise ParamError("kubernetes version", "%r is not a Kubernetes version" % (text,),
                         "check the cluster's /version answer")
    return parts[0], parts[1]


def version_at_least(actual, minimum):
    """True when Kubernetes ``actual`` (v1.34.1, 1.34) is at least ``minimum`` (1.30)."""
    return parse_kube_version(actual) >= parse_kube_version(minimum)


def unready_daemonsets(daemonsets):
    """``name (ready/desired)`` for each DaemonSet that is not fully ready and up to date."""
    out = []
    for ds in daemonsets:
        status = ds.get("status") or {}
        desired = int(status.get("desiredNumberScheduled") or 0)
        ready = int(status.get("numberReady") or 0)
        updated = int(status.get("updatedNumberScheduled") or 0)
        current_gen = (ds.get("metadata") or {}).get("generation")
        stale = current_gen is not None and status.get("observedGeneration") not in (None, current_gen)
        if ready < desired or updated < desired or stale:
            out.append("%s (%d/%d ready)" % (ds["metadata"]["name"], ready, desired))
    return sorted(out)


def pull_secrets(credentials, namespace):
    """The image pull Secrets (kubernetes.io/dockerconfigjson) for ``credentials`` ({name, registry, username,
    password}) in ``namespace``, as the kubelet reads them: one registry per Secret, its ``auth`` the base64 of
    ``username:password``."""
    secrets = []
    for index, cred in enumerate(credentials or []):
        where = "gpu_operator_registry_credentials[%d]" % index
        if not isinstance(cred, dict):
            raise ParamError(where, "is not a dictionary", "give {name, registry, username, password}")
        for key in ("name", "registry", "username", "password"):
            if not isinstance(cred.get(key), str) or not cred[key]:
                raise ParamError("%s.%s" % (where, key), "is missing or empty", "give the credential's %s" % key)
        if len(cred["name"]) > 253 or not validate.DNS1123_SUBDOMAIN.match(cred["name"]):
            raise ParamError(where + ".name", "%r is not a Secret name" % cred["name"][:100],
                             "use lower-case letters, digits, '-' and '.', e.g. ngc-pull")
        auth = {"username": cred["username"], "password": cred["password"],
                "auth": base64.b64encode(("%s:%s" % (cred["username"], cred["password"])).encode()).decode()}
        config = json.dumps({"auths": {cred["registry"]: auth}}, sort_keys=True)
        secrets.append({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                        "metadata": {"name": cred["name"], "namespace": namespace},
                        "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()}})
    return secrets
