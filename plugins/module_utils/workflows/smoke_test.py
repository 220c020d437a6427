# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One smoke test, end to end: build its objects, run them, wait, read the log, judge, clean up.

Private to the collection: not a public API. The smoke_test module is a thin door to ``run``.

- On the cluster: objects left by an interrupted earlier run are removed first, then the check's
  objects are created, its pods waited for (with a time-out, on an injectable clock), their logs
  read and judged by ``domain.smoke.checks``, and everything the check created is deleted again, pass or
  fail (``workflows.smoke_test_pods``). A pod that never leaves Pending ends in a failed result that says why the
  scheduler or kubelet held it (the time-out path), not in a hang.
- Check mode creates nothing: each object goes through server-side dry-run, so a wrong field or
  a missing CRD shows before anything runs.
- ``render_to`` writes the check's objects to a GitOps folder instead, bare Pods as batch/v1 Jobs;
  nothing is run or judged there. The nccl-tests run under KAI or no gang scheduler is not rendered: its
  pods need an SSH key pair made at run time (``adapters.ssh_keys``), which never goes to a file. On the
  cluster that key goes only into the run's Secret, deleted with the run; it is never returned or logged.

The result is ``{layer, check, object, passed, reason, evidence, skipped_reason}``, the shape
``domain.smoke.plan.summary`` reads. The allocatable check is ``workflows.smoke_test_allocatable``.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import ssh_keys
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import flux_argocd as gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    plan as smoke, checks as smoke_checks, nccl as smoke_nccl, nccl_check as smoke_nccl_check, objects as
    smoke_objects)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects as objects_domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows.smoke_test_allocatable import (
    allocatable_inputs, allocatable_verdict, label_selector)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows.smoke_test_pods import (
    FINISHED, STARTED, _held, _log, _phase, _pods, _wait_pods, pod_state, remove)

CHECKS = (smoke_objects.CUDA, smoke_objects.DRA, smoke_objects.GANG, smoke_objects.NCCL, "allocatable")
ALLOCATABLE = "allocatable"
# The layer each check proves, unless the caller names another.
LAYERS = {smoke_objects.CUDA: "gpu_operator", smoke_objects.DRA: "dra_driver", smoke_objects.GANG: "scheduling",
          smoke_objects.NCCL: "network_operator", ALLOCATABLE: "gpu_sharing"}


def _timeout(params):
    value = params.get("timeout")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamError("timeout", "%r is not a number of seconds" % (value,), "give whole seconds, such as 300")
    if value > MAX_TIMEOUT:
        raise ParamError("timeout", "%d seconds is more than a day" % value, "give at most %d seconds" % MAX_TIMEOUT)
    return value


MAX_TIMEOUT = 24 * 3600


# The domain names the smoke_tests role's variables in its errors; the module names its own options.
OPTION_NAMES = {smoke_objects.FIELDS[key]: option for key, option in (
    ("namespace", "namespace"), ("image", "image"), ("nccl_image", "image"), ("resources", "resources"),
    ("device_class", "device_class"), ("scheduler", "scheduler"), ("replicas", "replicas"), ("queue", "queue"),
    ("window", "window_seconds"), ("nodes", "nodes"), ("gpus_per_node", "gpus_per_node"),
    ("rdma_resource", "rdma_resource"), ("network", "network"), ("min_busbw", "min_busbw_gbps"),
    ("node_selector", "node_selector"), ("suffix", "suffix"))}


def _objects(params):
    check = params.get("check")
    namespace, image = params.get("namespace"), params.get("image")
    if check == ALLOCATABLE:
        return []
    if not image:
        raise ParamError("image", "is required for the %s check" % check,
                         "give a pinned image (a tag other than latest, or a digest)")
    if check == smoke_objects.CUDA:
        return [smoke_objects.cuda_pod(namespace, image, params.get("resources"), params.get("node_selector"),
                                       params.get("suffix"))]
    if check == smoke_objects.DRA:
        return smoke_objects.dra_claim_pod(namespace, image,
                                           params.get("device_class") or smoke_objects.DEFAULT_DEVICE_CLASS)
    if check == smoke_objects.GANG:
        smoke_objects.positive_number(smoke_objects.FIELDS["window"], params.get("window_seconds"), example="30")
        return smoke_objects.gang_job(params.get("scheduler"), namespace, image, params.get("replicas"),
                                      params.get("queue") or "default")
    smoke_objects.positive_number(smoke_objects.FIELDS["min_busbw"], params.get("min_busbw_gbps"), example="40")
    return smoke_nccl.nccl_job(namespace, image, params.get("nodes"), params.get("gpus_per_node"),
                               params.get("rdma_resource"), params.get("network"), params.get("queue") or "default",
                               params.get("scheduler") or smoke_objects.VOLCANO)


