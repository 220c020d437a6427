"""The real Flux controllers on the local control plane (``up --gitops``): a folder in git converges and is kept so.

A bare repository on the cluster's git server gets a folder with a Namespace, a HelmRepository (the cluster's
loopback chart repository), a HelmRelease of one of its charts (kueue: its Deployment is made Available by the
real controllers and KWOK) and two ConfigMaps; a GitRepository and a Kustomization (prune, wait) in flux-system
point at it. What must show: source-controller fetching over smart HTTP, kustomize-controller applying and
waiting, helm-controller releasing (helm's release record in the namespace), a ConfigMap deleted by hand put
back, and a second commit applied (a ConfigMap changed, one removed from git pruned).
"""
from __future__ import annotations

import json
import socket
import time
from types import SimpleNamespace

import pytest
import yaml

from local_gpu_cluster.processes import alive
from tests.flux import RESOURCE, Worktree, get, kubectl, wait_for
from tests.gitops_checks import is_ready
from local_gpu_cluster.testing import LocalCluster, cluster_command

NAMESPACE = "gitops-demo"
pytestmark = pytest.mark.slow


def configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE}, "data": data}


def platform_folder(chart_repo_url):
    """The folder Flux applies: the namespace, the chart source, the release, two ConfigMaps."""
    return {
        "platform/namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        "platform/helmrepository.yaml": {
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": "local-charts", "namespace": NAMESPACE},
            "spec": {"url": chart_repo_url, "interval": "5m"}},
        "platform/helmrelease.yaml": {
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "kueue", "namespace": NAMESPACE},
            "spec": {"interval": "5m", "timeout": "3m",
                     "chart": {"spec": {"chart": "kueue", "version": "0.19.2", "interval": "5m",
                                        "sourceRef": {"kind": "HelmRepository", "name": "local-charts"}}},
                     "values": {"replicas": 1}}},
        "platform/settings.yaml": configmap("platform-settings", {"revision": "1"}),
        "platform/obsolete.yaml": configmap("platform-obsolete", {"gone": "after the second commit"}),
        "platform/kustomization.yaml": {
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["namespace.yaml", "helmrepository.yaml", "helmrelease.yaml", "settings.yaml", "obsolete.yaml"]},
    }


def flux_objects(url):
    """What points Flux at the repository: a GitRepository (polled every 10 s) and a Kustomization (prune, wait)."""
    return [
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
         "metadata": {"name": "platform", "namespace": "flux-system"},
         "spec": {"url": url, "interval": "10s", "ref": {"branch": "main"}}},
        {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
         "metadata": {"name": "platform", "namespace": "flux-system"},
         "spec": {"interval": "10m", "retryInterval": "10s", "timeout": "3m", "path": "./platform", "prune": True,
                  "wait": True, "sourceRef": {"kind": "GitRepository", "name": "platform"}}},
    ]


def applied(revision):
    return lambda obj: is_ready(obj) and obj["status"].get("lastAppliedRevision") == revision


@pytest.fixture(scope="module")
def converged(local_cluster_gitops, tmp_path_factory):
    """The folder pushed, Flux pointed at it, and both the Kustomization and the HelmRelease Ready."""
    cluster = local_cluster_gitops
    worktree = Worktree(tmp_path_factory.mktemp("gitops") / "work", cluster.git_repo("platform"))
    revision = worktree.commit_and_push(platform_folder(cluster.chart_repo_url), "the platform, first cut")
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(flux_objects(worktree.url)))
    wait_for(cluster, "GitRepository", "platform", "flux-system",
             lambda obj: is_ready(obj) and obj["status"].get("artifact", {}).get("revision") == revision,
             "Ready with the pushed revision")
    wait_for(cluster, "Kustomization", "platform", "flux-system", applied(revision), "Ready at %s" % revision)
    return SimpleNamespace(cluster=cluster, worktree=worktree, revision=revision)


def test_the_folder_converges_and_helm_controller_releases_the_chart(converged):
    cluster = converged.cluster
    release = wait_for(cluster, "HelmRelease", "kueue", NAMESPACE, is_ready, "Ready")
    assert release["status"]["history"][0]["chartVersion"] == "0.19.2"
    secrets = json.loads(kubectl(cluster, "-n", NAMESPACE, "get", "secrets", "-l", "owner=helm,name=kueue",
                                 "-o", "json").stdout)["items"]
    assert [s["metadata"]["labels"]["status"] for s in secrets] == ["deployed"], secrets
    assert secrets[0]["type"] == "helm.sh/release.v1"
    deployment = json.loads(kubectl(cluster, "-n", NAMESPACE, "get", "deployment", "kueue-controller-manager",
                                    "-o", "json").stdout)
    assert deployment["status"].get("availableReplicas") == 1, deployment["status"]
    assert get(cluster, "ConfigMap", "platform-settings", NAMESPACE)["data"] == {"revision": "1"}
    chart_source = get(cluster, "HelmRepository", "local-charts", NAMESPACE)
    assert is_ready(chart_source) and chart_source["spec"]["url"] == cluster.chart_repo_url


