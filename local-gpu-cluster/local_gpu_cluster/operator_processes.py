"""The operators' own processes, run where KWOK plays their pods.

A chart's operator Deployment makes a pod; the real scheduler binds it to a node and KWOK says it runs. For an
operator built from its pinned source (``local_gpu_cluster/operators.py``), ``OperatorProcesses`` then runs the
real binary on this machine, as that pod's container would run it:

* its arguments and environment from the pod's container (``value`` and ``fieldRef``: namespace, name, node,
  service account; ``status.podIP`` and ``status.hostIP`` are 127.0.0.1);
* the permissions of the pod's ServiceAccount: a token from the TokenRequest API, with the cluster's CA and the
  namespace, where the kubelet mounts them (``/var/run/secrets/kubernetes.io/serviceaccount``) and
  ``KUBERNETES_SERVICE_HOST``/``PORT`` naming the API server, so the process uses client-go's in-cluster config
  and the RBAC the chart grants is what it gets;
* the files its image holds at the paths it reads them: beside the machine's own (the GPU Operator's
  ``/opt/gpu-operator``), or as the whole root it runs in (``image_root``: the Network Operator reads ``/manifests``
  and, from its working directory ``/``, ``./webhook-schemas``), with the binary where the image has it, the
  machine's ``/dev``, ``/proc`` and ``/sys``, a private ``/tmp`` and nothing else of the machine's, as in its
  container; both through a private mount namespace (``unshare --mount``), over tmpfs, without touching the
  machine's files;
* its metrics and health endpoints on free loopback ports (flags appended after the chart's, so they win).

The pod is Ready only while the process's readiness endpoint answers 200, so helm's wait and the Deployment's
availability follow the real process; a process that exits makes the pod CrashLoopBackOff (its last log lines in
the message) and is started again. The process stops when its pod goes (helm uninstall, a rollout), and every
process goes with ``live.py``.

``PROCESSES`` says which pods are whose, and what each needs; ``--operator-builds name=<dir>`` (from
``local_gpu_cluster``) says where each build is. An operator without a build is left to the simulated
controllers.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shlex
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .fleet import JOB_NAME_LABEL
from .processes import pick_ports

from .controller_base import Controller, finish_deletion, set_pod_finished, set_pod_ready
from .paths import TOOLS_BIN
from .pod_network import connect

TOOLS = TOOLS_BIN  # kubectl and helm (make tools)
READY_POLL = 1.0  # seconds between readiness probes of a starting process
RESTART_DELAY = 5.0  # seconds before a process that exited is started again
TOKEN_SECONDS = 24 * 3600
UNVERIFIED = ssl.create_default_context()  # the kubelet's HTTPS probes check no certificate
UNVERIFIED.check_hostname = False
UNVERIFIED.verify_mode = ssl.CERT_NONE


@dataclass(frozen=True)
class OperatorProcess:
    """One operator's process: which pods are its, which binary runs, what it needs."""

    name: str  # the build's name (local_gpu_cluster/operators.py)
    pod_labels: dict  # every one must match
    container: str  # the container of the pod the process is
    binary: str  # in the build's directory
    mounts: dict = field(default_factory=dict)  # path in the image -> directory in the build (under image/)
    image_root: bool = False  # the build's image/ is the root it runs in (chrooted), not mounts beside the machine's
    workdir: str = ""  # the container's working directory (image_root); "" for the process's own folder
    # arguments appended after the container's (the last of a flag wins): (format, the loopback port it takes or None)
    flags: tuple = (("--metrics-bind-address=127.0.0.1:%d", "metrics"), ("--health-probe-bind-address=127.0.0.1:%d",
                                                                         "probe"))
    # the container's ports the process serves, by the name of the loopback port it gets; the pod network
    # (local_gpu_cluster/pod_network.py) connects <pod IP>:<container port> to it (webhooks, aggregated APIs)
    serves: dict = field(default_factory=lambda: {"metrics": 8080, "probe": 8081})
    volumes: bool = False  # the container's configMap, secret and emptyDir volumes where it mounts them (image_root)
    config_flag: str = ""  # the argument naming its config file (in a volume), rewritten by ``configure``
    configure: object = None  # (config, ports) -> config: the loopback addresses in place of the container's
    job: bool = False  # runs to completion: its exit code ends the pod (Succeeded or Failed), KWOK leaves it alone
    command: bool = False  # the container's command, run from the image's folder (its working directory /)
    # the machine's shell that stands in for the image's /bin/sh (bound over it in the process's mount namespace)
    image_shell: str = ""
    image_command: tuple = ()  # the image's own command (its CMD), for a container that names none (``command``)
    # image_root: the machine's userland (``BASE_DIRS``, read-only) stands in for the image's base (a shell,
    # coreutils), and kubectl and helm (``TOOLS``) are on its PATH
    base: bool = False
    # a network namespace of its own, as a pod has (``netns_bridge.py``): it binds its ports (``serves`` and the
    # container's declared ones) as they are, no flags, and the pod network and the readiness probe reach them
    # through Unix sockets
    netns: bool = False
    binary_at: str = ""  # where the image has the binary (image_root), when not at /<binary>: a command finds it
    # environment variables naming an address the container binds (the DRA controller's HTTP_ENDPOINT): (name,
    # format, the loopback port it takes), set after the container's own
    env_ports: tuple = ()


