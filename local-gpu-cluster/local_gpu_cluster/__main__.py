"""``python -m local_gpu_cluster build|up|down|status|fault|kubeconfig``: see the package README (``local-gpu-cluster/README.md``).

Settings (environment): ``CLUSTER_DIR`` (state, default ``build/cluster``), ``CLUSTER_PROFILE`` (the fleet:
``fleet.PROFILES``, default ``mixed``), ``CLUSTER_GPU_NODES`` (default 4), ``CLUSTER_SYSTEM_TAINT=1`` (the system node
tainted ``CriticalAddonsOnly=true:NoSchedule``, as a dedicated AKS system pool), ``CLUSTER_BARE=1`` (``up --bare``),
``CLUSTER_GITOPS=1`` (``build --gitops``, ``up --gitops``: the Flux controllers and a git server too;
``build --operators [NAME...]``: the operators from their pinned sources, with their charts),
``CLUSTER_PORT_<COMPONENT>`` (a fixed port instead of a free one), ``CLUSTER_START_TIMEOUT`` (seconds per component, default 120), ``GPU_PLATFORM_CACHE``.
"""

import argparse
import json
import os
import shutil
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import ClusterError
from .audit import LOG_NAME as AUDIT_LOG, AuditLog
from .build import FLUX, ensure_built, pins
from .paths import FIXTURE_CRDS_DIR, PROJECT as ROOT, SHARED
from .components import control_plane, platform_services
from .fleet import DEFAULT_PROFILE, fleet, profile_names, write_kwok_config
from .gitops import PORT_NAMES as GITOPS_PORT_NAMES, install_crds, start_gitops
from .operators import NAMES as OPERATOR_NAMES, entry, entry_for, record
from .pki import Pki
from .processes import State, alive, dead, env_name, pick_ports, start, stop, tail, tls_context

PORT_NAMES = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
              "chart-repo", "operators")
# The charts the platform installs, served by the loopback repository: fixture charts with the real
# names, CRDs and workload names (local_gpu_cluster/fixture_charts), at the versions the collection pins.
# The pins are the roles' defaults (local_gpu_cluster.charts.pinned_charts). CLUSTER_PREVIOUS_RELEASE names the
# checkout of an earlier release of the collection (release 0.2.0's, for make upgrade-test): its pins are served and
# its operators built and run too, beside this checkout's, so that its own site.yml installs its stack here.
# Each chart's crds/ folder, as the real chart carries them: the upstream CRD files (../shared/upstream, and
# local_gpu_cluster/fixture_crds for KAI's PodGroup), so helm installs the real schemas and the API server judges them.
UPSTREAM = SHARED / "upstream"
CHART_CRDS = {
    "gpu-operator": ["gpu-operator/clusterpolicies.nvidia.com.yaml", "gpu-operator/nvidiadrivers.nvidia.com.yaml"],
    "network-operator": ["network-operator/nicclusterpolicies.mellanox.com.yaml",
                         "network-operator/ipoibnetworks.mellanox.com.yaml",
                         "network-operator/hostdevicenetworks.mellanox.com.yaml",
                         "network-operator/macvlannetworks.mellanox.com.yaml",
                         "network-operator/ippools.nv-ipam.nvidia.com.yaml",
                         "k8s-cni-cncf-io/network-attachment-definitions.k8s.cni.cncf.io.yaml"],
    "volcano": ["volcano/jobs.batch.volcano.sh.yaml", "volcano/queues.scheduling.volcano.sh.yaml",
                "volcano/podgroups.scheduling.volcano.sh.yaml"],
    "kueue": ["kueue/resourceflavors.kueue.x-k8s.io.yaml", "kueue/clusterqueues.kueue.x-k8s.io.yaml",
              "kueue/localqueues.kueue.x-k8s.io.yaml", "kueue/workloadpriorityclasses.kueue.x-k8s.io.yaml"],
    "kai-scheduler": ["kai-scheduler/queues.scheduling.run.ai.yaml", FIXTURE_CRDS_DIR / "podgroups.scheduling.run.ai.yaml"],
    "nvidia-dra-driver-gpu": ["dra-driver/computedomains.resource.nvidia.com.yaml",
                              "dra-driver/computedomaincliques.resource.nvidia.com.yaml"],
    # the renamed chart (0.4.x): ComputeDomain's v0.4.0 schema; the clique CRD is byte-identical at v0.4.0
    "dra-driver-nvidia-gpu": ["dra-driver/computedomains.resource.nvidia.com.v0.4.0.yaml",
                              "dra-driver/computedomaincliques.resource.nvidia.com.yaml"],
}
# The Prometheus Operator is not part of the platform: the cluster has it already (its CRDs, from
# ../shared/upstream), as a cluster with kube-prometheus-stack would.
PRESENT_CRDS = ["monitoring/servicemonitors.monitoring.coreos.com.yaml",
                "monitoring/prometheusrules.monitoring.coreos.com.yaml"]


