# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What playbooks/uninstall.yml removes, in which order, what stays, and when it refuses.

Private to the collection: not a public API. Pure: standard library only.

The plan is site.yml's layers in reverse: smoke-test leftovers, monitoring, scheduling, DRA driver,
GPU sharing, GPU Operator, Network Operator, nvidia-peermem, then the hosts' container runtime
config. Each layer lists the objects the platform applied itself, its Helm releases, the node labels
it set, the namespaces its releases lived in and, only when asked (``gpu_platform_uninstall_crds``),
the custom resources of its charts' CRDs and those CRDs. The host driver is never removed.

The guards refuse before any write: GitOps render mode (the bundle lives in Git), a missing
confirmation, and the GPU Operator's container toolkit on cloud-managed GPU nodes (AKS): the toolkit
rewrote those nodes' containerd config and cannot restore the previous one (gpu-operator#188,
container-toolkit#1328), so removing it leaves the node unable to run GPU containers.

The charts' CRDs are listed in ``domain.uninstall.crds``; the GPU nodes at risk are read in
``domain.uninstall.nodes``. The hosts' container runtime backup and restore are decided here too.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import objects as monitoring
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall.crds import _crd_entries, _served
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.uninstall.nodes import runtime_at_risk
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# site.yml's layers, reversed (host_runtime is the container runtime config restored on the GPU hosts).
ORDER = ("smoke_tests", "monitoring", "scheduling", "dra_driver", "gpu_sharing", "gpu_operator",
         "network_operator", "peermem", "host_runtime")

CONFIRM = "gpu_platform_uninstall_confirm"
ACCEPT_RUNTIME_LOSS = "gpu_platform_uninstall_accept_runtime_loss"
REMOVE_CRDS = "gpu_platform_uninstall_crds"

PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Custom resources a chart's own controller makes and its admission webhook refuses to delete while it runs: they
# are not deleted one by one; the deletion of their CRD removes them (past the webhooks). Volcano v1.15.1
# (pkg/webhooks/admission/queues/validate/validate_queue.go): "`root` queue can not be deleted", and `default`.
UNDELETABLE_CRS = {("scheduling.volcano.sh/v1beta1", "Queue"): frozenset({"root", "default"})}

# The namespace KAI Scheduler's chart makes for its resource-reservation pods (values global.resourceReservation,
# v0.13.0) and keeps on helm uninstall (helm.sh/resource-policy: keep): the scheduling layer removes it.
KAI_RESERVATION_NAMESPACE = "kai-resource-reservation"

# Groups whose objects go after their scheduler's release: Volcano's admission webhook refuses to delete
# a Queue that is not Closed, and with the release gone nothing holds them.
AFTER_RELEASE_GROUPS = frozenset({"scheduling.volcano.sh"})

# Node labels the layers set: (key, value) — a value limits the removal to nodes where the platform set it.
DRA_LABELS = (("nvidia.com/dra-kubelet-plugin", None), ("nvidia.com/gpu.deploy.device-plugin", "false"))
SHARING_LABELS = (("nvidia.com/device-plugin.config", None),)

# Files the peermem role writes on GPU hosts (host path).
PEERMEM_HOST_FILES = ("/etc/modules-load.d/gpu-platform-nvidia-peermem.conf",
                      "/etc/modprobe.d/gpu-platform-nvidia-peermem.conf")

TOOLKIT_ISSUES = "gpu-operator#188, container-toolkit#1328"

TITLES = {
    "smoke_tests": "smoke-test leftovers",
    "monitoring": "GPU monitoring",
    "scheduling": "gang scheduling and GPU quota",
    "dra_driver": "DRA driver",
    "gpu_sharing": "GPU sharing",
    "gpu_operator": "GPU Operator",
    "network_operator": "Network Operator",
    "peermem": "nvidia-peermem",
    "host_runtime": "hosts' container runtime config",
}


def _bool(settings, name, default=False):
    value = settings.get(name, default)
    if not isinstance(value, bool):
        raise ParamError(name, "%r is not true or false" % (value,), "set it to true or false")
    return value