def kueue_configuration(config, ports):
    """Kueue's Configuration (the chart's ``kueue-manager-config``) with the process's loopback ports in place of the
    container's: its probes, metrics, webhook and visibility server (v0.19.2 apis/config/v1beta2)."""
    config = dict(config)
    config["health"] = dict(config.get("health") or {}, healthProbeBindAddress="127.0.0.1:%d" % ports["probe"])
    config["metrics"] = dict(config.get("metrics") or {}, bindAddress="127.0.0.1:%d" % ports["metrics"])
    config["webhook"] = dict(config.get("webhook") or {}, port=ports["webhook"], host="127.0.0.1")
    config["visibilityServer"] = dict(config.get("visibilityServer") or {}, bindAddress="127.0.0.1",
                                      bindPort=ports["visibility"])
    return config


PROCESSES = (
    # gpu-operator v26.3.3: cmd/gpu-operator/main.go (flags, OPERATOR_NAMESPACE); controllers/state_manager.go reads
    # each state's manifests from /opt/gpu-operator/state-*; its image copies assets/ and manifests/ there.
    OperatorProcess("gpu-operator", {"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
                    "gpu-operator", "gpu-operator", mounts={"/opt/gpu-operator": "image/opt/gpu-operator"}),
    # The chart's pre-upgrade hook Job (templates/upgrade_crd.yaml, operator.upgradeCRD, on by default) runs the
    # operator image's /usr/bin/manage-crds apply on the CRDs the image holds in /opt/gpu-operator (helm upgrade
    # leaves crds/ alone: this is how the new release's CRDs, v26.7.0's GPUCluster among them, reach the cluster).
    # A static binary: the image's /opt and the binary where the image has it are all it reads.
    OperatorProcess("gpu-operator", {JOB_NAME_LABEL: "gpu-operator-upgrade-crd"}, "upgrade-crd", "manage-crds",
                    image_root=True, job=True, command=True, binary_at="/usr/bin/manage-crds", flags=(), serves={}),
    # network-operator v26.4.0: main.go (flags; ENABLE_WEBHOOKS off unless operator.admissionController.enabled,
    # which the role leaves off); its Dockerfile's image is WORKDIR / with /manifests (the chart's
    # STATE_MANIFEST_BASE_DIR) and /webhook-schemas (read as ./webhook-schemas). The chart's operator pod: the
    # selector labels and the drain-skip label, which its CRD upgrade hook's pod lacks.
    OperatorProcess("network-operator", {"app.kubernetes.io/name": "network-operator",
                                         "nvidia.com/ofed-driver-upgrade-drain.skip": "true"},
                    "network-operator", "network-operator", image_root=True, workdir="/"),
    # kueue v0.19.2: cmd/kueue/main.go (--config; the chart mounts kueue-manager-config there, the webhook's
    # certificate Secret, which its cert rotator fills, at /tmp/k8s-webhook-server/serving-certs, and an emptyDir at
    # /visibility for the visibility server's own certificate); a distroless image with /manager.
    OperatorProcess("kueue", {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"},
                    "manager", "kueue", image_root=True, workdir="/", flags=(),
                    serves={"probe": 8081, "metrics": 8443, "webhook": 9443, "visibility": 8082}, volumes=True,
                    config_flag="--config", configure=kueue_configuration),
    # volcano v1.15.1 (installer/helm/chart/volcano, release "volcano"). The chart's pre-install hook Job runs the
    # webhook manager image's ./gen-admission-secret.sh (openssl and kubectl: a CA and the Service's certificate into
    # the Secret volcano-admission-secret), which the webhook manager mounts; it then puts its CA into the chart's
    # webhook configurations. cmd/*/app/options: --listen-address, --port, --healthz-address (":11251" each).
    # The image is alpine's: its /bin/sh (busybox ash) takes the script's [[ ]] and function, which Debian's dash
    # does not; bash does.
    OperatorProcess("volcano", {JOB_NAME_LABEL: "volcano-admission-init"}, "main", "",
                    job=True, command=True, image_shell="/bin/bash", flags=(), serves={}),
    OperatorProcess("volcano", {"app": "volcano-admission"}, "admission", "vc-webhook-manager", image_root=True,
                    workdir="/", volumes=True,
                    flags=(("--listen-address=127.0.0.1", None), ("--port=%d", "webhook"),
                           ("--healthz-address=127.0.0.1:%d", "probe")),
                    serves={"webhook": 8443, "probe": 11251}),
    OperatorProcess("volcano", {"app": "volcano-scheduler"}, "volcano-scheduler", "vc-scheduler", image_root=True,
                    workdir="/", volumes=True,
                    flags=(("--listen-address=127.0.0.1:%d", "metrics"), ("--healthz-address=127.0.0.1:%d", "probe")),
                    serves={"metrics": 8080, "probe": 11251}),
    OperatorProcess("volcano", {"app": "volcano-controller"}, "volcano-controllers", "vc-controller-manager",
                    image_root=True, workdir="/", volumes=True,
                    flags=(("--listen-address=127.0.0.1:%d", "metrics"), ("--healthz-address=127.0.0.1:%d", "probe")),
                    serves={"metrics": 8081, "probe": 11251}),
    # kai-scheduler v0.13.0 (deployments/kai-scheduler, release "kai-scheduler"). The chart's pre-install hook Job
    # crd-upgrader runs its image's CMD /apply-crds.sh (deployments/crd-upgrader: a UBI base with bash and kubectl,
    # the chart's CRDs in /internal-crds, applied server-side).
    OperatorProcess("kai-scheduler", {JOB_NAME_LABEL: "crd-upgrader"}, "upgrader", "", image_root=True, job=True,
                    command=True, image_command=("/apply-crds.sh",), base=True, flags=(), serves={}),
    # Two more hook Jobs run that image with a command of their own: topology-migration (pre-install, pre-upgrade:
    # bash runs the chart's scripts/migrate-topologies.sh from a ConfigMap volume, copying Kueue's Topologies when
    # Kueue's CRD is there) and post-delete-cleanup (/bin/sh and kubectl delete what the operator deployed).
    OperatorProcess("kai-scheduler", {JOB_NAME_LABEL: "topology-migration"}, "migration", "", image_root=True,
                    job=True, command=True, base=True, volumes=True, flags=(), serves={}),
    OperatorProcess("kai-scheduler", {JOB_NAME_LABEL: "post-delete-cleanup"}, "deleter", "", image_root=True,
                    job=True, command=True, base=True, flags=(), serves={}),
    # From v0.16 the chart's Config (kai-config) is applied out of the release by a post-install/post-upgrade hook
    # Job, kai-config-deployer (templates/hooks/post/kai-config-deployer: bash and kubectl apply --server-side of
    # the ConfigMap volume's /manifest/kai-config.yaml, in the crd-upgrader image).
    OperatorProcess("kai-scheduler", {JOB_NAME_LABEL: "kai-config-deployer"}, "deployer", "", image_root=True,
                    job=True, command=True, base=True, volumes=True, flags=(), serves={}),
    # The chart's operator (cmd/operator; a distroless image with the binary alone) deploys the Config's components.
    # Each runs in a network namespace of its own: the queue and pod-group controllers both serve their webhooks on
    # controller-runtime's :9443, with no flag to move it.
    OperatorProcess("kai-scheduler", {"app": "kai-operator"}, "operator", "operator", image_root=True, netns=True,
                    flags=(), serves={}),
    # What the operator deploys from the Config (pkg/operator/operands/*/resources.go: Deployment, ServiceAccount
    # and container named after the component, label app: <name>); the webhooks' certificates are the Secrets the
    # operator writes and mounts at controller-runtime's /tmp/k8s-webhook-server/serving-certs. Two serve their
    # webhook on 9443 without declaring the port: their Services' targetPort.
    OperatorProcess("kai-scheduler", {"app": "admission"}, "admission", "admission", image_root=True, netns=True,
                    volumes=True, flags=(), serves={"webhook": 9443, "probe": 8081, "metrics": 8080}),
    OperatorProcess("kai-scheduler", {"app": "binder"}, "binder", "binder", image_root=True, netns=True, flags=(),
                    serves={"probe": 8081, "metrics": 8080}),
    OperatorProcess("kai-scheduler", {"app": "kai-scheduler-default"}, "kai-scheduler-default", "scheduler",
                    image_root=True, netns=True, volumes=True, flags=(), serves={"metrics": 8080}),
    OperatorProcess("kai-scheduler", {"app": "pod-grouper"}, "pod-grouper", "podgrouper", image_root=True, netns=True,
                    flags=(), serves={"probe": 8081, "metrics": 8080}),
    OperatorProcess("kai-scheduler", {"app": "podgroup-controller"}, "podgroup-controller", "podgroupcontroller",
                    image_root=True, netns=True, volumes=True, flags=(),
                    serves={"webhook": 9443, "probe": 8081, "metrics": 8080}),
    OperatorProcess("kai-scheduler", {"app": "queue-controller"}, "queue-controller", "queuecontroller",
                    image_root=True, netns=True, volumes=True, flags=(), serves={"webhook": 9443, "metrics": 8080}),
    # k8s-dra-driver-gpu v25.12.0: the compute-domain controller (templates/controller.yaml, rendered only with
    # resources.computeDomains.enabled). Its command names the binary on the image's PATH (/usr/bin) with
    # "-v $(LOG_VERBOSITY)"; it renders its daemons' DaemonSet and claim templates from the image's /templates. Its
    # HTTP endpoint is off unless --http-endpoint is given, and the chart sets no probe: Ready once running.
    OperatorProcess("dra-driver", {"nvidia-dra-driver-gpu-component": "controller"}, "compute-domain",
                    "compute-domain-controller", image_root=True, command=True,
                    binary_at="/usr/bin/compute-domain-controller", flags=(), serves={}),
    # dra-driver-nvidia-gpu v0.4.x: the chart renamed (its selector label with it), and the controller's metrics
    # endpoint on by default (controller.metrics: HTTP_ENDPOINT ":8080" in its environment).
    OperatorProcess("dra-driver", {"dra-driver-nvidia-gpu-component": "controller"}, "compute-domain",
                    "compute-domain-controller", image_root=True, command=True,
                    binary_at="/usr/bin/compute-domain-controller", flags=(), serves={"metrics": 8080},
                    env_ports=(("HTTP_ENDPOINT", "127.0.0.1:%d", "metrics"),)),
)


def operator_of(key):
    """The operator a build's key names: ``name``, or ``name@<tag>`` for another release's build beside it."""
    return key.split("@", 1)[0]


def held_jobs(operators):
    """The Jobs whose pods a real process runs to completion for ``operators`` (build keys, ``operator_of``; KWOK
    must not complete them)."""
    names = {operator_of(key) for key in operators}
    return sorted(spec.pod_labels[JOB_NAME_LABEL] for spec in PROCESSES if spec.job and spec.name in names)


def _release(text):
    return str(text or "").rsplit("-", 1)[-1].lstrip("v")


def build_for(builds, spec, container):
    """The build whose process runs as ``container``: the only one of its operator, or of several releases (the
    upgrade from release 0.2.0 runs both) the one whose version the container's image tag ends with; a ValueError
    says what is missing."""
    found = {key: path for key, path in builds.items() if operator_of(key) == spec.name}
    if len(found) == 1:
        return next(iter(found.values()))
    tag = str(container.get("image") or "").rsplit(":", 1)[-1]
    for path in found.values():
        try:
            version = json.loads((Path(path) / "manifest.json").read_text()).get("pins", {}).get("version")
        except (OSError, ValueError):
            continue
        if version and _release(tag) == _release(version):
            return path
    raise ValueError("no build of the %s for image tag %s (builds: %s)"
                     % (spec.name, tag or "none", ", ".join(sorted(found)) or "none"))


def process_of(pod):
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for spec in PROCESSES:
        if all(labels.get(k) == v for k, v in spec.pod_labels.items()):
            return spec
    return None


def parse_builds(text):
    """``name=<dir>[,name=<dir>...]`` -> {name: Path}; a ValueError names what is wrong."""
    builds = {}
    for part in filter(None, (text or "").split(",")):
        name, sep, directory = part.partition("=")
        if not sep or not name or not directory:
            raise ValueError("--operator-builds: %r is not name[@tag]=<directory>" % part)
        builds[name] = Path(directory)
    return builds


def container_env(pod, container):
    """The container's environment as its kubelet would give it (values and the pod's own fields)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    fields = {"metadata.namespace": meta.get("namespace", ""), "metadata.name": meta["name"],
              "metadata.uid": meta.get("uid", ""), "spec.nodeName": spec.get("nodeName", ""),
              "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
              "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1"}
    env = {}
    for item in container.get("env") or []:
        source = item.get("valueFrom") or {}
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "fieldRef" in source:
            env[item["name"]] = fields.get(source["fieldRef"].get("fieldPath"), "")
    return env


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # where the kubelet mounts a pod's token


def expanded(container, env):
    """The container with ``$(VAR)`` in its command and args replaced from ``env``, as the kubelet runs it."""
    return dict(container, **{key: [expand(str(a), env) for a in container[key]]
                              for key in ("command", "args") if container.get(key)})


def expand(text, env):
    """A command or argument as the kubelet gives it: ``$(VAR)`` is the container's variable (left as it is when
    none has that name), ``$$`` is ``$``."""
    out, index = [], 0
    while index < len(text):
        if text.startswith("$$", index):
            out.append("$")
            index += 2
        elif text.startswith("$(", index) and ")" in text[index:]:
            end = text.index(")", index)
            name = text[index + 2:end]
            out.append(env[name] if name in env else text[index:end + 1])
            index = end + 1
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def command_line(spec, build, container, ports, account_dir, volumes=()):
    """The process's argv: the binary, the container's args, the loopback endpoints; in a mount namespace of its own
    with the pod's ServiceAccount files where the kubelet mounts them (client-go's in-cluster config reads them),
    the image's files where the image has them and its ``volumes`` ((host path, mount path, is a folder)), each over
    a tmpfs so that nothing of the machine's changes."""
    args = list(container.get("args") or [])
    args += [flag % ports[name] if name else flag for flag, name in spec.flags]
    if spec.image_root:
        argv = [spec.binary_at or "/" + spec.binary] + args
        if spec.command:  # the container's command (or the image's own), not the binary
            argv = list(container.get("command") or spec.image_command) + args
        return _in_image_root(spec, build, argv, account_dir, volumes)
    mounts = dict({os.path.realpath(SA_DIR): str(account_dir)},
                  **{target: str(build / source) for target, source in spec.mounts.items()})
    script = []
    tops = {"/" + target.strip("/").split("/")[0] for target in mounts}
    if spec.job:
        tops.add("/tmp")  # a /tmp of its own, as its container's (a script writes its files there)
    for top in sorted(tops):
        script.append("mount -t tmpfs gpu-platform-pod %s" % shlex.quote(top))
    for target, source in sorted(mounts.items()):
        quoted = (shlex.quote(target), shlex.quote(source), shlex.quote(target))
        script.append("mkdir -p %s && mount --bind %s %s" % quoted)
    if spec.image_shell:
        script.append("mount --bind %s /bin/sh" % shlex.quote(spec.image_shell))
    argv = [str(build / spec.binary)] + args
    if spec.command:  # the container's command from its working directory /: the image's folder here
        script.append("cd %s" % shlex.quote(str(build / "image")))
        argv = list(container.get("command") or []) + args
    script.append("exec %s" % " ".join(shlex.quote(a) for a in argv))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", " && ".join(script)]


