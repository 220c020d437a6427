# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The NCCL smoke test: the proof of GPUDirect RDMA between nodes. Split from ``domain.smoke.plan``; its log check is
``domain.smoke.nccl_check``.

Private to the collection: not a public API. Pure: standard library only, no I/O (the SSH key pair of the
KAI and plain-pod runs is made by an adapter and only handed in here).

Design: a ``launcher`` pod (no GPU) and one ``worker`` pod per node (``gpus_per_node`` GPUs, the RDMA
resource, IPC_LOCK, the Multus annotation, required anti-affinity so two workers never share a node).
Workers run sshd; the launcher waits until every worker answers over ssh, then runs ``mpirun`` with one
rank per GPU, so every rank's NCCL lines and the nccl-tests table land in the launcher's log. The launcher
script is one (``launcher_script``); only where the worker names come from differs:

- ``volcano``: one Volcano Job with the ``ssh`` and ``svc`` plugins, which make the key pair, the host file
  ``/etc/volcano/worker.host`` and the headless Service (facts in ``domain.smoke.objects``'s docstring).
- ``kai``: bare Pods with ``schedulerName: kai-scheduler`` and the queue label in one KAI PodGroup
  (``minMember`` = every pod), as ``domain.smoke.objects.gang_job`` does; ``none``: the same bare Pods, default
  scheduler. Workers get ``hostname``/``subdomain`` and a headless Service of the subdomain's name that selects
  them, so ``<hostname>.<subdomain>`` resolves in the namespace [kubernetes.io docs "DNS for Services and Pods",
  Pod's hostname and subdomain fields; ``publishNotReadyAddresses`` makes the records exist before readiness].
  The key pair is a Secret (``nccl_ssh_secret``) mounted read-only (mode 0400) at ``/root/.ssh`` of every pod:
  the private key and an ssh config for the launcher, ``authorized_keys`` for the workers' sshd (sshd refuses
  keys in files writable by others [OpenSSH sshd(8) StrictModes]). The same layout as the MPI Operator's
  launcher and workers (a Secret of an SSH key pair mounted at the ssh directory [kubeflow/mpi-operator
  v2 design, sshAuthMountPath]).
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, node_types)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import objects as smoke_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

FIELDS = smoke_objects.FIELDS
NCCL = smoke_objects.NCCL
LAUNCHER, WORKER = "launcher", "worker"
VOLCANO, KAI, NONE = smoke_objects.VOLCANO, smoke_objects.KAI, "none"
SCHEDULERS = (VOLCANO, KAI, NONE)
# Sizes where all_reduce is bandwidth-bound, so the average reflects the fabric, not latency.
TEST_ARGS = ("-b", "512M", "-e", "8G", "-f", "2", "-g", "1")
SSH_WAIT_TRIES = 60  # x 5 s: how long the launcher waits for every worker's sshd
POD_INTERFACE = "eth0"  # the pod's primary (cluster) interface, named by the CNI convention
SSH_DIR = "/root/.ssh"
SSH_KEY_FILE = "id_ed25519"
SSH_MODE = 0o400
WORKERS_ENV = "GPU_PLATFORM_SMOKE_WORKERS"
VOLCANO_HOST_FILE = "/etc/volcano/%s.host" % WORKER
DEFAULT_GPUS_PER_NODE = 8
# The RDMA resource a pod claims per network mode: the network layer's default resource names (ipoib keeps the
# RDMA shared device plugin, as rdma_shared).
RDMA_MODES = {mode: "rdma/" + name for mode, name in nic_cluster_policy.DEFAULT_RESOURCE_NAMES.items()}
TYPE_FIELD = "gpu_platform_rdma_node_type"
NICS_FIELD = "gpu_platform_rdma_nics_per_pod"
PLAN_TIMEOUT_FIELD = "smoke_tests_nccl_timeout"

NETWORK_ELEMENT = re.compile(r"^(?:(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/)?(?P<name>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
                             r"(?:@(?P<iface>[A-Za-z0-9][-A-Za-z0-9_.]{0,14}))?$")


