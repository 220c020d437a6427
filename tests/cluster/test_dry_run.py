"""What we render, judged by the real API server: ``kubectl apply --server-side --dry-run=server``.

The GitOps bundle site.yml renders (render mode, the offline default inventory's choices) and its smoke
Jobs go to the local control plane as a reconciler would send them: the CRDs of every kind they use
installed first (the upstream CRDs in ../shared/upstream and local_gpu_cluster/fixture_crds, as the charts carry them),
the bundle's Namespaces applied for real (so PodSecurity admission judges the pods in them under the
namespace's own level), then every other object dry-run on the server: structural schemas, defaulting,
field validation (Strict) and admission, none of which our fake API server can decide. A kind whose CRD we
do not have is not proven and is reported as skipped with its name. The dry-runs go with a credential of their own
(``RUN_USER``), and the API server's audit log shows they wrote nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster.audit import describe
from tests.conftest import SHARED
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR
from local_gpu_cluster.testing import ROOT, RUN_USER, delete_crds, wait_established

KUBECTL = ROOT / "tools" / "bin" / "kubectl"
DEMO_INVENTORY = ROOT / "inventories" / "local"
pytestmark = pytest.mark.slow
UNPROVEN = []  # filled by the dry-run test, reported by the next one


def kubectl(kubeconfig, home, *args, stdin=None):
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=str(home))
    return subprocess.run([str(KUBECTL), *args], input=stdin, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def crd_files():
    return sorted(Path(SHARED, "upstream").rglob("*.yaml")) + sorted(FIXTURE_CRDS_DIR.glob("*.yaml"))


def served_kinds(paths):
    """(group, kind) -> CRD file, for every CustomResourceDefinition among ``paths`` (the newest file wins)."""
    kinds = {}
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                kinds[(doc["spec"]["group"], doc["spec"]["names"]["kind"])] = path
    return kinds


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """site.yml rendered with the offline inventory's choices into a fresh folder (as `make demo` does)."""
    out = tmp_path_factory.mktemp("bundle") / "platform"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), HOME=str(out.parent / "home"))
    env.pop("KUBECONFIG", None)
    proc = subprocess.run([str(Path(os.sys.executable).parent / "ansible-playbook"), "-i", str(DEMO_INVENTORY),
                           str(ROOT / "site.yml"), "-e", "gpu_platform_render_to=%s" % out],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def crd_cluster(local_cluster, tmp_path_factory):
    """The session's cluster with every CRD we have installed; the ones this module added go again after it."""
    home = tmp_path_factory.mktemp("kubectl-home")
    files = [p for p in crd_files() if "CustomResourceDefinition" in p.read_text()[:2000]]
    listed = kubectl(local_cluster.kubeconfig, home, "get", "crd", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    before = {crd["metadata"]["name"] for crd in json.loads(listed.stdout)["items"]}
    args = ["apply", "--server-side", "--field-manager=gpu-platform-tests"]
    for path in files:
        args += ["-f", str(path)]
    proc = kubectl(local_cluster.kubeconfig, home, *args)
    assert proc.returncode == 0, proc.stderr
    added = sorted({line.split()[0].split("/", 1)[1] for line in proc.stdout.splitlines() if line.strip()} - before)
    if added:
        wait_established(lambda *a: kubectl(local_cluster.kubeconfig, home, *a), ["crd/" + name for name in added])
    yield local_cluster, home, served_kinds(files)
    if added:  # gone before the next test, whose charts install their own CRDs (helm skips CRDs that exist)
        failed = delete_crds(lambda *a: kubectl(local_cluster.kubeconfig, home, *a), added)
        assert failed is None, failed.stderr


def assert_nothing_written(cluster, mark, names):
    """The audit log's verdict on the dry-runs sent with the run's credential since ``mark``: no write, and a
    server-side dry-run of each object named in ``names`` (so the credential was the one used)."""
    written = cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], "the server-side dry-runs wrote:\n" + describe(written)
    dry = {r.name for r in cluster.audit.writes(mark, user=RUN_USER, dry_run=True)}
    assert set(names) <= dry, "no dry-run of %s in the audit log" % sorted(set(names) - dry)


def objects(folder):
    """(file name, object) for every Kubernetes object the folder's kustomization.yaml lists; at the bundle's root,
    those of the unit folders its Flux Kustomizations apply (but the smoke tests, read on their own)."""
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    for name in listed:
        if (folder / name).is_dir():
            continue
        for doc in yaml.safe_load_all((folder / name).read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Kustomization" and "fluxcd" in doc.get("apiVersion", ""):
                unit = doc["spec"]["path"].rsplit("/", 1)[1]
                if unit != "smoke":
                    yield from objects(folder / unit)
            elif isinstance(doc, dict) and doc.get("apiVersion"):
                yield name, doc


def test_every_rendered_object_passes_a_server_side_dry_run(crd_cluster, rendered):
    cluster, home, kinds = crd_cluster
    docs = list(objects(rendered)) + list(objects(rendered / "smoke"))
    assert len(docs) > 30, "the bundle is too small to be the whole platform: %s" % [n for n, d in docs]
    namespaces = [doc for name, doc in docs if doc["kind"] == "Namespace"]
    created, tried = [], []
    run = cluster.kubeconfig_for(RUN_USER)  # the dry-runs' own credential: the audit log judges what they wrote
    try:
        for namespace in namespaces:  # as a reconciler does: Namespaces first, for real
            proc = kubectl(cluster.kubeconfig, home, "apply", "--server-side", "--field-manager=gpu-platform-tests",
                           "-f", "-", stdin=json.dumps(namespace))
            assert proc.returncode == 0, proc.stderr
            created.append(namespace["metadata"]["name"])
        unproven, refused, passed = [], [], []
        mark = cluster.audit.mark()
        for name, doc in docs:
            if doc["kind"] == "Namespace":
                continue
            group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else ""
            builtin = group in ("", "apps", "batch", "rbac.authorization.k8s.io", "resource.k8s.io")
            if not builtin and (group, doc["kind"]) not in kinds:
                unproven.append("%s (%s %s: no CRD of it here)" % (name, doc["apiVersion"], doc["kind"]))
                continue
            proc = kubectl(run, home, "apply", "--server-side", "--dry-run=server",
                           "--field-manager=gpu-platform", "-f", "-", stdin=json.dumps(doc))
            tried.append(doc["metadata"]["name"])
            (passed if proc.returncode == 0 else refused).append("%s: %s" % (name, proc.stderr.strip()))
        assert refused == [], "\n".join(refused)
        assert len(passed) > 30
        assert_nothing_written(cluster, mark, tried)
        UNPROVEN[:] = unproven
    finally:
        if created:
            kubectl(cluster.kubeconfig, home, "delete", "namespace", "--wait=false", *created)


def test_kinds_whose_crd_is_not_here_are_reported_as_not_proven(crd_cluster, rendered):
    """The objects the dry-run above could not judge (no CRD of their kind here): skipped, with their names."""
    if UNPROVEN:
        pytest.skip("not proven on a real API server (their CRDs are not in ../shared/upstream): %s"
                    % "; ".join(UNPROVEN))


def pod_templates(docs):
    """(name, pod spec) of every pod a smoke object makes: a Job's template, each task of a Volcano Job."""
    for doc in docs:
        if doc["kind"] != "Job":
            continue
        if doc["apiVersion"] == "batch/v1":
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]
        else:
            for task in doc["spec"]["tasks"]:
                yield "%s-%s" % (doc["metadata"]["name"], task["name"]), task["template"]["spec"]


def test_smoke_pods_are_admitted_under_their_namespaces_podsecurity_level(crd_cluster, rendered):
    """The smoke Jobs' pod templates, dry-run as Pods in a namespace enforcing the bundle's level for it."""
    cluster, home, kinds = crd_cluster
    smoke = dict(objects(rendered / "smoke"))
    namespace = next(doc for doc in smoke.values() if doc["kind"] == "Namespace")
    level = namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
    assert level in ("baseline", "restricted", "privileged")
    test_ns = "psa-" + namespace["metadata"]["name"]
    proc = kubectl(cluster.kubeconfig, home, "create", "namespace", test_ns)
    assert proc.returncode == 0, proc.stderr
    try:
        kubectl(cluster.kubeconfig, home, "label", "namespace", test_ns, "pod-security.kubernetes.io/enforce=" + level)
        templates = list(pod_templates(smoke.values()))
        assert len(templates) >= len([d for d in smoke.values() if d["kind"] == "Job"])
        refused = []
        run, mark = cluster.kubeconfig_for(RUN_USER), cluster.audit.mark()
        for name, spec in templates:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name[:63], "namespace": test_ns},
                   "spec": spec}
            proc = kubectl(run, home, "apply", "--server-side", "--dry-run=server", "-f", "-",
                           stdin=json.dumps(pod))
            if proc.returncode != 0:
                refused.append("%s: %s" % (name, proc.stderr.strip()))
        assert refused == [], "\n".join(refused)
        assert_nothing_written(cluster, mark, [name[:63] for name, spec in templates])
    finally:
        kubectl(cluster.kubeconfig, home, "delete", "namespace", "--wait=false", test_ns)