HOST_DIRS = ("/dev", "/proc", "/sys")  # what a container's runtime gives it of the machine's
BASE_DIRS = ("/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin")  # a base image's userland (``base``)


def _in_image_root(spec, build, argv, account_dir, volumes=()):
    """``command_line`` for ``image_root``: a tmpfs root beside the ServiceAccount folder holding the image's
    top-level entries (bound from the build's image/), the binary at ``/<binary>``, the machine's ``HOST_DIRS`` and
    the ServiceAccount files; ``unshare --root --wd`` runs the binary in it from the container's working directory."""
    root = account_dir.parent / "root"
    image = build / "image"
    entries = sorted(image.iterdir()) if image.is_dir() else []  # a distroless image: the binary alone
    binds = [(str(image / entry.name), "/" + entry.name, entry.is_dir()) for entry in entries]
    binds += [(str(build / spec.binary), spec.binary_at or "/" + spec.binary, False)] if spec.binary else []
    binds += [(str(account_dir), SA_DIR, True)]
    binds += [(str(source), target, folder) for source, target, folder in volumes]
    q = shlex.quote
    script = ["mkdir -p %s" % q(str(root)), "mount -t tmpfs gpu-platform-pod %s" % q(str(root)),
              "mkdir -p %s" % q(str(root) + "/tmp")]
    for host in HOST_DIRS:
        script.append("mkdir -p %s && mount --rbind %s %s" % (q(str(root) + host), host, q(str(root) + host)))
    if spec.base:
        script += _base_binds(str(root))
    for source, target, folder in binds:
        inside = q(str(root) + target)
        make = "mkdir -p %s" % inside if folder else "mkdir -p %s && touch %s" % (q(os.path.dirname(
            str(root) + target)), inside)
        script.append("%s && mount --bind %s %s" % (make, q(source), inside))
    script.append("exec unshare --root=%s --wd=%s %s" % (q(str(root)), q(spec.workdir or "/"),
                                                         " ".join(q(a) for a in argv)))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", " && ".join(script)]


