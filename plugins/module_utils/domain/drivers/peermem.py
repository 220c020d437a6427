# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""nvidia-peermem on GPU nodes whose driver the cloud (or someone else) installed: a DaemonSet that
loads the module on every GPU node and keeps it loaded.

Private to the collection: not a public API. Pure: standard library only.
The container loads the module with the host's own modprobe (chroot into the host's root) and then
idles; its startup probe waits for the module in /proc/modules (one list for the whole kernel) and its
liveness probe restarts the container, which loads the module again, when it disappears.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NAME = "nvidia-peermem-loader"
MODULE = re.compile(r"[a-z0-9_-]+")
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform"}
# NFD's NVIDIA PCI label: NFD runs before the peermem layer; nvidia.com/gpu.present comes with the GPU Operator, after.
DEFAULT_NODE_SELECTOR = {"feature.node.kubernetes.io/pci-10de.present": "true"}


def daemonset(namespace, image, module="nvidia-peermem", node_selector=None, image_pull_secrets=None):
    """The Namespace (pod-security privileged) and the DaemonSet, as a list of objects; the loader pulls its image
    with ``image_pull_secrets`` (Secret names in ``namespace``) when given."""
    validate.dns_label("peermem_namespace", namespace)
    secrets = validate.secret_names("peermem_image_pull_secrets", image_pull_secrets)
    image = validate.pinned_image("peermem_loader_image", image)
    if not isinstance(module, str) or not MODULE.fullmatch(module):
        raise ParamError("peermem_module", "%r is not a kernel module name" % (module,),
                         "use nvidia-peermem (or nvidia-current-peermem on Debian's packages)")
    selector = node_selector if node_selector is not None else dict(DEFAULT_NODE_SELECTOR)
    if not isinstance(selector, dict) or not selector:
        raise ParamError("peermem_node_selector", "must be a non-empty dictionary of node labels",
                         "e.g. {feature.node.kubernetes.io/pci-10de.present: 'true'} or "
                         "{kubernetes.azure.com/accelerator: nvidia}")
    for key, value in selector.items():
        if not isinstance(value, str):
            raise ParamError("peermem_node_selector.%s" % key, "%r is not a string (label values are strings)"
                             % (value,), "quote it, e.g. '%s': '%s'" % (key, str(value).lower()))
    loaded = module.replace("-", "_")
    probe = {"exec": {"command": ["grep", "-q", "^%s " % loaded, "/proc/modules"]}}
    namespace_obj = {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": namespace,
                                  "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}
    container = {
        "name": "loader",
        "image": image,
        "command": ["/bin/sh", "-c"],
        # The host's modprobe resolves dependencies (ib_core, nvidia) from the host's module tree.
        # Once loaded the container idles; the probes do the watching.
        "args": ["chroot /host /sbin/modprobe %s && echo \"%s loaded\" && exec sleep infinity" % (module, module)],
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "host-root", "mountPath": "/host", "readOnly": True}],
        "startupProbe": dict(probe, periodSeconds=5, failureThreshold=24),
        "livenessProbe": dict(probe, periodSeconds=30, failureThreshold=2),
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
    }
    ds = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": namespace, "labels": dict(LABELS)},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "hostPID": True,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": dict(selector),
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [container],
                    "volumes": [{"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}}],
                },
            },
        },
    }
    return [namespace_obj] + objects.with_pull_secrets([ds], secrets)


def loader_ready(daemonset, nodes, selector=None):
    """Whether the loader runs, ready, on every GPU node it is meant for: ``{"ready", "msg"}``.

    ``daemonset`` is the loader DaemonSet as the API returns it (None: not found); ``nodes`` the Nodes that match
    its node selector (the RDMA GPU nodes). Ready means a GPU node matched, ``desiredNumberScheduled`` is that number
    of nodes, and ``numberReady`` equals it. A DaemonSet with nothing to schedule is not ready: it proves nothing.
    """
    where = "the node selector %s" % ", ".join("%s=%s" % kv for kv in sorted((selector or {}).items())) \
        if selector else "the loader's node selector"
    if not daemonset:
        return {"ready": False, "msg": "the DaemonSet %s was not found" % NAME}
    status = daemonset.get("status") or {}
    desired, ready = status.get("desiredNumberScheduled") or 0, status.get("numberReady") or 0
    names = sorted(((n or {}).get("metadata") or {}).get("name") or "?" for n in nodes or [])
    if not names:
        return {"ready": False, "msg": "no GPU node matched %s, so nvidia-peermem is loaded nowhere. Fix: label the "
                "RDMA GPU nodes, or set peermem_node_selector to labels they carry" % where}
    if desired != len(names):
        return {"ready": False, "msg": "%s schedules %d loader pod(s) but %d GPU node(s) match %s (%s): a node is "
                "cordoned, tainted or not yet seen by the DaemonSet controller" % (NAME, desired, len(names), where,
                                                                                   ", ".join(names[:10]))}
    if ready != desired:
        return {"ready": False, "msg": "%d of %d loader pods are ready: nvidia-peermem is not loaded on every GPU "
                "node. Fix: read the loader's log (kubectl logs -n <namespace> ds/%s)" % (ready, desired, NAME)}
    return {"ready": True, "msg": "nvidia-peermem is loaded on all %d GPU node(s): %s" % (len(names), ", ".join(names))}