def build(params):
    """The check's objects from the module's parameters (validated by ``domain.smoke.objects``), their pods pulling with
    ``image_pull_secrets``; errors name the option."""
    check = params.get("check")
    if check not in CHECKS:
        raise ParamError("check", "%r is not a smoke test" % (check,), "use one of: %s" % ", ".join(CHECKS))
    secrets = validate.secret_names("image_pull_secrets", params.get("image_pull_secrets"))
    tolerations = taints.tolerations("tolerations", params.get("tolerations"))
    try:
        return objects_domain.with_tolerations(objects_domain.with_pull_secrets(_objects(params), secrets), tolerations)
    except ParamError as exc:
        option = OPTION_NAMES.get(exc.field)
        if option is None:
            raise
        raise ParamError(option, exc.msg[len(exc.field) + 2:].rsplit(". Fix: ", 1)[0],
                         exc.msg.rsplit(". Fix: ", 1)[1]) from None


def _result(params, objects, passed, reason, evidence=None, skipped_reason=None):
    check = params["check"]
    primary = next((o for o in objects if o["kind"] in ("Pod", "Job")), objects[0]) if objects else None
    return {"layer": params.get("layer") or LAYERS[check], "check": check,
            "object": gitops.file_name(primary)[:-len(".yaml")] if primary else "nodes",
            "passed": passed, "reason": reason, "evidence": list(evidence or []), "skipped_reason": skipped_reason}


# -- the checks -----------------------------------------------------------------------------------

def _one_pod(kube, params, objects, judge, task, clock, interval):
    timeout = params["timeout"]
    pods, timed_out = _wait_pods(lambda: _pods(kube, params, objects, task), 1, FINISHED, timeout, clock, interval)
    if timed_out:
        reason, states = _held(pods, 1, timeout, "the pod")
        return _result(params, objects, False, reason, states)
    pod = pods[0]
    log = _log(kube, pod)
    verdict = judge(log)
    if _phase(pod) == "Failed" and verdict["passed"]:
        return _result(params, objects, False, "%s, although its log looked right" % pod_state(pod), verdict["evidence"])
    if _phase(pod) == "Failed":
        return _result(params, objects, False, "%s; %s" % (pod_state(pod), verdict["reason"]), verdict["evidence"])
    return _result(params, objects, verdict["passed"], verdict["reason"], verdict["evidence"])


def _cuda(kube, params, objects, clock, interval):
    return _one_pod(kube, params, objects, smoke_checks.check_nvidia_smi, None, clock, interval)


def _nccl(kube, params, objects, clock, interval):
    minimum = params.get("min_busbw_gbps")
    return _one_pod(kube, params, objects, lambda log: smoke_nccl_check.check_nccl(log, minimum), smoke_nccl.LAUNCHER,
                    clock, interval)


def _gang(kube, params, objects, clock, interval):
    """Every member must start (print its marker) and all within the window."""
    timeout, replicas = params["timeout"], params["replicas"]

    def fetch():
        pods = _pods(kube, params, objects)
        started = {}
        for pod in pods:
            if _phase(pod) in STARTED:
                moment = smoke_checks.start_time_from_log(_log(kube, pod))
                if moment is not None:
                    started[pod["metadata"]["name"]] = moment
        return pods, started
    try:
        pods, started = wait_for(fetch, lambda value: len(value[1]) >= replicas, timeout, clock, interval)
    except WaitTimeout as exc:
        pods, started = exc.details.get("last") or ([], {})
        waiting = [pod_state(p) for p in pods if p["metadata"]["name"] not in started]
        reason = ("%d of %d gang pods started within %ss, so the group was not placed all together: %s"
                  % (len(started), replicas, timeout, "; ".join(waiting) or "no pod was created"))
        return _result(params, objects, False, reason, waiting)
    verdict = smoke_checks.check_gang(started, params.get("window_seconds"), replicas)
    return _result(params, objects, verdict["passed"], verdict["reason"], verdict["evidence"])