def _base_binds(root):
    """The mount commands that give an image root the machine's userland read-only (``BASE_DIRS``: a folder bound, a
    link such as /bin -> usr/bin made again) and ``TOOLS`` at its own path."""
    q = shlex.quote
    script = []
    for host in BASE_DIRS:
        inside = q(root + host)
        if os.path.islink(host):
            script.append("ln -s %s %s" % (q(os.readlink(host)), inside))
        elif os.path.isdir(host):
            script.append("mkdir -p %s && mount --rbind %s %s && mount -o remount,bind,ro %s"
                          % (inside, host, inside, inside))
    inside = q(root + str(TOOLS))
    script.append("mkdir -p %s && mount --bind %s %s" % (inside, q(str(TOOLS)), inside))
    return script


def write_account(directory, namespace, token, ca_data):
    """The files the kubelet puts in a pod's ServiceAccount volume (token 0600, ca.crt, namespace)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data, mode in (("token", token.encode(), 0o600), ("ca.crt", base64.b64decode(ca_data), 0o644),
                             ("namespace", namespace.encode(), 0o644)):
        fd = os.open(str(directory / name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def readiness_url(container, serves, ports):
    """Where the kubelet's readiness probe of ``container`` (its ``httpGet``) reaches the process: (URL, None), or
    (None, None) for a container without one (Ready once it runs), or (None, why) for a probe of a port the process
    does not serve (never Ready, as on a node)."""
    probe = (container.get("readinessProbe") or {}).get("httpGet")
    if not probe:
        return None, None
    port = probe.get("port")
    if isinstance(port, str) and not port.isdigit():
        port = next((p.get("containerPort") for p in container.get("ports") or [] if p.get("name") == port), port)
    name = next((n for n, number in serves.items() if str(number) == str(port)), None)
    if name is None:
        return None, "its readiness probe's port %s is none the process serves (%s)" % (
            port, ", ".join("%s %s" % item for item in sorted(serves.items())) or "none")
    scheme = (probe.get("scheme") or "HTTP").lower()
    return "%s://127.0.0.1:%d%s" % (scheme, ports[name], probe.get("path") or "/"), None


def served_ports(spec, container):
    """{name: container port} the process serves: ``spec.serves``, and in a network namespace of its own the
    container's declared ports too (each port once)."""
    served = dict(spec.serves)
    if spec.netns:
        for item in container.get("ports") or []:
            port = item.get("containerPort")
            if port and int(port) not in served.values():
                served[item.get("name") or str(port)] = int(port)
    return served


