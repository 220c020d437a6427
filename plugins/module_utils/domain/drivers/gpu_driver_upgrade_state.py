# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GPU Operator's driver upgrade on the cluster: the per-node upgrade states, read from plain dicts of the
Nodes, driver pods and DaemonSets, the verdict on one read, and following it over time (pure).

Private to the collection: not a public API. Standard library only, no I/O. The workflow
(workflows/gpu_driver_upgrade.py) reads the cluster and keeps the clock; the policy values are ``domain.drivers.gpu_driver_upgrade``.

Facts (NVIDIA k8s-operator-libs, package ``upgrade``; GPU Operator docs, "GPU Driver Upgrades"):
the operator's upgrade controller walks every GPU node through states kept in the node label
``nvidia.com/gpu-driver-upgrade-state``: upgrade-required, cordon-required, wait-for-jobs-required,
pod-deletion-required, drain-required, pod-restart-required, validation-required, uncordon-required,
upgrade-done or upgrade-failed (empty: the controller is off or has not seen the node yet). Newer
versions of the library add node-maintenance-required and post-maintenance-required, used only when
an external maintenance operator does cordon and drain. ``nvidia.com/gpu-driver-upgrade.skip=true``
keeps a node out of upgrades. The driver DaemonSet uses the ``OnDelete`` update strategy, so its
status (updatedNumberScheduled) tells how many nodes already run the current template.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
DONE = "upgrade-done"
FAILED = "upgrade-failed"
REQUIRED = "upgrade-required"
NOT_SEEN = ""
# In the order the upgrade controller moves a node through them.
IN_PROGRESS = (REQUIRED, "cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
               "node-maintenance-required", "post-maintenance-required", "pod-restart-required",
               "validation-required", "uncordon-required")
STATES = IN_PROGRESS + (DONE, FAILED)
# What a node in each state waits for: the cause to look at when it does not move.
WAITS_FOR = {
    NOT_SEEN: "the operator's upgrade controller to pick the node up (is driver.upgradePolicy.autoUpgrade true, "
              "and the node not labelled %s=true?)" % SKIP_LABEL,
    DONE: "the operator to notice the new driver DaemonSet template and mark the node upgrade-required",
    REQUIRED: "a free upgrade slot: maxParallelUpgrades and maxUnavailable (cordoned or unready nodes count "
              "against it) limit how many nodes upgrade at once",
    "cordon-required": "the operator to cordon the node (spec.unschedulable)",
    "wait-for-jobs-required": "the pods selected by driver.upgradePolicy.waitForCompletion.podSelector to finish "
                              "(waitForCompletion.timeoutSeconds 0 waits for ever)",
    "pod-deletion-required": "the pods that use GPUs to be deleted (gpuPodDeletion: a pod with emptyDir data needs "
                             "deleteEmptyDir, a pod without a controller needs force)",
    "drain-required": "the node's pods to be evicted (drain): a pod that cannot be evicted, such as one guarded by a "
                      "PodDisruptionBudget that allows no disruption, or one without a controller while drain.force "
                      "is false, holds it",
    "node-maintenance-required": "the external maintenance operator's NodeMaintenance to be ready (cordon and drain "
                                 "are done there)",
    "post-maintenance-required": "the operator to restart the driver pod after the external maintenance",
    "pod-restart-required": "the new driver pod to start on the node (a driver that does not build for the node's "
                            "kernel keeps it here: read the driver pod's log)",
    "validation-required": "the operator validator pod on the node to pass with the new driver",
    "uncordon-required": "the operator to uncordon the node",
}

