# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The host preflight without SSH: one read-only probe Job per GPU node, its log read as the host's files.

Private to the collection: not a public API. The host_probe module is a thin door to ``run``.

- The GPU nodes are the nodes that match any of ``node_selectors`` (or the ``nodes`` named).
- A namespace of the probe's own (``domain.host_checks.probe``: labelled for it, pod-security ``privileged``
  because its pods use hostPath volumes and hostNetwork) is made, one Job per node created in it, and their pods
  waited for (a time-out on an injectable clock). Each pod's log is parsed by ``probe.parse`` and read by
  ``host_reader.collect`` and ``readings.summarize``: the same ``gpu_host_checks`` fact an SSH read gives.
- The namespace is deleted afterwards, whatever happened, and waited for until it is gone: the probe leaves nothing.
- Whether the GPU Operator's driver runs on a node (an SSH read sees /run/nvidia/driver) is read from the cluster:
  its driver pod (``app=nvidia-driver-daemonset``) running there.
- Check mode creates nothing and reads no node.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import host_reader
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import probe, readings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows.smoke_test_pods import pod_state

DRIVER_POD_SELECTOR = "app=nvidia-driver-daemonset"
FINISHED = ("Succeeded", "Failed")
GONE_TIMEOUT = 120


def checks_from_log(log, node_name, operator_root=False):
    """A probe pod's log -> the node's ``gpu_host_checks`` fact (``readings.summarize``). The probe runs no command
    and reads no package database: what those give is unknown, as on a root other than /."""
    files = probe.LoggedFiles(probe.parse(log))
    raw = host_reader.collect(files, lambda tool, arguments: None, node_name, probe.pci(files),
                              files.text("/proc/modules") or "", files.text("/proc/driver/nvidia/version") or "",
                              {}, "", operator_root=operator_root)
    return readings.summarize(raw)


def _matches(node, selectors):
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(all(labels.get(key) == str(value) for key, value in selector.items()) for selector in selectors)


def gpu_nodes(nodes, selectors, names, exclude=()):
    """The names of the nodes to probe: those named, else those matching any selector, less ``exclude``, sorted."""
    known = sorted(n["metadata"]["name"] for n in nodes)
    if names:
        missing = [name for name in names if name not in known]
        if missing:
            raise ParamError("nodes", "%s is not a node of the cluster" % ", ".join(missing),
                             "name nodes of the cluster (kubectl get nodes)")
        return sorted(set(names) - set(exclude))
    return sorted(n["metadata"]["name"] for n in nodes if _matches(n, selectors) and n["metadata"]["name"] not in exclude)


def request(params):
    """The checks of the options that need no cluster: run() runs them first, and the preflight (playbooks/checks.yml)
    runs them too."""
    return _check(params)


def _check(params):
    selectors = params.get("node_selectors") or []
    if not isinstance(selectors, list) or not all(isinstance(s, dict) and s for s in selectors):
        raise ParamError("node_selectors", "%r is not a list of label maps" % (selectors,),
                         "give a list such as [{nvidia.com/gpu.present: 'true'}]")
    image = params.get("image")
    if not image:
        raise ParamError("image", "is required", "give a pinned image with a POSIX shell, such as the smoke tests' "
                         "CUDA base image")
    validate.pinned_image("image", image)
    timeout = params.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise ParamError("timeout", "%r is not a number of seconds" % (timeout,), "give whole seconds, such as 300")
    return selectors


def _namespace_gone(kube, namespace, clock, interval):
    try:
        wait_for(lambda: kube.get("v1", "Namespace", namespace), lambda found: found is None, GONE_TIMEOUT, clock,
                 interval, describe=lambda found: "namespace %s is still terminating" % namespace)
    except WaitTimeout as exc:
        raise ToolError("%s. Fix: delete it (kubectl delete namespace %s) and run again" % (exc.msg, namespace))


def _pods(kube, namespace):
    return kube.list("v1", "Pod", namespace, label_selector="%s=true" % probe.LABEL)


def _operator_driver_nodes(kube):
    try:
        pods = kube.list("v1", "Pod", label_selector=DRIVER_POD_SELECTOR)
    except Exception:  # pylint: disable=broad-except  # a cluster that refuses the list: no operator driver known
        return set()
    return {p["spec"].get("nodeName") for p in pods if ((p.get("status") or {}).get("phase")) == "Running"}


def _probe(kube, params, names, clock, interval):
    namespace, timeout = params["namespace"], params["timeout"]
    jobs = {probe.job_name(name): name for name in names}
    kube.apply(probe.namespace_object(namespace))
    for name in names:
        kube.apply(probe.job(name, params["image"], namespace, timeout))

    def fetch():
        return {p["metadata"].get("labels", {}).get("job-name") or p["metadata"]["name"]: p
                for p in _pods(kube, namespace)}

    def done(pods):
        return all(job in pods and (pods[job].get("status") or {}).get("phase") in FINISHED for job in jobs)
    try:
        pods = wait_for(fetch, done, timeout, clock, interval)
    except WaitTimeout as exc:
        pods = exc.details.get("last") or {}
        held = ["%s (%s)" % (jobs[job], pod_state(pods[job]) if job in pods else "no pod created")
                for job in sorted(jobs) if job not in pods or pods[job].get("status", {}).get("phase") not in FINISHED]
        raise ToolError("the host probe did not finish within %ss on %s. Fix: let the probe's image be pulled there "
                        "(gpu_platform_image_mirrors), or read the hosts over SSH (gpu_hosts) or set "
                        "gpu_platform_host_probe: false" % (timeout, "; ".join(held)))
    drivers = _operator_driver_nodes(kube)
    out = []
    for job in sorted(jobs, key=lambda j: jobs[j]):
        pod, node = pods[job], jobs[job]
        log = kube.log(pod["metadata"]["name"], namespace, container=probe.CONTAINER) or ""
        try:
            out.append(checks_from_log(log, node, node in drivers))
        except ToolError as exc:
            raise ToolError("node %s: %s (%s). Fix: see the pod's events; the probe needs a POSIX shell, sed, grep and "
                            "od in its image" % (node, exc, pod_state(pod))) from None
    return out


def run(params, kube_factory, check_mode=False, clock=None, interval=1.0):
    """The host_probe module: {changed: false, gpu_host_checks: [...], nodes: [...], removed: bool}."""
    selectors = _check(params)
    kube = kube_factory()
    names = gpu_nodes(kube.list("v1", "Node"), selectors, params.get("nodes") or [], params.get("exclude_nodes") or [])
    result = {"changed": False, "nodes": names, "gpu_host_checks": [], "removed": False}
    if not names:
        result["skipped_reason"] = "no GPU node left to probe (none matches %s, or each was read over SSH)" % (
            selectors or "the nodes named")
        return result
    if check_mode:
        result["skipped_reason"] = "check mode: no probe Job was created"
        return result
    namespace = params["namespace"]
    if kube.get("v1", "Namespace", namespace) is not None:  # left by an interrupted run
        kube.delete("v1", "Namespace", namespace)
        _namespace_gone(kube, namespace, clock, interval)
    try:
        result["gpu_host_checks"] = _probe(kube, params, names, clock, interval)
    finally:
        kube.delete("v1", "Namespace", namespace)
        _namespace_gone(kube, namespace, clock, interval)
        result["removed"] = True
    return result