def state_dir():
    return State(os.environ.get("CLUSTER_DIR") or ROOT / "build" / "cluster")


def _int_env(name, default):
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isdigit():
        raise ClusterError("%s=%r is not a whole number" % (name, value))
    return int(value)


class Api:
    """Just enough of the API for cluster-up: JSON requests with the admin certificate."""

    def __init__(self, server, pki):
        self.server = server
        self.context = tls_context(pki, client_cert=True)

    def request(self, method, path, body=None, content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.context) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")


def _ready(node):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def add_fleet(api, count, timeout, profile=DEFAULT_PROFILE):
    nodes = fleet(count, profile, system_taint=os.environ.get("CLUSTER_SYSTEM_TAINT") == "1")
    for node in nodes:
        code, body = api.request("POST", "/api/v1/nodes", node)
        if code not in (201, 409):
            raise ClusterError("creating node %s failed: %s %s" % (node["metadata"]["name"], code, body.get("message")))
    names = {node["metadata"]["name"] for node in nodes}
    deadline = time.monotonic() + timeout
    while True:
        code, body = api.request("GET", "/api/v1/nodes")
        ready = {n["metadata"]["name"] for n in body.get("items", []) if _ready(n)}
        if names <= ready:
            return sorted(names)
        if time.monotonic() > deadline:
            raise ClusterError("nodes not Ready after %d s: %s. KWOK marks them Ready; see its log: %s"
                               % (timeout, ", ".join(sorted(names - ready)), state_dir().logs / "kwok.log"))
        time.sleep(0.5)


def _crd_path(relative):
    path = UPSTREAM / relative  # an absolute path (a fixture CRD) stays as it is
    if not path.exists():
        raise ClusterError("%s is missing: ../shared/upstream must be beside the repository" % path)
    return path


def _real_charts(builds):
    """{(chart name, version): packaged chart} of the operators built from their pinned sources."""
    import json
    charts = {}
    for bindir in builds.values():
        for name, chart in (json.loads((bindir / "manifest.json").read_text()).get("charts") or {}).items():
            charts[(chart.get("name") or name, str(chart["version"]))] = bindir / chart["file"]
    return charts


def _package_charts(target, builds=None):
    """Package each fixture chart at its pinned version with its upstream CRDs in crds/, anew at every start
    (a chart or CRD that changed since the last start is served as it is now); a chart an operator's build
    packaged from its pinned source (``builds``) is served instead of the fixture."""
    from .charts import FIXTURE_CHARTS_DIR, package_chart, pinned_charts
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    real = _real_charts(builds or {})
    for tgz in real.values():
        shutil.copyfile(tgz, target / tgz.name)
    previous = previous_release()
    wanted = dict.fromkeys(pinned_charts() + (pinned_charts(previous) if previous else ()))
    for name, version in wanted:
        if (name, version) in real:
            continue
        with tempfile.TemporaryDirectory(prefix="chart-") as scratch:
            source = Path(scratch) / name
            shutil.copytree(FIXTURE_CHARTS_DIR / name, source)
            (source / "crds").mkdir(exist_ok=True)
            for relative in CHART_CRDS.get(name, ()):
                shutil.copyfile(_crd_path(relative), source / "crds" / Path(relative).name)
            try:
                package_chart(source, target, version=version, app_version=version)
            except RuntimeError as exc:
                raise ClusterError("packaging the test chart %s failed: %s" % (name, exc)) from None


def write_connection(state, ports):
    """``connection.yml``: extra vars that point any inventory at this cluster (``-e @<dir>/connection.yml``): its
    kubeconfig and the loopback chart repository for every chart the platform installs."""
    import yaml
    charts = "http://127.0.0.1:%d" % ports["chart-repo"]
    values = {"gpu_platform_kubeconfig": str(state.kubeconfig), "gpu_platform_render_to": "",
              "scheduling_kueue_chart_ref": "kueue", "scheduling_kai_chart_ref": "kai-scheduler",
              "dra_driver_chart_ref": "dra-driver-nvidia-gpu"}
    for prefix in ("gpu_operator", "network_operator", "scheduling_volcano", "scheduling_kueue", "scheduling_kai",
                   "dra_driver"):
        values[prefix + "_chart_repo_url"] = charts
    path = state.dir / "connection.yml"
    path.write_text("# Written by make cluster-up: ansible-playbook site.yml -i <inventory> -e @%s\n---\n%s"
                    % (path, yaml.safe_dump(values, sort_keys=True)))
    return path


