"""The command line of each component, and how to tell it is ready.

Admission plugins: the API server's defaults (which include PodSecurity, NodeRestriction,
ServiceAccount, ResourceQuota, LimitRanger, Priority, the webhooks and
ValidatingAdmissionPolicy) plus what managed clusters (AKS, EKS, GKE) also turn on.
"""

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .audit import LOG_NAME as AUDIT_LOG, write_policy as write_audit_policy
from .paths import python_path_env
EXTRA_ADMISSION = ("NodeRestriction", "PodSecurity", "DefaultStorageClass", "DefaultTolerationSeconds",
                   "ResourceQuota", "LimitRanger", "Priority", "ServiceAccount", "NamespaceLifecycle",
                   "ValidatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
SERVICE_RANGE = "10.96.0.0/16"
POD_RANGE = "10.244.0.0/16"
KWOK_POD_RANGE = "10.0.0.0/24"  # the pod IPs KWOK gives (its --cidr default; the nodes have no podCIDR)
# The API server's traffic to pods (webhooks, aggregated APIs) goes through the pod network's proxy on this socket
# (local_gpu_cluster/pod_network.py), to the process that serves the pod's port.
POD_NETWORK_SOCKET = "pod-network.sock"
# controller-manager: its default set ("*"), which makes Deployments, ReplicaSets, DaemonSets, Jobs,
# namespaces, service accounts and garbage collection work (the cloud ones stay idle without a cloud).
CONTROLLERS = "*"
# The audit log's rotation (lumberjack's, in the API server): a file of at most AUDIT_MAX_MB, AUDIT_BACKUPS rotated
# ones kept beside it (local_gpu_cluster/audit.py reads them all).
AUDIT_MAX_MB = 100
AUDIT_BACKUPS = 5


@dataclass
class Component:
    name: str
    argv: list
    health: str  # URL polled until it answers 200 ("ok")
    client_cert: bool = False  # the health URL needs the admin client certificate
    verify: bool = True  # False: the component serves a self-signed certificate of its own (probe only)
    env: dict = field(default_factory=dict)


def control_plane(binaries, state, pki, ports):
    """The components in start order."""
    bind = "127.0.0.1"

    def kube(name):
        return str(state.dir / ("%s.kubeconfig" % name))
    etcd_url = "http://%s:%d" % (bind, ports["etcd"])
    peer_url = "http://%s:%d" % (bind, ports["etcd-peer"])
    return [
        Component("etcd", [str(binaries / "etcd"), "--name=local", "--data-dir=%s" % (state.dir / "etcd"),
                           "--listen-client-urls=" + etcd_url, "--advertise-client-urls=" + etcd_url,
                           "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
                           "--initial-cluster=local=" + peer_url, "--log-level=warn",
                           "--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296"],
                  etcd_url + "/health"),
        Component("kube-apiserver", [
            str(binaries / "kube-apiserver"), "--etcd-servers=" + etcd_url,
            "--bind-address=" + bind, "--secure-port=%d" % ports["kube-apiserver"],
            "--tls-cert-file=%s" % pki.cert("serving-apiserver"), "--tls-private-key-file=%s" % pki.key("serving-apiserver"),
            "--client-ca-file=%s" % pki.ca,
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file=%s" % pki.sa_pub, "--service-account-signing-key-file=%s" % pki.sa_key,
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=" + SERVICE_RANGE,
            "--authorization-mode=Node,RBAC", "--anonymous-auth=false",
            "--enable-admission-plugins=" + ",".join(EXTRA_ADMISSION),
            "--kubelet-client-certificate=%s" % pki.cert("client-apiserver-kubelet-client"),
            "--kubelet-client-key=%s" % pki.key("client-apiserver-kubelet-client"),
            "--kubelet-preferred-address-types=InternalIP", "--allow-privileged=true", "--profiling=false",
            "--requestheader-client-ca-file=%s" % pki.ca, "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--proxy-client-cert-file=%s" % pki.cert("client-front-proxy"),
            "--proxy-client-key-file=%s" % pki.key("client-front-proxy"),
            "--enable-priority-and-fairness=false",
            # an endpoint's pod IP and port, not the Service's ClusterIP (no kube-proxy), through the pod network
            "--enable-aggregator-routing=true", "--egress-selector-config-file=%s" % write_egress(state.dir),
            *audit_flags(state.dir), "--v=1"],
            "https://%s:%d/readyz" % (bind, ports["kube-apiserver"]), client_cert=True),
        Component("kube-controller-manager", [
            str(binaries / "kube-controller-manager"), "--kubeconfig=" + kube("controller-manager"),
            "--authentication-kubeconfig=" + kube("controller-manager"),
            "--authorization-kubeconfig=" + kube("controller-manager"),
            "--authorization-always-allow-paths=/healthz,/readyz,/livez",
            "--bind-address=" + bind, "--secure-port=%d" % ports["kube-controller-manager"],
            "--root-ca-file=%s" % pki.ca, "--service-account-private-key-file=%s" % pki.sa_key,
            "--use-service-account-credentials=true", "--controllers=" + CONTROLLERS,
            "--cluster-cidr=" + POD_RANGE, "--service-cluster-ip-range=" + SERVICE_RANGE,
            "--cluster-signing-cert-file=%s" % pki.ca, "--cluster-signing-key-file=%s" % pki.key("ca"),
            "--leader-elect=false", "--kube-api-qps=200", "--kube-api-burst=400", "--v=1"],
            "https://%s:%d/healthz" % (bind, ports["kube-controller-manager"]), verify=False),
        Component("kube-scheduler", [
            str(binaries / "kube-scheduler"), "--kubeconfig=" + kube("scheduler"),
            "--authentication-kubeconfig=" + kube("scheduler"), "--authorization-kubeconfig=" + kube("scheduler"),
            "--authorization-always-allow-paths=/healthz,/readyz,/livez",
            "--bind-address=" + bind, "--secure-port=%d" % ports["kube-scheduler"], "--leader-elect=false",
            "--v=1"],
            "https://%s:%d/healthz" % (bind, ports["kube-scheduler"]), verify=False),
        Component("kwok", [
            str(binaries / "kwok"), "--kubeconfig=" + kube("kwok"), "--config=%s" % (state.dir / "kwok.yaml"),
            "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            # a pod a node agent annotated so keeps the status the agent gives it (a component that never gets Ready)
            "--disregard-status-with-annotation-selector=kwok.x-k8s.io/status=custom",
            "--enable-crds=Logs",  # a smoke pod's logs: the Logs object the node agents make for it
            "--node-ip=" + bind, "--node-port=%d" % ports["kwok"],
            "--server-address=%s:%d" % (bind, ports["kwok"]),
            "--tls-cert-file=%s" % pki.cert("serving-kwok"), "--tls-private-key-file=%s" % pki.key("serving-kwok"),
            "--node-lease-duration-seconds=40", "--v=0"],
            "https://%s:%d/healthz" % (bind, ports["kwok"])),
    ]


def audit_flags(directory):
    """The audit log in the cluster's directory (local_gpu_cluster/audit.py): the judge of what a client wrote.
    JSON lines; blocking mode (the API server's default for a log, stated here because the judge relies on it): a
    request's line is written before its response ends, so it is there once the client has its answer."""
    return ["--audit-policy-file=%s" % write_audit_policy(directory),
            "--audit-log-path=%s" % (Path(directory) / AUDIT_LOG), "--audit-log-format=json",
            "--audit-log-mode=blocking", "--audit-log-maxsize=%d" % AUDIT_MAX_MB,
            "--audit-log-maxbackup=%d" % AUDIT_BACKUPS]


def write_egress(directory):
    """The API server's egress selector configuration: its ``cluster`` traffic through the pod network's socket."""
    path = Path(directory) / "egress-selector.yaml"
    path.write_text(json.dumps({
        "apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
        "egressSelections": [{"name": "cluster", "connection": {
            "proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(Path(directory) / POD_NETWORK_SOCKET)}}}}]},
        indent=1))
    return path


def platform_services(state, ports, builds=None):
    """What the platform's own controllers and charts would be on a real cluster, played on loopback:
    the chart repository serving the charts, and local_gpu_cluster/live.py: the node agents, the real process of each
    operator in ``builds`` ({name: build directory}) for its pod, and the pod network the API server reaches them
    through."""
    python = sys.executable
    real = ",".join("%s=%s" % (name, path) for name, path in sorted((builds or {}).items()))
    return [
        Component("chart-repo", [python, "-m", "local_gpu_cluster.chart_repo", "--serve", str(state.dir / "charts"),
                                 "--port", str(ports["chart-repo"])],
                  "http://127.0.0.1:%d/index.yaml" % ports["chart-repo"], env=python_path_env()),
        Component("operators", [python, "-m", "local_gpu_cluster.live", "--kubeconfig", str(state.kubeconfig),
                                "--logs-dir", str(state.dir / "pod-logs"),
                                "--health-port", str(ports["operators"]), "--operator-builds", real,
                                "--operator-dir", str(state.dir / "operators"),
                                "--pod-network", str(state.dir / POD_NETWORK_SOCKET),
                                "--pod-ranges", ",".join((KWOK_POD_RANGE, POD_RANGE))],
                  "http://127.0.0.1:%d/healthz" % ports["operators"], env=python_path_env()),
    ]


def flux_controllers(flux, state, ports):
    """The Flux controllers as their own Deployments run them (flags from each controller's main.go at the pinned
    tag), on loopback: with the admin kubeconfig, no leader election, every namespace watched, no events receiver
    (``--events-addr`` empty: Kubernetes events only), and no default service account to impersonate."""
    env = {"KUBECONFIG": str(state.kubeconfig), "RUNTIME_NAMESPACE": "flux-system"}
    components = []
    for name in ("source-controller", "kustomize-controller", "helm-controller"):
        argv = [str(flux / name), "--metrics-addr=127.0.0.1:%d" % ports[name + "-metrics"],
                "--health-addr=127.0.0.1:%d" % ports[name + "-health"], "--events-addr=",
                "--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console"]
        if name == "source-controller":
            storage = "127.0.0.1:%d" % ports["source-controller-storage"]
            argv += ["--storage-path=%s" % (state.dir / "gitops" / "storage"), "--storage-addr=" + storage,
                     "--storage-adv-addr=" + storage]
        else:
            # A unit whose dependsOn is not Ready yet is looked at again after this (30 s upstream): on a laptop
            # cluster whose charts are ready in seconds, the default would make a five-deep chain wait minutes.
            argv.append("--requeue-dependency=5s")
        components.append(Component(name, argv, "http://127.0.0.1:%d/readyz" % ports[name + "-health"], env=env))
    return components


def git_server(state, ports):
    """The loopback git server (smart HTTP, ``git http-backend``) serving ``<state>/gitops/repos``."""
    return Component("git-server", [sys.executable, "-m", "local_gpu_cluster.git_server",
                                    "--root", str(state.dir / "gitops" / "repos"), "--port", str(ports["git-server"])],
                     "http://127.0.0.1:%d/healthz" % ports["git-server"], env=python_path_env())
