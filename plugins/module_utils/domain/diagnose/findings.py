# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The platform's known failures, found in what was read from the cluster.

Private to the collection: not a public API. Pure: standard library only, no I/O.

``diagnose(evidence)`` takes a plain dict of what was read and returns one finding per failure and node, each
``{id, node, evidence, cause, fix, reference}`` (``catalog.SIGNATURES`` gives the last three), sorted by node, then
the catalog's order. A healthy platform gives []. The evidence (every key optional):

- ``pods``: ``{namespace, name, node, reason (Init:0/4, CrashLoopBackOff, ...), ready, containers: [{name, state,
  last_state, restarts}], logs: {container: [tail lines]}}``
- ``events``: ``{namespace, object, node, reason, message}``
- ``nodes``: ``{name, labels, taints: [{key, value, effect}], allocatable, capacity, modules: [loaded kernel
  modules], logs: {journal: [lines], dmesg: [lines]}}``
- ``daemonsets``: ``{namespace, name, desired, ready, tolerations}``; ``operator_namespace`` (gpu-operator).
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.diagnose import catalog
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELD = "evidence"
GPU = "nvidia.com/gpu"
GPU_NODE_LABELS = ("nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present")
DRIVER_POD = "nvidia-driver-daemonset"


def _list(evidence, key):
    value = evidence.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ParamError("%s.%s" % (FIELD, key), "is not a list of dicts", "give each %s as a dict" % key[:-1])
    return value


def _int(value):
    try:
        return int(str(value))
    except ValueError:
        return None


def _log_sources(pods, events, nodes):
    """(node, where, line) for every log line read, in a stable order."""
    for pod in sorted(pods, key=lambda p: (p.get("namespace") or "", p.get("name") or "")):
        for container, lines in sorted((pod.get("logs") or {}).items()):
            for line in lines or []:
                yield pod.get("node"), "pod %s/%s container %s" % (pod.get("namespace"), pod.get("name"), container), line
    for node in sorted(nodes, key=lambda n: n.get("name") or ""):
        for source, lines in sorted((node.get("logs") or {}).items()):
            for line in lines or []:
                yield node.get("name"), "node %s %s" % (node.get("name"), source), line
    for event in events:
        node = event.get("node") or (event.get("object", "")[5:] if str(event.get("object", "")).startswith("node/")
                                     else None)
        yield node, "event %s %s on %s" % (event.get("reason"), event.get("namespace") or "", event.get("object")), \
            event.get("message") or ""


def _from_logs(pods, events, nodes):
    for node, where, line in _log_sources(pods, events, nodes):
        for check_id, signature in catalog.SIGNATURES.items():
            if any(pattern.search(str(line)) for pattern in signature["logs"]):
                yield check_id, node, "%s: %s" % (where, str(line).strip())


def _from_pods(pods, operator_ns):
    by_node = {}
    for pod in pods:
        by_node.setdefault(pod.get("node"), []).append(pod)
    for node, on_node in sorted(by_node.items(), key=lambda item: item[0] or ""):
        on_node = sorted(on_node, key=lambda p: p.get("name") or "")
        drivers = [p for p in on_node if (p.get("name") or "").startswith(DRIVER_POD) and not p.get("ready")]
        stuck = [p for p in on_node if str(p.get("reason") or "").startswith("Init:") and p not in drivers
                 and (p.get("name") or "").startswith("nvidia-")]
        if drivers and stuck:
            yield "driver-not-ready", node, "pod %s/%s is %s and the driver pod %s/%s is not ready (%s)" % (
                stuck[0].get("namespace"), stuck[0]["name"], stuck[0]["reason"], drivers[0].get("namespace"),
                drivers[0]["name"], drivers[0].get("reason") or "not ready")
        for pod in on_node:
            for container in pod.get("containers") or []:
                states = (container.get("state"), container.get("last_state"))
                if container.get("name") == "nvidia-peermem-ctr" and "CrashLoopBackOff" in states:
                    yield "peermem-load-failed", node, "pod %s/%s container nvidia-peermem-ctr is in CrashLoopBackOff " \
                        "(%s restarts)" % (pod.get("namespace"), pod["name"], container.get("restarts", "?"))
                if pod.get("namespace") == operator_ns and (pod.get("name") or "").startswith("gpu-operator") \
                        and "OOMKilled" in states:
                    yield "operator-oomkilled", node, "pod %s/%s container %s was OOMKilled (%s restarts)" % (
                        pod.get("namespace"), pod["name"], container.get("name"), container.get("restarts", "?"))