def _namespace(settings, name):
    value = settings.get(name)
    validate.dns_label(name, value)
    return value


def _release(settings, name, namespace_var, default=None):
    release = settings.get(name, default) if name else default
    if name:
        validate.release_name(name, release)
    return {"name": release, "namespace": _namespace(settings, namespace_var)}


def _objects(settings, name):
    value = settings.get(name) or []
    if not isinstance(value, list):
        raise ParamError(name, "must be a list of Kubernetes objects", "give a list of dictionaries")
    out = []
    for index, obj in enumerate(value):
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not meta.get("name") or not obj.get("apiVersion") or not obj.get("kind"):
            raise ParamError("%s[%d]" % (name, index), "is not a Kubernetes object with apiVersion, kind and "
                             "metadata.name", "give the objects the layer applied")
        ident = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": meta["name"]}}
        if meta.get("namespace"):
            ident["metadata"]["namespace"] = meta["namespace"]
        out.append(ident)
    return out


def _monitoring_objects(settings):
    namespace = _namespace(settings, "monitoring_namespace")
    dashboard = _namespace(settings, "monitoring_dashboard_namespace")
    rules = [{"apiVersion": "monitoring.coreos.com/v1", "kind": kind,
              "metadata": {"name": monitoring.OBJECT_NAME, "namespace": namespace}}
             for kind in ("ServiceMonitor", "PrometheusRule")]
    return rules + [{"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": monitoring.DASHBOARD_CONFIG_MAP, "namespace": dashboard}}]


def identity(obj):
    meta = obj["metadata"]
    where = "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace") else meta["name"]
    return "%s %s" % (obj["kind"], where)


def _layer(name, **parts):
    layer = {"layer": name, "title": TITLES[name], "objects_before": [], "cr_kinds": [], "releases": [],
             "objects_after": [], "node_labels": [], "namespaces": [], "crds": [], "nic_cluster_policy": False,
             "host_files": [], "host_runtime": False}
    layer.update(parts)
    layer["label_removals"] = label_removals(layer["node_labels"])
    return layer


def label_removals(node_labels):
    """The node_labels module's entries that take ``node_labels`` ({key, value}; an empty value: any value) off the
    nodes that carry them: one entry per selector, each removing its key (null)."""
    entries = {}
    for label in node_labels:
        selector = label["key"] + ("=" + label["value"] if label["value"] else "")
        entries[selector] = {"name": selector, "selector": selector, "labels": {label["key"]: None}}
    return list(entries.values())


