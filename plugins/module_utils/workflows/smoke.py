# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One smoke test, end to end: build its objects, run them, wait, read the log, judge, clean up.

Private to the collection: not a public API. The smoke_test module is a thin door to ``run``.

- On the cluster: objects left by an interrupted earlier run are removed first, then the check's
  objects are created, its pods waited for (with a time-out, on an injectable clock), their logs
  read and judged by ``domain.smoke``, and everything the check created is deleted again, pass or
  fail. A pod that never leaves Pending ends in a failed result that says why the scheduler or
  kubelet held it (the time-out path), not in a hang.
- Check mode creates nothing: each object goes through server-side dry-run, so a wrong field or
  a missing CRD shows before anything runs.
- ``render_to`` writes the check's objects to a GitOps folder instead, bare Pods as batch/v1 Jobs;
  nothing is run or judged there. The nccl-tests run under KAI or no gang scheduler is not rendered: its
  pods need an SSH key pair made at run time (``adapters.ssh_keys``), which never goes to a file. On the
  cluster that key goes only into the run's Secret, deleted with the run; it is never returned or logged.

The result is ``{layer, check, object, passed, reason, evidence, skipped_reason}``, the shape
``domain.smoke.summary`` reads.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import ssh_keys
from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import gitops, mig, smoke, smoke_nccl, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import objects as objects_domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests

CHECKS = (smoke.CUDA, smoke.DRA, smoke.GANG, smoke.NCCL, "allocatable")
ALLOCATABLE = "allocatable"
# The layer each check proves, unless the caller names another.
LAYERS = {smoke.CUDA: "gpu_operator", smoke.DRA: "dra_driver", smoke.GANG: "scheduling",
          smoke.NCCL: "network_operator", ALLOCATABLE: "gpu_sharing"}
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
FINISHED = ("Succeeded", "Failed")
STARTED = ("Running", "Succeeded", "Failed")
GONE_TIMEOUT = 120  # seconds to wait for a previous run's pods to go before starting again


def _timeout(params):
    value = params.get("timeout")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamError("timeout", "%r is not a number of seconds" % (value,), "give whole seconds, such as 300")
    if value > MAX_TIMEOUT:
        raise ParamError("timeout", "%d seconds is more than a day" % value, "give at most %d seconds" % MAX_TIMEOUT)
    return value


MAX_TIMEOUT = 24 * 3600