def _allocatable(kube, params, check_mode, clock, interval):
    """Poll the nodes until they advertise what is expected, or the time-out ends; read only."""
    expected, per_gpu, layout = allocatable_inputs(params)
    selector = label_selector(params.get("node_selector"))

    def fetch():
        return allocatable_verdict(kube.list("v1", "Node", label_selector=selector), expected, per_gpu, selector, layout)
    if check_mode:
        now = fetch()
        return _result(params, [], None, "", now["evidence"],
                       skipped_reason="check mode: not waited for; the nodes now: %s" % now["reason"])
    try:
        verdict = wait_for(fetch, lambda v: v["passed"], params["timeout"], clock, interval)
    except WaitTimeout as exc:
        verdict = exc.details.get("last")
        verdict = dict(verdict, reason="after %ss: %s" % (params["timeout"], verdict["reason"]))
    return _result(params, [], verdict["passed"], verdict["reason"], verdict["evidence"])


RUNNERS = {smoke_objects.CUDA: _cuda, smoke_objects.DRA: _cuda, smoke_objects.GANG: _gang, smoke_objects.NCCL: _nccl}


def _missing_api(kube, objects):
    for obj in objects:
        if not kube.serves(obj["apiVersion"], obj["kind"]):
            return "%s %s" % (obj["apiVersion"], obj["kind"])
    return None


FIX_API = {smoke_objects.DRA: "enable the dra_driver layer (Kubernetes 1.34 or later serves resource.k8s.io/v1)",
           smoke_objects.GANG: "install the gang scheduler first (the scheduling layer)",
           smoke_objects.NCCL: "the nccl-tests job is a Volcano Job: install Volcano (gpu_platform_scheduler: volcano)"}
FIX_KAI = "the nccl-tests pods join a KAI PodGroup: install the KAI Scheduler first (gpu_platform_scheduler: kai)"


def _on_cluster(kube, params, objects, check_mode, clock, interval):
    namespace = params["namespace"]
    missing = _missing_api(kube, objects)
    if missing and check_mode:
        return _result(params, objects, None, "", skipped_reason="check mode: the cluster does not serve %s yet "
                       "(an earlier layer would install it)" % missing)
    if missing:
        kai_nccl = params["check"] == smoke_objects.NCCL and params.get("scheduler") == smoke_objects.KAI
        fix = FIX_KAI if kai_nccl else FIX_API.get(params["check"], "install it first")
        raise ToolError("the %s smoke test needs %s, which the cluster does not serve. Fix: %s"
                        % (params["check"], missing, fix))
    if kube.get("v1", "Namespace", namespace) is None:
        if check_mode:
            return _result(params, objects, None, "", skipped_reason="check mode: namespace %s does not exist yet"
                           % namespace)
        raise ParamError("namespace", "%s does not exist" % namespace,
                         "create it first (the smoke_tests role does), or name an existing namespace")
    if params["check"] == smoke_objects.NCCL:
        smoke_checks.nccl_fits(params.get("nodes"), params.get("gpus_per_node"), kube.list("v1", "Node"))
        objects = with_ssh_secret(params, objects)
    if check_mode:
        for obj in objects:
            kube.apply(obj, dry_run=True)
        return _result(params, objects, None, "", skipped_reason="check mode: the objects pass server-side "
                       "dry-run; nothing was run")
    remove(kube, params, objects, wait=True, clock=clock, interval=interval)
    result = None
    try:
        for obj in objects:
            kube.apply(obj)
        result = RUNNERS[params["check"]](kube, params, objects, clock, interval)
    finally:
        if params.get("cleanup", True):
            # Waited for once the test has its verdict: a smoke pod still terminating holds its GPU, and the GPU
            # Operator's driver upgrade refuses to evict a bare pod ("cannot delete Pods that declare no controller"),
            # which failed the node's upgrade when upgrade.yml ran right after a smoke test.
            removed = remove(kube, params, objects, wait=result is not None, clock=clock, interval=interval)
            if result is not None:
                result["removed"] = removed
    return result


