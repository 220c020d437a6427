"""pytest plugin: ``local_cluster``, the real control plane of ``local_gpu_cluster`` for the test session,
and ``local_cluster_gitops``, another one with the Flux controllers and the git server (``up --gitops``).

Each is started once per session in its own directory (``build/test-cluster``, or
``GPU_PLATFORM_TEST_CLUSTER_DIR``; ``build/test-cluster-gitops``, or ``GPU_PLATFORM_TEST_GITOPS_CLUSTER_DIR``),
so a cluster a developer runs in ``build/cluster`` is never touched and neither disturbs the other, and stopped
at the end of the session (``GPU_PLATFORM_TEST_CLUSTER_KEEP=1`` leaves them running to look at). A cluster that
cannot be built or started fails the tests that need it, with the command's own message: a proof that could not
run is not a pass.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from .audit import LOG_NAME, AuditLog
from .git_server import init_repo
from .paths import PROJECT as ROOT, TOOLS_BIN, python_path_env

# The credential a run under test is given (``LocalCluster.kubeconfig_for``): the admin's rights under this name, so
# the audit log tells the run's requests from the tests' own reads (the admin kubeconfig) and every controller's.
RUN_USER = "gpu-platform-run"
DEFAULT_DIR = ROOT / "build" / "test-cluster"
GITOPS_DIR = ROOT / "build" / "test-cluster-gitops"


@dataclass
class LocalCluster:
    dir: Path
    # the fleet it was started with (CLUSTER_PROFILE, CLUSTER_GPU_NODES), kept for every later command on it
    settings: dict = field(default_factory=dict)

    @property
    def kubeconfig(self) -> str:
        return str(self.dir / "kubeconfig")

    @property
    def state(self) -> dict:
        return json.loads((self.dir / "state.json").read_text())

    @property
    def chart_repo_url(self) -> str:
        return "http://127.0.0.1:%d" % self.state["ports"]["chart-repo"]

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def audit(self) -> AuditLog:
        """The API server's audit log (``mark()``, then ``writes(mark, user=RUN_USER)``)."""
        return AuditLog(self.dir / LOG_NAME)

    def kubeconfig_for(self, user=RUN_USER) -> str:
        """A kubeconfig (0600) for ``user``, with the admin's rights (``python -m local_gpu_cluster kubeconfig``),
        naming this cluster as it runs now; its path."""
        proc = cluster_command("kubeconfig", "--user", user, env=self.env(), timeout=120)
        if proc.returncode != 0:
            raise AssertionError("python -m local_gpu_cluster kubeconfig --user %s failed: %s%s"
                                 % (user, proc.stdout, proc.stderr))
        return proc.stdout.strip().splitlines()[-1]

    def git_repo(self, name) -> str:
        """A new, empty bare repository on the cluster's git server (``up --gitops``) that takes pushes; its URL."""
        gitops = self.state["gitops"]
        init_repo(gitops["repos"], name)
        return "%s/%s.git" % (gitops["git_url"], name)

    def env(self, base=None) -> dict:
        """The environment for a command that manages this cluster (CLUSTER_DIR set)."""
        env = dict(os.environ if base is None else base)
        env.update(self.settings)
        env["CLUSTER_DIR"] = str(self.dir)
        return env


