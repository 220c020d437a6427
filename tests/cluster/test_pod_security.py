"""The pods the platform creates meet PodSecurity restricted, as the real API server's admission judges them: each is
admitted by a server-side dry-run in a namespace that enforces restricted, and the same pod without the hardening is
refused there (so the check can fail)."""
from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import dra_driver as dra
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import objects as smoke_objects
from local_gpu_cluster.testing import kubectl

pytestmark = pytest.mark.slow
NAMESPACE = "pss-restricted"
IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def pods():
    """Every Pod (or pod template, as a Pod) the platform's restricted workloads create, by name."""
    out = {"cuda": smoke_objects.cuda_pod(NAMESPACE, IMAGE)}
    out["dra"] = [o for o in dra.example_claim(NAMESPACE, image=IMAGE) if o["kind"] == "Pod"][0]
    for obj in smoke_objects.gang_job("kai", NAMESPACE, IMAGE, replicas=2, queue="team-a"):
        if obj["kind"] == "Pod":
            out["gang-kai-" + obj["metadata"]["name"][-1]] = obj
    [volcano] = smoke_objects.gang_job("volcano", NAMESPACE, IMAGE, replicas=2)
    template = volcano["spec"]["tasks"][0]["template"]
    out["gang-volcano"] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "gang-volcano", "namespace": NAMESPACE,
                                        "labels": template["metadata"]["labels"]},
                           "spec": template["spec"]}
    return out


def unhardened(pod):
    bare = copy.deepcopy(pod)
    bare["spec"].pop("securityContext", None)
    bare["spec"].pop("automountServiceAccountToken", None)
    for container in bare["spec"]["containers"]:
        container.pop("securityContext", None)
    return bare


def dry_run(cluster, pod):
    return kubectl(cluster, "create", "--dry-run=server", "-f", "-", "-o", "json", stdin=json.dumps(pod), check=False)


@pytest.fixture(scope="module")
def restricted_namespace(local_cluster):
    """A namespace that enforces restricted, removed afterwards (the session's cluster is shared)."""
    kubectl(local_cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "restricted",
                                                   "pod-security.kubernetes.io/enforce-version": "latest"}}}))
    yield local_cluster
    kubectl(local_cluster, "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", "--timeout=120s",
            check=False)


@pytest.mark.parametrize("name", sorted(pods()))
def test_our_pod_is_admitted_under_restricted(restricted_namespace, name):
    proc = dry_run(restricted_namespace, pods()[name])
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr


def test_the_same_pod_unhardened_is_refused(restricted_namespace):
    proc = dry_run(restricted_namespace, unhardened(pods()["cuda"]))
    assert proc.returncode != 0 and 'violates PodSecurity "restricted' in proc.stderr, proc.stderr
