"""The ``cluster`` fixture: each integration test runs once on the fake API server and once on a real one.

``cluster`` is parametrized ``[fake]`` / ``[real]``. Both give the test the same object (:class:`Cluster`):
a kubeconfig, a throwaway namespace ``gpi-<6 hex>`` created for the test, and helpers that read and write
through the ``kubernetes`` Python client, so a test's assertions are the same code for both clusters.

* ``fake``: ``fake_api_factory(require_namespaces=True)`` (local_gpu_cluster), on the real clock, so module waits
  take real time as they would on a cluster.
* ``real``: by default the local control plane (``local_cluster``, the real kube-apiserver built from pinned
  modules that ``make test`` starts), where cluster-scoped writes are allowed: it is the session's own, and a
  precondition missing there (a CRD the test installs, an object a test left behind) fails the test, never skips
  it. A user's cluster only when named on purpose, by ``GPU_PLATFORM_IT_KUBECONFIG`` (read here, at import): an
  inherited ``KUBECONFIG`` never takes the tier away from the local control plane (and make's pytest targets unset
  it). A named cluster whose API server does not answer ``/version`` skips, with the command to run.
  The namespace is deleted at teardown, and the test waits (bounded) until it is gone. Cluster-scoped writes
  (Nodes, the NicClusterPolicy singleton, MIG labels) are skipped on a user's cluster unless
  ``GPU_PLATFORM_IT_CLUSTER_SCOPED=1``.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
import warnings
from pathlib import Path

import pytest
from kubernetes import config, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from local_gpu_cluster.testing import wait_established

# A user's cluster, named on purpose; never KUBECONFIG, which a shell may carry from elsewhere (and which
# fake_api_factory sets to the fake's kubeconfig for each test).
REAL_KUBECONFIG_ENV = "GPU_PLATFORM_IT_KUBECONFIG"
REAL_KUBECONFIG = os.environ.get(REAL_KUBECONFIG_ENV, "")
CLUSTER_SCOPED_ENV = "GPU_PLATFORM_IT_CLUSTER_SCOPED"
CLUSTER_SCOPED = os.environ.get(CLUSTER_SCOPED_ENV, "") == "1"

RUN_REAL = "%s=~/.kube/config make pytest PYTEST_ARGS=tests/integration" % REAL_KUBECONFIG_ENV
HOW_TO_RUN = ("Run `%s` against a throwaway cluster (kind, k3d); the tests create and delete one namespace `gpi-*`"
              % RUN_REAL)
NAMESPACE_PREFIX = "gpi-"
# Every object the tests create carries this label (value: the test's namespace), so leftovers can be found:
# kubectl get nodes,ns -l gpu-platform.io/integration-test
TEST_LABEL = "gpu-platform.io/integration-test"
NAMESPACE_GONE_TIMEOUT = 120.0
TOOLS_BIN = Path(__file__).resolve().parents[2] / "tools" / "bin"


def cluster_scoped_refused(what):
    """The skip reason for a cluster-scoped write on a real cluster without the opt-in."""
    return ("cluster-scoped writes are off on a real cluster: this test creates and deletes %s. Set %s=1 to allow "
            "them (only on a throwaway cluster)" % (what, CLUSTER_SCOPED_ENV))


class Cluster:
    """One test's cluster, fake or real, read and written through the kubernetes client."""

    def __init__(self, kind, kubeconfig, namespace, cache_dir, cluster_scoped=CLUSTER_SCOPED, own=False):
        self.kind = kind
        self.cluster_scoped = cluster_scoped
        self.own = own  # the session's own local control plane: CRDs may be installed on it
        self.kubeconfig = str(kubeconfig)
        self.namespace = namespace
        self.api_client = config.new_client_from_config(config_file=self.kubeconfig)
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.dyn = dynamic.DynamicClient(self.api_client, cache_file=str(cache_dir / "discovery.json"))
        self._exceptions = dynamic.exceptions
        self._cleanup = []  # cluster-scoped objects to delete at teardown: (api_version, kind, name)

    @property
    def real(self):
        return self.kind == "real"

    def __repr__(self):
        return "<Cluster %s %s>" % (self.kind, self.namespace)

    # -- reads -------------------------------------------------------------------------
    def resource(self, api_version, kind):
        return self.dyn.resources.get(api_version=api_version, kind=kind)

    def serves(self, api_version, kind):
        try:
            self.resource(api_version, kind)
        except self._exceptions.ResourceNotFoundError:
            return False
        return True

    def get(self, api_version, kind, name, namespace=None):
        """The object as a dict, or None when it does not exist."""
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except self._exceptions.NotFoundError:
            return None

    def list(self, api_version, kind, namespace=None, label_selector=None):
        result = self.resource(api_version, kind).get(namespace=namespace, label_selector=label_selector)
        return result.to_dict().get("items") or []

    def names(self, api_version, kind, namespace=None, label_selector=None):
        return sorted(o["metadata"]["name"] for o in self.list(api_version, kind, namespace, label_selector))

    def labels(self, api_version, kind, name, namespace=None):
        obj = self.get(api_version, kind, name, namespace)
        return None if obj is None else dict(obj["metadata"].get("labels") or {})

    # -- writes (set-up only; the modules do the rest) ---------------------------------------
    def create(self, obj):
        """Create ``obj``; a cluster-scoped one is deleted again at teardown."""
        meta = obj["metadata"]
        created = self.resource(obj["apiVersion"], obj["kind"]).create(body=obj, namespace=meta.get("namespace"))
        if not meta.get("namespace"):
            self.delete_at_teardown(obj["apiVersion"], obj["kind"], meta["name"])
        return created.to_dict()

    def delete_at_teardown(self, api_version, kind, name):
        """Remember a cluster-scoped object a module will create, in case the test stops before it removes it."""
        self._cleanup.append((api_version, kind, name))

    def patch_labels(self, api_version, kind, name, labels, namespace=None):
        self.resource(api_version, kind).patch(body={"metadata": {"labels": labels}}, name=name, namespace=namespace,
                                               content_type="application/merge-patch+json")

    def delete(self, api_version, kind, name, namespace=None):
        """Delete; False when it was already gone (or its kind is no longer served)."""
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace)
        except (self._exceptions.NotFoundError, self._exceptions.ResourceNotFoundError):
            return False
        return True

    # -- the fixture's own life cycle -----------------------------------------------------------
    def create_namespace(self):
        self.resource("v1", "Namespace").create(body={
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": self.namespace, "labels": {TEST_LABEL: self.namespace}}})
        if self.real:
            # A real API server refuses pods (dry-run included) until the namespace's default ServiceAccount
            # exists, which a controller creates moments later; the fake has no such controller or admission.
            deadline = time.monotonic() + 60
            while self.get("v1", "ServiceAccount", "default", self.namespace) is None and time.monotonic() < deadline:
                time.sleep(0.5)

    def teardown(self):
        for api_version, kind, name in reversed(self._cleanup):
            self.delete(api_version, kind, name)
        self.delete("v1", "Namespace", self.namespace)
        deadline = time.monotonic() + NAMESPACE_GONE_TIMEOUT
        while self.get("v1", "Namespace", self.namespace) is not None:
            if time.monotonic() > deadline:
                warnings.warn("namespace %s is still terminating after %ss; delete it by hand if it stays"
                              % (self.namespace, NAMESPACE_GONE_TIMEOUT))
                break
            time.sleep(1.0)
        self.api_client.close()

    # -- what a test may do here ------------------------------------------------------------------
    def require_cluster_scoped(self, what):
        """Skip on a real cluster unless cluster-scoped writes were allowed."""
        if self.real and not self.cluster_scoped:
            pytest.skip(cluster_scoped_refused(what))


SHARED_UPSTREAM = Path(__file__).resolve().parents[2].parent / "shared" / "upstream"
NETWORK_OPERATOR_CRDS = [SHARED_UPSTREAM / "network-operator" / name for name in (
    "nicclusterpolicies.mellanox.com.yaml", "ipoibnetworks.mellanox.com.yaml", "ippools.nv-ipam.nvidia.com.yaml")]


def install_crds(cluster, paths, timeout=60):
    """Server-side apply upstream CRD files with real kubectl and wait until each is Established."""
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig)
    args = [str(TOOLS_BIN / "kubectl"), "apply", "--server-side", "--field-manager=gpu-platform-tests"]
    for path in paths:
        args += ["-f", str(path)]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr

    def run(*kubectl_args):
        return subprocess.run([str(TOOLS_BIN / "kubectl"), *kubectl_args], env=env, capture_output=True, text=True,
                              check=False, timeout=timeout + 30)

    wait_established(run, ["-f=%s" % p for p in paths], timeout)
    cluster.dyn.resources.invalidate_cache()


def _single_kubeconfig(value, directory):
    """A path helm can take (--kubeconfig takes one file): a KUBECONFIG list is flattened with kubectl."""
    paths = [os.path.expanduser(p) for p in value.split(os.pathsep) if p]
    if len(paths) == 1:
        return paths[0]
    kubectl = TOOLS_BIN / "kubectl"
    merged = directory / "kubeconfig"
    proc = subprocess.run([str(kubectl), "config", "view", "--raw", "--flatten", "--minify"],
                          env=dict(os.environ, KUBECONFIG=os.pathsep.join(paths)), capture_output=True, text=True,
                          check=False, timeout=60)
    if proc.returncode != 0:
        pytest.skip("no real cluster: cannot merge the files of %s=%s (%s). %s"
                    % (REAL_KUBECONFIG_ENV, value, proc.stderr.strip(), HOW_TO_RUN))
    merged.write_text(proc.stdout)
    merged.chmod(0o600)
    return str(merged)


def api_version_answer(kubeconfig, timeout=10):
    """GET /version (as kubectl version does) with the kubeconfig's credentials; returns the parsed answer."""
    api_client = config.new_client_from_config(config_file=kubeconfig)
    try:
        method, url, headers, body, post = api_client.param_serialize(
            "GET", "/version", header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        response = api_client.call_api(method, url, headers, body, post, _request_timeout=timeout)
        response.read()
        if response.status != 200:
            raise ApiException(status=response.status, reason=response.reason)
        return json.loads(response.data)
    finally:
        api_client.close()


@pytest.fixture(scope="session")
def real_kubeconfig(request, tmp_path_factory):
    """The local control plane's kubeconfig; with GPU_PLATFORM_IT_KUBECONFIG, that cluster's, once its API server
    answered /version (skips, for the session, otherwise)."""
    if not REAL_KUBECONFIG:
        return request.getfixturevalue("local_cluster").kubeconfig
    path = _single_kubeconfig(REAL_KUBECONFIG, tmp_path_factory.mktemp("real-kubeconfig"))
    try:
        api_version_answer(path)
    except (ConfigException, ApiException, HTTPError, OSError, ValueError) as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0]
        pytest.skip("no real cluster: the API server of %s=%s does not answer /version (%s: %s). %s"
                    % (REAL_KUBECONFIG_ENV, REAL_KUBECONFIG, type(exc).__name__, first_line, HOW_TO_RUN))
    return path


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.real_cluster)])
def cluster(request, tmp_path):
    """A throwaway namespace on the fake API server, then on the real cluster (see the module docstring)."""
    if request.param == "fake":
        server = request.getfixturevalue("fake_api_factory")(require_namespaces=True)
        kubeconfig = server.kubeconfig
    else:
        kubeconfig = request.getfixturevalue("real_kubeconfig")
    namespace = NAMESPACE_PREFIX + secrets.token_hex(3)
    own_cluster = request.param == "real" and not REAL_KUBECONFIG  # the session's local control plane
    current = Cluster(request.param, kubeconfig, namespace, tmp_path / "it-client-cache",
                      cluster_scoped=CLUSTER_SCOPED or own_cluster, own=own_cluster)
    current.create_namespace()
    try:
        yield current
    finally:
        current.teardown()