BRIDGE = Path(__file__).resolve().parent / "netns_bridge.py"


def in_own_network(argv, proxy, api, sockets):
    """``argv`` (``command_line``'s) in a network namespace of its own: its loopback up, then ``netns_bridge.py``
    joining it to the API server ``api`` (``host:port``, through the pod network's ``proxy``) and serving each of its
    ports on a Unix socket (``sockets``: {port: path}) before the process starts."""
    assert argv[:2] == ["unshare", "--mount"] and argv[-3:-1] == ["sh", "-ec"]
    bridge = ["ip link set lo up", " ".join(shlex.quote(a) for a in [
        sys.executable, "-P", str(BRIDGE), "--proxy", proxy, "--api", api]
        + ["--serve=%d=%s" % item for item in sorted(sockets.items())])]
    return argv[:2] + ["--net"] + argv[2:-1] + [" && ".join(bridge + [argv[-1]])]


def http_status(url, socket_path=None):
    """The status of a GET of ``url`` as the kubelet's probe makes it (HTTPS unverified), through the Unix socket
    ``socket_path`` when the process has a network of its own; OSError when nothing answers."""
    parts = urllib.parse.urlsplit(url)
    if socket_path is None:
        with urllib.request.urlopen(url, timeout=2, context=UNVERIFIED) as response:
            return response.status
    sock = connect(socket_path, timeout=2)
    try:
        if parts.scheme == "https":
            sock = UNVERIFIED.wrap_socket(sock, server_hostname=parts.hostname)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2)
        conn.sock = sock
        conn.request("GET", parts.path or "/")
        return conn.getresponse().status
    except (http.client.HTTPException, ssl.SSLError) as exc:
        raise OSError(str(exc)) from None
    finally:
        sock.close()