# The domain names the smoke_tests role's variables in its errors; the module names its own options.
OPTION_NAMES = {smoke.FIELDS[key]: option for key, option in (
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
    if check == smoke.CUDA:
        return [smoke.cuda_pod(namespace, image, params.get("resources"), params.get("node_selector"),
                               params.get("suffix"))]
    if check == smoke.DRA:
        return smoke.dra_claim_pod(namespace, image, params.get("device_class") or smoke.DEFAULT_DEVICE_CLASS)
    if check == smoke.GANG:
        smoke.positive_number(smoke.FIELDS["window"], params.get("window_seconds"), example="30")
        return smoke.gang_job(params.get("scheduler"), namespace, image, params.get("replicas"),
                              params.get("queue") or "default")
    smoke.positive_number(smoke.FIELDS["min_busbw"], params.get("min_busbw_gbps"), example="40")
    return smoke_nccl.nccl_job(namespace, image, params.get("nodes"), params.get("gpus_per_node"),
                               params.get("rdma_resource"), params.get("network"), params.get("queue") or "default",
                               params.get("scheduler") or smoke.VOLCANO)


def build(params):
    """The check's objects from the module's parameters (validated by ``domain.smoke``), their pods pulling with
    ``image_pull_secrets``; errors name the option."""
    check = params.get("check")
    if check not in CHECKS:
        raise ParamError("check", "%r is not a smoke test" % (check,), "use one of: %s" % ", ".join(CHECKS))
    secrets = validate.secret_names("image_pull_secrets", params.get("image_pull_secrets"))
    try:
        return objects_domain.with_pull_secrets(_objects(params), secrets)
    except ParamError as exc:
        option = OPTION_NAMES.get(exc.field)
        if option is None:
            raise
        raise ParamError(option, exc.msg[len(exc.field) + 2:].rsplit(". Fix: ", 1)[0],
                         exc.msg.rsplit(". Fix: ", 1)[1]) from None


def _selector(check, task=None):
    out = "%s=%s" % (smoke.SMOKE_LABEL, check)
    return out + (",%s=%s" % (smoke.TASK_LABEL, task) if task else "")


def _result(params, objects, passed, reason, evidence=None, skipped_reason=None):
    check = params["check"]
    primary = next((o for o in objects if o["kind"] in ("Pod", "Job")), objects[0]) if objects else None
    return {"layer": params.get("layer") or LAYERS[check], "check": check,
            "object": gitops.file_name(primary)[:-len(".yaml")] if primary else "nodes",
            "passed": passed, "reason": reason, "evidence": list(evidence or []), "skipped_reason": skipped_reason}


# -- pods -----------------------------------------------------------------------------------------

def pod_state(pod):
    """``name: Phase`` with the reason a pod is held (unschedulable, image pull, ...), for messages."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    why = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            why.append("%s: %s" % (condition.get("reason") or "not scheduled", condition.get("message") or ""))
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            detail = state.get(key) or {}
            if detail.get("reason") and (key == "waiting" or phase == "Failed"):
                why.append("%s %s%s" % (container.get("name"), detail.get("reason"),
                                        " (%s)" % detail["message"] if detail.get("message") else ""))
    text = "%s: %s" % (meta.get("name"), phase)
    return text + (" - " + "; ".join(w.strip() for w in why) if why else "")


def _base_name(objects):
    """The test's own name: its Pod's or Job's (Volcano names pods ``<job>-<task>-<index>``, KAI members
    ``<group>-<index>``)."""
    return next(o for o in objects if o["kind"] in ("Pod", "Job", "PodGroup", "Service"))["metadata"]["name"]


def _pods(kube, params, objects, task=None):
    """This test's pods: the check's label, and a name that is the test's or starts with it (another test of
    the same check, such as another pool's nvidia-smi pod, is left alone)."""
    base = _base_name(objects)
    pods = kube.list("v1", "Pod", params["namespace"], label_selector=_selector(params["check"], task))
    return sorted((p for p in pods if p["metadata"]["name"] == base or p["metadata"]["name"].startswith(base + "-")),
                  key=lambda p: p["metadata"]["name"])


def _phase(pod):
    return (pod.get("status") or {}).get("phase") or "Pending"


def _wait_pods(fetch, count, phases, timeout, clock, interval):
    """Wait until ``count`` pods are there and all are in ``phases``; returns (pods, timed_out)."""
    def ready(pods):
        return len(pods) >= count and all(_phase(p) in phases for p in pods)
    try:
        return wait_for(fetch, ready, timeout, clock, interval), False
    except WaitTimeout as exc:
        return exc.details.get("last") or [], True


def _held(pods, count, timeout, what):
    states = [pod_state(p) for p in pods if _phase(p) not in STARTED] or [pod_state(p) for p in pods]
    missing = count - len(pods)
    detail = "; ".join(states)
    if missing > 0:
        detail = ("%d of %d pods not created yet" % (missing, count)) + ("; " + detail if detail else "")
    return "%s did not finish within %ss: %s" % (what, timeout, detail or "no pod was created"), states


def _log(kube, pod):
    return kube.log(pod["metadata"]["name"], pod["metadata"]["namespace"]) or ""


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
    return _one_pod(kube, params, objects, smoke.check_nvidia_smi, None, clock, interval)


def _nccl(kube, params, objects, clock, interval):
    minimum = params.get("min_busbw_gbps")
    return _one_pod(kube, params, objects, lambda log: smoke_nccl.check_nccl(log, minimum), smoke_nccl.LAUNCHER,
                    clock, interval)


def _gang(kube, params, objects, clock, interval):
    """Every member must start (print its marker) and all within the window."""
    timeout, replicas = params["timeout"], params["replicas"]

    def fetch():
        pods = _pods(kube, params, objects)
        started = {}
        for pod in pods:
            if _phase(pod) in STARTED:
                moment = smoke.start_time_from_log(_log(kube, pod))
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
    verdict = smoke.check_gang(started, params.get("window_seconds"), replicas)
    return _result(params, objects, verdict["passed"], verdict["reason"], verdict["evidence"])


def _per_gpu(value):
    """``expected_per_gpu`` as {resource: whole count}; numeric strings (from Jinja) are accepted."""
    if not isinstance(value, dict) or not value:
        raise ParamError("expected_per_gpu", "must map resources to a count per physical GPU",
                         "e.g. {nvidia.com/gpu: 4} for 4 time-slicing replicas")
    out = {}
    for resource, count in value.items():
        number = smoke.allocatable_count(count)
        if number is None:
            raise ParamError("expected_per_gpu", "%s: %r is not a whole count" % (resource, count),
                             "give whole numbers such as 4")
        out[str(resource)] = number
    return out


def expected_from_labels(nodes, expected_per_gpu):
    """node -> {resource: per-GPU count x the node's ``nvidia.com/gpu.count``}; nodes without the label get
    None (GPU Feature Discovery has not labelled them)."""
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        count = smoke.allocatable_count((meta.get("labels") or {}).get(GPU_COUNT_LABEL))
        out[meta.get("name")] = None if count is None else {
            resource: per_gpu * count for resource, per_gpu in expected_per_gpu.items()}
    return out


def expected_from_mig_layout(nodes, layout, strategy, config=None):
    """node -> what the device plugin advertises once the MIG ``layout`` (a standard name such as
    ``all-1g.10gb``, or a config of the custom mig-parted ``config``) is applied on the node's GPUs (GFD's
    product and count labels); None for a node whose labels say too little. A board without that layout
    raises ParamError."""
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        count = smoke.allocatable_count(labels.get(GPU_COUNT_LABEL))
        product = mig.product_for_label(labels.get(GPU_PRODUCT_LABEL))
        if not count or product is None:
            out[meta.get("name")] = None
            continue
        try:
            entries = config["mig-configs"][layout] if config else mig.named_layout(layout, product)
            out[meta.get("name")] = mig.resources(product, entries, strategy, count)
        except ParamError as exc:
            raise ParamError("mig_layout", "node %s (%s): %s" % (meta.get("name"), product, exc.msg),
                             "name a layout the pool's GPUs have") from None
    return out


def allocatable_verdict(nodes, expected=None, per_gpu=None, selector=None, mig_layout=None):
    """Judge Node objects against exact counts per node, per-GPU counts times each node's GPU count, or what a
    MIG layout gives (``(layout, strategy)``)."""
    if expected:
        return smoke.check_allocatable(expected, nodes)
    if not nodes:
        return smoke.check_result(False, "no node matches %s" % (selector or "(all nodes)"), [])
    wanted = expected_from_mig_layout(nodes, *mig_layout) if mig_layout else expected_from_labels(nodes, per_gpu)
    unlabelled = sorted(name for name, value in wanted.items() if value is None)
    if unlabelled:
        return smoke.check_result(False, "no %s label on %s (GPU Feature Discovery has not labelled them)"
                                  % (GPU_PRODUCT_LABEL + " or " + GPU_COUNT_LABEL if mig_layout else GPU_COUNT_LABEL,
                                     ", ".join(unlabelled)), unlabelled)
    return smoke.check_allocatable(wanted, nodes)


def label_selector(labels):
    """``{a: b, c: d}`` -> ``"a=b,c=d"`` (None for no labels: every node)."""
    checked = validate.labels("node_selector", labels)
    return ",".join("%s=%s" % pair for pair in sorted(checked.items())) or None


def allocatable_inputs(params):
    """(expected, per_gpu, (mig_layout, mig_strategy)) from the parameters, refused before anything is read when
    none is usable."""
    expected, per_gpu, layout = params.get("expected_allocatable"), params.get("expected_per_gpu"), params.get("mig_layout")
    if expected:
        smoke.check_allocatable(expected, {})  # validates the counts; the verdict is thrown away
        return expected, None, None
    if layout:
        strategy = params.get("mig_strategy") or "single"
        if strategy not in ("single", "mixed"):
            raise ParamError("mig_strategy", "%r is not a MIG strategy of a MIG pool" % (strategy,), "use single or mixed")
        config = params.get("mig_config") or None
        if config is not None:
            mig.validate_mig_parted_config(config)
            if layout not in config["mig-configs"]:
                raise ParamError("mig_layout", "%r is not a config of mig_config" % (layout,),
                                 "name one of %s" % ", ".join(sorted(config["mig-configs"])))
        elif not isinstance(layout, str) or not layout.startswith("all-"):
            raise ParamError("mig_layout", "%r is not a standard layout name" % (layout,),
                             "use all-<profile> (all-1g.10gb), all-balanced or all-enabled, or give the custom "
                             "mig-parted config that defines it (mig_config)")
        return None, None, (layout, strategy, config)
    if per_gpu is None:
        raise ParamError("expected_per_gpu", "nothing to check: none of expected_per_gpu, mig_layout or "
                         "expected_allocatable is given", "give expected_per_gpu or mig_layout (with node_selector), "
                         "or expected_allocatable per node")
    return None, _per_gpu(per_gpu), None


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


RUNNERS = {smoke.CUDA: _cuda, smoke.DRA: _cuda, smoke.GANG: _gang, smoke.NCCL: _nccl}


# -- objects on and off the cluster ---------------------------------------------------------------

def remove(kube, params, objects, wait=False, clock=None, interval=2.0):
    """Delete the test's objects (reverse order) and any pod of it left; returns what was deleted."""
    removed = []
    for obj in reversed(objects):
        meta = obj["metadata"]
        if kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")):
            removed.append(gitops.file_name(obj)[:-len(".yaml")])
    namespace = params["namespace"]
    for pod in _pods(kube, params, objects):
        if kube.delete("v1", "Pod", pod["metadata"]["name"], namespace):
            removed.append("pod-%s-%s" % (namespace, pod["metadata"]["name"]))
    if wait:
        try:
            wait_for(lambda: _pods(kube, params, objects), lambda pods: not pods, min(GONE_TIMEOUT, params["timeout"]),
                     clock, interval, describe=lambda pods: "pods of an earlier smoke run are still terminating: %s"
                     % ", ".join(p["metadata"]["name"] for p in pods))
        except WaitTimeout as exc:
            raise ToolError(exc.msg + ". Fix: delete them (kubectl delete pod -n %s %s) and run again"
                            % (namespace, " ".join(p["metadata"]["name"] for p in exc.details.get("last") or [])))
    return sorted(set(removed))


def _missing_api(kube, objects):
    for obj in objects:
        if not kube.serves(obj["apiVersion"], obj["kind"]):
            return "%s %s" % (obj["apiVersion"], obj["kind"])
    return None


FIX_API = {smoke.DRA: "enable the dra_driver layer (Kubernetes 1.34 or later serves resource.k8s.io/v1)",
           smoke.GANG: "install the gang scheduler first (the scheduling layer)",
           smoke.NCCL: "the nccl-tests job is a Volcano Job: install Volcano (scheduling_scheduler: volcano)"}
FIX_KAI = "the nccl-tests pods join a KAI PodGroup: install the KAI Scheduler first (scheduling_scheduler: kai)"


def _on_cluster(kube, params, objects, check_mode, clock, interval):
    namespace = params["namespace"]
    missing = _missing_api(kube, objects)
    if missing and check_mode:
        return _result(params, objects, None, "", skipped_reason="check mode: the cluster does not serve %s yet "
                       "(an earlier layer would install it)" % missing)
    if missing:
        kai_nccl = params["check"] == smoke.NCCL and params.get("scheduler") == smoke.KAI
        fix = FIX_KAI if kai_nccl else FIX_API.get(params["check"], "install it first")
        raise ToolError("the %s smoke test needs %s, which the cluster does not serve. Fix: %s"
                        % (params["check"], missing, fix))
    if kube.get("v1", "Namespace", namespace) is None:
        if check_mode:
            return _result(params, objects, None, "", skipped_reason="check mode: namespace %s does not exist yet"
                           % namespace)
        raise ParamError("namespace", "%s does not exist" % namespace,
                         "create it first (the smoke_tests role does), or name an existing namespace")
    if params["check"] == smoke.NCCL:
        smoke.nccl_fits(params.get("nodes"), params.get("gpus_per_node"), kube.list("v1", "Node"))
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
            removed = remove(kube, params, objects)
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


def render_objects(params, objects):
    """What goes to the bundle: bare Pods become Jobs, except KAI gang members (a Job's pods would get the
    pod-grouper's own one-pod groups at v0.13, so the gang is bare Pods in a PodGroup)."""
    if params["check"] == smoke.GANG and params.get("scheduler") == smoke.KAI:
        return list(objects)
    return [as_job(o) if o["kind"] == "Pod" else o for o in objects]


def with_ssh_secret(params, objects):
    """The bare-pod nccl-tests objects with the Secret of a key pair made now put first (Volcano's ssh plugin makes
    its own). The key is in no result, log or file: only in the Secret sent to the cluster."""
    if not smoke_nccl.needs_ssh_secret(objects):
        return objects
    private, public = ssh_keys.generate()
    return [smoke_nccl.nccl_ssh_secret(params["namespace"], private, public)] + list(objects)


def run(params, kube_factory, check_mode=False, clock=None, interval=2.0):
    """The smoke_test module."""
    params = dict(params)
    params["timeout"] = _timeout(params)
    objects = build(params)
    if params["check"] == ALLOCATABLE:
        allocatable_inputs(params)
        label_selector(params.get("node_selector"))
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
        result["smoke"] = _result(params, objects, None, "", skipped_reason="render mode: written to %s, not run"
                                  % params["render_to"] if objects else "render mode: no cluster to read")
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
