# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The objects of the smoke tests (a GPU pod, a DRA claim, a gang of pods) and the checks of their inputs.

Private to the collection: not a public API. Pure: standard library only, no I/O.

Builders return plain dicts (every name starts with ``gpu-platform-smoke-``, every object and pod
carries ``app.kubernetes.io/managed-by: gpu_platform.cluster`` and ``gpu-platform.io/smoke: <check>``):

- ``cuda_pod``: ``nvidia-smi`` in a Pod that asks for a GPU resource (whole GPU, time-sliced or MIG).
- ``dra_claim_pod``: a ResourceClaimTemplate and a Pod that gets its GPU through DRA.
- ``gang_job``: ``replicas`` one-GPU pods that must start together (Volcano or KAI Scheduler).
- the NCCL run (the proof of GPUDirect RDMA) is in ``domain.smoke.nccl``.

What they print is judged in ``domain.smoke.checks``; the plan of a platform's smoke tests is ``domain.smoke.plan``.

Facts this follows (sources in brackets; nothing copied):

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
- An image reference is ``[registry/]path[:tag][@algorithm:hex]`` (tag ``[\\w][\\w.-]{0,127}``)
  [distribution/reference regexp.go]; only a tag other than ``latest`` or a digest pins it.

"""

from __future__ import annotations

import math
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import dra_driver as dra
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import taints
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import MANAGED_BY

PREFIX = "gpu-platform-smoke-"
SMOKE_LABEL = "gpu-platform.io/smoke"
TASK_LABEL = "gpu-platform.io/smoke-task"
CUDA, DRA, GANG, NCCL = "cuda", "dra", "gang", "nccl"

GPU_RESOURCE = "nvidia.com/gpu"
GPU_TOLERATION = taints.GPU_TOLERATION
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