def kubectl(cluster, *args, stdin=None, check=True):
    """Run the pinned kubectl (tools/bin) against ``cluster``; with ``check``, a failure is an AssertionError
    with kubectl's message. Returns the CompletedProcess (text)."""
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, HOME=str(cluster.dir / "kubectl-home"))
    proc = subprocess.run([str(TOOLS_BIN / "kubectl"), *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("kubectl %s failed: %s" % (" ".join(args), proc.stderr))
    return proc


def wait_established(run, targets, timeout=60, tries=10):
    """``kubectl wait --for=condition=Established`` on CRDs (``targets``: ``-f=<file>`` or ``crd/<name>``) through
    ``run(*args)``, a kubectl runner returning a CompletedProcess. kubectl fails at once (".status.conditions
    accessor error: <nil>") when it reads a CRD the API server has not given its first conditions yet, instead of
    waiting; that window is short, so a few tries cover it. Returns the last CompletedProcess."""
    for attempt in range(tries):
        proc = run("wait", "--for=condition=Established", "--timeout=%ds" % timeout, *targets)
        if proc.returncode == 0 or "accessor error" not in proc.stderr:
            break
    assert proc.returncode == 0, "%s (after %d tries)" % (proc.stderr, attempt + 1)
    return proc


CRD_GONE_TIMEOUT = 240  # under the runners' 300 s subprocess time-out


def delete_crds(run, names, timeout=CRD_GONE_TIMEOUT):
    """Delete the CRDs ``names`` through ``run(*args)`` (a kubectl runner returning a CompletedProcess) and wait until
    they are gone. Returns the failed CompletedProcess, or None.

    The API server's CRD finalizer removes a CRD only after it has deleted the CRD's objects, through the CRD's
    storage. Deleted right after it was created, while that storage is still initializing, the finalizer fails
    ("storage is (re)initializing", kube-apiserver's log) and retries with a growing back-off: on a loaded machine
    the CRD outlived a 120 s wait. So each CRD's storage is first asked to answer (a list from the watch cache,
    ``resourceVersion=0``, which answers once it is initialized), then the CRDs are deleted."""
    deadline = time.monotonic() + timeout
    listed = run("get", "crd", "--ignore-not-found", "-o", "json", *names)
    if listed.returncode != 0:
        return listed
    text = listed.stdout.strip()
    document = json.loads(text) if text else {}
    for crd in document.get("items", [document] if document.get("kind") == "CustomResourceDefinition" else []):
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served"))
        path = "/apis/%s/%s/%s?resourceVersion=0&limit=1" % (spec["group"], version, spec["names"]["plural"])
        while run("get", "--raw", path).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.5)
    left = max(1, int(deadline - time.monotonic()))
    proc = run("delete", "crd", "--ignore-not-found", "--wait=true", "--timeout=%ds" % left, *names)
    return proc if proc.returncode != 0 else None


def service_account_token(cluster, namespace, binding, name="deployer", duration="1h"):
    """A bearer token for a new ServiceAccount ``name`` in a new ``namespace``, bound to cluster-admin by the
    ClusterRoleBinding ``binding`` (the TokenRequest API, ``kubectl create token``): what an AWX "OpenShift or
    Kubernetes API Bearer Token" credential holds. The caller deletes the namespace and the binding."""
    kubectl(cluster, "create", "namespace", namespace)
    kubectl(cluster, "-n", namespace, "create", "serviceaccount", name)
    kubectl(cluster, "create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
            "--serviceaccount=%s:%s" % (namespace, name))
    return kubectl(cluster, "-n", namespace, "create", "token", name, "--duration=" + duration).stdout.strip()


def api_server_and_ca(cluster):
    """The API server's URL and its CA certificate (PEM text), from the cluster's kubeconfig."""
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text(encoding="utf-8"))["clusters"][0]["cluster"]
    if config.get("certificate-authority"):
        return config["server"], Path(config["certificate-authority"]).read_text(encoding="utf-8")
    return config["server"], base64.b64decode(config["certificate-authority-data"]).decode("ascii")


class CommandLines(threading.Thread):
    """Every process's command line, sampled until stopped (a secret must never be on one)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen, self.done = set(), threading.Event()

    def run(self):
        while not self.done.is_set():
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    try:
                        with open("/proc/%s/cmdline" % pid, "rb") as handle:
                            self.seen.add(handle.read().replace(b"\0", b" ").decode("utf-8", "replace"))
                    except OSError:
                        pass
            self.done.wait(0.02)


def cluster_command(*args, env=None, timeout=1800):
    """Run ``python -m local_gpu_cluster ARGS``; returns the CompletedProcess (text)."""
    env = python_path_env(os.environ if env is None else env)
    return subprocess.run([sys.executable, "-m", "local_gpu_cluster", *args], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def fleet_cluster(directory, profile=None, gpu_nodes=None, *up_args, settings=None):
    """A cluster of the fleet ``profile`` (the default fleet if None) with ``gpu_nodes`` GPU nodes in ``directory``:
    started clean, yielded, stopped at the end unless ``GPU_PLATFORM_TEST_CLUSTER_KEEP=1``. A generator, for a fixture
    of the scope its tests can share it for (``yield from fleet_cluster(...)``); a cluster that does not start fails
    the tests that need it, with the command's own message. ``settings``: more of the cluster's environment variables
    (``CLUSTER_PREVIOUS_RELEASE``), kept for every later command on it."""
    settings = dict(settings or {}, **({"CLUSTER_PROFILE": profile} if profile else {}))
    if gpu_nodes is not None:
        settings["CLUSTER_GPU_NODES"] = str(gpu_nodes)
    cluster = LocalCluster(Path(directory), settings)
    env = cluster.env()
    cluster_command("down", env=env)  # a cluster left by a session that was killed: start clean
    proc = cluster_command("up", *up_args, env=env)
    if proc.returncode != 0:
        pytest.fail("the local control plane did not start (python -m local_gpu_cluster up %s):\n%s%s"
                    % (" ".join(up_args), proc.stdout[-3000:], proc.stderr[-3000:]), pytrace=False)
    yield cluster
    if os.environ.get("GPU_PLATFORM_TEST_CLUSTER_KEEP") != "1":
        cluster_command("down", env=env)


@pytest.fixture(scope="session")
def local_cluster():
    """The session's local control plane (started here, stopped at the end)."""
    yield from fleet_cluster(os.environ.get("GPU_PLATFORM_TEST_CLUSTER_DIR") or DEFAULT_DIR)