def plan(settings, served_crds=None):
    """The removal plan: {layers: [...] in ORDER, crds_kept: [...], kept: [lines]}.

    ``settings``: the inventory's variables by name (see playbooks/uninstall.yml) plus the scheduling layer's
    objects (``scheduling_objects``, from its plan). ``served_crds``: the names of the CRDs the
    cluster serves, or None when unknown (offline); objects of kinds whose CRD is not served are left out.
    """
    remove_crds = _bool(settings, REMOVE_CRDS)
    _bool(settings, CONFIRM)
    _bool(settings, ACCEPT_RUNTIME_LOSS)
    served = None if served_crds is None else set(served_crds)

    def objects(name):
        return [o for o in _objects(settings, name) if _served(o, served)]

    gpu_nfd = _bool(settings, "gpu_platform_nfd_in_gpu_operator", True)
    net_nfd = _bool(settings, "network_operator_nfd_enabled", False)
    network_mode = settings.get("gpu_platform_network_mode") or "none"
    sharing_ns = _namespace(settings, "gpu_sharing_namespace")
    sharing_cm = settings.get("gpu_platform_time_slicing_config_map")
    validate.dns_label("gpu_platform_time_slicing_config_map", sharing_cm, max_len=253)
    scheduling = objects("scheduling_objects")
    kept = ["the NVIDIA host driver and its packages, pin, nouveau blacklist and persistence unit (host_driver); "
            "remove them with the package manager if wanted",
            "the host runtime backups under host_driver_runtime_backup_dir (they are what a later restore uses)",
            "MIG layouts on the GPUs and the nvidia.com/mig.config node labels; node labels that GPU Feature "
            "Discovery and NFD wrote (nvidia.com/gpu.*, feature.node.kubernetes.io/*)"]
    teams = [n for n in settings.get("scheduling_team_namespaces") or [] if n]
    if teams:
        kept.append("the teams' namespaces %s (they hold the teams' workloads)" % ", ".join(sorted(set(teams))))

    charts = {
        "scheduling": ["volcano", "kai-scheduler", "kueue"],
        "dra_driver": ["dra-driver-nvidia-gpu"],
        "gpu_operator": ["gpu-operator"] + (["node-feature-discovery"] if gpu_nfd else []),
        "network_operator": ["network-operator"] + (["node-feature-discovery"] if net_nfd and not gpu_nfd else []),
    }
    layers = [
        _layer("smoke_tests", namespaces=[_namespace(settings, "smoke_tests_namespace")]),
        _layer("monitoring", objects_before=[o for o in _monitoring_objects(settings) if _served(o, served)]),
        _layer("scheduling",
               objects_before=[o for o in scheduling if o["apiVersion"].split("/")[0] not in AFTER_RELEASE_GROUPS],
               objects_after=[o for o in scheduling if o["apiVersion"].split("/")[0] in AFTER_RELEASE_GROUPS],
               releases=[_release(settings, None, "scheduling_volcano_namespace", "volcano"),
                         _release(settings, None, "scheduling_kai_namespace", "kai-scheduler"),
                         _release(settings, None, "scheduling_kueue_namespace", "kueue")],
               namespaces=[KAI_RESERVATION_NAMESPACE]),
        _layer("dra_driver", releases=[_release(settings, None, "dra_driver_namespace", "dra-driver-nvidia-gpu")],
               node_labels=[{"key": k, "value": v} for k, v in DRA_LABELS]),
        _layer("gpu_sharing", objects_before=[{"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": sharing_cm, "namespace": sharing_ns}}],
               node_labels=[{"key": k, "value": v} for k, v in SHARING_LABELS]),
        _layer("gpu_operator", releases=[_release(settings, "gpu_operator_release_name", "gpu_platform_gpu_operator_namespace")]),
        # The NicClusterPolicy and its network: only while their CRDs are served (a second run after the CRDs went).
        _layer("network_operator",
               nic_cluster_policy=network_mode != "none" and (served is None or "nicclusterpolicies.mellanox.com" in served),
               releases=[_release(settings, "gpu_platform_network_operator_release_name", "gpu_platform_network_operator_namespace")]),
        _layer("peermem", namespaces=[_namespace(settings, "peermem_namespace")], host_files=list(PEERMEM_HOST_FILES)),
        _layer("host_runtime", host_runtime=True),
    ]
    # A namespace goes with the last layer whose release lives there (a later layer may still need it).
    later = set()
    for layer in reversed(layers):
        own = [r["namespace"] for r in layer["releases"]] + layer["namespaces"]
        layer["namespaces"] = [n for n in _unique(own) if n not in later and n not in PROTECTED_NAMESPACES]
        later.update(own)
    crds_all = []
    for layer in layers:
        entries = _crd_entries(charts.get(layer["layer"], []))
        names = [n for n in entries if n not in crds_all]
        crds_all += names
        if remove_crds:
            layer["cr_kinds"] = [{"api_version": entries[n][0], "kind": entries[n][1], "crd": n} for n in names
                                 if served is None or n in served]
            layer["crds"] = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                              "metadata": {"name": n}} for n in names if served is None or n in served]
    crds_kept = [] if remove_crds else [n for n in crds_all if served is None or n in served]
    if crds_kept:
        kept.append("CRDs and their custom resources (set %s: true to remove them): %s"
                    % (REMOVE_CRDS, ", ".join(crds_kept)))
    return {"order": list(ORDER), "layers": layers, "crds_kept": crds_kept, "kept": kept,
            "remove_crds": remove_crds}


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def describe(removal):
    """One line per layer: what the plan removes, in order."""
    lines = []
    for layer in removal["layers"]:
        parts = []
        if layer["cr_kinds"]:
            parts.append("custom resources of " + ", ".join(k["kind"] for k in layer["cr_kinds"]))
        parts += [identity(o) for o in layer["objects_before"]]
        if layer["nic_cluster_policy"]:
            parts.append("NicClusterPolicy and its network")
        parts += ["Helm release %s/%s" % (r["namespace"], r["name"]) for r in layer["releases"]]
        parts += [identity(o) for o in layer["objects_after"]]
        parts += ["node label %s%s" % (n["key"], "=" + n["value"] if n["value"] else "") for n in layer["node_labels"]]
        parts += ["namespace " + n for n in layer["namespaces"]]
        parts += ["CRD " + c["metadata"]["name"] for c in layer["crds"]]
        parts += ["host file " + f for f in layer["host_files"]]
        if layer["host_runtime"]:
            parts.append("the container runtime config restored from host_driver's backup (GPU hosts)")
        if parts:
            lines.append("%d. %s: %s" % (len(lines) + 1, layer["title"], "; ".join(parts)))
    return lines


