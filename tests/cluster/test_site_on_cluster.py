"""site.yml on the real control plane: ``ansible-playbook site.yml -i inventories/cluster``, every layer on.

Real helm installs the test charts (their CRDs are the upstream ones) from the loopback repository; the real
API server validates every object and admits every pod under its namespace's PodSecurity level; the real
controller-manager makes the ReplicaSets, DaemonSet pods and Job pods, the real scheduler binds them, KWOK
runs them; local_gpu_cluster/live.py plays the operators' own controllers. The first run converges at the pins, the
second changes nothing, ``--check`` changes nothing; upgrade.yml takes the platform to a new driver in the documented
order (docs/upgrade.md), the real DaemonSet controller making each node's new driver pod; uninstall.yml leaves no
object of ours.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from kubernetes import config, dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from local_gpu_cluster import pins
from local_gpu_cluster.audit import describe
from local_gpu_cluster.charts import helm_env
from local_gpu_cluster.fleet import declared_hardware
from local_gpu_cluster.testing import ROOT, RUN_USER, kubectl
from tests.corpus.test_site_inputs import EXACT, FIVE
from tests.playbooks.conftest import PlayResult, site_env

pytestmark = pytest.mark.slow
INVENTORY = ROOT / "inventories" / "cluster"
OUR_NAMESPACES = ("gpu-operator", "nvidia-network-operator", "volcano-system", "kueue-system", "dra-driver-nvidia-gpu")
# docs/uninstall.md: the MIG layout and its nvidia.com/mig.config label stay (the partitions persist on the GPUs),
# and so do the teams' namespaces; every other label and object of ours goes.
# The upgrade here is a new driver for the GPU Operator at the same chart pins (another 595 release than the chart's
# default 595.91.07); the upgrade from release 0.2.0's charts is tests/upgrade's.
NEW_DRIVER = "595.100.05"
GPU_OPERATOR_PIN = pins.role_defaults("gpu_operator", ROOT)["gpu_operator_chart_version"]
UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
FOLLOW = "Until every GPU node is upgrade-done (stops naming a failed or stuck node)"
NETWORK_RELEASE = "Release the Network Operator, pinned (its NFD off while the GPU Operator runs one)"
GPU_RELEASE = "Release the GPU Operator, pinned"
OUR_NODE_LABELS = ("nvidia.com/device-plugin.config", "nvidia.com/dra-kubelet-plugin",
                   "nvidia.com/gpu.deploy.device-plugin")


class Site:
    def __init__(self, cluster, tmp_path):
        self.cluster = cluster
        self.env = dict(site_env(helm_env(tmp_path / "helm-env")), CLUSTER_DIR=str(cluster.dir))
        client = config.new_client_from_config(config_file=cluster.kubeconfig)
        self.dyn = dynamic.DynamicClient(client)

    def run(self, playbook="site.yml", *args, user=None):
        """``ansible-playbook`` on the cluster; with ``user``, the run reaches it with that user's credential
        (``LocalCluster.kubeconfig_for``), so the audit log tells its requests from everyone else's."""
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(INVENTORY),
                   str(ROOT / playbook), *args]
        if user:
            command += ["-e", "gpu_platform_kubeconfig=" + self.cluster.kubeconfig_for(user)]
        proc = subprocess.run(command, env=self.env, capture_output=True, text=True, cwd=str(ROOT), check=False,
                              timeout=1200)
        return PlayResult(proc)

    def list(self, api_version, kind, namespace=None, **kw):
        try:
            return self.dyn.resources.get(api_version=api_version, kind=kind).get(namespace=namespace, **kw).to_dict()[
                "items"]
        except (NotFoundError, ResourceNotFoundError):  # the kind is gone with its CRD
            return []

    def get(self, api_version, kind, name, namespace=None):
        try:
            return self.dyn.resources.get(api_version=api_version, kind=kind).get(name=name, namespace=namespace).to_dict()
        except (NotFoundError, ResourceNotFoundError):
            return None


@pytest.fixture(scope="module")
def site(local_cluster, tmp_path_factory):
    return Site(local_cluster, tmp_path_factory.mktemp("site-on-cluster"))


def releases(site, name, namespace):
    """(revision, status) of each record helm keeps for the release, oldest first."""
    secrets = site.list("v1", "Secret", namespace, label_selector="owner=helm,name=" + name)
    return sorted((int(s["metadata"]["labels"]["version"]), s["metadata"]["labels"]["status"]) for s in secrets)


