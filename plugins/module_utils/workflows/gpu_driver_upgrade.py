# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> read nodes, driver DaemonSets and pods -> follow the upgrade states -> result, for gpu_driver_upgrade.

Private to the collection: not a public API. Read only: nothing is written to the cluster. The pure parts
(states, verdicts, messages) are in domain/drivers/gpu_driver_upgrade_state.py, the inputs' checks in
domain/drivers/gpu_driver_upgrade.py. The clock is injectable.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import RealClock
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_upgrade as domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade_state as upgrade_state)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError

DEFAULT_NODE_SELECTOR = "nvidia.com/gpu.present=true"


def check_params(params):
    """Every option checked before the cluster is contacted; returns the normalized options."""
    params = validate.given(params)
    if params.get("nodes") and params.get("node_selector"):
        raise ParamError("nodes", "give either nodes or node_selector, not both",
                         "list node names in nodes, or a label selector in node_selector")
    for name in params.get("nodes") or []:
        if not isinstance(name, str) or len(name) > 253 or not validate.DNS1123_SUBDOMAIN.match(name):
            raise ParamError("nodes", "%r is not a node name" % name, "give the names of the GPU nodes")
    selector = domain.check_selector("node_selector", params.get("node_selector", DEFAULT_NODE_SELECTOR))
    driver_selector = domain.check_selector("driver_selector", params.get("driver_selector", upgrade_state.DRIVER_SELECTOR))
    if not driver_selector.strip():
        raise ParamError("driver_selector", "is empty", "give the driver pods' label selector, such as %s"
                         % upgrade_state.DRIVER_SELECTOR)
    timeout = validate.duration_seconds("wait_timeout", params.get("wait_timeout", "60m"))
    stuck = validate.duration_seconds("stuck_timeout", params.get("stuck_timeout", "15m"))
    interval = params.get("poll_interval", 10)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise ParamError("poll_interval", "%r is not a whole number of seconds of 1 or more" % (interval,),
                         "give seconds between two reads, such as 10")
    return {
        "nodes": list(params.get("nodes") or []), "node_selector": selector, "driver_selector": driver_selector,
        "namespace": validate.dns_label("operator_namespace", params.get("operator_namespace", "gpu-operator")),
        "expected_version": domain.check_version("expected_driver_version", params.get("expected_driver_version")),
        "timeout": timeout, "stuck_timeout": stuck, "interval": interval,
        "wait": params.get("wait", True), "report_only": params.get("report_only", False),
    }


class Reader:
    """One consistent-enough read of what the upgrade is about: the selected nodes, the ClusterPolicy's
    upgrade policy, and the driver DaemonSets and pods in the operator's namespace."""

    def __init__(self, kube, opts):
        self.kube, self.opts = kube, opts
        self.policy_driver_version = ""  # what the ClusterPolicy asks for (policy())

    def policy(self):
        if not self.kube.serves("nvidia.com/v1", "ClusterPolicy"):
            raise GpuPlatformError("the cluster does not serve nvidia.com/v1 ClusterPolicy: the GPU Operator is not "
                                   "installed. Fix: install the GPU Operator layer (playbooks/gpu_operator.yml) first")
        policies = self.kube.list("nvidia.com/v1", "ClusterPolicy")
        if not policies:
            raise GpuPlatformError("no ClusterPolicy exists: the GPU Operator has nothing to upgrade. Fix: install "
                                   "the GPU Operator layer (playbooks/gpu_operator.yml) first")
        driver = (policies[0].get("spec") or {}).get("driver") or {}
        self.policy_driver_version = str(driver.get("version") or "") if driver.get("enabled", True) is not False \
            and not driver.get("useNvidiaDriverCRD") else ""
        return driver.get("upgradePolicy") or {}

    def nodes(self):
        opts = self.opts
        if opts["nodes"]:
            out = []
            for name in opts["nodes"]:
                node = self.kube.get("v1", "Node", name)
                if node is None:
                    raise ParamError("nodes", "node %s does not exist" % name, "give the names of existing GPU nodes")
                out.append(node)
            return out
        out = self.kube.list("v1", "Node", label_selector=opts["node_selector"] or None)
        if not out:
            raise ParamError("node_selector", "%r selects no node" % opts["node_selector"],
                             "give a selector that matches the GPU nodes, such as %s" % DEFAULT_NODE_SELECTOR)
        return sorted(out, key=lambda n: n["metadata"]["name"])

    def driver(self):
        opts = self.opts
        daemonsets = self.kube.list("apps/v1", "DaemonSet", namespace=opts["namespace"],
                                    label_selector=opts["driver_selector"])
        if not daemonsets:
            raise GpuPlatformError(
                "no driver DaemonSet (%s) in namespace %s: the GPU Operator does not own the driver here (host mode, "
                "or driver.enabled false) or runs elsewhere. Fix: set operator_namespace / driver_selector, or do not "
                "follow a driver upgrade on hosts that own their driver" % (opts["driver_selector"], opts["namespace"]))
        pods = self.kube.list("v1", "Pod", namespace=opts["namespace"], label_selector=opts["driver_selector"])
        return daemonsets, pods

    def read(self, names=None):
        if names is None:
            nodes = self.nodes()
        else:  # a node deleted meanwhile reads as one without labels
            nodes = [self.kube.get("v1", "Node", n) or {"metadata": {"name": n}} for n in names]
        daemonsets, pods = self.driver()
        return [upgrade_state.node_view(node, pods, daemonsets) for node in nodes], daemonsets