DRIVER_SELECTOR = "app=nvidia-driver-daemonset"
# GFD's driver version labels: the current names, then the older ones.
GFD_FULL = "nvidia.com/cuda.driver-version.full"
GFD_PARTS = (("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
              "nvidia.com/cuda.driver-version.revision"),
             ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"))


# -- reading the cluster's state (pure, from plain dicts) ----------------------------------------------------------


def _labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def state_of(node):
    return _labels(node).get(STATE_LABEL, NOT_SEEN) or NOT_SEEN


def image_version(image):
    """The driver version in a driver image's tag: ``nvcr.io/nvidia/driver:595.91.07-ubuntu24.04`` -> 595.91.07."""
    image = (image or "").split("@", 1)[0]
    if ":" not in image.rsplit("/", 1)[-1]:
        return ""
    tag = image.rsplit(":", 1)[1]
    version = tag.split("-")[0]
    return version if version_parse.is_full_driver_version(version) else ""


def gfd_version(node):
    """The driver version GFD labelled the node with (current label names first), or ''."""
    labels = _labels(node)
    if labels.get(GFD_FULL):
        return labels[GFD_FULL]
    for names in GFD_PARTS:
        parts = [labels.get(name) for name in names]
        if parts[0] and parts[1]:
            return ".".join(p for p in parts if p)
    return ""


def daemonset_status(daemonset, skipped=0):
    """One driver DaemonSet's rollout: ``current`` when the controller saw the newest template and every
    scheduled pod runs it and is available (``skipped``: pods on nodes kept out of upgrades, which keep
    their old template)."""
    meta = daemonset.get("metadata") or {}
    status = daemonset.get("status") or {}
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    desired = int(status.get("desiredNumberScheduled") or 0)
    updated = int(status.get("updatedNumberScheduled") or 0)
    available = int(status.get("numberAvailable") or 0)
    strategy = ((daemonset.get("spec") or {}).get("updateStrategy") or {}).get("type", "")
    reasons = []
    if generation is not None and observed != generation:
        reasons.append("the controller has not seen the newest template yet (observedGeneration %s, generation %s)"
                       % (observed, generation))
    if updated < desired - skipped:
        reasons.append("%d of %d pods run the current template" % (updated, desired))
    if available < desired:
        reasons.append("%d of %d pods available" % (available, desired))
    containers = ((((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [])
    images = [c.get("image", "") for c in containers]
    return {"name": meta.get("name"), "namespace": meta.get("namespace"), "generation": generation,
            "observed_generation": observed, "desired": desired, "updated": updated, "available": available,
            "update_strategy": strategy, "images": images,
            "version": next((v for v in map(image_version, images) if v), ""),
            "current": not reasons, "not_current": "; ".join(reasons)}


def _owner_uid(pod):
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "DaemonSet" and ref.get("controller"):
            return ref.get("uid")
    return None


def node_view(node, pods, daemonsets):
    """Per node: the state, whether it is cordoned or skipped, its driver pod, the pod's template and version."""
    name = node["metadata"]["name"]
    by_uid = {(ds.get("metadata") or {}).get("uid"): ds for ds in daemonsets}
    pod = next((p for p in pods if (p.get("spec") or {}).get("nodeName") == name), None)
    entry = {"name": name, "state": state_of(node), "cordoned": bool((node.get("spec") or {}).get("unschedulable")),
             "skipped": _labels(node).get(SKIP_LABEL) == "true", "driver_pod": None, "pod_current": None,
             "pod_version": "", "gfd_version": gfd_version(node)}
    if pod is not None:
        meta = pod["metadata"]
        entry["driver_pod"] = "%s/%s" % (meta.get("namespace"), meta["name"])
        images = [c.get("image", "") for c in (pod.get("spec") or {}).get("containers") or []]
        entry["pod_version"] = next((v for v in map(image_version, images) if v), "")
        owner = by_uid.get(_owner_uid(pod))
        entry["daemonset"] = owner["metadata"].get("name") if owner is not None else None
        generation = _labels(pod).get("pod-template-generation")
        if owner is not None and generation is not None:
            entry["pod_current"] = str(owner["metadata"].get("generation")) == str(generation)
    entry["driver_version"] = entry["pod_version"] or entry["gfd_version"]
    return entry


def evaluate(views, daemonsets, auto_upgrade, expected_version=""):
    """The verdict on one read: {done, failed, outdated, pending, daemonsets_current, version_mismatch}.

    done: every driver DaemonSet at its current template (all pods updated and available) and, when the
    operator upgrades by itself (autoUpgrade), every selected node ``upgrade-done`` with a current driver pod;
    with ``expected_version``, every node's driver at that version. A DaemonSet just changed whose nodes
    still say ``upgrade-done`` from the last upgrade is not done.
    """
    ds_status = [daemonset_status(ds, sum(1 for v in views if v["skipped"] and v["pod_current"] is False
                                          and v.get("daemonset") == ds["metadata"].get("name")))
                 for ds in daemonsets]
    ds_current = bool(ds_status) and all(s["current"] for s in ds_status)
    active = [v for v in views if not v["skipped"]]
    failed = [v["name"] for v in active if v["state"] == FAILED]
    outdated = [v["name"] for v in active if v["pod_current"] is False]
    pending = []
    for view in active:
        if view["state"] == FAILED:
            continue
        if auto_upgrade and view["state"] != DONE:
            pending.append(view["name"])
        elif view["pod_current"] is False:
            pending.append(view["name"])
        elif expected_version and view["driver_version"] != expected_version:
            pending.append(view["name"])
    mismatch = [v["name"] for v in active if expected_version and v["driver_version"] != expected_version]
    return {"done": ds_current and not failed and not pending, "failed": failed, "outdated": sorted(outdated),
            "pending": pending, "daemonsets_current": ds_current, "daemonsets": ds_status,
            "version_mismatch": mismatch}


# -- following it over time ------------------------------------------------------------------------------------


class Tracker:
    """Remembers each node's state and since when (clock seconds); records every transition it sees."""

    def __init__(self, start):
        self.start = start
        self.since = {}
        self.states = {}
        self.transitions = []
        self.last_change = start

    def observe(self, states, now):
        for name, state in sorted(states.items()):
            if name not in self.states:
                self.states[name], self.since[name] = state, now
            elif self.states[name] != state:
                self.transitions.append({"node": name, "from": self.states[name], "to": state,
                                         "at": round(now - self.start, 3)})
                self.states[name], self.since[name] = state, now
                self.last_change = now

    def stuck(self, now, stuck_timeout, names):
        """[(node, state, seconds)] for ``names`` (nodes not done) that have not moved for stuck_timeout.

        A node between cordon-required and uncordon-required is stuck when its own state has not changed for
        that long. A node still waiting to start (no label, upgrade-done on an old pod, upgrade-required) waits
        for the nodes being upgraded to free a slot: it is stuck only when no node is being upgraded and no
        node's state changed for that long (the operator is not moving).
        """
        waiting = (NOT_SEEN, DONE, REQUIRED)
        working = [n for n in names if self.states.get(n, NOT_SEEN) not in waiting]
        out = []
        for name in sorted(names):
            state = self.states.get(name, NOT_SEEN)
            if state in waiting:
                if working:
                    continue
                waited = now - max(self.last_change, self.since.get(name, now))
            else:
                waited = now - self.since.get(name, now)
            if waited >= stuck_timeout:
                out.append((name, state, waited))
        return out


def _state_text(state):
    return state or "no state label (not yet seen)"


def _seconds(value):
    return "%ds" % int(round(value))


def failed_message(views, namespace):
    names = [v for v in views if v["state"] == FAILED]
    pods = ", ".join("%s (driver pod %s)" % (v["name"], v["driver_pod"] or "none on the node") for v in names)
    first = names[0]
    return ("GPU driver upgrade failed on %s: %s=%s. Fix: read the driver pod's log (kubectl -n %s logs POD "
            "--all-containers) and the node's GPUDriverUpgrade events (kubectl get events -A --field-selector "
            "involvedObject.name=%s) to find the cause; once fixed, retry the node with kubectl label node %s "
            "%s=upgrade-required --overwrite (GPU Operator docs, Troubleshooting); the operator keeps a failed node "
            "cordoned until then" % (pods, STATE_LABEL, FAILED, namespace, first["name"], first["name"], STATE_LABEL))


def stuck_message(stuck, stuck_timeout):
    parts = ["%s has been in %s for %s, waiting for %s" % (name, _state_text(state), _seconds(waited),
                                                           WAITS_FOR.get(state, "the operator"))
             for name, state, waited in stuck]
    return ("GPU driver upgrade stuck (no state change within stuck_timeout %s): %s. Fix: look at what that state "
            "waits for on the node (kubectl describe node NODE; kubectl get pods -A --field-selector "
            "spec.nodeName=NODE) and the GPU Operator's log (kubectl -n gpu-operator logs deploy/gpu-operator | grep "
            "-i upgrade)" % (_seconds(stuck_timeout), "; ".join(parts)))


def progress(views, verdict):
    """One line: every node not done with its state, and any DaemonSet not current."""
    parts = ["%s %s" % (v["name"], _state_text(v["state"])) for v in views
             if v["name"] in verdict["pending"] or v["name"] in verdict["failed"]]
    for ds in verdict["daemonsets"]:
        if not ds["current"]:
            parts.append("DaemonSet %s/%s: %s" % (ds["namespace"], ds["name"], ds["not_current"]))
    for name in verdict["version_mismatch"]:
        view = next(v for v in views if v["name"] == name)
        parts.append("%s runs driver %s" % (name, view["driver_version"] or "unknown"))
    return "; ".join(parts) or "nothing pending"


def timeout_message(views, verdict, timeout):
    return ("GPU driver upgrade did not finish within %s: %s. Fix: re-run with a longer wait_timeout if nodes are "
            "still moving, else look at what each state waits for (docs/upgrade.md)"
            % (_seconds(timeout), progress(views, verdict)))


def manual_message(verdict, namespace):
    return ("driver.upgradePolicy.autoUpgrade is false in the ClusterPolicy: the GPU Operator will not upgrade the "
            "driver on nodes by itself, and %s still run an older driver pod (%s). Fix: set "
            "gpu_operator_driver_upgrade_policy.autoUpgrade: true and re-run, or upgrade each node by hand (drain it, "
            "delete its driver pod in %s, uncordon it); report_only: true reports without failing"
            % (", ".join(verdict["outdated"]) or "the nodes", progress_daemonsets(verdict), namespace))


def progress_daemonsets(verdict):
    return "; ".join("DaemonSet %s: %s" % (ds["name"], ds["not_current"] or "current") for ds in verdict["daemonsets"])