def _kwok_logs_crd():
    """KWOK's ``Logs`` CRD file, in the pinned KWOK module (the node agents make one Logs object per smoke pod)."""
    from .build import KWOK_MODULE, module_dir
    return module_dir(os.environ.get("GO") or "go", KWOK_MODULE, "sigs.k8s.io/kwok") / "kustomize" / "crd" / "bases" \
        / "kwok.x-k8s.io_logs.yaml"


def _running(state, data):
    """True when a recorded cluster runs whole; a part that died is an error naming it."""
    records = data.get("components") or {}
    if not records:
        return False
    gone = dead(records)
    if not gone:
        return True
    lines = ["%s (pid %s) is not running any more. Last lines of its log:\n%s\n  Full log: %s"
             % (name, record.get("pid"), tail(record["log"]), record["log"]) for name, record in gone]
    raise ClusterError("the local cluster in %s is broken: %s\nRun `make cluster-down` (it stops the rest), "
                       "then `make cluster-up`." % (state.dir, "\n".join(lines)))


# The operators whose own process runs on the local cluster unless CLUSTER_OPERATORS says otherwise; for the others,
# their fixture chart is served and nothing reconciles their resources.
DEFAULT_OPERATORS = ("gpu-operator", "network-operator", "kueue", "volcano", "kai-scheduler", "dra-driver")


def _real_operators():
    """The operators whose real process runs (``CLUSTER_OPERATORS``: names, comma-separated, ``DEFAULT_OPERATORS``
    when unset; ``none`` for the fixture charts alone, with no operator's controller)."""
    text = os.environ.get("CLUSTER_OPERATORS")
    if text is None:
        return list(DEFAULT_OPERATORS)
    names = [] if text.strip() in ("", "none") else [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(OPERATOR_NAMES))
    if unknown:
        raise ClusterError("CLUSTER_OPERATORS: no operator named %s: choose from %s, or none"
                           % (", ".join(unknown), ", ".join(OPERATOR_NAMES)))
    return names


def previous_release():
    """The checkout of the earlier release whose stack the cluster serves and runs too (``CLUSTER_PREVIOUS_RELEASE``),
    or None."""
    text = os.environ.get("CLUSTER_PREVIOUS_RELEASE", "").strip()
    if not text:
        return None
    path = Path(text).expanduser().resolve()
    if not (path / "roles").is_dir():
        raise ClusterError("CLUSTER_PREVIOUS_RELEASE=%s is not a checkout of the collection (it has no roles/): name "
                           "the folder of the release's checkout (git worktree add <folder> <commit>)" % text)
    return path


def operator_builds(names):
    """{key: build directory} of ``names``: each at this checkout's pin (key: its name), and with
    ``CLUSTER_PREVIOUS_RELEASE`` also at that release's pin where it differs (key: ``<name>@<tag>``)."""
    builds = {name: ensure_built(entry=entry_for(name)) for name in names}
    previous = previous_release()
    for name in names if previous else ():
        old, new = record(name, previous), record(name)
        if old.version() != new.version():
            builds["%s@%s" % (name, old.version())] = ensure_built(entry=entry(old))
    return builds


