"""helm_pinned_release with a bearer token (AWX's Kubernetes credential: host, token and CA in K8S_AUTH_*) against
the real API server: helm reaches the cluster through a 0600 kubeconfig in the module's private tmpdir, and the token is never on
any process's command line, nor in the task's result."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from local_gpu_cluster.charts import DEMO_CHART_DIR
from local_gpu_cluster.testing import ROOT, CommandLines, api_server_and_ca, kubectl
from local_gpu_cluster.testing import service_account_token as shared_token

pytestmark = pytest.mark.slow
NAMESPACE = "helm-token-test"


@pytest.fixture
def token_namespace(local_cluster):
    """The test's namespace, ServiceAccount and binding, removed afterwards with the release in them: the session's
    cluster is shared, and later tests (site.yml's uninstall) check that no helm release is left."""
    yield local_cluster
    kubectl(local_cluster, "delete", "clusterrolebinding", "helm-token-test-deployer", "--ignore-not-found", check=False)
    kubectl(local_cluster, "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", "--timeout=120s",
            check=False)


def service_account_token(cluster):
    return shared_token(cluster, NAMESPACE, "helm-token-test-deployer")


def server_and_ca(cluster, folder):
    server, ca_pem = api_server_and_ca(cluster)
    ca = folder / "ca.crt"
    ca.write_text(ca_pem)
    return server, str(ca)


def run_module(cluster, host, token, ca):
    args = {"release_name": "token-demo", "release_namespace": NAMESPACE, "chart_ref": str(DEMO_CHART_DIR),
            "chart_version": "1.0.0", "wait": True, "release_values": {"replicaCount": 1}}
    # As AWX's "OpenShift or Kubernetes API Bearer Token" credential injects them: the options' env fallbacks.
    env = dict(os.environ, K8S_AUTH_HOST=host, K8S_AUTH_API_KEY=token, K8S_AUTH_SSL_CA_CERT=ca, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", PATH="%s:%s" % (ROOT / "tools" / "bin", os.environ["PATH"]))
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG"):
        env.pop(name, None)
    command = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
               "gpu_platform.cluster.helm_pinned_release", "-a", json.dumps(args)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False, cwd=str(ROOT))
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return proc, result


def test_a_token_reaches_helm_in_a_private_file_and_never_on_a_command_line(token_namespace, tmp_path):
    local_cluster = token_namespace
    token = service_account_token(local_cluster)
    host, ca = server_and_ca(local_cluster, tmp_path)
    watcher = CommandLines()
    watcher.start()
    try:
        first, result = run_module(local_cluster, host, token, ca)
        second, again = run_module(local_cluster, host, token, ca)
    finally:
        watcher.done.set()
        watcher.join()
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is True and again["changed"] is False, "installed once, then nothing to do"
    helm_lines = [line for line in watcher.seen if "helm" in line.split(" ")[0]]
    assert any(" upgrade " in line or " install " in line for line in helm_lines), "the sampler saw helm run"
    assert all("--kubeconfig" in line for line in helm_lines if " list " in line or " upgrade " in line)
    assert [line for line in watcher.seen if token in line] == [], "the token on a command line"
    for output in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert token not in output
    listed = json.loads(kubectl(local_cluster, "-n", NAMESPACE, "get", "deployments", "-o", "json").stdout)["items"]
    assert [d["metadata"]["name"] for d in listed], "the release's Deployment is on the cluster"