def name():
    return smoke_objects.PREFIX + NCCL


def secret_name():
    return name() + "-ssh"


def launcher_pod_name():
    """The pod whose log holds the whole run (Volcano names pods <job>-<task>-<index>; the bare pods follow it)."""
    return "%s-%s-0" % (name(), LAUNCHER)


def _network(value):
    """The Multus annotation value from a string ("a, ns/b@net2") or a list of attachments."""
    field = FIELDS["network"]
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ParamError(field, "%r is not a network attachment name or a list of them" % (value,),
                         "give a NetworkAttachmentDefinition name such as rdma-net or default/rdma-net")
    if not items or not all(items):
        raise ParamError(field, "%r has an empty attachment name" % (value,),
                         "give names separated by commas, such as rdma-net or default/rdma-net@net1")
    for item in items:
        if not NETWORK_ELEMENT.match(item):
            raise ParamError(field, "%r is not [<namespace>/]<name>[@<interface>]" % item,
                             "use the NetworkAttachmentDefinition's name, such as rdma-net or default/rdma-net")
    return ",".join(items)


# -- the scripts ----------------------------------------------------------------------------------

def launcher_script(np_total, gpus_per_node, workers):
    """The launcher's shell script, the same under every scheduler; ``workers`` is the shell words that list the
    worker host names (Volcano's host file, or the variable the bare-pod launcher gets)."""
    lines = [
        "set -eu",
        # Absolute paths: Open MPI then starts its remote daemons from the same prefix, and every rank runs the
        # same binary without relying on the PATH of a non-interactive ssh session.
        'mpirun_bin=$(command -v mpirun) || { echo "gpu-platform-smoke: mpirun is not on PATH in the image"; exit 1; }',
        "test_bin=$(command -v all_reduce_perf) || "
        '{ echo "gpu-platform-smoke: all_reduce_perf is not on PATH in the image"; exit 1; }',
        'hosts=""',
        "for host in %s; do" % workers,
        "  tries=0",
        '  until ssh -o ConnectTimeout=5 -o BatchMode=yes "$host" true; do',
        "    tries=$((tries + 1))",
        '    if [ "$tries" -ge %d ]; then echo "gpu-platform-smoke: worker $host does not answer over ssh"; '
        "exit 1; fi" % SSH_WAIT_TRIES,
        "    sleep 5",
        "  done",
        '  hosts="${hosts:+$hosts,}$host:%d"' % gpus_per_node,
        "done",
        'echo "gpu-platform-smoke: all_reduce_perf on $hosts"',
        'exec "$mpirun_bin" --allow-run-as-root --bind-to none --map-by slot -np %d -H "$hosts" '
        "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include %s --mca oob_tcp_if_include %s "
        '-x NCCL_DEBUG -x NCCL_SOCKET_IFNAME -x PATH -x LD_LIBRARY_PATH "$test_bin" %s'
        % (np_total, POD_INTERFACE, POD_INTERFACE, " ".join(TEST_ARGS)),
    ]
    return "\n".join(lines) + "\n"


WORKER_SCRIPT = ("mkdir -p /var/run/sshd\n"
                 "ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 || ssh-keygen -A\n"
                 "exec /usr/sbin/sshd -D -e\n")
SSH_CONFIG = ("Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
              "  IdentityFile %s/%s\n" % (SSH_DIR, SSH_KEY_FILE))


# -- the objects ----------------------------------------------------------------------------------

def nccl_ssh_secret(namespace, private_key, public_key):
    """The Secret of the KAI and plain-pod runs: the key pair (made at run time by the caller), ``authorized_keys``
    and the ssh config. Never rendered to files and never returned."""
    validate.dns_label(FIELDS["namespace"], namespace)
    for label, value in (("private_key", private_key), ("public_key", public_key)):
        if not isinstance(value, str) or not value.strip():
            raise ParamError(label, "is empty", "generate an SSH key pair (OpenSSH format) first")
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": smoke_objects._meta(secret_name(), namespace, NCCL),
            "stringData": {SSH_KEY_FILE: private_key, SSH_KEY_FILE + ".pub": public_key,
                           "authorized_keys": public_key, "config": SSH_CONFIG}}