def up(args):
    started = time.monotonic()
    state = state_dir()
    data = state.load()
    if _running(state, data):
        if args.gitops and not data.get("gitops"):
            raise ClusterError("the local cluster in %s runs without the Flux controllers: run `make cluster-down`, "
                               "then start it with --gitops (CLUSTER_GITOPS=1)" % state.dir)
        print("the local cluster is already running (KUBECONFIG=%s); nothing to do" % state.kubeconfig)
        return 0
    binaries = ensure_built()
    flux = ensure_built(entry=FLUX) if args.gitops else None
    builds = operator_builds(_real_operators())
    count = _int_env("CLUSTER_GPU_NODES", 4)
    profile = os.environ.get("CLUSTER_PROFILE") or DEFAULT_PROFILE
    if profile not in profile_names():
        raise ClusterError("CLUSTER_PROFILE=%s is not a fleet profile; choose one of %s"
                           % (profile, ", ".join(profile_names())))
    timeout = _int_env("CLUSTER_START_TIMEOUT", 120)
    names = PORT_NAMES + (GITOPS_PORT_NAMES if args.gitops else ())
    fixed = {name: _int_env(env_name(name), 0) for name in names if os.environ.get(env_name(name))}
    ports = pick_ports(names, fixed)
    state.dir.mkdir(parents=True, exist_ok=True)
    pki = Pki(state.dir / "pki").ensure()
    server = "https://127.0.0.1:%d" % ports["kube-apiserver"]
    pki.kubeconfig(state.kubeconfig, server)
    for client in ("controller-manager", "scheduler", "kwok"):
        pki.kubeconfig(state.dir / ("%s.kubeconfig" % client), server, client=client, embed=False)
    from .operator_processes import held_jobs
    configs = write_kwok_config(state.dir, sorted((binaries / "stages").glob("*.yaml")), held_jobs(builds))
    _package_charts(state.dir / "charts", builds)
    if (state.dir / "operators").exists():  # the last run's processes' tokens and logs
        shutil.rmtree(state.dir / "operators")
    write_connection(state, ports)
    data = {"components": {}, "ports": ports, "binaries": str(binaries), "pins": pins(), "gpu_nodes": count,
            "profile": profile, "operators": {name: str(path) for name, path in builds.items()}}
    try:
        for component in control_plane(binaries, state, pki, ports):
            if component.name == "kwok":
                component.argv = [a if not a.startswith("--config=") else "--config=" + ",".join(map(str, configs))
                                  for a in component.argv]
            data["components"][component.name] = start(component, state, pki, timeout)
            state.save(data)
            if component.name == "kube-apiserver":  # before KWOK starts: it watches Logs objects (--enable-crds)
                install_crds(Api(server, pki), [_kwok_logs_crd()], timeout, "KWOK")
        api = Api(server, pki)
        nodes = add_fleet(api, count, timeout, profile)
        # what the cluster already runs outside the platform (the Prometheus Operator's CRDs)
        install_crds(api, [_crd_path(relative) for relative in PRESENT_CRDS], timeout, "Prometheus Operator")
        for component in ([] if args.bare else platform_services(state, ports, builds)):
            data["components"][component.name] = start(component, state, pki, timeout)
            state.save(data)
        if args.gitops:
            data["gitops"] = start_gitops(api, state, pki, ports, flux, timeout, data)
            state.save(data)
    except BaseException:
        stop(data["components"])
        state.save(dict(data, components={}))
        raise
    gitops = ("\n  flux: %s; git repositories: %s/<name>.git (in %s)"
              % (", ".join("%s %s" % pair for pair in data["gitops"]["pins"].items()), data["gitops"]["git_url"],
                 data["gitops"]["repos"]) if args.gitops else "")
    print("the local cluster is up in %.1f s: kubernetes %s, fleet profile %s, %d nodes (%s)\n  export KUBECONFIG=%s\n"
          "  charts: http://127.0.0.1:%d%s\n  logs: %s"
          % (time.monotonic() - started, data["pins"]["kubernetes"], profile, len(nodes), ", ".join(nodes), state.kubeconfig,
             ports["chart-repo"], gitops, state.logs))
    return 0


