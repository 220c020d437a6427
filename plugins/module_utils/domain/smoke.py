# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Smoke tests of every layer: the objects they run and the checks of what those objects print.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Builders return plain dicts (every name starts with ``gpu-platform-smoke-``, every object and pod
carries ``app.kubernetes.io/managed-by: gpu_platform.cluster`` and ``gpu-platform.io/smoke: <check>``):

- ``cuda_pod``: ``nvidia-smi`` in a Pod that asks for a GPU resource (whole GPU, time-sliced or MIG).
- ``dra_claim_pod``: a ResourceClaimTemplate and a Pod that gets its GPU through DRA.
- ``gang_job``: ``replicas`` one-GPU pods that must start together (Volcano or KAI Scheduler).
- the NCCL run (the proof of GPUDirect RDMA) is in ``domain.smoke_nccl``.

Checks return ``{"passed", "reason", "evidence"}``; ``evidence`` is the list of log lines (or
facts) that decided. ``summary`` turns per-check results into one line per layer.

Facts this follows (sources in brackets; nothing copied):

- nccl-tests prints a per-size table (size, count, type, redop, root, then time, algbw, busbw and
  #wrong out-of-place and again in-place, bandwidths in GB/s), then ``# Out of bounds values : N
  OK|FAILED`` and ``# Avg bus bandwidth    : %g`` followed by OK/FAILED only when
  NCCL_TESTS_MIN_BW is set [NVIDIA/nccl-tests src/common.cu, run(); doc/PERFORMANCE.md "NCCL
  tests report ... two bandwidths in GB/s"]. The unit is gigaBYTES per second, so
  ``smoke_tests_nccl_min_busbw_gbps`` is compared in GB/s as nccl-tests prints it.
- NCCL_DEBUG=INFO prints one line per connection, ``Channel CC/I : r[d] -> p[d] [send|receive] via
  NET/<net>/<dev>`` followed by ``/GDRDMA`` when GPUDirect RDMA is used (newer releases may add
  ``(PCI)``, ``(<proxy rank>)`` and ``/Shared``); intra-node links show ``via P2P/...`` or
  ``via SHM/...`` and a TCP fallback shows ``via NET/Socket/<dev>`` [NVIDIA/nccl
  src/transport/net.cc sendSetup/recvSetup INFO(NCCL_INIT|NCCL_NET, ...); log excerpts in
  https://github.com/NVIDIA/nccl/issues/707 ("[send] via NET/IB/2/GDRDMA") and
  https://github.com/Mellanox/nv_peer_memory/issues/56]. GPUDirect RDMA may be on for receives
  only (GDR read off), so one GDRDMA channel line is the proof, not all of them.
- Volcano Job ``batch.volcano.sh/v1alpha1``: ``minAvailable`` pods are gang-scheduled by
  ``schedulerName: volcano`` in ``queue``; ``plugins`` maps a plugin name to its arguments
  [shared/upstream/volcano/jobs.batch.volcano.sh.yaml v1.15.1]. The ``svc`` plugin gives each pod
  the hostname ``<job>-<task>-<index>`` in the subdomain ``<job>`` (a headless Service of that
  name), mounts ``/etc/volcano/<task>.host`` (one host a line) and sets ``VC_<TASK>_HOSTS``; the
  ``ssh`` plugin mounts a generated key pair and an ssh config (StrictHostKeyChecking no) at
  ``/root/.ssh`` [volcano-sh/volcano pkg/controllers/job/plugins/svc/svc.go, svc/const.go,
  ssh/ssh.go, job/helpers PodNameFmt "%s-%s-%d"; MPI example in volcano-sh/website
  content/en/docs/mpi_on_volcano.md].
- KAI Scheduler: pods opt in with ``schedulerName: kai-scheduler`` and the queue label
  ``kai.scheduler/queue`` [kai-scheduler/KAI-Scheduler docs/batch/README.md]. The pod-grouper gives
  a plain batch/v1 Job ``minMember: 1`` (no gang; at v0.13 even one PodGroup per pod: pod name in
  the PodGroup name) [NVIDIA/KAI-Scheduler pkg/podgrouper/podgrouper/plugins/job/job_grouper.go];
  the ``kai.scheduler/batch-min-member`` Job annotation only arrived after v0.14.0
  [KAI-Scheduler CHANGELOG.md, #1308]. A gang that works on v0.13 and later is an explicit
  ``scheduling.run.ai/v2alpha2`` PodGroup (``spec.minMember``, minimum 1; ``spec.queue``) whose
  pods carry the annotation ``pod-group-name``: the pod-grouper leaves ownerless pods with that
  annotation alone [NVIDIA/KAI-Scheduler pkg/podgrouper/pod_controller.go isOrphanPodWithPodGroup;
  deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml], and newer releases also honour
  ``kai.scheduler/skip-podgrouper: "true"`` [docs/developer/designs/external-podgroups/README.md].
- DRA ``resource.k8s.io/v1``: a ResourceClaimTemplate's ``spec.spec.devices.requests[]`` has a
  ``name`` and ``exactly.deviceClassName`` (count defaults to one device); a Pod lists
  ``spec.resourceClaims[{name, resourceClaimTemplateName}]`` and the container names the claim
  in ``resources.claims`` [kubernetes Python client 37 models V1DeviceRequest,
  V1ExactDeviceRequest, V1PodResourceClaim; kubernetes/website examples/dra]. The NVIDIA DRA
  driver's GPU DeviceClass is ``gpu.nvidia.com`` [shared/upstream README, dra-driver section].
- Multus: ``k8s.v1.cni.cncf.io/networks`` lists attachments, comma-separated, each
  ``[<namespace>/]<name>[@<interface>]`` [k8snetworkplumbingwg/multus-cni docs/how-to-use.md].
- RDMA from a pod needs the ``IPC_LOCK`` capability to pin memory [docs/network.md of this
  collection; Network Operator example pods].
- nvidia-smi's table starts with ``NVIDIA-SMI <ver>  Driver Version: <ver>  CUDA Version: <ver>``
  and has one row per GPU: index, name, persistence mode On/Off, then the PCI bus id; on a
  driver/library mismatch it prints only ``Failed to initialize NVML: Driver/library version
  mismatch`` [tests/fakes/gpu_operator.py NVIDIA_SMI; roles/gpu_operator/tasks/smoke.yml].
- An image reference is ``[registry/]path[:tag][@algorithm:hex]`` (tag ``[\\w][\\w.-]{0,127}``)
  [distribution/reference regexp.go]; only a tag other than ``latest`` or a digest pins it.

"""

from __future__ import annotations

import datetime
import math
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import dra, objects, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

PREFIX = "gpu-platform-smoke-"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}
SMOKE_LABEL = "gpu-platform.io/smoke"
TASK_LABEL = "gpu-platform.io/smoke-task"
CUDA, DRA, GANG, NCCL = "cuda", "dra", "gang", "nccl"

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
DEFAULT_RDMA_RESOURCE = {"rdma/shared_ib": 1}

DRA_API = "resource.k8s.io/v1"
DEFAULT_DEVICE_CLASS = "gpu.nvidia.com"

VOLCANO = "volcano"
KAI = "kai"
SCHEDULERS = (VOLCANO, KAI)
VOLCANO_JOB_API = "batch.volcano.sh/v1alpha1"
VOLCANO_DEFAULT_QUEUE = "default"  # Volcano creates it
KAI_SCHEDULER_NAME = "kai-scheduler"
KAI_PODGROUP_API = "scheduling.run.ai/v2alpha2"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_PODGROUP_ANNOTATION = "pod-group-name"
KAI_SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"

GANG_MARKER = "gpu-platform-smoke started"
FIELDS = {
    "namespace": "smoke_tests_namespace",
    "image": "smoke_tests_image",
    "nccl_image": "smoke_tests_nccl_image",
    "resources": "smoke_tests_cuda_resources",
    "node_selector": "node_selector",
    "suffix": "suffix",
    "device_class": "smoke_tests_dra_device_class",
    "scheduler": "smoke_tests_scheduler",
    "replicas": "smoke_tests_gang_replicas",
    "queue": "smoke_tests_queue",
    "window": "smoke_tests_gang_window_seconds",
    "nodes": "smoke_tests_nccl_nodes",
    "gpus_per_node": "smoke_tests_nccl_gpus_per_node",
    "rdma_resource": "smoke_tests_nccl_rdma_resource",
    "network": "smoke_tests_nccl_network",
    "min_busbw": "smoke_tests_nccl_min_busbw_gbps",
}

RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                           r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

# -- log patterns ---------------------------------------------------------------------------------

SMI_HEADER = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)"
                        r"(?:\s+CUDA Version:\s*(?P<cuda>[^\s|]+))?")
SMI_GPU_ROW = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s+\|\s+"
                         r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s")
RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
                     r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$")


# -- input validation -----------------------------------------------------------------------------

# Ceilings of what a smoke test may ask for: past them a value is a typo (100000 nodes), not a plan. The largest
# GPU nodes carry 8 GPUs (16 leaves room); an NCCL run over more than 1,024 nodes is a benchmark, not a smoke test.
MAX_NCCL_NODES = 1024
MAX_GPUS_PER_NODE = 16
MAX_GANG_REPLICAS = 256


def _positive_int(field, value, minimum=1, example="2", maximum=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(field, "%r is not a whole number" % (value,), "give a number such as %s" % example)
    if value < minimum:
        raise ParamError(field, "is %d, it must be at least %d" % (value, minimum),
                         "give a number of %d or more, such as %s" % (minimum, example))
    if maximum is not None and value > maximum:
        raise ParamError(field, "is %d, above the most a smoke test runs (%d)" % (value, maximum),
                         "give at most %d (check for a typo)" % maximum)
    return value


def nccl_fits(nodes, gpus_per_node, node_objects):
    """Refuse an NCCL test the cluster cannot hold: fewer schedulable nodes with ``gpus_per_node`` allocatable GPUs
    than ``nodes``. ``node_objects`` are the cluster's Nodes (as the API returns them)."""
    fitting = sorted(name for name, allocatable in _allocatable_by_node(node_objects).items()
                     if (allocatable_count(allocatable.get(GPU_RESOURCE)) or 0) >= gpus_per_node)
    if len(fitting) < nodes:
        raise ParamError(FIELDS["nodes"], "is %d, but %d node(s) have %d allocatable GPUs (%s)" % (
            nodes, len(fitting), gpus_per_node, ", ".join(fitting[:5]) + (" ..." if len(fitting) > 5 else "")
            if fitting else "none"),
            "give at most %d nodes, or fewer GPUs per node (%s)" % (len(fitting), FIELDS["gpus_per_node"]))
    return fitting


def positive_number(field, value, example="100"):
    """A finite number greater than zero (int, float or a numeric string, not a boolean)."""
    if isinstance(value, bool) or value is None:
        raise ParamError(field, "%r is not a number" % (value,), "give a number greater than 0, such as %s" % example)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ParamError(field, "%r is not a number" % (value,),
                             "give a number greater than 0, such as %s" % example) from None
    elif isinstance(value, (int, float)):
        number = float(value)
    else:
        raise ParamError(field, "%r is not a number" % (value,), "give a number greater than 0, such as %s" % example)
    if math.isnan(number) or math.isinf(number):
        raise ParamError(field, "%r is not a finite number" % (value,), "give a number such as %s" % example)
    if number <= 0:
        raise ParamError(field, "is %g, it must be greater than 0" % number,
                         "give a number greater than 0, such as %s" % example)
    return number


def _resources(field, value, allow_empty=False):
    """Extended resources -> quantity strings (the API's canonical form), e.g. {"nvidia.com/gpu": "1"}."""
    if not isinstance(value, dict) or (not value and not allow_empty):
        raise ParamError(field, "must be a dictionary of resource names to counts",
                         "e.g. {nvidia.com/gpu: 1} or {nvidia.com/mig-1g.10gb: 1}")
    out = {}
    for name, count in value.items():
        if not isinstance(name, str) or not RESOURCE_NAME.match(name) or "/" not in name:
            raise ParamError(field, "%r is not an extended resource name (<domain>/<name>)" % (name,),
                             "use a name such as nvidia.com/gpu or rdma/shared_ib")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ParamError(field, "the count of %s is %r, not a whole number of at least 1" % (name, count),
                             "give a count such as %s: 1" % name)
        out[name] = str(count)
    return out


def _queue(value):
    field = FIELDS["queue"]
    if not isinstance(value, str) or not value or len(value) > 63 or not validate.DNS1123_SUBDOMAIN.match(value):
        raise ParamError(field, "%r is not a queue name (lower-case DNS name of at most 63 characters)" % (value,),
                         "give the name of an existing queue, such as default")
    return value


# -- object builders ------------------------------------------------------------------------------

def _name(check, suffix=None):
    return PREFIX + check + ("-" + suffix if suffix else "")


def _labels(check, extra=None):
    out = dict(MANAGED_BY)
    out[SMOKE_LABEL] = check
    out.update(extra or {})
    return out


def _meta(name, namespace, check, labels=None, annotations=None):
    meta = {"name": name, "namespace": namespace, "labels": _labels(check, labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _resource_suffix(resources):
    """A name suffix for non-default resources, so a MIG or shared-GPU pod does not collide with the whole-GPU one."""
    if set(resources) == {GPU_RESOURCE} and resources[GPU_RESOURCE] == "1":
        return None
    name = sorted(resources)[0].rsplit("/", 1)[-1].lower()
    return re.sub(r"[^a-z0-9.-]+", "-", name).strip("-.") or None


def _node_selector(value):
    return validate.labels(FIELDS["node_selector"], value) or None


def cuda_pod(namespace, image, resources=None, node_selector=None, suffix=None):
    """A Pod that runs ``nvidia-smi`` with ``resources`` (default one ``nvidia.com/gpu``) and then ends.

    Check its log with ``check_nvidia_smi``. A resource other than one whole GPU (a MIG profile, a
    time-sliced ``.shared`` GPU) gives the pod its own name, e.g. ``gpu-platform-smoke-cuda-mig-1g.10gb``;
    ``suffix`` (a sharing pool's name) names it instead. ``node_selector`` pins it to those nodes.
    """
    validate.dns_label(FIELDS["namespace"], namespace)
    image = validate.pinned_image(FIELDS["image"], image)
    limits = _resources(FIELDS["resources"], {GPU_RESOURCE: 1} if resources is None else resources)
    selector = _node_selector(node_selector)
    if suffix is not None:
        validate.dns_label(FIELDS["suffix"], suffix, max_len=63 - len(_name(CUDA, "")))
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta(_name(CUDA, suffix or _resource_suffix(limits)), namespace, CUDA),
        "spec": objects.restricted({
            "restartPolicy": "Never",
            "tolerations": [dict(GPU_TOLERATION)],
            "containers": [{"name": "nvidia-smi", "image": image, "command": ["nvidia-smi"],
                            "resources": {"limits": limits}}],
        }),
    }
    if selector:
        pod["spec"]["nodeSelector"] = selector
    return pod


def dra_claim_pod(namespace, image, device_class=DEFAULT_DEVICE_CLASS):
    """[ResourceClaimTemplate, Pod]: the pod gets one device of ``device_class`` through DRA and runs nvidia-smi.

    The same objects as the DRA docs' example (``dra.example_claim``), named and labelled as a smoke test."""
    validate.dns_label(FIELDS["namespace"], namespace)
    image = validate.pinned_image(FIELDS["image"], image)
    if not isinstance(device_class, str) or not device_class or len(device_class) > 253 \
            or not validate.DNS1123_SUBDOMAIN.match(device_class):
        raise ParamError(FIELDS["device_class"], "%r is not a DeviceClass name" % (device_class,),
                         "give the DRA driver's class, such as gpu.nvidia.com")
    return dra.example_claim(namespace, _name(DRA), image, device_class, _labels(DRA))


def _gang_container(image):
    """Prints ``gpu-platform-smoke started <UTC time> on <node>`` (see ``start_time_from_log``), then idles a while
    so the pods of one gang overlap."""
    script = 'echo "%s $(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ) on ${NODE_NAME}"; sleep 10' % GANG_MARKER
    return {
        "name": "gang-member", "image": image, "command": ["sh", "-c", script],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": {"limits": {GPU_RESOURCE: "1"}},
    }


def gang_job(scheduler, namespace, image, replicas=2, queue="default"):
    """The objects of an all-or-nothing group of ``replicas`` one-GPU pods.

    ``volcano``: one Volcano Job (``minAvailable == replicas``). ``kai``: a KAI PodGroup
    (``minMember == replicas``) and ``replicas`` bare Pods that join it (see the module docstring
    for why not a batch/v1 Job). Feed the pods' start times to ``check_gang``.
    """
    if scheduler not in SCHEDULERS:
        raise ParamError(FIELDS["scheduler"], "%r is not a supported gang scheduler" % (scheduler,),
                         "use one of: %s" % ", ".join(SCHEDULERS))
    validate.dns_label(FIELDS["namespace"], namespace)
    image = validate.pinned_image(FIELDS["image"], image)
    replicas = _positive_int(FIELDS["replicas"], replicas, minimum=2, example="2", maximum=MAX_GANG_REPLICAS)
    queue = _queue(queue)
    name = _name(GANG)
    pod_spec = objects.restricted({"restartPolicy": "Never", "tolerations": [dict(GPU_TOLERATION)],
                                   "containers": [_gang_container(image)]})
    if scheduler == VOLCANO:
        return [{
            "apiVersion": VOLCANO_JOB_API, "kind": "Job",
            "metadata": _meta(name, namespace, GANG),
            "spec": {
                "schedulerName": VOLCANO, "queue": queue, "minAvailable": replicas,
                "tasks": [{"name": "member", "replicas": replicas,
                           "template": {"metadata": {"labels": _labels(GANG)}, "spec": pod_spec}}],
            },
        }]
    group = {
        "apiVersion": KAI_PODGROUP_API, "kind": "PodGroup",
        "metadata": _meta(name, namespace, GANG),
        "spec": {"minMember": replicas, "queue": queue},
    }
    pods = []
    for index in range(replicas):
        spec = objects.restricted(dict(pod_spec, schedulerName=KAI_SCHEDULER_NAME))
        pods.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": _meta("%s-%d" % (name, index), namespace, GANG, labels={KAI_QUEUE_LABEL: queue},
                              annotations={KAI_PODGROUP_ANNOTATION: name, KAI_SKIP_PODGROUPER: "true"}),
            "spec": spec,
        })
    return [group] + pods


# -- log checks -----------------------------------------------------------------------------------

def _lines(log):
    """The log as a list of lines without trailing blanks; accepts text, bytes, a list of lines or None."""
    if log is None:
        return []
    if isinstance(log, bytes):
        log = log.decode("utf-8", "replace")
    if isinstance(log, (list, tuple)):
        lines = [str(v) for v in log]
    else:
        lines = str(log).splitlines()
    return [v.rstrip() for v in lines]


def _first_line(lines):
    return next((v.strip() for v in lines if v.strip()), "")


def check_result(passed, reason, evidence):
    return {"passed": bool(passed), "reason": reason, "evidence": [e for e in evidence if e]}


def check_nvidia_smi(log):
    """Passes when the log has nvidia-smi's header (with Driver Version) and at least one GPU row."""
    lines = _lines(log)
    header = row_lines = None
    rows = []
    for line in lines:
        if header is None:
            match = SMI_HEADER.search(line)
            if match:
                header = (line.strip(" |").strip(), match)
                continue
        row = SMI_GPU_ROW.match(line.strip())
        if row:
            rows.append(row)
            row_lines = row_lines or line.strip()
    first = _first_line(lines)
    if header and rows:
        names = sorted({r.group("name") for r in rows})
        match = header[1]
        cuda = ", CUDA %s" % match.group("cuda") if match.group("cuda") else ""
        return check_result(True, "nvidia-smi saw %d GPU(s) (%s), driver %s%s"
                            % (len(rows), ", ".join(names), match.group("driver"), cuda), [header[0], row_lines])
    if not first:
        return check_result(False, "the log is empty: nvidia-smi printed nothing (the container may not have started)", [])
    if header:
        return check_result(False, "nvidia-smi printed its header (driver %s) but no GPU row: the pod got no GPU; "
                            "first line of the log: %r" % (header[1].group("driver"), first), [header[0]])
    return check_result(False, "nvidia-smi did not print its GPU table; first line of the log: %r" % first, [first])


def _utc(field, value):
    """An aware datetime from a datetime, epoch seconds or an RFC 3339 string."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(value, bool):
        raise ParamError(field, "%r is not a time" % (value,), "give RFC 3339 times such as 2026-01-02T03:04:05Z")
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
    match = RFC3339.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ParamError(field, "%r is not a time" % (value,), "give RFC 3339 times such as 2026-01-02T03:04:05Z")
    year, month, day, hour, minute, second = (int(v) for v in match.group(1, 2, 3, 4, 5, 6))
    micro = int((match.group(7) or "0")[:6].ljust(6, "0"))
    offset = datetime.timedelta(0)
    if match.group(9):
        offset = datetime.timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        offset = -offset if match.group(9) == "-" else offset
    return datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=datetime.timezone(offset))


def start_time_from_log(log):
    """The time a gang member printed (``gpu-platform-smoke started <time> on <node>``), or None."""
    for line in _lines(log):
        if GANG_MARKER in line:
            words = line.split(GANG_MARKER, 1)[1].split()
            return words[0] if words else None
    return None


def check_gang(start_times, window_seconds, replicas=None):
    """All-or-nothing: every pod started (``replicas`` of them when given) and all within ``window_seconds``.

    ``start_times`` maps pod name -> start time (RFC 3339 string, epoch seconds or datetime; None
    when the pod never started), or is a list of such times.
    """
    window = positive_number(FIELDS["window"], window_seconds, example="60")
    field = "start_times"
    if isinstance(start_times, dict):
        items = sorted(start_times.items())
    elif isinstance(start_times, (list, tuple)):
        items = [("pod #%d" % i, v) for i, v in enumerate(start_times)]
    else:
        raise ParamError(field, "must map pod names to start times (or list them)",
                         "give {pod: '2026-01-02T03:04:05Z', ...}")
    expected = len(items) if replicas is None else _positive_int(FIELDS["replicas"], replicas, minimum=1)
    started = [(n, _utc(field, v)) for n, v in items if v not in (None, "")]
    missing = [n for n, v in items if v in (None, "")]
    missing += ["pod #%d (no record)" % i for i in range(len(items), expected)]
    evidence = ["%s started %s" % (n, t.isoformat()) for n, t in sorted(started, key=lambda p: p[1])]
    evidence += ["%s did not start" % n for n in missing]
    if expected == 0:
        return check_result(False, "no gang pods were found, so nothing was checked", [])
    if not started:
        return check_result(False, "none of the %d gang pods started: not enough free GPUs for the whole gang, or the "
                            "scheduler or its queue is missing" % expected, evidence)
    if len(started) < expected:
        return check_result(False, "only %d of %d gang pods started (not started: %s): the scheduler placed part of "
                            "the gang, which gang scheduling must never do" % (len(started), expected, ", ".join(missing)),
                            evidence)
    if len(started) > expected:
        return check_result(False, "%d pods started but the gang has %d" % (len(started), expected), evidence)
    first = min(started, key=lambda p: p[1])
    last = max(started, key=lambda p: p[1])
    spread = (last[1] - first[1]).total_seconds()
    if spread > window:
        return check_result(False, "the gang's pods started %g s apart (%s first, %s last), more than the %g s window: "
                            "they were not scheduled together" % (spread, first[0], last[0], window),
                            [evidence[0], evidence[-1]])
    return check_result(True, "all %d gang pods started within %g s of each other (window %g s)"
                        % (expected, spread, window), evidence)


def allocatable_count(value):
    """An allocatable count (int or integer string such as "8"), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _allocatable_by_node(actual):
    if isinstance(actual, dict):
        return {str(k): (v or {}) for k, v in actual.items()}
    if isinstance(actual, (list, tuple)):
        out = {}
        for node in actual:
            meta = (node or {}).get("metadata") or {}
            out[meta.get("name")] = ((node or {}).get("status") or {}).get("allocatable") or {}
        return out
    raise ParamError("allocatable", "must map node names to allocatable resources, or be a list of Node objects",
                     "pass the nodes as kubernetes.core.k8s_info returns them")


def check_allocatable(expected, actual):
    """Per node and resource: the expected count against what the node advertises (``status.allocatable``).

    ``expected`` maps node -> {resource: count}; ``actual`` maps node -> allocatable, or is a list
    of Node objects.
    """
    if not isinstance(expected, dict) or not all(isinstance(v, dict) for v in expected.values()):
        raise ParamError("expected_allocatable", "must map node names to {resource: count}",
                         "e.g. {gpu-node-1: {nvidia.com/gpu: 32}}")
    have = _allocatable_by_node(actual)
    matched, differ = [], []
    for node in sorted(expected):
        for resource in sorted(expected[node]):
            want = expected[node][resource]
            if isinstance(want, bool) or not isinstance(want, int) or want < 0:
                raise ParamError("expected_allocatable", "%s %s: %r is not a count" % (node, resource, want),
                                 "give whole numbers such as 8")
            if node not in have:
                differ.append("%s: %s expected %d, but the node was not found" % (node, resource, want))
                continue
            raw = have[node].get(resource)
            got = allocatable_count(raw)
            if got == want:
                matched.append("%s: %s %d as expected" % (node, resource, want))
            elif raw is None:
                differ.append("%s: %s expected %d, not advertised" % (node, resource, want))
            else:
                differ.append("%s: %s expected %d, advertises %s" % (node, resource, want, raw))
    total = len(matched) + len(differ)
    if total == 0:
        return check_result(False, "no expected allocatable resources were given, so nothing was checked", [])
    if differ:
        return check_result(False, "%d of %d node resources differ from what was expected: %s"
                            % (len(differ), total, "; ".join(differ)), differ)
    return check_result(True, "all %d node resources match: %s" % (total, "; ".join(matched)), matched)


# -- summary --------------------------------------------------------------------------------------

def _evidence_line(evidence):
    if isinstance(evidence, (list, tuple)):
        evidence = next((str(e) for e in evidence if e and str(e).strip()), "")
    text = _first_line(_lines(evidence))
    return text[:300] if text else "(no log line)"


def collect(loop_results):
    """Verdicts from the results of a loop over ``plan`` items (``register`` of a smoke_test task), in plan order.

    A skipped loop item stands for a test that could not run here (its plan item carries the reason);
    a result without ``smoke`` is an error (bad input, missing CRD) and goes to ``errors`` with its message.
    Returns ``{"results", "errors"}``.
    """
    results, errors = [], []
    for entry in loop_results or []:
        item = entry.get("item") or {}
        if entry.get("smoke"):
            results.append(entry["smoke"])
        elif item.get("skipped_reason"):
            results.append({"layer": item.get("layer"), "check": item.get("check"), "object": None, "passed": None,
                            "reason": "", "evidence": [], "skipped_reason": item["skipped_reason"]})
        else:
            errors.append("%s %s: %s" % (item.get("layer"), item.get("check"), entry.get("msg") or "no result"))
    return {"results": results, "errors": errors}


def summary(results):
    """One line per layer (in the order the layers first appear) and the overall verdict.

    ``results`` are dicts with ``layer``, ``check``, ``object``, ``passed``, ``reason``,
    ``evidence`` and optionally ``skipped_reason`` (a truthy value marks the check skipped). A
    layer is ``PASS`` when none of its checks failed and one passed, ``FAIL`` (the first failing
    check, then the names of any others) when one failed, ``SKIPPED`` when all were skipped.
    Overall passes when nothing failed and something passed. Returns ``{"lines", "passed"}``.
    """
    if not isinstance(results, (list, tuple)):
        raise ParamError("results", "must be a list of check results", "give [{layer, check, object, passed, ...}]")
    layers = {}
    for index, item in enumerate(results):
        if not isinstance(item, dict) or not item.get("layer"):
            raise ParamError("results", "item %d has no layer" % index, "give every result a layer name")
        layers.setdefault(str(item["layer"]), []).append(item)
    lines, any_failed, any_passed = [], False, False
    for layer, items in layers.items():
        skipped = [i for i in items if i.get("skipped_reason")]
        ran = [i for i in items if not i.get("skipped_reason")]
        failed = [i for i in ran if not i.get("passed")]
        if failed:
            any_failed = True
            first = failed[0]
            line = "%s: FAIL - %s - %s - %s" % (layer, first.get("object") or first.get("check") or "?",
                                                first.get("reason") or "no reason given",
                                                _evidence_line(first.get("evidence")))
            if len(failed) > 1:
                line += " (also failed: %s)" % ", ".join(str(i.get("check") or i.get("object")) for i in failed[1:])
            lines.append(line)
        elif ran:
            any_passed = True
            lines.append("%s: PASS" % layer)
        else:
            lines.append("%s: SKIPPED - %s" % (layer, "; ".join(str(i["skipped_reason"]) for i in skipped)))
    return {"lines": lines, "passed": any_passed and not any_failed}


# -- the plan of a platform's smoke tests -----------------------------------------------------------

LAYERS = ("gpu_operator", "gpu_sharing", "dra_driver", "scheduling", "network_operator")
PLAN_FIELDS = {"layers": "smoke_tests_layers", "timeout": "smoke_tests_timeout",
               "nccl_timeout": "smoke_tests_nccl_timeout"}


def _item(layer, check, params=None, skipped_reason=None):
    return {"layer": layer, "check": check, "params": dict(params or {}), "skipped_reason": skipped_reason}


def _custom_profile(entries):
    """The first MIG profile a custom layout turns on, as the device plugin names it (``1g.10gb+me`` -> ``1g.10gb``)."""
    for entry in entries:
        if entry.get("mig-enabled") and entry.get("mig-devices"):
            return sorted(entry["mig-devices"])[0].split("+", 1)[0]
    return None


def _sharing_items(pools, common, image, mig_config=None):
    """Per pool: an allocatable check (time-slicing) and a pod on the pool's shared resource. A MIG pool whose
    layout is a config of the custom mig-parted ``mig_config`` is checked against that config."""
    items = []
    configs = (mig_config or {}).get("mig-configs") or {}
    for pool in pools:
        selector = dict(pool["node_selector"])
        if pool["sharing"] == "time-slicing":
            items.append(_item("gpu_sharing", "allocatable", dict(
                common, node_selector=selector, expected_per_gpu={pool["resource_name"]: pool["replicas"]})))
            resources = {pool["resource_name"]: 1}
        elif pool["sharing"] == "mig":
            custom = pool["mig_profile"] in configs
            check = dict(common, node_selector=selector, mig_layout=pool["mig_profile"], mig_strategy=pool["mig_strategy"])
            if custom:
                check["mig_config"] = mig_config
            items.append(_item("gpu_sharing", "allocatable", check))
            if custom:
                profile = _custom_profile(configs[pool["mig_profile"]])
            else:
                profile = pool["mig_profile"][len("all-"):] if pool["mig_profile"].startswith("all-") else None
            if pool["mig_strategy"] == "mixed" and profile is None:
                items.append(_item("gpu_sharing", "cuda", skipped_reason="pool %s: the mixed layout %s has no "
                                   "single MIG resource to ask for" % (pool["name"], pool["mig_profile"])))
                continue
            resources = {GPU_RESOURCE: 1} if pool["mig_strategy"] == "single" else {"nvidia.com/mig-" + profile: 1}
        else:
            continue
        cuda_pod(common["namespace"], image, resources, selector, pool["name"])  # validates
        params = dict(common, image=image, resources=resources, node_selector=selector, suffix=pool["name"])
        items.append(_item("gpu_sharing", CUDA, params))
    return items


def plan(settings):
    """The smoke tests of the chosen layers, as ``[{layer, check, params, skipped_reason}]``.

    ``settings`` (the smoke_tests role's variables, gathered by its vars): ``layers``, ``namespace``,
    ``image``, ``nccl_image``, ``timeout``, ``nccl_timeout``, ``cuda_resources``, ``mig_config`` (the sharing
    layer's custom mig-parted config, or None), ``sharing_pools``
    (validated pools as dicts: name, node_selector, sharing, replicas, resource_name, mig_profile,
    mig_strategy), ``dra_enabled``, ``device_class``, ``scheduler`` (volcano, kai or none), ``queue``,
    ``kai_queue`` (a team queue, used when ``queue`` is empty under KAI), ``replicas``, ``window``,
    ``network_mode``, ``rdma_resource`` (None: the mode's resource, as many as ``nics_per_pod`` or the node
    type gives), ``resource_name``, ``nics_per_pod``, ``node_type``, ``network``, ``nodes``, ``gpus_per_node``
    ("": the node type's GPUs, else 8) and ``min_busbw`` ("": the node type's threshold) (``domain.smoke_nccl``).
    ``params`` are the smoke_test module's options. Every object is built here once, so a bad value fails before
    anything runs, naming the role variable.
    """
    layers = settings.get("layers")
    if not isinstance(layers, (list, tuple)) or any(layer not in LAYERS for layer in layers):
        raise ParamError(PLAN_FIELDS["layers"], "%r is not a list of layers" % (layers,),
                         "use some of: %s" % ", ".join(LAYERS))
    namespace = settings.get("namespace")
    validate.dns_label(FIELDS["namespace"], namespace)
    timeout = _positive_int(PLAN_FIELDS["timeout"], settings.get("timeout"), example="300")
    common = {"namespace": namespace, "timeout": timeout}
    image = settings.get("image")
    items = []
    if "gpu_operator" in layers:
        cuda_pod(namespace, image, settings.get("cuda_resources"))
        items.append(_item("gpu_operator", CUDA, dict(common, image=image, resources=settings.get("cuda_resources"))))
    if "gpu_sharing" in layers:
        items += _sharing_items(settings.get("sharing_pools") or [], common, image, settings.get("mig_config"))
    if "dra_driver" in layers:
        if settings.get("dra_enabled"):
            device_class = settings.get("device_class") or DEFAULT_DEVICE_CLASS
            dra_claim_pod(namespace, image, device_class)
            items.append(_item("dra_driver", DRA, dict(common, image=image, device_class=device_class)))
        else:
            items.append(_item("dra_driver", DRA, skipped_reason="the DRA driver is not enabled (dra_driver_enabled)"))
    if "scheduling" in layers:
        items.append(_gang_item(settings, common, image))
    if "network_operator" in layers:
        from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import smoke_nccl
        items.append(smoke_nccl.nccl_item(settings, common, _item))
    return items


def _gang_item(settings, common, image):
    scheduler = settings.get("scheduler") or "none"
    if scheduler == "none":
        return _item("scheduling", GANG, skipped_reason="no gang scheduler is installed (scheduling_scheduler: none)")
    queue = settings.get("queue") or (VOLCANO_DEFAULT_QUEUE if scheduler == VOLCANO else settings.get("kai_queue"))
    if not queue:
        raise ParamError(FIELDS["queue"], "is empty and there is no team queue to use under KAI Scheduler",
                         "name a KAI leaf queue (one with a parent), or give scheduling_teams")
    replicas = settings.get("replicas")
    positive_number(FIELDS["window"], settings.get("window"), example="30")
    gang_job(scheduler, common["namespace"], image, replicas, queue)
    return _item("scheduling", GANG, dict(common, image=image, scheduler=scheduler, queue=queue, replicas=replicas,
                                          window_seconds=settings.get("window")))