# -- render ---------------------------------------------------------------------------------------

def as_job(pod):
    """A bare Pod as a batch/v1 Job that runs it once (GitOps tools keep Jobs, not bare Pods)."""
    meta = pod["metadata"]
    template_meta = {"labels": dict(meta.get("labels") or {})}
    if meta.get("annotations"):
        template_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta.get("labels") or {})},
            "spec": {"backoffLimit": 0, "template": {"metadata": template_meta, "spec": dict(pod["spec"])}}}


# Flux creates such an object once and never updates it. A Volcano Job is one run: Volcano's webhook refuses any
# update but minAvailable, replicas and priorityClassName ("job updates may not change fields other than ..."), and a
# re-apply of the same manifest drops the defaults its mutating webhook added at creation, so Flux's next
# reconcile of the smoke unit failed (found with the real Volcano v1.15.1).
CREATE_ONCE = {"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}


def _create_once(obj):
    if obj["apiVersion"] != smoke_objects.VOLCANO_JOB_API or obj["kind"] != "Job":
        return obj
    meta = dict(obj["metadata"], annotations=dict(obj["metadata"].get("annotations") or {}, **CREATE_ONCE))
    return dict(obj, metadata=meta)


def render_objects(params, objects):
    """What goes to the bundle: bare Pods become Jobs, except KAI gang members (a Job's pods would get the
    pod-grouper's own one-pod groups at v0.13, so the gang is bare Pods in a PodGroup); a Volcano Job is created
    once (``CREATE_ONCE``)."""
    if params["check"] == smoke_objects.GANG and params.get("scheduler") == smoke_objects.KAI:
        return list(objects)
    return [as_job(o) if o["kind"] == "Pod" else _create_once(o) for o in objects]


def with_ssh_secret(params, objects):
    """The bare-pod nccl-tests objects with the Secret of a key pair made now put first (Volcano's ssh plugin makes
    its own). The key is in no result, log or file: only in the Secret sent to the cluster."""
    if not smoke_nccl.needs_ssh_secret(objects):
        return objects
    private, public = ssh_keys.generate()
    return [smoke_nccl.nccl_ssh_secret(params["namespace"], private, public)] + list(objects)


def request(params):
    """(the options with the time-out checked, the check's objects): every check that needs no cluster. The module
    runs it first; the preflight (playbooks/checks.yml) runs it before anything is written."""
    params = dict(params)
    params["timeout"] = _timeout(params)
    objects = build(params)
    if params["check"] == ALLOCATABLE:
        allocatable_inputs(params)
        label_selector(params.get("node_selector"))
    return params, objects


def run(params, kube_factory, check_mode=False, clock=None, interval=2.0):
    """The smoke_test module."""
    params, objects = request(params)
    if params.get("render_to") and smoke_nccl.needs_ssh_secret(objects):
        return {"changed": False, "smoke": _result(params, objects, None, "", skipped_reason=(
            "render mode: the nccl-tests pods under %s need an SSH key pair made at run time, which is never written "
            "to a GitOps folder; run the smoke test against the cluster (playbooks/smoke.yml)" % params["scheduler"]))}
    if params.get("render_to"):
        if params["check"] == ALLOCATABLE:
            result = {"changed": False}
        else:
            result = manifests.render(render_objects(params, objects), params["render_to"],
                                      params.get("source") or "smoke_tests", "present", check_mode)
        reason = ("render mode: written to %s, not run" % params["render_to"]) if objects else \
            "render mode: the allocatable check reads the nodes, which a bundle cannot"
        result["smoke"] = _result(params, objects, None, "", skipped_reason=reason)
        return result
    kube = kube_factory()
    if params["check"] == ALLOCATABLE:
        outcome = _allocatable(kube, params, check_mode, clock, interval)
    else:
        outcome = _on_cluster(kube, params, objects, check_mode, clock, interval)
    result = {"changed": False, "smoke": outcome}
    if outcome["passed"] is False:
        line = smoke.summary([outcome])["lines"][0]
        raise SmokeFailed(line, smoke=outcome)
    return result


class SmokeFailed(ToolError):
    """A smoke test ran and failed; the message is its summary line."""