@pytest.mark.parametrize("case", sorted(FIVE))
def test_a_preflight_refusal_writes_nothing_to_the_real_api_server(site, case):
    """Issue 32's five inputs, in direct mode on the local control plane before anything is installed: site.yml fails
    in checks.yml with the one line naming the variable (the exact text of tests/corpus/test_site_inputs.py), and the
    API server's audit log has no write of the run's credential (any object, any namespace, cluster-scoped ones and
    node labels included)."""
    mark = site.cluster.audit.mark()
    result = site.run("site.yml", "-e", json.dumps(FIVE[case]), user=RUN_USER)
    assert result.failed == 1
    messages = result.failure_messages()
    assert messages == [EXACT[case]]
    assert "Finalization of task args" not in result.stdout
    written = site.cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], "the refused run wrote:\n" + describe(written)
    assert site.cluster.audit.requests(mark, user=RUN_USER), "the run read nothing with its own credential"


def test_the_audit_log_names_the_writes_the_old_snapshot_missed(site):
    """What the refusal test compared before the audit log judged it: the platform's namespaces, the Secrets and
    ConfigMaps in them by resourceVersion, and the ClusterPolicy's and NicClusterPolicy's generations. A node's label,
    a team's namespace and a cluster-scoped object written with the run's credential leave that snapshot equal; the
    audit log names each of them, and leaves out a server-side dry-run, which writes nothing."""
    def old_snapshot():
        ours = [n["metadata"]["name"] for n in site.list("v1", "Namespace") if n["metadata"]["name"] in OUR_NAMESPACES]
        found = {"namespaces": sorted(ours)}
        for kind in ("Secret", "ConfigMap"):
            found[kind] = sorted((o["metadata"]["namespace"], o["metadata"]["name"], o["metadata"]["resourceVersion"])
                                 for namespace in ours for o in site.list("v1", kind, namespace))
        for api_version, kind in (("nvidia.com/v1", "ClusterPolicy"), ("mellanox.com/v1alpha1", "NicClusterPolicy")):
            found[kind] = sorted((o["metadata"]["name"], o["metadata"].get("generation"))
                                 for o in site.list(api_version, kind))
        return found

    run = ("--kubeconfig", site.cluster.kubeconfig_for(RUN_USER))
    # the CPU-only node: a label patched on a GPU node would be one more event for the GPU Operator's controllers,
    # which the tests after this one drive through a converge and a driver upgrade
    node = next(n["metadata"]["name"] for n in site.list("v1", "Node") if not (declared_hardware(n) or {}).get("gpus"))
    before, mark = old_snapshot(), site.cluster.audit.mark()
    try:
        kubectl(site.cluster, *run, "label", "node", node, "audit.gpu-platform.io/seen=yes")
        kubectl(site.cluster, *run, "create", "namespace", "audit-team-a")
        kubectl(site.cluster, *run, "create", "clusterrole", "audit-seen", "--verb=get", "--resource=pods")
        kubectl(site.cluster, *run, "create", "namespace", "audit-dry-run", "--dry-run=server")
        written = site.cluster.audit.writes(mark, user=RUN_USER)
        assert old_snapshot() == before, "the old snapshot saw a change"
        assert [(r.verb, r.resource, r.name, r.code) for r in written] == [
            ("patch", "nodes", node, 200), ("create", "namespaces", "audit-team-a", 201),
            ("create", "clusterroles", "audit-seen", 201)], describe(written)
        assert [(r.resource, r.name) for r in site.cluster.audit.writes(mark, user=RUN_USER, dry_run=True)] == [
            ("namespaces", "audit-dry-run")]
    finally:  # with the admin's credential, as the tests' own writes are
        kubectl(site.cluster, "label", "node", node, "audit.gpu-platform.io/seen-", check=False)
        kubectl(site.cluster, "delete", "namespace", "audit-team-a", "--ignore-not-found", "--wait=false", check=False)
        kubectl(site.cluster, "delete", "clusterrole", "audit-seen", "--ignore-not-found", check=False)