def check(removal, settings, cluster=None):
    """{refusals, warnings}: a refusal stops the play before any write. ``cluster`` None: the checks that need
    no cluster (render mode, confirmation); otherwise {cluster_policy, nodes} read from the cluster."""
    refusals, warnings = [], []
    if settings.get("gpu_platform_render_to"):
        refusals.append(
            "gpu_platform_render_to is set (%s): the platform was delivered as a GitOps bundle, and removing it from "
            "the cluster here would be undone by Flux or Argo CD at the next sync. Fix: remove the bundle's folder "
            "(or its entry in the parent kustomization) from the Git repository and let the GitOps controller prune "
            "it (Flux Kustomization prune: true; Argo CD automated prune), then run uninstall.yml without "
            "gpu_platform_render_to for the hosts' runtime config. See docs/uninstall.md. Nothing was changed."
            % settings["gpu_platform_render_to"])
        return {"refusals": refusals, "warnings": warnings}
    if not _bool(settings, CONFIRM):
        refusals.append(
            "%s is not true: uninstall.yml removes the GPU platform from the cluster. It would remove, in this "
            "order: %s. Fix: check the list, then run again with -e %s=true. Nothing was changed."
            % (CONFIRM, " | ".join(describe(removal)), CONFIRM))
    if cluster is None:
        return {"refusals": refusals, "warnings": warnings}
    at_risk = runtime_at_risk(settings, cluster)
    cloud = [n for n in at_risk if n["cloud"]]
    if cloud and not _bool(settings, ACCEPT_RUNTIME_LOSS):
        refusals.append(
            "The GPU Operator's container toolkit is enabled on %d cloud-managed GPU node(s): %s. The toolkit "
            "rewrote their containerd config and cannot restore the previous one when it is removed (%s); on "
            "cloud-managed (AKS) nodes that leaves the node unable to run GPU containers. Fix: either keep the "
            "platform, or set %s: true and recreate or reimage those node pools after the uninstall "
            "(az aks nodepool upgrade --node-image-only, or delete and add the pool). Nothing was changed."
            % (len(cloud), "; ".join("%s (%s)" % (n["name"], n["cloud"]) for n in cloud), TOOLKIT_ISSUES,
               ACCEPT_RUNTIME_LOSS))
    elif cloud:
        warnings.append(
            "%s is true: the container toolkit's containerd changes stay broken on %s; recreate or reimage their "
            "node pools after this run (%s)." % (ACCEPT_RUNTIME_LOSS, ", ".join(n["name"] for n in cloud),
                                                 TOOLKIT_ISSUES))
    own = [n["name"] for n in at_risk if not n["cloud"]]
    if own:
        warnings.append(
            "The container toolkit changed the containerd config of %s and does not restore it (%s). GPU hosts in "
            "the gpu_hosts group get host_driver's backup back at the end of this run; check the others' "
            "/etc/containerd/config.toml (and conf.d) by hand." % (", ".join(own), TOOLKIT_ISSUES))
    return {"refusals": refusals, "warnings": warnings}