def _worker_spec(image, limits):
    return {
        "restartPolicy": "Never",
        "tolerations": [dict(smoke_objects.GPU_TOLERATION)],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {smoke_objects.SMOKE_LABEL: NCCL, smoke_objects.TASK_LABEL: WORKER}},
            "topologyKey": "kubernetes.io/hostname"}]}},
        "containers": [{
            "name": "nccl-worker", "image": image, "command": ["sh", "-c", WORKER_SCRIPT],
            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
            "resources": {"limits": dict(limits)},
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        }],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }


def _launcher_spec(image, nodes, gpus_per_node, workers):
    return {
        "restartPolicy": "Never",
        "tolerations": [dict(smoke_objects.GPU_TOLERATION)],
        "containers": [{
            "name": "mpirun", "image": image,
            "command": ["sh", "-c", launcher_script(nodes * gpus_per_node, gpus_per_node, workers)],
            "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_SOCKET_IFNAME", "value": POD_INTERFACE}],
        }],
    }


def _with_ssh_secret(spec):
    """Mount the key Secret read-only at /root/.ssh (0400) in the pod's one container."""
    spec["containers"][0].setdefault("volumeMounts", []).append({"name": "ssh", "mountPath": SSH_DIR,
                                                                 "readOnly": True})
    spec.setdefault("volumes", []).append({"name": "ssh", "secret": {"secretName": secret_name(),
                                                                     "defaultMode": SSH_MODE}})
    return spec


def nccl_job(namespace, image, nodes=2, gpus_per_node=8, rdma_resource=None, network=None, queue="default",
             scheduler=VOLCANO):
    """The objects of an ``all_reduce_perf`` run over ``nodes`` x ``gpus_per_node`` ranks with NCCL_DEBUG=INFO.

    ``volcano``: [Volcano Job]. ``kai``: [headless Service, PodGroup, launcher Pod, worker Pods]; ``none``: the same
    without the PodGroup. The bare pods mount ``secret_name()``: add ``nccl_ssh_secret`` before them.
    ``rdma_resource`` defaults to ``{"rdma/shared_ib": 1}``; ``{}`` requests none. ``network`` adds the Multus
    annotation to the workers. Read the log of ``launcher_pod_name()`` and pass it to ``check_nccl``.
    """
    if scheduler not in SCHEDULERS:
        raise ParamError(FIELDS["scheduler"], "%r is not a scheduler the nccl-tests run supports" % (scheduler,),
                         "use one of: %s" % ", ".join(SCHEDULERS))
    validate.dns_label(FIELDS["namespace"], namespace)
    image = validate.pinned_image(FIELDS["nccl_image"], image)
    nodes = smoke_objects._positive_int(FIELDS["nodes"], nodes, minimum=2, example="2",
                                        maximum=smoke_objects.MAX_NCCL_NODES)
    gpus_per_node = smoke_objects._positive_int(FIELDS["gpus_per_node"], gpus_per_node, minimum=1, example="8",
                                                maximum=smoke_objects.MAX_GPUS_PER_NODE)
    rdma = smoke_objects._resources(FIELDS["rdma_resource"],
                                    smoke_objects.DEFAULT_RDMA_RESOURCE if rdma_resource is None else rdma_resource,
                                    allow_empty=True)
    if smoke_objects.GPU_RESOURCE in rdma:
        raise ParamError(FIELDS["rdma_resource"], "must not contain %s" % smoke_objects.GPU_RESOURCE,
                         "give only the RDMA resource, such as {rdma/shared_ib: 1}; GPUs come from "
                         + FIELDS["gpus_per_node"])
    annotations = {smoke_objects.NETWORKS_ANNOTATION: _network(network)} if network is not None else None
    queue = smoke_objects._queue(queue) if scheduler != NONE else None
    limits = {smoke_objects.GPU_RESOURCE: str(gpus_per_node)}
    limits.update(rdma)
    worker_labels = smoke_objects._labels(NCCL, {smoke_objects.TASK_LABEL: WORKER})
    launcher_labels = smoke_objects._labels(NCCL, {smoke_objects.TASK_LABEL: LAUNCHER})
    if scheduler == VOLCANO:
        worker_meta = {"labels": worker_labels}
        if annotations:
            worker_meta["annotations"] = annotations
        worker = {"name": WORKER, "replicas": nodes,
                  "template": {"metadata": worker_meta, "spec": _worker_spec(image, limits)}}
        launcher = {"name": LAUNCHER, "replicas": 1,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
                    "template": {"metadata": {"labels": launcher_labels},
                                 "spec": _launcher_spec(image, nodes, gpus_per_node, "$(cat %s)" % VOLCANO_HOST_FILE)}}
        return [{
            "apiVersion": smoke_objects.VOLCANO_JOB_API, "kind": "Job",
            "metadata": smoke_objects._meta(name(), namespace, NCCL),
            "spec": {
                "schedulerName": VOLCANO, "queue": queue, "minAvailable": nodes + 1,
                "plugins": {"ssh": [], "svc": []},
                "policies": [{"event": "PodFailed", "action": "AbortJob"},
                             {"event": "PodEvicted", "action": "AbortJob"}],
                "tasks": [launcher, worker],
            },
        }]
    return _bare_pods(namespace, image, nodes, gpus_per_node, limits, annotations, queue, scheduler)