class VolumeNotReady(Exception):
    """A volume the container mounts cannot be set up yet (its ConfigMap or Secret is missing)."""


def volume_files(store, namespace, volume):
    """{path in the volume: bytes} of a configMap or secret volume, as the kubelet writes it (``items`` pick and
    rename keys); VolumeNotReady when the object is missing and the volume is not optional."""
    if "configMap" in volume:
        source, kind = volume["configMap"], "ConfigMap"
        obj = store.get("v1", kind, source.get("name", ""), namespace)
        data = {k: v.encode() for k, v in ((obj or {}).get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in ((obj or {}).get("binaryData") or {}).items()})
    else:
        source, kind = volume["secret"], "Secret"
        obj = store.get("v1", kind, source.get("secretName", ""), namespace)
        data = {k: base64.b64decode(v) for k, v in ((obj or {}).get("data") or {}).items()}
    if obj is None and not source.get("optional"):
        raise VolumeNotReady('MountVolume.SetUp failed for volume "%s": %s "%s" not found'
                             % (volume["name"], kind.lower(), source.get("name") or source.get("secretName")))
    items = source.get("items")
    if items:
        return {item["path"]: data[item["key"]] for item in items if item["key"] in data}
    return data


def write_volume(folder, files):
    """The volume's files in ``folder``, each rewritten only when it changed (in place: a bind mount of the folder
    sees it, as a container sees the kubelet's update of a Secret)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)


def pod_volumes(store, pod, container, directory):
    """The container's configMap, secret and emptyDir volume mounts, set up under ``directory``: ([(host path, mount
    path, is a folder)], [(volume, folder)] to keep in step with their objects, as the kubelet does for all but
    ``subPath`` mounts). Other kinds of volume (hostPath, projected) are not given."""
    volumes = {v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or []}
    namespace = pod["metadata"]["namespace"]
    mounts, synced = [], []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None or not {"configMap", "secret", "emptyDir"} & set(volume):
            continue
        folder = directory / volume["name"]
        if "emptyDir" in volume:
            folder.mkdir(parents=True, exist_ok=True)
        else:
            write_volume(folder, volume_files(store, namespace, volume))
            if not mount.get("subPath"):
                synced.append((volume, folder))
        source = folder / mount["subPath"] if mount.get("subPath") else folder
        mounts.append((source, mount["mountPath"], source.is_dir()))
    return mounts, synced


def configure_process(spec, container, mounts, ports):
    """``spec.configure`` applied to the config file ``spec.config_flag`` names (the copy in its volume's folder)."""
    if not spec.config_flag or spec.configure is None:
        return
    path = next((a.split("=", 1)[1] for a in container.get("args") or [] if a.startswith(spec.config_flag + "=")),
                None)
    host = next((Path(source) / os.path.relpath(path, target) if folder else Path(source)
                 for source, target, folder in mounts
                 if path and (path == target or path.startswith(target.rstrip("/") + "/"))), None)
    if host is None or not host.is_file():
        raise VolumeNotReady("%s %s: no volume holds that file" % (spec.config_flag, path))
    config = yaml.safe_load(host.read_text()) or {}
    host.write_text(yaml.safe_dump(spec.configure(config, ports), sort_keys=False))


class _Running:  # pylint: disable=too-many-instance-attributes  # a record of one process
    def __init__(self, spec, pod, proc, ports, log, served, synced=(), sockets=None):
        self.spec, self.proc, self.ports, self.log = spec, proc, ports, log
        container = next(c for c in pod["spec"]["containers"] if c["name"] == spec.container)
        self.served = served  # {name: container port} (served_ports)
        self.ready_url, self.unready = readiness_url(container, served, ports)
        self.sockets = dict(sockets or {})  # netns: {container port: Unix socket}
        self.synced = list(synced)
        self.uid = pod["metadata"]["uid"]
        self.ip = (pod.get("status") or {}).get("podIP")
        self.key = (pod["metadata"]["namespace"], pod["metadata"]["name"])

    def last_lines(self, count=3):
        """The log's last lines, for the pod's message."""
        return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-count:])