def down(args):
    state = state_dir()
    data = state.load()
    records = data.get("components") or {}
    stopped = stop(records)
    if not args.keep_data:  # the git repositories and Flux's artifacts go with the objects that used them
        for directory in ("etcd", "gitops"):
            if (state.dir / directory).exists():
                shutil.rmtree(state.dir / directory)
        for path in AuditLog(state.dir / AUDIT_LOG).files():  # the record of what was written, with what it was
            path.unlink()
    state.save(dict(data, components={}))
    print("stopped: %s" % (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def status(args):
    state = state_dir()
    data = state.load()
    records = data.get("components") or {}
    if not records:
        print("the local cluster is not running (make cluster-up)")
        return 3
    for name, record in records.items():
        print("%-24s %s pid %s" % (name, "running" if alive(record) else "DEAD", record.get("pid")))
    if data.get("gitops"):
        print("git repositories: %s/<name>.git (in %s)" % (data["gitops"]["git_url"], data["gitops"]["repos"]))
    _running(state, data)
    context = tls_context(Pki(state.dir / "pki"), client_cert=True)
    url = "https://127.0.0.1:%d/readyz" % data["ports"]["kube-apiserver"]
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            print("readyz: %s" % response.read().decode())
    except (OSError, ssl.SSLError) as exc:
        raise ClusterError("the API server does not answer %s: %s" % (url, exc)) from None
    return 0


def fault(args):
    """Set a node agent's fault (``<agent>:<state>[:<node>]``) in the running cluster's faults ConfigMap."""
    from .node_agents import FAULTS, parse_fault
    try:
        key, value = parse_fault(args.fault)
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
    state = state_dir()
    data = state.load()
    if not _running(state, data):
        raise ClusterError("the local cluster in %s is not running (make cluster-up)" % state.dir)
    api = Api("https://127.0.0.1:%d" % data["ports"]["kube-apiserver"], Pki(state.dir / "pki"))
    namespace, name = FAULTS
    path = "/api/v1/namespaces/%s/configmaps/%s" % (namespace, name)
    code, body = api.request("PATCH", path, {"data": {key: value}}, content_type="application/merge-patch+json")
    if code == 404:
        code, body = api.request("POST", "/api/v1/namespaces/%s/configmaps" % namespace,
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                  "data": {key: value}})
    if code not in (200, 201):
        raise ClusterError("writing %s/%s failed: %s %s" % (namespace, name, code, body.get("message")))
    print("fault %s=%s set (ConfigMap %s/%s)" % (key, value, namespace, name))
    return 0


def kubeconfig(args):
    """``kubeconfig --user NAME``: ``<cluster dir>/kubeconfig-<NAME>`` (0600), the admin's rights under a name of its
    own (pki.Pki.user_kubeconfig), so that the audit log (``<cluster dir>/audit.log``) tells that client's requests
    from every other's. It names the running cluster's port: mint it again after the next ``up``."""
    state = state_dir()
    data = state.load()
    if not _running(state, data):
        raise ClusterError("the local cluster in %s is not running (make cluster-up)" % state.dir)
    path = state.dir / ("kubeconfig-%s" % args.user)
    try:
        Pki(state.dir / "pki").user_kubeconfig(path, "https://127.0.0.1:%d" % data["ports"]["kube-apiserver"],
                                               args.user)
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
    print(path)
    return 0


def build(args):
    unknown = sorted(set(args.operators or ()) - set(OPERATOR_NAMES))
    if unknown:
        raise ClusterError("no operator named %s: choose from %s" % (", ".join(unknown), ", ".join(OPERATOR_NAMES)))
    print(ensure_built())
    if args.gitops:
        print(ensure_built(entry=FLUX))
    if args.operators is not None:  # one at a time: each build uses every core
        for path in operator_builds(args.operators or OPERATOR_NAMES).values():
            print(path)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m local_gpu_cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gitops = os.environ.get("CLUSTER_GITOPS") == "1"
    build_parser = commands.add_parser("build", help="build the binaries (or find them in the cache); prints their "
                                                     "directory")
    build_parser.add_argument("--gitops", action="store_true", default=gitops,
                              help="the Flux controllers too, in their own cache entry (also CLUSTER_GITOPS=1)")
    build_parser.add_argument("--operators", nargs="*", metavar="NAME",
                              help="the operators too, from their pinned upstream sources, each in a cache entry of "
                                   "its own: all of them, or those named (local_gpu_cluster/operators.py)")
    up_parser = commands.add_parser("up", help="start the cluster (a no-op when it runs)")
    up_parser.add_argument("--bare", action="store_true", default=os.environ.get("CLUSTER_BARE") == "1",
                           help="only the control plane and the fleet: no chart repository, no node agents or operators "
                                "(also CLUSTER_BARE=1)")
    up_parser.add_argument("--gitops", action="store_true", default=gitops,
                           help="then the Flux CRDs, source-, kustomize- and helm-controller and a git server "
                                "(also CLUSTER_GITOPS=1)")
    down_parser = commands.add_parser("down", help="stop every process cluster-up started")
    down_parser.add_argument("--keep-data", action="store_true", help="keep etcd's data for the next start")
    commands.add_parser("status", help="what runs, and /readyz")
    fault_parser = commands.add_parser("fault", help="set a node agent's fault: <agent>:<state>[:<node>] (state ok "
                                                     "clears it)")
    fault_parser.add_argument("fault", help="<agent>:<state>[:<node>], e.g. rdma-shared-device-plugin:stuck")
    kubeconfig_parser = commands.add_parser(
        "kubeconfig", help="write a kubeconfig for a user of its own (admin rights, its own name in the audit log); "
                           "prints its path")
    kubeconfig_parser.add_argument("--user", required=True, help="the user name (CN), e.g. gpu-platform-run")
    args = parser.parse_args(argv)
    try:
        return {"build": build, "up": up, "down": down, "status": status, "fault": fault,
                "kubeconfig": kubeconfig}[args.command](args)
    except ClusterError as exc:
        print("cluster-%s: %s" % (args.command, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cluster-%s: interrupted" % args.command, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