def _bare_pods(namespace, image, nodes, gpus_per_node, limits, annotations, queue, scheduler):
    """The KAI (PodGroup) and plain-pod forms: a headless Service for the workers' names, then the pods."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": smoke_objects._meta(name(), namespace, NCCL),
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                        "selector": {smoke_objects.SMOKE_LABEL: NCCL, smoke_objects.TASK_LABEL: WORKER},
                        "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}]}}
    out = [service]
    labels, pod_annotations = {}, {}
    if scheduler == KAI:
        out.append({"apiVersion": smoke_objects.KAI_PODGROUP_API, "kind": "PodGroup",
                    "metadata": smoke_objects._meta(name(), namespace, NCCL),
                    "spec": {"minMember": nodes + 1, "queue": queue}})
        labels = {smoke_objects.KAI_QUEUE_LABEL: queue}
        pod_annotations = {smoke_objects.KAI_PODGROUP_ANNOTATION: name(), smoke_objects.KAI_SKIP_PODGROUPER: "true"}
    workers = ["%s-%s-%d" % (name(), WORKER, index) for index in range(nodes)]
    hosts = " ".join("%s.%s" % (worker, name()) for worker in workers)

    def pod(pod_name, task, spec, extra_annotations=None):
        if scheduler == KAI:
            spec["schedulerName"] = smoke_objects.KAI_SCHEDULER_NAME
        merged = dict(pod_annotations, **(extra_annotations or {}))
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": smoke_objects._meta(pod_name, namespace, NCCL,
                                                labels=dict(labels, **{smoke_objects.TASK_LABEL: task}),
                                                annotations=merged or None),
                "spec": _with_ssh_secret(spec)}
    launcher = _launcher_spec(image, nodes, gpus_per_node, "${%s}" % WORKERS_ENV)
    launcher["containers"][0]["env"].append({"name": WORKERS_ENV, "value": hosts})
    out.append(pod(launcher_pod_name(), LAUNCHER, launcher))
    for worker in workers:
        spec = dict(_worker_spec(image, limits), hostname=worker, subdomain=name())
        out.append(pod(worker, WORKER, spec, annotations))
    return out


def needs_ssh_secret(obj_list):
    """Whether the objects are the bare-pod form, whose pods mount the key Secret made at run time."""
    return any(o.get("kind") == "Pod" and any((v.get("secret") or {}).get("secretName") == secret_name()
                                              for v in (o.get("spec") or {}).get("volumes") or [])
               for o in obj_list)


# -- the plan -------------------------------------------------------------------------------------

def _count(value, default):
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


def resource_name(mode, given=None):
    """``rdma/<given>`` (the network layer's resource name) or the mode's default resource."""
    if given:
        return given if "/" in str(given) else "rdma/%s" % given
    return RDMA_MODES[mode]


def min_busbw(value, facts):
    """The threshold in GB/s: ``value`` when given, else the node type's; neither is a ParamError naming both."""
    if value not in (None, ""):
        return smoke_objects.positive_number(FIELDS["min_busbw"], value, example="40")
    if facts is None:
        raise ParamError(FIELDS["min_busbw"], "is empty and %s is not set, so there is no bus bandwidth threshold "
                         "for the nccl-tests run" % TYPE_FIELD,
                         "set %s (one of %s) to use its threshold, or give %s in GB/s as nccl-tests prints it"
                         % (TYPE_FIELD, ", ".join(node_types.known()), FIELDS["min_busbw"]))
    return float(facts["min_busbw_gbps"])


def nccl_item(settings, common, item):
    """The plan item of the network_operator layer (``item`` is ``domain.smoke.plan._item``). Skipped only with RDMA
    off; with RDMA on every missing or bad setting is a ParamError naming the variable."""
    mode = settings.get("network_mode") or "none"
    if mode not in RDMA_MODES:
        return item("network_operator", NCCL, skipped_reason="RDMA is off (gpu_platform_network_mode is %s): no RDMA "
                    "device in pods, so there is no GPUDirect RDMA to prove" % mode)
    image = settings.get("nccl_image")
    if not image:
        raise ParamError(FIELDS["nccl_image"], "is empty, but RDMA is on (gpu_platform_network_mode: %s) and the nccl-tests "
                         "run is what proves GPUDirect RDMA" % mode,
                         "set it to a pinned image with nccl-tests (all_reduce_perf), Open MPI mpirun and the OpenSSH "
                         "server and client, such as registry.example.com/hpc/nccl-tests:2.17.1-cuda12.9")
    scheduler = settings.get("scheduler") or NONE
    queue = None
    if scheduler == VOLCANO:
        queue = settings.get("queue") or smoke_objects.VOLCANO_DEFAULT_QUEUE
    elif scheduler == KAI:
        queue = settings.get("queue") or settings.get("kai_queue")
        if not queue:
            raise ParamError(FIELDS["queue"], "is empty and there is no team queue to use under KAI Scheduler",
                             "name a KAI leaf queue (one with a parent), or give gpu_platform_teams")
    node_type = settings.get("node_type")
    dummy, facts = node_types.lookup(TYPE_FIELD, node_type)
    gpus = _count(settings.get("gpus_per_node"),
                  facts["gpus"] if facts else DEFAULT_GPUS_PER_NODE)
    threshold = min_busbw(settings.get("min_busbw"), facts)
    rdma = settings.get("rdma_resource")
    if not rdma:
        count = node_types.nics_per_pod(NICS_FIELD, mode, node_type, settings.get("nics_per_pod"))
        rdma = {resource_name(mode, settings.get("resource_name")): count}
    timeout = smoke_objects._positive_int(PLAN_TIMEOUT_FIELD, settings.get("nccl_timeout"), example="900")
    nccl_job(common["namespace"], image, settings.get("nodes"), gpus, rdma, settings.get("network"),
             queue or smoke_objects.VOLCANO_DEFAULT_QUEUE, scheduler)
    params = dict(common, timeout=timeout, image=image, scheduler=scheduler, nodes=settings.get("nodes"),
                  gpus_per_node=gpus, rdma_resource=rdma, network=settings.get("network"), min_busbw_gbps=threshold)
    if queue:
        params["queue"] = queue
    return item("network_operator", NCCL, params)