class OperatorProcesses(Controller):
    """Runs each built operator's process while its pod runs (see the module docstring)."""

    watches = frozenset({("", "Pod")})

    def __init__(self, builds, server, ca_data, workdir, network=None):
        self.builds = dict(builds)
        self.network = network  # local_gpu_cluster/pod_network.PodNetwork: <pod IP>:<container port> to the process
        self.api_server, self.ca_data = server, ca_data
        self.workdir = Path(workdir)
        self.running = {}  # (namespace, pod) -> _Running

    def handle(self, event):
        pod = event.obj
        spec = process_of(pod)
        if spec is None or spec.name not in {operator_of(key) for key in self.builds}:
            return
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        wanted = event.type != "DELETED" and (pod.get("status") or {}).get("phase") == "Running" \
            and not pod["metadata"].get("deletionTimestamp")
        current = self.running.get(key)
        if current is not None and (not wanted or current.uid != pod["metadata"]["uid"]):
            self._stop(current)
            current = None
        if wanted and current is None:
            self._start(spec, pod)
        finish_deletion(self.store, event)  # the process stopped: the pod may go

    # ------------------------------------------------------------ processes

    def _start(self, spec, pod):
        try:
            self._launch(spec, pod)
        except Exception as exc:  # noqa: BLE001 - the pod says why, and it is tried again
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            if key in self.running:  # it started; writing its state was refused: the probe goes on
                return
            self.clock.call_later(RESTART_DELAY, lambda: self._retry(spec, key, pod["metadata"]["uid"]))
            set_pod_ready(self.store, pod, ("CrashLoopBackOff", "%s could not start: %s" % (spec.name, exc)))

    def _retry(self, spec, key, uid):
        pod = self.store.get("v1", "Pod", key[1], key[0])
        if pod is not None and pod["metadata"]["uid"] == uid and key not in self.running \
                and (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
            self._start(spec, pod)

    def _launch(self, spec, pod):
        meta = pod["metadata"]
        container = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c["name"] == spec.container),
                         None)
        if container is None:
            set_pod_ready(self.store, pod, ("CreateContainerError", "no container %r in the pod" % spec.container))
            return
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        token = self.store.token(meta["namespace"], account, TOKEN_SECONDS)
        home = self.workdir / ("%s-%s" % (meta["namespace"], meta["name"]))
        write_account(home / "serviceaccount", meta["namespace"], token, self.ca_data)
        served = served_ports(spec, container)
        ports = dict(served) if spec.netns else pick_ports(tuple(served))  # its own, or free loopback ports
        mounts, synced = [], []
        if spec.volumes:
            try:
                mounts, synced = pod_volumes(self.store, pod, container, home / "volumes")
                configure_process(spec, container, mounts, ports)
            except VolumeNotReady as exc:
                set_pod_ready(self.store, pod, ("ContainerCreating", str(exc)))
                self.clock.call_later(RESTART_DELAY, lambda: self._retry(spec, (meta["namespace"], meta["name"]),
                                                                         meta["uid"]))
                return
        container = expanded(container, container_env(pod, container))
        build = build_for(self.builds, spec, container)
        argv = command_line(spec, build, container, ports, home / "serviceaccount", mounts)
        address = urllib.parse.urlsplit(self.api_server)
        sockets = {}
        if spec.netns:
            if self.network is None or not self.network.path:
                raise RuntimeError("a process in a network namespace of its own needs the pod network (--pod-network)")
            net = self.workdir / "net"
            net.mkdir(parents=True, exist_ok=True)
            sockets = {port: str(net / ("%s-%d.sock" % (meta["uid"][:8], port))) for port in served.values()}
            argv = in_own_network(argv, self.network.path, address.netloc, sockets)
        path = os.environ.get("PATH", "/usr/bin:/bin")
        if spec.command:  # what its image has on its PATH beside the machine's tools (kubectl)
            path = "%s:%s" % (TOOLS, path)
        env = {"PATH": path, "HOME": str(home),
               "KUBERNETES_SERVICE_HOST": address.hostname, "KUBERNETES_SERVICE_PORT": str(address.port or 443)}
        env.update(container_env(pod, container))
        env.update({name: address % ports[port] for name, address, port in spec.env_ports})
        log = home / "process.log"
        with open(log, "ab") as out:
            out.write(("--- %s: %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), " ".join(argv))).encode())
            out.flush()
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=str(home))
        running = _Running(spec, pod, proc, ports, log, served, synced, sockets)
        self.running[running.key] = running
        if self.network is not None and running.ip:
            for name, port in served.items():
                self.network.add(running.ip, port, sockets.get(port) or ports[name])
        # probed from now on, even if the write below is refused (an admission webhook that is down, as Kueue's
        # pod webhook is while its own process restarts: the probe writes the pod's state again)
        self.clock.call_later(READY_POLL, lambda: self._probe(running))
        set_pod_ready(self.store, pod, ("Running", "%s: starting (pid %d)" % (spec.name, proc.pid)))

    def _unroute(self, running):
        """The pod's ports no longer lead to the process (it stopped)."""
        if self.network is not None and running.ip:
            self.network.remove(running.ip, running.served.values())

    def _stop(self, running):
        self.running.pop(running.key, None)
        self._unroute(running)
        if running.proc.poll() is None:
            running.proc.terminate()
            try:
                running.proc.wait(10)
            except subprocess.TimeoutExpired:
                running.proc.kill()
                running.proc.wait()

    def stop_all(self):
        for running in list(self.running.values()):
            self._stop(running)

    def _pod(self, running):
        pod = self.store.get("v1", "Pod", running.key[1], running.key[0])
        return pod if pod is not None and pod["metadata"]["uid"] == running.uid else None

    def _probe(self, running):
        try:
            self._probe_once(running)
        except Exception:  # noqa: BLE001 - a write refused (a webhook down): looked at again, as a kubelet does
            if self.running.get(running.key) is running:
                self.clock.call_later(READY_POLL, lambda: self._probe(running))
            raise

    def _probe_once(self, running):
        if self.running.get(running.key) is not running:
            return
        pod = self._pod(running)
        if pod is None:
            self._stop(running)
            return
        code = running.proc.poll()
        if running.spec.job:  # runs to completion: its exit code ends the pod (the Job controller counts it)
            if code is None:
                self.clock.call_later(READY_POLL, lambda: self._probe(running))
                return
            set_pod_finished(self.store, pod, code, running.last_lines())  # refused: probed again, still running
            self.running.pop(running.key, None)
            return
        if code is not None:
            self._unroute(running)
            set_pod_ready(self.store, pod, ("CrashLoopBackOff", "%s exited with %d: %s (log: %s)"
                                            % (running.spec.name, code, running.last_lines(), running.log)))
            self.running.pop(running.key, None)
            self.clock.call_later(RESTART_DELAY, lambda: self._retry(running.spec, running.key, running.uid))
            return
        for volume, folder in running.synced:  # the kubelet keeps Secrets and ConfigMaps in step
            try:
                write_volume(folder, volume_files(self.store, running.key[0], volume))
            except VolumeNotReady:
                pass  # the files stay as they were
        ready = running.ready_url is None and running.unready is None  # no readiness probe: Ready once running
        if running.ready_url:
            port = urllib.parse.urlsplit(running.ready_url).port
            try:  # as the kubelet probes: any 2xx or 3xx, an HTTPS certificate unchecked
                ready = 200 <= http_status(running.ready_url, running.sockets.get(port)) < 400
            except OSError:
                ready = False
        waiting = ("Running", "%s: %s" % (running.spec.name, running.unready or "%s not ready yet" % running.ready_url))
        set_pod_ready(self.store, pod, None if ready else waiting)
        self.clock.call_later(READY_POLL if not ready else READY_POLL * 10, lambda: self._probe(running))


def ca_data_of(admin_kubeconfig):
    """The cluster's CA (base64, as kubeconfigs hold it) and server URL, from the admin kubeconfig."""
    config = yaml.safe_load(Path(admin_kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    data = cluster.get("certificate-authority-data")
    if not data:
        data = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return cluster["server"], data