def test_a_configmap_deleted_by_hand_is_put_back(converged):
    cluster = converged.cluster
    kubectl(cluster, "-n", NAMESPACE, "delete", "configmap", "platform-settings")
    assert get(cluster, "ConfigMap", "platform-settings", NAMESPACE) is None
    token = "restore-%d" % time.time_ns()
    kubectl(cluster, "-n", "flux-system", "annotate", "--overwrite", RESOURCE["Kustomization"], "platform",
            "reconcile.fluxcd.io/requestedAt=" + token)
    wait_for(cluster, "Kustomization", "platform", "flux-system",
             lambda obj: is_ready(obj) and obj["status"].get("lastHandledReconcileAt") == token,
             "reconciled on request (%s)" % token, timeout=120)
    restored = wait_for(cluster, "ConfigMap", "platform-settings", NAMESPACE, lambda obj: True, "restored", timeout=30)
    assert restored["data"] == {"revision": "1"}
    assert restored["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == "platform"


def test_a_second_commit_is_applied_and_what_left_git_is_pruned(converged):
    cluster, worktree = converged.cluster, converged.worktree
    assert get(cluster, "ConfigMap", "platform-obsolete", NAMESPACE) is not None
    folder = platform_folder(cluster.chart_repo_url)
    folder["platform/kustomization.yaml"]["resources"].remove("obsolete.yaml")
    revision = worktree.commit_and_push({"platform/settings.yaml": configmap("platform-settings", {"revision": "2"}),
                                         "platform/obsolete.yaml": None,
                                         "platform/kustomization.yaml": folder["platform/kustomization.yaml"]},
                                        "the platform, second cut")
    assert revision != converged.revision
    kubectl(cluster, "-n", "flux-system", "annotate", "--overwrite", RESOURCE["GitRepository"], "platform",
            "reconcile.fluxcd.io/requestedAt=push-%d" % time.time_ns())
    wait_for(cluster, "Kustomization", "platform", "flux-system", applied(revision), "Ready at %s" % revision)
    assert get(cluster, "ConfigMap", "platform-settings", NAMESPACE)["data"] == {"revision": "2"}
    assert get(cluster, "ConfigMap", "platform-obsolete", NAMESPACE) is None
    assert is_ready(get(cluster, "HelmRelease", "kueue", NAMESPACE))


def test_gitops_start_is_recorded_a_second_start_changes_nothing_and_down_leaves_nothing(tmp_path):
    cluster = LocalCluster(tmp_path / "gitops-lifecycle")
    env = dict(cluster.env(), CLUSTER_GPU_NODES="1")
    env.pop("CLUSTER_GITOPS", None)
    plain = cluster_command("up", "--bare", env=env)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    try:
        refused = cluster_command("up", "--gitops", env=env)
        assert refused.returncode == 1 and "runs without the Flux controllers" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        cluster_command("down", env=env)
    started = cluster_command("up", "--bare", env=dict(env, CLUSTER_GITOPS="1"))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        state = cluster.state
        records, ports = state["components"], state["ports"]
        assert list(records)[-4:] == ["git-server", "source-controller", "kustomize-controller", "helm-controller"]
        assert state["gitops"]["git_url"] == "http://127.0.0.1:%d" % ports["git-server"]
        assert state["gitops"]["pins"] == {"source-controller": "v1.9.1", "kustomize-controller": "v1.9.1",
                                           "helm-controller": "v1.6.4"}
        source = records["source-controller"]["argv"]
        assert "--storage-adv-addr=127.0.0.1:%d" % ports["source-controller-storage"] in source
        for name in ("source-controller", "kustomize-controller", "helm-controller"):
            argv = records[name]["argv"]
            assert {"--enable-leader-election=false", "--watch-all-namespaces=true", "--events-addr=",
                    "--health-addr=127.0.0.1:%d" % ports[name + "-health"]} <= set(argv), argv
            assert records[name]["log"] == str(cluster.logs / ("%s.log" % name))
        crds = json.loads(kubectl(cluster, "get", "crd", "-o", "json").stdout)["items"]
        assert {c["metadata"]["name"] for c in crds} >= {
            "gitrepositories.source.toolkit.fluxcd.io", "helmrepositories.source.toolkit.fluxcd.io",
            "helmcharts.source.toolkit.fluxcd.io", "ocirepositories.source.toolkit.fluxcd.io",
            "buckets.source.toolkit.fluxcd.io", "externalartifacts.source.toolkit.fluxcd.io",
            "kustomizations.kustomize.toolkit.fluxcd.io", "helmreleases.helm.toolkit.fluxcd.io"}
        for args in (("up", "--gitops"), ("up",)):
            again = cluster_command(*args, env=env)
            assert again.returncode == 0 and "already running" in again.stdout, again.stderr
            assert {n: r["pid"] for n, r in cluster.state["components"].items()} == {n: r["pid"] for n, r in records.items()}
        status = cluster_command("status", env=env)
        assert status.returncode == 0 and state["gitops"]["git_url"] in status.stdout, status.stdout + status.stderr
    finally:
        down = cluster_command("down", env=env)
    assert down.returncode == 0, down.stderr
    assert [name for name, record in records.items() if alive(record)] == []
    for name, port in ports.items():
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, "%s still listens on %d" % (name, port)
    assert not (cluster.dir / "gitops").exists() and not (cluster.dir / "etcd").exists()