def _is_gpu_node(node):
    labels = node.get("labels") or {}
    gpus = _int((node.get("capacity") or {}).get(GPU)) or 0
    return gpus > 0 or any(labels.get(key) == "true" for key in GPU_NODE_LABELS)


def _from_nodes(nodes, daemonsets, operator_ns):
    gpu_nodes = [n for n in nodes if _is_gpu_node(n)]
    short = [d for d in daemonsets if d.get("namespace") == operator_ns
             and (_int(d.get("desired")) or 0) < len(gpu_nodes)]
    for node in sorted(nodes, key=lambda n: n.get("name") or ""):
        name, labels = node.get("name"), node.get("labels") or {}
        capacity, allocatable = node.get("capacity") or {}, node.get("allocatable") or {}
        cap, alloc = _int(capacity.get(GPU)), _int(allocatable.get(GPU))
        if cap is not None and alloc is not None and alloc < cap:
            yield "gpu-fallen-off-bus", name, "allocatable %s %d of capacity %d" % (GPU, alloc, cap)
        if labels.get(catalog.MIG_STATE) == "failed":
            yield "mig-reset-blocked", name, "label %s=failed" % catalog.MIG_STATE
        if labels.get(catalog.UPGRADE_STATE) == "upgrade-failed":
            yield "driver-upgrade-failed", name, "label %s=upgrade-failed" % catalog.UPGRADE_STATE
        if "nouveau" in (node.get("modules") or []):
            yield "nouveau-loaded", name, "nouveau is among the loaded kernel modules"
        for resource in sorted(set(capacity) | set(allocatable)):
            if resource.startswith("rdma/") and 0 in (_int(capacity.get(resource)), _int(allocatable.get(resource))):
                yield "rdma-resource-zero", name, "%s: capacity %s, allocatable %s" % (
                    resource, capacity.get(resource, "-"), allocatable.get(resource, "-"))
        if node in gpu_nodes:
            for ds in short:
                taint = next(iter(taints.blocking(node.get("taints"), ds.get("tolerations"))), None)
                if taint:
                    yield "operands-blocked-by-taint", name, "taint %s=%s:%s, and DaemonSet %s/%s desires %s pods for " \
                        "%d GPU nodes" % (taint.get("key"), taint.get("value", ""), taint.get("effect"),
                                          ds.get("namespace"), ds.get("name"), ds.get("desired"), len(gpu_nodes))
                    break


def diagnose(evidence):
    """Every known failure found in ``evidence``, one finding per id and node (its first evidence), sorted."""
    if not isinstance(evidence, dict):
        raise ParamError(FIELD, "%r is not a dict" % (evidence,), "give {pods, events, nodes, daemonsets} as read")
    pods, events, nodes = _list(evidence, "pods"), _list(evidence, "events"), _list(evidence, "nodes")
    daemonsets, operator_ns = _list(evidence, "daemonsets"), evidence.get("operator_namespace") or "gpu-operator"
    found = {}
    for check_id, node, seen in list(_from_logs(pods, events, nodes)) + list(_from_pods(pods, operator_ns)) + list(
            _from_nodes(nodes, daemonsets, operator_ns)):
        found.setdefault((check_id, node), seen)
    order = {check_id: index for index, check_id in enumerate(catalog.IDS)}
    out = []
    for (check_id, node), seen in sorted(found.items(), key=lambda item: (item[0][1] or "", order[item[0][0]])):
        signature = catalog.SIGNATURES[check_id]
        out.append({"id": check_id, "node": node, "evidence": seen, "cause": signature["cause"],
                    "fix": signature["fix"], "reference": signature["reference"]})
    return out
