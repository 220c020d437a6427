"""The Argo CD bundle, wave by wave, on the real API server: Argo CD's sync played against the local control plane.

Argo CD's controller cannot run here, so what it would do with the bundle is played against the session's
``local_cluster`` (a real kube-apiserver): site.yml renders the platform of inventories/cluster in the argocd format,
the bundle is built as Argo CD builds it (kustomize, through ``kubectl kustomize``: each object carries its unit's
sync wave and sync options), and its waves go in increasing order. In each wave every object first passes
``kubectl apply --server-side --dry-run=server``, then the wave is applied for real: each ``Application`` is
admitted by the upstream Application CRD and synced as Argo CD would (its namespace with
``managedNamespaceMetadata``, then real helm 3 installs its chart from the loopback repository and waits), every
other object is applied server-side with Argo CD's field manager. Before each wave, the custom resources whose CRD
comes with a chart of that wave or a later one must fail the dry-run with "no matches for kind": the order is
needed, not only sufficient. The static part checks the waves against the units' dependencies
(``bundle.dependencies``) and ``SkipDryRunOnMissingResource=true`` on every unit of custom resources.

Everything installed here goes again at the end, checked against a snapshot taken before (releases, namespaces,
CRDs, cluster-scoped objects, node labels): the session's cluster is shared, and tests/cluster/test_site_on_cluster.py
installs the same charts after this module."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from tests.cluster.argocd_cluster import Bundle, Cluster, describe, group_of
from tests.conftest import SHARED
from local_gpu_cluster.charts import helm_env
from local_gpu_cluster.testing import ROOT, delete_crds
from tests.playbooks.conftest import site_env
from tests.schema.bundle_order import chart_groups

pytestmark = pytest.mark.slow
INVENTORY = ROOT / "inventories" / "cluster"
APPLICATION_CRD = Path(SHARED) / "upstream" / "argocd" / "applications.argoproj.io.yaml"
ARGOCD_NAMESPACE = "argocd"
SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"
NO_MATCH = ("no matches for kind", "ensure CRDs are installed first")
HELM_TIMEOUT = "5m"
GONE_TIMEOUT = 180  # seconds the namespaces we made have to be deleted
OPERATOR_CRD_TIMEOUT = 180  # seconds an operator has to serve the kinds it installs (Argo CD's sync retries)


@pytest.fixture(scope="module")
def cluster(local_cluster, tmp_path_factory):
    return Cluster(local_cluster, tmp_path_factory.mktemp("argocd-waves"))


@pytest.fixture(scope="module")
def argocd_bundle(local_cluster, cluster, tmp_path_factory):
    """site.yml rendered in the argocd format with inventories/cluster's choices (chart repository: the cluster's)."""
    out = tmp_path_factory.mktemp("argocd-bundle") / "platform"
    env = dict(site_env(helm_env(out.parent / "helm-env")), CLUSTER_DIR=str(local_cluster.dir))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(INVENTORY),
                           str(ROOT / "site.yml"), "-e", "gpu_platform_render_format=argocd",
                           "-e", "gpu_platform_render_to=%s" % out],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return Bundle(out, cluster)


def test_waves_rise_along_the_units_dependencies(argocd_bundle):
    """Static: the root lists the unit folders, each unit's wave is above the waves of the units it depends on, and
    every unit of custom resources skips the dry-run of kinds a chart of an earlier wave brings."""
    b = argocd_bundle
    assert b.units == [u for u in bundle.UNITS if u in b.units], "the root lists unit folders, in the platform's order"
    assert {"network-operator", "network-config", "gpu-operator", "scheduling", "scheduling-config", "smoke"} <= set(b.units)
    assert set(b.waves) == set(b.units), "every unit has a sync wave: %s" % sorted(set(b.units) - set(b.waves))
    assert b.waves == bundle.waves(b.units)
    deps = bundle.dependencies(b.units)
    problems = ["%s (wave %d) depends on %s (wave %d)" % (u, b.waves[u], d, b.waves[d])
                for u in b.units for d in deps[u] if b.waves[d] >= b.waves[u]]
    assert problems == [], "\n".join(problems)
    assert any(deps.values()), "the waves were checked against no dependency at all"
    direct = ["%s (wave %d) needs %s (wave %d)" % (u, b.waves[u], d, b.waves[d])
              for u in b.units for d in bundle.UNITS[u][0] if d in b.waves and b.waves[d] >= b.waves[u]]
    assert direct == [], "\n".join(direct)

    for unit in b.units:
        options = b.options[unit].split(",")
        if bundle.UNITS[unit][1]:
            assert SKIP_DRY_RUN in options and "ServerSideApply=true" in options, (unit, b.options[unit])
        else:  # Applications, ConfigMaps, a DaemonSet: kinds served before the sync starts, never skipped
            assert SKIP_DRY_RUN not in options, (unit, b.options[unit])
        listed = b.kustomizations[unit]["resources"]
        assert not [f for f in listed if f.endswith("-node-labels.yaml")], "node label patch lists are not applied"

    # kustomize put each unit's annotations on its objects, and the root's build is the units' builds together.
    assert sorted(describe(o) for o in b.built) == sorted(b.unit_of)
    for obj in b.built:
        unit = b.unit_of[describe(obj)]
        annotations = obj["metadata"]["annotations"]
        assert annotations[bundle.SYNC_WAVE] == str(b.waves[unit]), describe(obj)
        assert annotations.get(bundle.SYNC_OPTIONS, "") == b.options[unit], describe(obj)

    # Every custom resource whose CRD a chart of the platform brings is in a unit of custom resources, in a later
    # wave than the chart's Application.
    groups, chart_wave = chart_groups(), b.chart_waves()
    crs = [(b.unit_of[describe(o)], o) for o in b.built if group_of(o) in groups]
    assert {u for u, o in crs} >= {"network-config", "scheduling-config", "smoke"}
    wrong = ["%s in %s (wave %d): its chart %s is in wave %s" % (describe(o), u, b.waves[u], groups[group_of(o)],
                                                                 chart_wave.get(groups[group_of(o)]))
             for u, o in crs if not bundle.UNITS[u][1] or chart_wave.get(groups[group_of(o)], 1 << 30) >= b.waves[u]]
    assert wrong == [], "\n".join(wrong)


class ArgoPlay:
    """Argo CD's part, played: the Application CRD and the argocd namespace, the waves applied, then all removed."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.applied = []  # objects applied with kubectl, in order
        self.releases = []  # (release, namespace) installed with helm, in order
        self.namespaces = [ARGOCD_NAMESPACE]  # namespaces made here (checked against the snapshot before deleting)

    def start(self):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGOCD_NAMESPACE}}
        self.cluster.apply(namespace)
        proc = self.cluster.kubectl("apply", "--server-side", "--field-manager=gpu-platform-tests",
                                    "-f", str(APPLICATION_CRD))
        assert proc.returncode == 0, proc.stderr
        deadline = time.monotonic() + 60
        while not any(c["type"] == "Established" and c["status"] == "True" for c in (
                self.cluster.get("crd", "applications.argoproj.io").get("status") or {}).get("conditions") or []):
            assert time.monotonic() < deadline, "the Application CRD is not Established after 60 s"
            time.sleep(0.5)

    def apply(self, obj):
        self.applied.append(obj)
        self.cluster.apply(obj)
        if obj["kind"] == "Namespace":
            self.namespaces.append(obj["metadata"]["name"])

    def sync_application(self, app):
        """What Argo CD's sync of the child Application does: the destination namespace made with its
        managedNamespaceMetadata (a PreSync task, before the chart's objects), then the chart at the pinned version
        with the Application's values, waited for (the next wave starts when this one is healthy)."""
        spec = app["spec"]
        source, namespace, policy = spec["source"], spec["destination"]["namespace"], spec["syncPolicy"]
        assert "CreateNamespace=true" in policy["syncOptions"], describe(app)
        labels = (policy.get("managedNamespaceMetadata") or {}).get("labels") or {}
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}})
        release = source["helm"].get("releaseName") or app["metadata"]["name"]
        values = self.cluster.home / ("values-%s.yaml" % release)
        values.write_text(json.dumps(source["helm"].get("valuesObject") or {}))
        if "://" in source["repoURL"]:
            chart = [source["chart"], "--repo", source["repoURL"]]
        else:  # Argo CD's Helm OCI form: registry/path without the scheme, the chart's name apart
            chart = ["oci://%s/%s" % (source["repoURL"], source["chart"])]
        self.releases.append((release, namespace))
        proc = self.cluster.helm("upgrade", "--install", release, *chart, "--version", source["targetRevision"],
                                 "-n", namespace, "--create-namespace", "-f", str(values), "--wait",
                                 "--timeout", HELM_TIMEOUT)
        assert proc.returncode == 0, "helm install of %s failed:\n%s%s" % (describe(app), proc.stdout, proc.stderr)
        live = self.cluster.get("namespace", namespace)["metadata"].get("labels") or {}
        assert {k: live.get(k) for k in labels} == labels, (namespace, live)

    def clean_up(self, before):
        """Remove everything made here, newest first; returns what could not be removed or differs from before."""
        problems = []
        kubectl = self.cluster.kubectl
        for obj in reversed(self.applied):
            if obj["kind"] not in ("Namespace", "Application"):
                proc = kubectl("delete", "--ignore-not-found", "--wait=true", "--timeout=120s", "-f", "-",
                               stdin=json.dumps(obj))
                if proc.returncode != 0:
                    problems.append("deleting %s: %s" % (describe(obj), proc.stderr.strip()))
        for release, namespace in reversed(self.releases):
            proc = self.cluster.helm("uninstall", release, "-n", namespace, "--ignore-not-found", "--wait",
                                     "--timeout", HELM_TIMEOUT)
            if proc.returncode != 0:
                problems.append("helm uninstall %s -n %s: %s" % (release, namespace, proc.stderr.strip()))
        existed = {o.split("/", 1)[1] for o in before["objects"] if o.startswith("Namespace/")}
        ours = sorted(set(self.namespaces) - existed)
        if ours:
            kubectl("delete", "namespace", "--ignore-not-found", "--wait=false", *ours)
            deadline = time.monotonic() + GONE_TIMEOUT
            while True:
                left = [n for n in ours if kubectl("get", "namespace", n).returncode == 0]
                if not left or time.monotonic() > deadline:
                    break
                time.sleep(2)
            for name in left:
                status = self.cluster.get("namespace", name).get("status")
                problems.append("namespace %s not deleted after %d s: %s" % (name, GONE_TIMEOUT, json.dumps(status)))
        crds = {o.split("/", 1)[1] for o in before["objects"] if o.startswith("CustomResourceDefinition/")}
        now = {crd["metadata"]["name"] for crd in self.cluster.get("crd")["items"]}
        added = sorted(now - crds)  # the charts' CRDs (helm leaves them) and the Application CRD
        if added:
            failed = delete_crds(kubectl, added)
            if failed is not None:
                problems.append("deleting the CRDs %s: %s" % (", ".join(added), failed.stderr.strip()))
        # The simulated operators label the GPU nodes (the driver upgrade state, for one) as the real ones do; the
        # labels go back to what they were before this module.
        for node in self.cluster.get("nodes")["items"]:
            name, labels = node["metadata"]["name"], node["metadata"].get("labels") or {}
            old = before["node labels"].get(name, {})
            changes = ["%s-" % k for k in labels if k not in old]
            changes += ["%s=%s" % (k, v) for k, v in old.items() if labels.get(k) != v]
            if changes:
                proc = kubectl("label", "node", name, "--overwrite", *changes)
                if proc.returncode != 0:
                    problems.append("restoring the labels of node %s: %s" % (name, proc.stderr.strip()))
        after = self.cluster.snapshot()
        for what in before:
            if after[what] != before[what]:
                if isinstance(before[what], dict):
                    diff = {k: v for k, v in after[what].items() if before[what].get(k) != v}
                else:
                    diff = {"left": sorted(set(after[what]) - set(before[what])),
                            "gone": sorted(set(before[what]) - set(after[what]))}
                problems.append("%s differ from before this module: %s" % (what, diff))
        return problems