# ---------------------------------------------------------------- host container runtime backup and restore

def backup_name(path):
    """The backup file's name for a source path (flat: one folder holds every file)."""
    return path.strip("/").replace("/", "__")


def _abs_path(field, path):
    if not isinstance(path, str) or not path.startswith("/") or "/../" in path + "/":
        raise ParamError(field, "%r is not an absolute path" % (path,), "give absolute paths such as "
                         "/etc/containerd/config.toml")
    return path.rstrip("/") or "/"


def backup_manifest(files, dropin_dirs, taken, service="containerd"):
    """The manifest written beside a runtime backup.

    ``files``: stat results of the config files and of the files found in the drop-in folders
    ([{path, exists, checksum, mode}]); ``dropin_dirs``: {folder: [its files] or None when the folder is
    missing}. Records which files existed (with sha256 and mode) and which did not, so a restore can put the
    former back and remove the latter.
    """
    out = []
    for index, item in enumerate(files or []):
        path = _abs_path("files[%d].path" % index, item.get("path"))
        if item.get("exists"):
            out.append({"path": path, "present": True, "sha256": item.get("checksum"), "mode": item.get("mode"),
                        "backup": backup_name(path)})
        else:
            out.append({"path": path, "present": False})
    dirs = {}
    for folder, names in sorted((dropin_dirs or {}).items()):
        folder = _abs_path("host_driver_runtime_dropin_dirs", folder)
        dirs[folder] = None if names is None else sorted(_abs_path(folder, n) for n in names)
    return {"format": 1, "taken": taken, "runtime_service": service,
            "files": sorted(out, key=lambda f: f["path"]), "dropin_dirs": dirs}


def restore_plan(manifest, backup_dir, current_dropins):
    """What a restore does: {restore: [{path, src, mode}], remove: [paths]}.

    ``current_dropins``: {folder: [its files now] or None when missing}. Files that existed at backup time are
    copied back; config files that did not exist are removed; drop-in folders that did not exist are removed
    whole; files added since to folders that existed are removed.
    """
    if not isinstance(manifest, dict) or manifest.get("format") != 1:
        raise ParamError("manifest", "is not a runtime backup manifest (format 1)",
                         "point host_driver_runtime_backup_dir at the folder host_driver backed up to")
    restore, remove = [], []
    for item in manifest.get("files") or []:
        if item.get("present"):
            restore.append({"path": item["path"], "src": "%s/files/%s" % (backup_dir.rstrip("/"), item["backup"]),
                            "mode": item.get("mode") or "0644", "sha256": item.get("sha256")})
        elif not _under_any(item["path"], manifest.get("dropin_dirs") or {}):
            remove.append(item["path"])
    for folder, before in sorted((manifest.get("dropin_dirs") or {}).items()):
        now = (current_dropins or {}).get(folder)
        if before is None:
            if now is not None:
                remove.append(folder)
            continue
        remove += sorted(p for p in now or [] if p not in before)
    return {"restore": restore, "remove": remove}


def _under_any(path, folders):
    return any(path.startswith(folder.rstrip("/") + "/") for folder in folders)


def deletable_crs(results):
    """The custom resources to delete one by one, from the registered results of the loop that listed each of the
    plan's ``cr_kinds`` (``item``: the kind, ``resources``: what the cluster holds): all but ``UNDELETABLE_CRS``,
    which go with their CRD."""
    objects = []
    for result in results or []:
        item = result.get("item") or {}
        keep = UNDELETABLE_CRS.get((item.get("api_version"), item.get("kind")), frozenset())
        objects += [obj for obj in result.get("resources") or []
                    if (obj.get("metadata") or {}).get("name") not in keep]
    return objects