def _result(views, verdict, tracker, policy, auto, elapsed):
    return {
        "changed": False, "done": verdict["done"], "auto_upgrade": auto, "upgrade_policy": policy,
        "nodes": views, "transitions": list(tracker.transitions), "daemonsets": verdict["daemonsets"],
        "pending": verdict["pending"], "failed_nodes": verdict["failed"], "elapsed": round(elapsed, 3),
    }


def run(params, kube_factory, check_mode=False, clock=None, interval=None):
    opts = check_params(params)
    clock = clock or RealClock()
    interval = interval if interval is not None else opts["interval"]
    reader = Reader(kube_factory(), opts)
    policy = reader.policy()
    auto = policy.get("autoUpgrade", False) is True  # the custom resource's default is false
    # Without a pinned version (the chart's default driver), the version the ClusterPolicy asks for is the one to
    # reach: right after a chart upgrade the operator may not have rolled its DaemonSet yet, and the nodes still read
    # upgrade-done on the old driver. That version is waited for, not refused, until stuck_timeout.
    derived = not opts["expected_version"] and domain.is_driver_version(reader.policy_driver_version)
    if derived:
        opts = dict(opts, expected_version=reader.policy_driver_version)
    views, daemonsets = reader.read()
    names = [v["name"] for v in views]
    start = clock.time()
    tracker = upgrade_state.Tracker(start)
    report = check_mode or opts["report_only"]
    warnings = []
    if not auto:
        warnings.append("driver.upgradePolicy.autoUpgrade is false: the GPU Operator will not upgrade the driver on "
                        "nodes by itself")
    while True:
        now = clock.time()
        tracker.observe({v["name"]: v["state"] for v in views}, now)
        verdict = upgrade_state.evaluate(views, daemonsets, auto, opts["expected_version"])
        result = _result(views, verdict, tracker, policy, auto, now - start)
        if report or verdict["done"]:
            return dict(result, warnings=warnings)
        if verdict["failed"]:
            raise GpuPlatformError(upgrade_state.failed_message(views, opts["namespace"]), **result)
        templates = sorted({ds["version"] for ds in verdict["daemonsets"] if ds["version"]})
        rolled = not (opts["expected_version"] and templates and opts["expected_version"] not in templates)
        if not rolled and derived and now - start >= opts["stuck_timeout"]:
            raise GpuPlatformError(
                "the ClusterPolicy asks for driver %s but the driver DaemonSet's template still runs %s after %ds: "
                "the GPU Operator has not rolled it. Fix: look at the operator's log (kubectl -n %s logs "
                "deploy/gpu-operator)" % (opts["expected_version"], ", ".join(templates), opts["stuck_timeout"],
                                          opts["namespace"]), **result)
        if not rolled and not derived:
            raise GpuPlatformError(
                "expected_driver_version is %s but the driver DaemonSet's template runs %s: the ClusterPolicy was not "
                "changed to that version. Fix: set gpu_platform_driver_version to %s (and re-run the GPU Operator "
                "layer), or expect %s" % (opts["expected_version"], ", ".join(templates), opts["expected_version"],
                                          ", ".join(templates)), **result)
        if not auto and verdict["outdated"] + [d["name"] for d in verdict["daemonsets"] if not d["current"]]:
            raise GpuPlatformError(upgrade_state.manual_message(verdict, opts["namespace"]), **result)
        if not opts["wait"]:
            return dict(result, warnings=warnings)
        stuck = tracker.stuck(now, opts["stuck_timeout"], verdict["pending"])
        if stuck:
            result["stuck"] = [{"node": n, "state": s, "seconds": round(w, 3)} for n, s, w in stuck]
            raise GpuPlatformError(upgrade_state.stuck_message(stuck, opts["stuck_timeout"]), **result)
        remaining = opts["timeout"] - (now - start)
        if remaining <= 0:
            raise GpuPlatformError(upgrade_state.timeout_message(views, verdict, opts["timeout"]), **result)
        clock.sleep(min(interval, remaining))
        views, daemonsets = reader.read(names)