def test_site_converges_on_the_real_api_server_then_changes_nothing(site):
    mark = site.cluster.audit.mark()
    first = site.run("site.yml", user=RUN_USER)
    assert first.failed == 0, first.failure_details() or first.debug_text()
    end = site.cluster.audit.mark()
    everyone, run = site.cluster.audit.requests(mark, end), site.cluster.audit.requests(mark, end, user=RUN_USER)
    print("audit log during site.yml: %d requests (%d writes), %d of them the run's (%d writes); %s bytes"
          % (len(everyone), len([r for r in everyone if r.is_write]), len(run), len([r for r in run if r.is_write]),
             end.offset - mark.offset if end.inode == mark.inode else "(rotated)"))
    assert first.changed > 0
    policy = site.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    assert policy["status"]["state"] == "ready"
    for namespace in ("gpu-operator", "nvidia-network-operator", "volcano-system", "kueue-system"):
        deployments = site.list("apps/v1", "Deployment", namespace)
        assert deployments, namespace
        for deployment in deployments:
            status = deployment["status"]
            assert status.get("availableReplicas") == deployment["spec"]["replicas"], deployment["metadata"]["name"]
            replica_sets = [rs for rs in site.list("apps/v1", "ReplicaSet", namespace)
                            if any(ref["uid"] == deployment["metadata"]["uid"]
                                   for ref in rs["metadata"].get("ownerReferences") or [])]
            assert replica_sets, "the real Deployment controller made a ReplicaSet for %s" % deployment["metadata"]["name"]
    # The operand DaemonSets the real GPU Operator makes, each selecting its nvidia.com/gpu.deploy.<operand> label; the
    # MPS control daemon's also wants nvidia.com/mps.capable, which no node of this fleet has.
    operands = {ds["metadata"]["name"]: ds for ds in site.list("apps/v1", "DaemonSet", "gpu-operator")}
    assert all(ds["status"].get("numberReady", 0) == ds["status"]["desiredNumberScheduled"] for ds in operands.values())
    for name in ("nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset", "nvidia-device-plugin-daemonset",
                 "gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-operator-validator", "nvidia-mig-manager"):
        assert operands[name]["status"]["desiredNumberScheduled"] > 0, name
        assert any(key.startswith("nvidia.com/gpu.deploy.") for key in
                   operands[name]["spec"]["template"]["spec"].get("nodeSelector") or {}), name
    # status.state is the real operator's (the pin, built from its source): its field manager wrote the status
    managers = {(m["manager"], m.get("subresource")) for m in policy["metadata"]["managedFields"]}
    assert ("gpu-operator", "status") in managers, managers
    # the NicClusterPolicy's too: the real Network Operator (the pin) wrote its state, component by component
    (nic,) = site.list("mellanox.com/v1alpha1", "NicClusterPolicy")
    assert nic["status"]["state"] == "ready" and nic["status"].get("appliedStates"), nic["status"]
    assert ("network-operator", "status") in {(m["manager"], m.get("subresource"))
                                              for m in nic["metadata"]["managedFields"]}
    # helm installed the real chart (packaged from the pinned source), with the ClusterPolicy its templates made
    manifest = subprocess.run([str(ROOT / "tools" / "bin" / "helm"), "get", "manifest", "gpu-operator", "-n",
                               "gpu-operator", "--kubeconfig", site.cluster.kubeconfig], capture_output=True, text=True,
                              check=True).stdout
    assert "kind: ClusterPolicy" in manifest and "helm.sh/chart: gpu-operator-%s" % GPU_OPERATOR_PIN in manifest
    pods = site.list("v1", "Pod", "gpu-operator")
    assert pods and all(p["spec"].get("nodeName") for p in pods), "every operand pod bound by the real scheduler"
    nodes = {n["metadata"]["name"]: n for n in site.list("v1", "Node")}
    assert nodes["gpu-node-3"]["status"]["allocatable"]["nvidia.com/gpu"] == "32", "time-slicing: 8 GPUs x 4"
    assert nodes["gpu-node-1"]["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    # The inventory's flavors name the products GFD gives the shared pools (-MIG-1g.10gb, -SHARED): each matches a node.
    assert first.result("Warn of a flavor that selects no node").get("skipped") is True, \
        first.result("Warn of a flavor that selects no node").get("msg")
    summary = first.result("What was written and which versions are pinned")["msg"]
    assert summary[0] == "The platform was installed directly on the cluster."
    assert not [line for line in summary if "failed" in line] and summary[-1].startswith("Smoke tests passed for "), summary

    # The operator's upgrade controller labels the nodes whose driver pod is current, as it does after an install: it
    # reconciles on its own every 2 minutes (gpu-operator v26.3.3 controllers/upgrade_controller.go), so allow that.
    def upgrade_states():
        return {n["metadata"]["labels"].get(UPGRADE_STATE) for n in site.list("v1", "Node")
                if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"}
    deadline = time.monotonic() + 150
    while upgrade_states() != {"upgrade-done"} and time.monotonic() < deadline:
        time.sleep(2)
    assert upgrade_states() == {"upgrade-done"}

    second = site.run("site.yml")
    assert second.failed == 0, second.failure_messages()
    assert second.changed == 0, second.changed_tasks()

    # --check writes nothing: judged by the API server's audit log, not by what the run reports. Its server-side
    # dry-runs (dryRun=All) write nothing and are left out; the run's reads show it used the credential it was given.
    mark = site.cluster.audit.mark()
    check = site.run("site.yml", "--check", user=RUN_USER)
    assert check.failed == 0, check.failure_messages()
    assert check.changed == 0, check.changed_tasks()
    written = site.cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], "site.yml --check wrote:\n" + describe(written)
    assert [r for r in site.cluster.audit.requests(mark, user=RUN_USER) if r.verb in ("get", "list")], \
        "the check run read nothing with its own credential"

    # molecule/cluster's verify step on the same converged cluster: that scenario (make molecule-cluster) runs the
    # same inventory through the same converge, idempotence and check, so make test runs its checks here instead of
    # converging a second control plane for them.
    verify = site.run("molecule/cluster/verify.yml")
    assert verify.failed == 0, verify.failure_messages()
    assert verify.stats.get("ok", 0) > 0 and verify.changed == 0, verify.debug_text()


def _gpu_job(name, namespace, gpus, queue="gpu"):
    """A batch Job of one pod asking ``gpus`` GPUs of its team's LocalQueue (PodSecurity restricted)."""
    container = {"name": "main", "image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04", "command": ["nvidia-smi"],
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                 "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": 1000,
                                     "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}


def _workload_of(site, job):
    """The Workload Kueue made for ``job`` (owned by it), or None."""
    for workload in site.list("kueue.x-k8s.io/v1beta2", "Workload", job["metadata"]["namespace"]):
        if any(ref.get("uid") == job["metadata"]["uid"] for ref in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


def _condition(obj, kind):
    return next((c for c in (obj or {}).get("status", {}).get("conditions") or [] if c["type"] == kind), {})


def test_kueue_admits_a_job_under_quota_and_holds_one_over_it(site):
    """The real Kueue v0.19.2 (its webhook suspends a Job of a LocalQueue, its scheduler admits it against the
    ClusterQueue's quota) on the queues site.yml made: team nlp has 16 H100s and may borrow 8 from its cohort, so a
    Job asking 25 stays pending with Kueue's reason, and one asking 1 is admitted, unsuspended and run."""
    if site.get("apps/v1", "Deployment", "kueue-controller-manager", "kueue-system") is None:
        pytest.skip("Kueue is not installed on this cluster")
    jobs = site.dyn.resources.get(api_version="batch/v1", kind="Job")
    created = []
    try:
        for name, gpus in (("kueue-over-quota", 25), ("kueue-under-quota", 1)):
            job = jobs.create(body=_gpu_job(name, "nlp", gpus), namespace="nlp").to_dict()
            created.append(name)
            assert job["spec"]["suspend"] is True, "Kueue's webhook suspends a Job of a LocalQueue"
        deadline = time.monotonic() + 90
        over = under = None
        while time.monotonic() < deadline:
            over = _workload_of(site, site.get("batch/v1", "Job", "kueue-over-quota", "nlp"))
            under_job = site.get("batch/v1", "Job", "kueue-under-quota", "nlp")
            under = _workload_of(site, under_job)
            if _condition(over, "QuotaReserved").get("reason") == "Pending" \
                    and _condition(under, "Admitted").get("status") == "True" and under_job["spec"]["suspend"] is False:
                break
            time.sleep(1)
        assert _condition(under, "Admitted").get("status") == "True", under
        admission = under["status"]["admission"]
        assert admission["clusterQueue"] == "nlp"
        assert admission["podSetAssignments"][0]["flavors"] == {"nvidia.com/gpu": "h100"}
        assert site.get("batch/v1", "Job", "kueue-under-quota", "nlp")["spec"]["suspend"] is False
        pending = _condition(over, "QuotaReserved")
        assert pending.get("status") == "False" and pending.get("reason") == "Pending", over
        assert "insufficient quota for nvidia.com/gpu in flavor h100" in pending["message"], pending["message"]
        assert _condition(over, "Admitted").get("status") != "True"
        assert site.get("batch/v1", "Job", "kueue-over-quota", "nlp")["spec"]["suspend"] is True
        # Admitted into flavor h100: Kueue put the flavor's node labels on the pod template, the real scheduler bound
        # the pod to a node that has them, and the Job ran to completion there.
        flavor = site.get("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "h100")["spec"]["nodeLabels"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not site.get("batch/v1", "Job", "kueue-under-quota", "nlp")[
                "status"].get("succeeded"):
            time.sleep(1)
        assert site.get("batch/v1", "Job", "kueue-under-quota", "nlp")["status"].get("succeeded") == 1
        (pod,) = site.list("v1", "Pod", "nlp", label_selector="batch.kubernetes.io/job-name=kueue-under-quota")
        assert flavor.items() <= (pod["spec"].get("nodeSelector") or {}).items(), pod["spec"].get("nodeSelector")
        node = site.get("v1", "Node", pod["spec"]["nodeName"])
        assert flavor.items() <= node["metadata"]["labels"].items()
        assert not site.list("v1", "Pod", "nlp", label_selector="batch.kubernetes.io/job-name=kueue-over-quota")
    finally:
        for name in created:
            jobs.delete(name=name, namespace="nlp", body={"propagationPolicy": "Foreground"})
        deadline = time.monotonic() + 60
        while any(site.get("batch/v1", "Job", name, "nlp") for name in created) and time.monotonic() < deadline:
            time.sleep(1)


def _volcano_gang(name, members, gpus):
    """A Volcano Job of ``members`` pods of ``gpus`` GPUs each, all or nothing (``minAvailable == members``)."""
    container = {"name": "member", "image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04", "command": ["nvidia-smi"],
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                 "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": 1000,
                                     "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}
    pod = {"restartPolicy": "Never", "containers": [container],
           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "vision"},
            "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": members,
                     "tasks": [{"name": "m", "replicas": members, "template": {"spec": pod}}]}}


def test_volcano_binds_a_gang_only_when_all_of_it_fits(site):
    """The real Volcano v1.15.1 (its controller makes a Job's PodGroup and pods, its scheduler binds them; its
    webhooks admit the Job): a gang of 2 one-GPU pods is bound; a gang of k+1 pods each asking for as many GPUs as
    the largest node has, where only k nodes have that many, gets no pod bound, although k of them would fit."""
    if site.get("apps/v1", "Deployment", "volcano-scheduler", "volcano-system") is None:
        pytest.skip("Volcano is not installed on this cluster")
    allocatable = [int(n["status"].get("allocatable", {}).get("nvidia.com/gpu", "0")) for n in site.list("v1", "Node")
                   if not n["spec"].get("unschedulable")]
    most = max(allocatable)
    widest = allocatable.count(most)
    jobs = site.dyn.resources.get(api_version="batch.volcano.sh/v1alpha1", kind="Job")
    created = []

    def pods(job):
        return site.list("v1", "Pod", "vision", label_selector="volcano.sh/job-name=" + job)
    try:
        for name, members, gpus in (("gang-fits", 2, 1), ("gang-too-wide", widest + 1, most)):
            jobs.create(body=_volcano_gang(name, members, gpus), namespace="vision")
            created.append(name)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (
                len(pods("gang-fits")) == 2 and all(p["spec"].get("nodeName") for p in pods("gang-fits"))):
            time.sleep(1)
        fits = pods("gang-fits")
        assert len(fits) == 2 and all(p["spec"].get("nodeName") for p in fits), [p.get("status") for p in fits]
        assert {p["spec"]["schedulerName"] for p in fits} == {"volcano"}
        time.sleep(15)  # 15 scheduling periods (1 s) after the first gang was bound
        wide = pods("gang-too-wide")
        assert not [p["metadata"]["name"] for p in wide if p["spec"].get("nodeName")], "a partial gang was bound"
        groups = [g for g in site.list("scheduling.volcano.sh/v1beta1", "PodGroup", "vision")
                  if any(ref.get("name") == "gang-too-wide" for ref in g["metadata"].get("ownerReferences") or [])]
        assert len(groups) == 1 and groups[0]["spec"]["minMember"] == widest + 1
        assert groups[0].get("status", {}).get("phase") in ("Pending", "Inqueue"), groups[0].get("status")
    finally:
        for name in created:
            jobs.delete(name=name, namespace="vision", body={"propagationPolicy": "Foreground"})
        deadline = time.monotonic() + 60
        while any(site.get("batch.volcano.sh/v1alpha1", "Job", n, "vision") for n in created) \
                and time.monotonic() < deadline:
            time.sleep(1)


def test_a_driver_upgrade_goes_node_by_node_through_the_operators_own_controller(site):
    """upgrade.yml with a new driver version at the same chart pins (the upgrade from release 0.2.0, charts and all,
    is make upgrade-test's): the GPU Operator's release changes, and its own upgrade controller replaces the driver
    on each node in turn, followed until every node is upgrade-done; nothing else changes."""
    assert releases(site, "network-operator", "nvidia-network-operator") == [(1, "deployed")]
    driver = site.list("apps/v1", "DaemonSet", "gpu-operator", label_selector="app=nvidia-driver-daemonset")[0]
    old_pods = {p["metadata"]["uid"] for p in site.list("v1", "Pod", "gpu-operator",
                                                        label_selector="app=nvidia-driver-daemonset")}
    upgraded = site.run("playbooks/upgrade.yml", "-e", "gpu_platform_driver_version=" + NEW_DRIVER,
                        "-e", "gpu_platform_upgrade_stuck_timeout=120s")
    assert upgraded.failed == 0, upgraded.failure_messages() or upgraded.debug_text()

    # docs/upgrade.md: the GPU Operator's release, then the driver followed node by node, then the upper layers
    # (GPU sharing proves itself on the new driver); the Network Operator's release is already at its pin.
    names = [name for name, result in upgraded.tasks()]
    changed = [name.split(" : ")[-1] for name in upgraded.changed_tasks()]
    assert GPU_RELEASE in changed and NETWORK_RELEASE not in changed, changed
    assert names.index(FOLLOW) > max(i for i, n in enumerate(names) if n.endswith(GPU_RELEASE))
    assert names.index(FOLLOW) < next(i for i, n in enumerate(names) if "Prove the layer (allocatable per pool" in n)
    assert releases(site, "network-operator", "nvidia-network-operator") == [(1, "deployed")]
    assert releases(site, "gpu-operator", "gpu-operator")[-1][1] == "deployed"

    # The driver: a new DaemonSet template, every GPU node's pod replaced by the real DaemonSet controller with one
    # of that template on the new version, every node upgrade-done and uncordoned.
    follow = upgraded.result(FOLLOW)
    assert follow["done"] is True, follow
    assert {n["state"] for n in follow["nodes"]} == {"upgrade-done"}
    assert {n["driver_version"] for n in follow["nodes"]} == {NEW_DRIVER}
    assert all(n["pod_current"] for n in follow["nodes"]), follow["nodes"]
    # The module samples the states (every poll interval): each node was seen upgrading, then done.
    finished = {t["node"] for t in follow["transitions"] if t["to"] == "upgrade-done" and t["from"] != "upgrade-done"}
    assert finished == {n["name"] for n in follow["nodes"]}, follow["transitions"]
    now = site.get("apps/v1", "DaemonSet", driver["metadata"]["name"], "gpu-operator")
    assert now["metadata"]["generation"] > driver["metadata"]["generation"]
    pods = site.list("v1", "Pod", "gpu-operator", label_selector="app=nvidia-driver-daemonset")
    assert pods and not {p["metadata"]["uid"] for p in pods} & old_pods, "every driver pod was replaced"
    assert all(p["spec"]["containers"][0]["image"].split(":")[-1].startswith(NEW_DRIVER) for p in pods)
    assert not [n["metadata"]["name"] for n in site.list("v1", "Node") if n["spec"].get("unschedulable")]

    again = site.run("playbooks/upgrade.yml", "-e", "gpu_platform_driver_version=" + NEW_DRIVER)
    assert again.failed == 0, again.failure_messages()
    assert again.changed == 0, again.changed_tasks()
    assert again.result(FOLLOW)["done"] is True and again.result(FOLLOW)["transitions"] == []
    # site.yml with the same pins agrees: the upgraded platform is the one site.yml converges to.
    same = site.run("site.yml", "-e", "gpu_platform_driver_version=" + NEW_DRIVER)
    assert same.failed == 0 and same.changed == 0, same.changed_tasks() or same.failure_messages()


def test_uninstall_leaves_no_object_of_ours(site):
    removed = site.run("playbooks/uninstall.yml", "-e", "gpu_platform_uninstall_confirm=true",
                       "-e", "gpu_platform_uninstall_crds=true")
    assert removed.failed == 0, removed.failure_messages() or removed.debug_text()
    releases = site.list("v1", "Secret", label_selector="owner=helm")
    assert releases == [], [r["metadata"]["name"] for r in releases]
    left = [ns["metadata"]["name"] for ns in site.list("v1", "Namespace")
            if ns["metadata"]["name"] in OUR_NAMESPACES and ns["status"]["phase"] != "Terminating"]
    assert left == []
    assert site.list("nvidia.com/v1", "ClusterPolicy") == []
    assert site.list("mellanox.com/v1alpha1", "NicClusterPolicy") == []
    assert site.list("apiextensions.k8s.io/v1", "CustomResourceDefinition", label_selector=None) and not [
        crd["metadata"]["name"] for crd in site.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        if crd["spec"]["group"] in ("nvidia.com", "mellanox.com", "nv-ipam.nvidia.com", "batch.volcano.sh",
                                    "scheduling.volcano.sh", "kueue.x-k8s.io", "resource.nvidia.com")]
    # The GPU Operator labels every GPU node nvidia.com/gpu.deploy.device-plugin=true itself (as it labels all its
    # operands' deploy labels); the collection's value is false (the DRA nodes), and that one must be gone.
    labelled = {n["metadata"]["name"]: sorted(k for k, v in (n["metadata"].get("labels") or {}).items()
                                              if k in OUR_NODE_LABELS and
                                              not (k == "nvidia.com/gpu.deploy.device-plugin" and v == "true"))
                for n in site.list("v1", "Node")}
    assert {name: labels for name, labels in labelled.items() if labels} == {}
    again = site.run("playbooks/uninstall.yml", "-e", "gpu_platform_uninstall_confirm=true",
                     "-e", "gpu_platform_uninstall_crds=true")
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


KAI_COMPONENTS = ("kai-operator", "admission", "binder", "kai-scheduler-default", "pod-grouper", "podgroup-controller",
                  "queue-controller")
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def _kai_gang(members, gpus=1):
    """smoke_objects.gang_job("kai"): a PodGroup of minMember ``members`` and its pods, each asking ``gpus`` GPUs."""
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import objects as smoke_objects
    objects = smoke_objects.gang_job("kai", "vision", CUDA_IMAGE, replicas=members, queue="vision")
    for obj in objects[1:]:
        obj["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
    return objects


KAI_AND_DOMAINS = ("-e", json.dumps({"gpu_platform_scheduler": "kai", "dra_driver_compute_domains_enabled": True}))


def test_site_with_the_kai_scheduler_and_compute_domains_converges_then_changes_nothing(site):
    """After the uninstall: site.yml with the KAI Scheduler v0.16.8 as gang scheduler and the DRA driver's
    ComputeDomains on, every component real (KAI's hook Jobs, its operator and the six components the operator
    deploys; the compute-domain controller): the run passes its smoke tests (KAI's gang among them), the operator
    says its Config is Ready, and a second run changes nothing. The compute-domain controller is scheduled on this
    fleet, which has no control-plane node (the chart's default affinity requires one)."""
    first = site.run("site.yml", *KAI_AND_DOMAINS)
    assert first.failed == 0, first.failure_details() or first.debug_text()
    again = site.run("site.yml", *KAI_AND_DOMAINS)
    assert again.failed == 0 and again.changed == 0, again.changed_tasks() or again.failure_messages()
    config = site.get("kai.scheduler/v1", "Config", "kai-config")
    assert _condition(config, "Ready")["status"] == "True", config.get("status")  # the real operator's verdict
    for name, namespace in [(n, "kai-scheduler") for n in KAI_COMPONENTS] + [
            ("dra-driver-nvidia-gpu-controller", "dra-driver-nvidia-gpu")]:
        deployment = site.get("apps/v1", "Deployment", name, namespace)
        assert deployment and deployment["status"].get("availableReplicas") == 1, (name, deployment and deployment["status"])


def test_kai_binds_a_gang_only_once_all_its_members_exist_and_holds_one_over_the_limit(site):
    """The real KAI scheduler: a PodGroup of minMember 3 gets none of its pods bound while 2 exist, and all 3 once
    the third comes; a gang over the team's GPU limit stays pending with KAI's own OverLimit verdict naming the
    limit the collection wrote into the team's Queue."""
    if site.get("apps/v1", "Deployment", "kai-scheduler-default", "kai-scheduler") is None:
        pytest.skip("the KAI Scheduler is not installed on this cluster (the test before did not converge)")
    pods = site.dyn.resources.get(api_version="v1", kind="Pod")
    groups = site.dyn.resources.get(api_version="scheduling.run.ai/v2alpha2", kind="PodGroup")

    def bound():
        return [p["metadata"]["name"] for p in site.list("v1", "Pod", "vision") if p["spec"].get("nodeName")]

    def remove(gang):
        for pod in gang[1:]:
            pods.delete(name=pod["metadata"]["name"], namespace="vision", body={"gracePeriodSeconds": 0})
        groups.delete(name=gang[0]["metadata"]["name"], namespace="vision")
        deadline = time.monotonic() + 60
        while any(site.get("v1", "Pod", p["metadata"]["name"], "vision") for p in gang[1:]) \
                and time.monotonic() < deadline:
            time.sleep(1)
    gang = _kai_gang(3)
    try:
        groups.create(body=gang[0], namespace="vision")
        for pod in gang[1:3]:
            pods.create(body=pod, namespace="vision")
        time.sleep(10)  # 10 scheduling cycles (1 s) with 2 of the 3 members
        assert bound() == []
        pods.create(body=gang[3], namespace="vision")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(bound()) < 3:
            time.sleep(1)
        assert sorted(bound()) == sorted(p["metadata"]["name"] for p in gang[1:])
    finally:
        remove(gang)
    limit = next(q for q in site.list("scheduling.run.ai/v2", "Queue") if q["metadata"]["name"] == "vision")[
        "spec"]["resources"]["gpu"]["limit"]
    wide = _kai_gang(3, gpus=int(limit) // 2)  # 3 pods of half the limit each: over it
    try:
        groups.create(body=wide[0], namespace="vision")
        for pod in wide[1:]:
            pods.create(body=pod, namespace="vision")
        verdict = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not verdict:
            group = site.get("scheduling.run.ai/v2alpha2", "PodGroup", wide[0]["metadata"]["name"], "vision")
            verdict = [c["message"] for c in (group.get("status") or {}).get("schedulingConditions") or []]
            time.sleep(1)
        assert verdict and "OverLimit" in verdict[0] and "Limit is %d GPUs" % int(limit) in verdict[0], verdict
        assert bound() == []
    finally:
        remove(wide)


def test_a_compute_domain_gets_its_channel_template_and_daemon_set_from_the_real_controller(site):
    """The DRA driver's real compute-domain controller (the pin, 0.4.1): a ComputeDomain gets the ResourceClaimTemplate its
    spec names, in its namespace, and its IMEX daemons' DaemonSet (selecting the nodes the domain's pods will be
    placed on) in the driver's namespace, from its own templates; both go when the domain is deleted. The daemons
    themselves need NVLink hardware (none here: the DaemonSet selects no node)."""
    if site.get("apps/v1", "Deployment", "dra-driver-nvidia-gpu-controller", "dra-driver-nvidia-gpu") is None:
        pytest.skip("ComputeDomains are not enabled on this cluster (the test before did not converge)")
    domains = site.dyn.resources.get(api_version="resource.nvidia.com/v1beta1", kind="ComputeDomain")
    domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
              "metadata": {"name": "nvl", "namespace": "vision"},
              "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "nvl-channel"}}}}
    uid = domains.create(body=domain, namespace="vision").to_dict()["metadata"]["uid"]

    def daemon_sets():
        return [d for d in site.list("apps/v1", "DaemonSet", "dra-driver-nvidia-gpu")
                if uid in d["metadata"]["name"]]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                site.get("resource.k8s.io/v1", "ResourceClaimTemplate", "nvl-channel", "vision") and daemon_sets()):
            time.sleep(1)
        assert site.get("resource.k8s.io/v1", "ResourceClaimTemplate", "nvl-channel", "vision")
        assert [d["spec"]["template"]["spec"]["nodeSelector"] for d in daemon_sets()] == [
            {"resource.nvidia.com/computeDomain": uid}]
    finally:
        domains.delete(name="nvl", namespace="vision")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (site.get("resource.nvidia.com/v1beta1", "ComputeDomain", "nvl", "vision")
                                           or daemon_sets()):
        time.sleep(1)
    assert site.get("resource.nvidia.com/v1beta1", "ComputeDomain", "nvl", "vision") is None  # its finalizer let go
    assert daemon_sets() == []


def test_uninstall_leaves_nothing_of_kai_or_the_compute_domains(site):
    removed = site.run("playbooks/uninstall.yml", *KAI_AND_DOMAINS, "-e", "gpu_platform_uninstall_confirm=true",
                       "-e", "gpu_platform_uninstall_crds=true")
    assert removed.failed == 0, removed.failure_messages() or removed.debug_text()
    left = [ns["metadata"]["name"] for ns in site.list("v1", "Namespace")
            if ns["metadata"]["name"] in ("kai-scheduler", "kai-resource-reservation", "dra-driver-nvidia-gpu")
            and ns["status"]["phase"] != "Terminating"]
    assert left == []
    assert not [crd["metadata"]["name"] for crd in site.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                if crd["spec"]["group"] in ("scheduling.run.ai", "kai.scheduler", "resource.nvidia.com")]
    hooks = site.list("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") + site.list(
        "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
    assert not [h["metadata"]["name"] for h in hooks if "kai" in h["metadata"]["name"]]