@pytest.fixture(scope="session")
def local_cluster_gitops():
    """The session's local control plane with the Flux controllers and the git server (``up --gitops``)."""
    yield from fleet_cluster(os.environ.get("GPU_PLATFORM_TEST_GITOPS_CLUSTER_DIR") or GITOPS_DIR, None, None, "--gitops")


# The local control planes live in fixed folders under the project's build/ and run for as long as the
# pytest session that started them. Every test that uses one is marked local_control_plane: make test runs those in
# a session of their own, so the control plane and its simulated operators (about a core between them) are up only
# while their tests run, and the other tests run beside each other on two workers (pytest-xdist). Under xdist they
# also share one group, so that one worker starts each cluster and no two tests share one at the same time.
CLUSTER_FIXTURES = {"local_cluster", "local_cluster_gitops"}  # a project adds the fixtures of its own clusters


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        # real_cluster: the [real] variants, whose fixture asks for the local control plane only at run time
        if any(_ClusterUsers.uses(item, name) for name in CLUSTER_FIXTURES):
            item.add_marker(pytest.mark.local_control_plane)
            item.add_marker(pytest.mark.xdist_group("local-control-plane"))
    # The modules that use the session's cluster first, each module whole and in its own order: that cluster can then
    # stop after the last of them (below) instead of idling beside every other module's cluster to the end.
    modules = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    first = [m for m, its in modules.items() if any(_ClusterUsers.uses(i, "local_cluster") for i in its)]
    items[:] = [i for m in first for i in modules[m]] + [i for m, its in modules.items() if m not in first for i in its]


# ---------------------------------------------------------------- a cluster stops when its last test is done
#
# A cluster fixture lives as long as its scope: a module's clusters all run until the module's last test, and the
# session's until the session ends, though most of its tests came early. An idle cluster is not free (its API
# server, controllers, operators and agents keep part of a core busy), and on two cores the lane runs at the speed of
# what is left. So, in a session without xdist, each cluster of CLUSTER_FIXTURES is stopped as soon as no test left in
# the session uses it (by its fixture, or, for the session's local_cluster, by the real_cluster marker of a test that
# asks for it at run time). Stopping is cluster-down, which the fixture's own end repeats harmlessly.

class _ClusterUsers:
    """The session's items in their order, and the clusters their fixtures started (by fixture name and folder)."""

    def __init__(self):
        self.items, self.started, self.stopped = [], {}, set()

    @staticmethod
    def uses(item, name):
        return name in getattr(item, "fixturenames", ()) or (
            name == "local_cluster" and item.get_closest_marker("real_cluster") is not None)

    def record(self, item):
        """After ``item``'s set-up: the clusters of CLUSTER_FIXTURES it got."""
        for name in CLUSTER_FIXTURES.intersection(getattr(item, "funcargs", {})):
            value = item.funcargs[name]
            if isinstance(value, LocalCluster):
                self.started.setdefault((name, str(value.dir)), value)

    def stop_unused(self, item):
        """After ``item``: stop every started cluster that no later item of the session uses; returns their keys."""
        try:
            later = self.items[self.items.index(item) + 1:]
        except ValueError:
            return []
        done = [key for key in self.started if key not in self.stopped
                and not any(self.uses(other, key[0]) for other in later)]
        for key in done:
            self.stopped.add(key)
            cluster_command("down", env=self.started[key].env())
        return done


_USERS = _ClusterUsers()


def pytest_collection_finish(session):
    # not under xdist (no one order), nor when GPU_PLATFORM_TEST_CLUSTER_KEEP=1 keeps the clusters to look at
    if not os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("GPU_PLATFORM_TEST_CLUSTER_KEEP") != "1":
        _USERS.items = list(session.items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield
    _USERS.record(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):  # pylint: disable=unused-argument
    yield
    _USERS.stop_unused(item)