@pytest.fixture(scope="module")
def argo_play(cluster):
    """The cluster as Argo CD would find it (its Application CRD, the argocd namespace), and as it was afterwards."""
    before = cluster.snapshot()
    served = [c for c in before["objects"] if c.startswith("CustomResourceDefinition/")
              and c.split("/", 1)[1].split(".", 1)[1] in chart_groups()]
    assert served == [], "the shared cluster already serves CRDs the charts bring (left by another test?): %s" % served
    play = ArgoPlay(cluster)
    try:
        play.start()
        yield play
    finally:
        problems = play.clean_up(before)
        assert problems == [], "\n".join(problems)


def test_each_wave_passes_a_server_side_dry_run_once_the_earlier_waves_are_applied(argo_play, argocd_bundle, cluster):
    """Wave by wave: the custom resources whose chart is not installed yet fail the dry-run ("no matches for kind");
    every object of the wave passes it; then the wave is applied for real (Applications admitted and synced)."""
    b = argocd_bundle
    groups, chart_wave = chart_groups(), b.chart_waves()
    waves = b.by_wave()
    assert list(waves) == sorted(set(b.waves.values())), "the objects carry the units' waves"
    controls, problems, applications = [], [], []
    for wave, objs in waves.items():
        cluster.forget_discovery()
        # Negative control: a custom resource of a later wave, whose chart is in this wave or a later one, cannot
        # be judged yet (with Argo CD: SkipDryRunOnMissingResource); without the waves it would fail.
        for later, later_objs in waves.items():
            for obj in later_objs:
                chart = groups.get(group_of(obj))
                if later <= wave or chart is None or chart_wave.get(chart, -1) < wave:
                    continue
                proc = cluster.dry_run(obj)
                if proc.returncode == 0 or not all(text in proc.stderr for text in NO_MATCH):
                    problems.append("before wave %d (chart %s in wave %s): %s in wave %d did not fail with "
                                    "'no matches for kind': rc %d %s" % (wave, chart, chart_wave.get(chart),
                                                                         describe(obj), later, proc.returncode,
                                                                         proc.stderr.strip()))
                else:
                    controls.append((wave, b.unit_of[describe(obj)], describe(obj)))
        assert problems == [], "\n".join(problems)

        # (a) Every object of the wave passes a server-side dry-run. Argo CD applies a wave's Namespaces before its
        # other objects (kind order); the API server refuses even a dry-run in a namespace that does not exist yet
        # (NamespaceLifecycle admission), so the wave's Namespaces pass theirs and are applied first.
        namespaces = [o for o in objs if o["kind"] == "Namespace"]
        rest = [o for o in objs if o["kind"] != "Namespace"]
        for group in (namespaces, rest):
            refused = []
            for obj in group:
                proc = cluster.dry_run(obj)
                # A unit with SkipDryRunOnMissingResource is synced again by Argo CD until its kinds are served: a
                # kind an operator installs once it reconciles an earlier wave's resource (the real Network
                # Operator's NV-IPAM CRDs, from the NicClusterPolicy) comes a little after that wave.
                deadline = time.monotonic() + OPERATOR_CRD_TIMEOUT
                while proc.returncode != 0 and all(text in proc.stderr for text in NO_MATCH) \
                        and SKIP_DRY_RUN in b.options.get(b.unit_of[describe(obj)], ()) \
                        and time.monotonic() < deadline:
                    time.sleep(2)
                    cluster.forget_discovery()
                    proc = cluster.dry_run(obj)
                if proc.returncode != 0:
                    refused.append("wave %d, %s: %s" % (wave, describe(obj), proc.stderr.strip()))
            assert refused == [], "\n".join(refused)
            if group is namespaces:
                for obj in namespaces:
                    argo_play.apply(obj)

        # (b) The wave for real: an Application is applied (admitted by its CRD) and synced, the rest applied.
        for obj in rest:
            argo_play.apply(obj)
            if obj["kind"] == "Application":
                argo_play.sync_application(obj)
                applications.append(obj["metadata"]["name"])

    controlled = {unit for wave, unit, what in controls}
    assert controlled == {b.unit_of[describe(o)] for o in b.built if group_of(o) in groups}, controls
    assert any(wave == 0 and unit == "network-config" for wave, unit, what in controls), controls
    live = {a["metadata"]["name"] for a in cluster.get("applications.argoproj.io", "-n", ARGOCD_NAMESPACE)["items"]}
    assert live == set(applications) and {"network-operator", "gpu-operator", "volcano", "kueue"} <= live, live
    deployed = {(r["name"], r["namespace"], r["status"])
                for r in json.loads(cluster.helm("list", "--all-namespaces", "-o", "json").stdout)}
    assert deployed == {(r, n, "deployed") for r, n in argo_play.releases}, deployed
