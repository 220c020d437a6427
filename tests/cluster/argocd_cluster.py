"""For tests/cluster/test_argocd_waves.py: kubectl and helm 3 against the session's cluster (``Cluster``: dry-runs,
server-side applies with Argo CD's field manager, kustomize builds, snapshots) and the rendered argocd bundle
(``Bundle``: units, waves, sync options, objects in Argo CD's order)."""
import json
import os
import shutil
import subprocess

import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from local_gpu_cluster.charts import HELM3, helm_env
from local_gpu_cluster.testing import ROOT

KUBECTL = ROOT / "tools" / "bin" / "kubectl"


# The field manager of Argo CD's server-side apply syncs (Argo CD's common.ArgoCDSSAManager).
FIELD_MANAGER = "argocd-controller"


# Argo CD's order of kinds within a wave (gitops-engine pkg/sync/sync_tasks.go, after Helm's kind sorter); other kinds
# (custom resources, Applications) come after these, then by name.
KIND_ORDER = ("Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
              "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
              "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
              "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
              "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job",
              "CronJob", "IngressClass", "Ingress", "APIService")


# What the snapshot before and after compares: cluster-scoped kinds a chart or the bundle can leave behind.
CLUSTER_KINDS = "namespaces,customresourcedefinitions,clusterroles,clusterrolebindings,validatingwebhookconfigurations," \
                "mutatingwebhookconfigurations,priorityclasses,deviceclasses"


def group_of(obj):
    return obj["apiVersion"].rpartition("/")[0]


def describe(obj):
    meta = obj["metadata"]
    return "%s %s/%s" % (obj["kind"], meta.get("namespace", ""), meta["name"])


def argo_order(obj):
    kind = obj["kind"]
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), obj["metadata"]["name"])


class Cluster:
    """kubectl and helm 3 against the session's cluster, with a HOME (and discovery cache) of their own."""

    def __init__(self, local_cluster, home):
        self.kubeconfig = local_cluster.kubeconfig
        self.home = home
        self.helm_env = dict(helm_env(home / "helm"), KUBECONFIG=self.kubeconfig)

    def kubectl(self, *args, stdin=None, timeout=300):
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, HOME=str(self.home))
        return subprocess.run([str(KUBECTL), *args], input=stdin, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def helm(self, *args, timeout=420):
        return subprocess.run([str(HELM3), *args], env=self.helm_env, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def get(self, *args):
        proc = self.kubectl("get", *args, "-o", "json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def dry_run(self, obj):
        return self.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=" + FIELD_MANAGER,
                            "-f", "-", stdin=json.dumps(obj))

    def apply(self, obj):
        proc = self.kubectl("apply", "--server-side", "--field-manager=" + FIELD_MANAGER, "-f", "-",
                            stdin=json.dumps(obj))
        assert proc.returncode == 0, "%s: %s" % (describe(obj), proc.stderr)

    def forget_discovery(self):
        """kubectl caches the served kinds: each wave asks the API server afresh."""
        shutil.rmtree(self.home / ".kube" / "cache", ignore_errors=True)

    def build(self, folder):
        """The objects of a kustomization folder, as Argo CD's kustomize build makes them."""
        proc = self.kubectl("kustomize", str(folder))
        assert proc.returncode == 0, proc.stderr
        return [doc for doc in yaml.safe_load_all(proc.stdout) if isinstance(doc, dict)]

    def snapshot(self):
        """What this module must leave as it found it."""
        objects = self.get(CLUSTER_KINDS)["items"]
        releases = self.get("secrets", "--all-namespaces", "-l", "owner=helm")["items"]
        nodes = self.get("nodes")["items"]
        return {
            "objects": sorted("%s/%s" % (o["kind"], o["metadata"]["name"]) for o in objects),
            "helm releases": sorted("%s/%s" % (s["metadata"]["namespace"], s["metadata"]["labels"].get("name"))
                                    for s in releases),
            "node labels": {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes},
        }


class Bundle:
    """The rendered argocd bundle: its units (the root's folders), their kustomizations, waves and objects."""

    def __init__(self, root, cluster):
        self.root = root
        self.units = yaml.safe_load((root / "kustomization.yaml").read_text())["resources"]
        self.kustomizations = {u: yaml.safe_load((root / u / "kustomization.yaml").read_text()) for u in self.units}
        annotations = {u: k.get("commonAnnotations") or {} for u, k in self.kustomizations.items()}
        self.waves = {u: int(a[bundle.SYNC_WAVE]) for u, a in annotations.items() if bundle.SYNC_WAVE in a}
        self.options = {u: a.get(bundle.SYNC_OPTIONS, "") for u, a in annotations.items()}
        self.objects = {u: cluster.build(root / u) for u in self.units}
        self.built = cluster.build(root)  # what Argo CD's Application at the root folder sees
        self.unit_of = {describe(o): u for u, objs in self.objects.items() for o in objs}

    def by_wave(self):
        out = {}
        for obj in self.built:
            out.setdefault(int(obj["metadata"]["annotations"][bundle.SYNC_WAVE]), []).append(obj)
        return {wave: sorted(objs, key=argo_order) for wave, objs in sorted(out.items())}

    def chart_waves(self):
        """{chart: the wave of the Application that installs it}."""
        return {o["spec"]["source"]["chart"]: self.waves[u] for u, objs in self.objects.items() for o in objs
                if o["kind"] == "Application"}
