"""Each cluster module, run in-process against a cluster: the fake API server, then a real one (KUBECONFIG).

The test bodies are the same for both (see conftest.py): objects are read back through the kubernetes
client, never from the fake's store, so what passes on the fake is what a real API server was seen to do.
Each test works in its own throwaway namespace; cluster-scoped writes are skipped on a real cluster unless
GPU_PLATFORM_IT_CLUSTER_SCOPED=1.
"""
from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.driver_mode import DRIVER_POD_SELECTORS
from tests.integration.conftest import NETWORK_OPERATOR_CRDS, TEST_LABEL, install_crds
from tests.modules.harness import run_module

CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
# An extended resource no node advertises: the smoke pod can never run, on the fake or on a real cluster.
NO_SUCH_RESOURCE = "gpu-platform.io/integration-test-none"
MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
IPPOOL = ("nv-ipam.nvidia.com/v1alpha1", "IPPool")
IPOIB_NETWORK = ("mellanox.com/v1alpha1", "IPoIBNetwork")


def run(cluster, name, params, check_mode=False, diff=False):
    """The module with this cluster's kubeconfig (never the KUBECONFIG variable); returns (failed, result)."""
    return run_module(name, dict(params, kubeconfig=cluster.kubeconfig), check_mode=check_mode, diff=diff)


def ok(outcome):
    failed, result = outcome
    assert not failed, result.get("msg")
    return result


def wait_until(fetch, done, timeout=30.0, interval=0.5):
    """Poll until ``done(fetch())``; returns the last value (the caller asserts on it)."""
    deadline = time.monotonic() + timeout
    value = fetch()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(interval)
        value = fetch()
    return value


# ---------------------------------------------------------------------------------------------- manifests

def namespaced_objects(ns, gpus="8"):
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns},
         "data": {"gpus": gpus}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "smoke-runner", "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader", "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]},
    ]


def manifests_present(cluster):
    ns = cluster.namespace
    return {"ConfigMap": cluster.get("v1", "ConfigMap", "settings", ns),
            "ServiceAccount": cluster.get("v1", "ServiceAccount", "smoke-runner", ns),
            "Role": cluster.get("rbac.authorization.k8s.io/v1", "Role", "pod-reader", ns)}


def test_manifests_check_diff_apply_idempotence_change_and_absent(cluster):
    ns = cluster.namespace
    objects = namespaced_objects(ns)
    identities = ["ConfigMap %s/settings" % ns, "ServiceAccount %s/smoke-runner" % ns, "Role %s/pod-reader" % ns]

    # check mode + diff: every object would be created, each with an empty before; nothing is written
    checked = ok(run(cluster, "manifests", {"objects": objects}, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["changed_objects"] == identities
    assert [d["before_header"] for d in checked["diff"]] == identities
    assert all(d["before"] == "" and d["after"] for d in checked["diff"])
    assert "gpus: '8'" in checked["diff"][0]["after"] and "pods/log" in checked["diff"][2]["after"]
    assert manifests_present(cluster) == {"ConfigMap": None, "ServiceAccount": None, "Role": None}

    # apply
    applied = ok(run(cluster, "manifests", {"objects": objects}))
    assert applied["changed"] is True and applied["changed_objects"] == identities
    assert applied["objects"] == ["configmap-%s-settings" % ns, "serviceaccount-%s-smoke-runner" % ns,
                                  "role-%s-pod-reader" % ns]
    found = manifests_present(cluster)
    assert found["ConfigMap"]["data"] == {"gpus": "8"}
    assert found["ServiceAccount"] is not None
    assert found["Role"]["rules"][0]["resources"] == ["pods", "pods/log"]
    versions = {kind: obj["metadata"]["resourceVersion"] for kind, obj in found.items()}

    # the same objects again: nothing to do, nothing written
    again = ok(run(cluster, "manifests", {"objects": objects}, diff=True))
    assert again["changed"] is False and again["changed_objects"] == [] and again["diff"] == []
    assert {kind: obj["metadata"]["resourceVersion"] for kind, obj in manifests_present(cluster).items()} == versions

    # one field changed: only that object, with its before and after
    changed_objects = namespaced_objects(ns, gpus="16")
    preview = ok(run(cluster, "manifests", {"objects": changed_objects}, check_mode=True, diff=True))
    assert preview["changed_objects"] == ["ConfigMap %s/settings" % ns]
    assert cluster.get("v1", "ConfigMap", "settings", ns)["data"] == {"gpus": "8"}, "check mode wrote"
    changed = ok(run(cluster, "manifests", {"objects": changed_objects}, diff=True))
    assert changed["changed"] is True and changed["changed_objects"] == ["ConfigMap %s/settings" % ns]
    (diff,) = changed["diff"]
    assert "gpus: '8'" in diff["before"] and "gpus: '16'" in diff["after"]
    assert cluster.get("v1", "ConfigMap", "settings", ns)["data"] == {"gpus": "16"}
    assert cluster.get("v1", "ServiceAccount", "smoke-runner", ns)["metadata"]["resourceVersion"] == \
        versions["ServiceAccount"]

    # absent: check mode removes nothing; then everything goes, in reverse order; then nothing to do
    would = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}, check_mode=True))
    assert would["changed"] is True
    assert all(obj is not None for obj in manifests_present(cluster).values()), "check mode deleted"
    removed = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}))
    assert removed["changed"] is True
    assert removed["removed"] == ["role-%s-pod-reader.yaml" % ns, "serviceaccount-%s-smoke-runner.yaml" % ns,
                                  "configmap-%s-settings.yaml" % ns]
    assert manifests_present(cluster) == {"ConfigMap": None, "ServiceAccount": None, "Role": None}
    gone = ok(run(cluster, "manifests", {"objects": changed_objects, "state": "absent"}))
    assert gone["changed"] is False and gone["removed"] == []


def test_manifests_refuses_an_object_the_api_server_rejects(cluster):
    """The API server's validation, not the module's (which checks names and kinds itself): a label value with a
    space is invalid (422) on any server, and the error reaches the task also in check mode (server-side dry-run)."""
    bad = [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad-label", "namespace": cluster.namespace, "labels": {"tier": "not a value"}},
            "data": {"gpus": "8"}}]
    for check_mode in (True, False):
        failed, result = run(cluster, "manifests", {"objects": bad}, check_mode=check_mode)
        assert failed and "422" in result["msg"] and "bad-label" in result["msg"], result
    assert "bad-label" not in cluster.names("v1", "ConfigMap", cluster.namespace)


# ---------------------------------------------------------------------------------------------- helm_pinned_release

@pytest.fixture
def helm_homes(tmp_path, monkeypatch):
    """helm's own cache, config and data under tmp_path (HOME stays: a real kubeconfig's exec plugin may need it)."""
    for name in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        path = tmp_path / name.lower()
        path.mkdir()
        monkeypatch.setenv(name, str(path))
    for name in ("HELM_DRIVER", "HELM_NAMESPACE", "HELM_KUBECONTEXT", "HELM_REPOSITORY_CONFIG",
                 "HELM_REPOSITORY_CACHE", "HELM_REGISTRY_CONFIG", "HELM_PLUGINS"):
        monkeypatch.delenv(name, raising=False)


class Release:
    """helm_pinned_release of the demo-operator chart from the loopback repository into the throwaway namespace."""

    NAME = "demo"

    def __init__(self, cluster, repo, helm_bin):
        self.cluster, self.repo, self.helm_bin = cluster, repo, helm_bin

    def run(self, check_mode=False, diff=False, **over):
        params = {"release_name": self.NAME, "release_namespace": self.cluster.namespace,
                  "chart_ref": "demo-operator", "chart_repo_url": self.repo.url, "chart_version": "1.0.0",
                  "binary_path": self.helm_bin, "wait": True, "wait_timeout": "60s",
                  # no pods: a Deployment of 0 replicas is ready at once on any cluster, with or without nodes
                  "release_values": {"replicaCount": 0, "config": {"mode": "first"}}}
        params.update(over)
        return run(self.cluster, "helm_pinned_release", params, check_mode=check_mode, diff=diff)

    def revisions(self):
        """The release's revisions, from helm's storage Secrets (read through the API)."""
        secrets = self.cluster.list("v1", "Secret", self.cluster.namespace, label_selector="owner=helm,name=" + self.NAME)
        return sorted(int(s["metadata"]["labels"]["version"]) for s in secrets)

    def config_map(self):
        return self.cluster.get("v1", "ConfigMap", self.NAME + "-config", self.cluster.namespace)


def test_helm_pinned_release_install_wait_noop_upgrade_and_uninstall(cluster, chart_repo, helm_bin, helm_homes):
    release = Release(cluster, chart_repo, helm_bin)

    checked = ok(release.run(check_mode=True, diff=True))
    assert checked["changed"] is True and checked["action"] == "install"
    assert checked["diff"]["before"] == "" and "version: 1.0.0" in checked["diff"]["after"]
    assert release.revisions() == [] and release.config_map() is None, "check mode installed"
    assert chart_repo.count() == 0, "check mode fetched the chart"

    installed = ok(release.run())
    assert installed["changed"] is True and installed["action"] == "install"
    assert installed["release"]["status"] == "deployed" and installed["release"]["revision"] == 1
    assert installed["release"]["chart"] == "demo-operator" and installed["release"]["version"] == "1.0.0"
    assert release.revisions() == [1]
    assert release.config_map()["data"] == {"mode": "first", "chartVersion": "1.0.0"}
    deployment = cluster.get("apps/v1", "Deployment", Release.NAME, cluster.namespace)
    assert deployment["spec"]["replicas"] == 0

    chart_repo.clear()
    again = ok(release.run())
    assert again["changed"] is False and again["action"] == "none"
    assert release.revisions() == [1]
    assert chart_repo.count() == 0, "a no-op must not contact the chart repository"

    values = {"replicaCount": 0, "config": {"mode": "second"}}
    preview = ok(release.run(check_mode=True, diff=True, release_values=values))
    assert preview["action"] == "upgrade" and preview["reasons"] == ["values differ"]
    assert "mode: first" in preview["diff"]["before"] and "mode: second" in preview["diff"]["after"]
    assert release.revisions() == [1] and release.config_map()["data"]["mode"] == "first"
    upgraded = ok(release.run(release_values=values))
    assert upgraded["changed"] is True and upgraded["action"] == "upgrade"
    assert upgraded["release"]["revision"] == 2 and upgraded["release"]["status"] == "deployed"
    assert release.revisions() == [1, 2]
    assert release.config_map()["data"]["mode"] == "second"

    would = ok(release.run(check_mode=True, release_state="absent"))
    assert would["changed"] is True and would["action"] == "uninstall"
    assert release.revisions() == [1, 2] and release.config_map() is not None, "check mode uninstalled"
    removed = ok(release.run(release_state="absent"))
    assert removed["changed"] is True and removed["action"] == "uninstall"
    assert release.revisions() == [] and release.config_map() is None
    assert cluster.get("apps/v1", "Deployment", Release.NAME, cluster.namespace) is None
    gone = ok(release.run(release_state="absent"))
    assert gone["changed"] is False and gone["action"] == "none"


# ---------------------------------------------------------------------------------------------- smoke_test

def cuda_params(cluster, **over):
    params = {"check": "cuda", "image": CUDA_IMAGE, "namespace": cluster.namespace, "suffix": "it"}
    params.update(over)
    return params


def test_smoke_test_check_mode_passes_server_side_dry_run_and_creates_nothing(cluster):
    result = ok(run(cluster, "smoke_test", cuda_params(cluster), check_mode=True))
    smoke = result["smoke"]
    assert result["changed"] is False and smoke["passed"] is None
    assert "dry-run" in smoke["skipped_reason"] and smoke["object"] == "pod-%s-gpu-platform-smoke-cuda-it" % cluster.namespace
    assert cluster.names("v1", "Pod", cluster.namespace) == []


def test_smoke_test_check_mode_in_a_missing_namespace_is_skipped_with_the_reason(cluster):
    missing = cluster.namespace + "-missing"
    result = ok(run(cluster, "smoke_test", cuda_params(cluster, namespace=missing), check_mode=True))
    assert result["smoke"]["passed"] is None
    assert result["smoke"]["skipped_reason"] == "check mode: namespace %s does not exist yet" % missing
    assert cluster.get("v1", "Namespace", missing) is None


def test_smoke_test_missing_namespace_fails_outside_check_mode(cluster):
    missing = cluster.namespace + "-missing"
    failed, result = run(cluster, "smoke_test", cuda_params(cluster, namespace=missing))
    assert failed and result["msg"].startswith("namespace: %s does not exist" % missing)


def test_smoke_test_pod_that_cannot_run_fails_at_its_timeout_and_is_removed(cluster):
    """A pod asking for a resource no node has never finishes (Pending on a real cluster, Running for ever on the
    fake, which has no scheduler): the task fails after ``timeout`` naming the layer and the pod, and cleans up."""
    started = time.monotonic()
    failed, result = run(cluster, "smoke_test", cuda_params(cluster, resources={NO_SUCH_RESOURCE: 1}, timeout=4))
    assert failed and result["smoke"]["passed"] is False
    assert result["msg"].startswith("gpu_operator: FAIL - pod-%s-gpu-platform-smoke-cuda-it - the pod did not finish "
                                    "within 4s: gpu-platform-smoke-cuda-it: " % cluster.namespace), result["msg"]
    assert 4 <= time.monotonic() - started < 30
    pods = wait_until(lambda: cluster.names("v1", "Pod", cluster.namespace), lambda names: names == [])
    assert pods == [], "the smoke pod was left behind"


def test_smoke_test_render_mode_writes_a_job_and_touches_no_cluster(cluster, tmp_path):
    out = tmp_path / "bundle"
    first = ok(run(cluster, "smoke_test", cuda_params(cluster, render_to=str(out))))
    name = "job-%s-gpu-platform-smoke-cuda-it.yaml" % cluster.namespace
    assert first["changed"] is True and first["rendered"]["files"] == [name]
    assert "render mode" in first["smoke"]["skipped_reason"] and (out / name).is_file()
    second = ok(run(cluster, "smoke_test", cuda_params(cluster, render_to=str(out))))
    assert second["changed"] is False
    assert cluster.names("v1", "Pod", cluster.namespace) == []
    assert cluster.names("batch/v1", "Job", cluster.namespace) == []


# ---------------------------------------------------------------------------------------------- gpu_driver_mode

def host_facts(node, **facts):
    out = {"node_name": node, "gpu_present": True, "driver_loaded": False, "driver_version": "",
           "driver_packages": {}, "toolkit_packages": {}, "nvidia_smi": ""}
    out.update(facts)
    return out


def gpu_operator_driver_evidence(cluster):
    """What gpu_driver_mode reads cluster-wide besides the selected nodes: driver pods, ClusterPolicy, NVIDIADriver."""
    found = []
    for selector in DRIVER_POD_SELECTORS:
        found += ["pod %s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                  for p in cluster.list("v1", "Pod", label_selector=selector)]
    for api_version, kind in (("nvidia.com/v1", "ClusterPolicy"), ("nvidia.com/v1alpha1", "NVIDIADriver")):
        if cluster.serves(api_version, kind):
            found += ["%s %s" % (kind, name) for name in cluster.names(api_version, kind)]
    return found


@pytest.fixture
def driver_mode(cluster):
    """gpu_driver_mode against nodes selected by a label no node has, on a cluster without the operator's driver."""
    evidence = gpu_operator_driver_evidence(cluster)
    if evidence and cluster.real:
        pytest.skip("this cluster runs the GPU Operator's driver (%s), which gpu_driver_mode reads, so its decision "
                    "differs from the fake's; use a cluster without the GPU Operator" % ", ".join(evidence[:3]))
    assert evidence == []
    selector = "%s=%s" % (TEST_LABEL, cluster.namespace)

    def decide(check_mode=False, **params):
        return run(cluster, "gpu_driver_mode", dict(params, node_selector=selector), check_mode=check_mode)
    return decide


def test_gpu_driver_mode_auto_with_no_gpu_node_picks_the_operator(driver_mode):
    for check_mode in (False, True):
        result = ok(driver_mode(check_mode=check_mode, mode="auto", rdma=True))
        assert result["changed"] is False and result["cluster_read"] is True
        assert result["mode"] == "operator" and result["owner"] == "operator" and result["peermem"] == "operator"
        assert result["reason"].startswith("auto: no GPU node seen yet")
        assert result["gpu_operator_values"]["driver"]["enabled"] is True
        assert result["gpu_operator_values"]["driver"]["rdma"]["enabled"] is True
        assert result["nodes"] == []


def test_gpu_driver_mode_host_facts_of_a_node_not_in_the_cluster(driver_mode, cluster):
    node = cluster.namespace + "-gpu-0"
    hosts = [host_facts(node, driver_loaded=True, driver_version="580.95.05")]
    result = ok(driver_mode(mode="auto", hosts=hosts))
    assert result["mode"] == "host" and result["owner"] == "host" and result["peermem"] == "host"
    assert result["gpu_operator_values"]["driver"] == {"enabled": False, "nvidiaDriverCRD": {"enabled": False}}
    (entry,) = result["nodes"]
    assert entry["name"] == node and entry["managed"] is True and entry["in_cluster"] is False


def test_gpu_driver_mode_operator_with_a_host_driver_is_refused_naming_the_node(driver_mode, cluster):
    node = cluster.namespace + "-gpu-0"
    hosts = [host_facts(node, driver_packages={"nvidia-driver-580-server": "580.95.05-0ubuntu1"})]
    failed, result = driver_mode(mode="operator", hosts=hosts)
    assert failed and node in result["msg"]
    assert "already have a host driver" in result["msg"]
    assert [n["name"] for n in result["nodes"]] == [node]


# ---------------------------------------------------------------------------------------------- nic_cluster_policy

@pytest.fixture
def nic_params(cluster):
    """nic_cluster_policy params whose namespaced objects go into the throwaway namespace; the policy is the
    cluster singleton, so on a real cluster it needs the opt-in, the CRDs and no policy already there."""
    cluster.require_cluster_scoped("the NicClusterPolicy nic-cluster-policy and an IPoIBNetwork")
    missing = [kind for api_version, kind in (POLICY[:2], IPPOOL, IPOIB_NETWORK) if not cluster.serves(api_version, kind)]
    if missing and cluster.real and cluster.own:
        install_crds(cluster, NETWORK_OPERATOR_CRDS)  # the session's own cluster: the operator's CRDs, as its chart has them
        missing = [kind for api_version, kind in (POLICY[:2], IPPOOL, IPOIB_NETWORK)
                   if not cluster.serves(api_version, kind)]
    if missing:
        pytest.skip("the cluster does not serve %s: install the NVIDIA Network Operator's CRDs" % ", ".join(missing))
    if cluster.get(*POLICY) is not None:
        pytest.skip("the cluster already has a NicClusterPolicy nic-cluster-policy; the test would overwrite it")
    network = cluster.namespace + "-rdma"
    cluster.delete_at_teardown(*POLICY)
    cluster.delete_at_teardown(IPOIB_NETWORK[0], IPOIB_NETWORK[1], network)
    return {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
            "selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]},
            "network_name": network, "network_namespace": cluster.namespace, "operator_namespace": cluster.namespace}


def test_nic_cluster_policy_check_apply_idempotence_change_and_absent(cluster, nic_params):
    ns, network = cluster.namespace, nic_params["network_name"]
    identities = ["NicClusterPolicy nic-cluster-policy", "IPPool %s/%s" % (ns, network), "IPoIBNetwork %s" % network]

    def present():
        return [cluster.get(*POLICY), cluster.get(*IPPOOL, network, ns), cluster.get(*IPOIB_NETWORK, network)]

    checked = ok(run(cluster, "nic_cluster_policy", nic_params, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["changed_objects"] == identities
    assert all(d["before"] == "" and d["after"] for d in checked["diff"])
    assert checked["pod_resources"] == {"rdma/shared_ib": 1}
    assert present() == [None, None, None], "check mode wrote"

    applied = ok(run(cluster, "nic_cluster_policy", nic_params))
    assert applied["changed"] is True and applied["changed_objects"] == identities
    policy, pool, net = present()
    assert policy["spec"]["rdmaSharedDevicePlugin"]["image"]
    assert pool["spec"]["subnet"] == "192.168.100.0/24"
    assert net["spec"]["networkNamespace"] == ns

    again = ok(run(cluster, "nic_cluster_policy", nic_params))
    assert again["changed"] is False and again["changed_objects"] == []

    changed = ok(run(cluster, "nic_cluster_policy", dict(nic_params, rdma_hca_max=16), diff=True))
    assert changed["changed_objects"] == ["NicClusterPolicy nic-cluster-policy"]
    assert changed["diff"][0]["before"] and changed["diff"][0]["before"] != changed["diff"][0]["after"]
    assert '"rdmaHcaMax": 16' in cluster.get(*POLICY)["spec"]["rdmaSharedDevicePlugin"]["config"]

    would = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent"), check_mode=True))
    assert would["changed"] is True and None not in present()
    removed = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent")))
    assert removed["changed"] is True and len(removed["removed"]) == 3
    assert present() == [None, None, None]
    gone = ok(run(cluster, "nic_cluster_policy", dict(nic_params, state="absent")))
    assert gone["changed"] is False


# ---------------------------------------------------------------------------------------------- mig_profile

class MigManagerStandIn:
    """Plays the GPU Operator's MIG manager for the test's own Node, through the API (the same on both clusters):
    when ``nvidia.com/mig.config`` changes it sets ``nvidia.com/mig.config.state`` to pending, then success."""

    def __init__(self, cluster, node):
        self.cluster, self.node = cluster, node
        self.handled = []
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mig-manager-stand-in", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)

    def _loop(self):
        last = None
        while not self._stop.wait(0.2):
            try:
                wanted = (self.cluster.labels("v1", "Node", self.node) or {}).get(MIG_CONFIG)
                if wanted and wanted != last:
                    self.cluster.patch_labels("v1", "Node", self.node, {MIG_STATE: "pending"})
                    self._stop.wait(0.5)
                    self.cluster.patch_labels("v1", "Node", self.node, {MIG_STATE: "success"})
                    last = wanted
                    self.handled.append(wanted)
            except Exception as exc:  # reported by the test, which fails on it
                self.errors.append(repr(exc))
                return


CUSTOM_MIG = {"version": "v1", "mig-configs": {
    "it-training": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]}}


def test_mig_profile_missing_node_is_refused_before_any_write(cluster):
    missing = cluster.namespace + "-no-such-node"
    failed, result = run(cluster, "mig_profile", {"nodes": [missing], "profile": "all-1g.10gb"})
    assert failed and result["msg"].startswith("nodes: node %s does not exist" % missing)


def test_mig_profile_check_mode_rollout_and_noop(cluster):
    cluster.require_cluster_scoped("a Node object gpi-*-mig-0 (no kubelet) and sets its MIG labels")
    node = cluster.namespace + "-mig-0"
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {
        TEST_LABEL: cluster.namespace, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "8", "nvidia.com/mig.capable": "true"}}})
    params = {"node_selector": "%s=%s" % (TEST_LABEL, cluster.namespace), "profile": "it-training",
              "mig_config": CUSTOM_MIG, "config_map_name": "it-mig-parted-config",
              "operator_namespace": cluster.namespace, "strategy": "mixed", "wait_timeout": "60s"}

    checked = ok(run(cluster, "mig_profile", params, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["batches"] == [[node]]
    (plan,) = checked["nodes"]
    assert plan["action"] == "change" and plan["before"] is None and plan["after"] == "it-training"
    assert plan["expected_resources"] == {"nvidia.com/mig-3g.40gb": 16}
    assert checked["diff"][0]["after"] == "%s: it-training\n" % MIG_CONFIG
    assert MIG_CONFIG not in cluster.labels("v1", "Node", node), "check mode labelled the node"
    assert cluster.get("v1", "ConfigMap", "it-mig-parted-config", cluster.namespace) is None

    with MigManagerStandIn(cluster, node) as manager:
        applied = ok(run(cluster, "mig_profile", params))
    assert manager.errors == [] and manager.handled == ["it-training"]
    assert applied["changed"] is True and applied["batches"] == [[node]]
    labels = cluster.labels("v1", "Node", node)
    assert labels[MIG_CONFIG] == "it-training" and labels[MIG_STATE] == "success"
    config_map = cluster.get("v1", "ConfigMap", "it-mig-parted-config", cluster.namespace)
    assert "it-training" in config_map["data"]["config.yaml"]

    again = ok(run(cluster, "mig_profile", params))
    assert again["changed"] is False and again["batches"] == [] and again["nodes"][0]["action"] == "keep"


# ---------------------------------------------------------------------------------------------- node_maintenance

def bound_pod(cluster, name, node, labels):
    """A pod bound to ``node`` with no controller. Without a kubelet it stays Pending on a real cluster; a grace
    period of 0 lets the API server delete it at once when it is evicted."""
    return cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": cluster.namespace, "labels": dict(labels, **{TEST_LABEL: cluster.namespace})},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": CUDA_IMAGE, "command": ["sleep", "infinity"]}]}})


def unschedulable(cluster, node):
    return (cluster.get("v1", "Node", node).get("spec") or {}).get("unschedulable")


def test_node_maintenance_missing_node_is_refused(cluster):
    missing = cluster.namespace + "-no-such-node"
    failed, result = run(cluster, "node_maintenance", {"name": missing, "state": "drained"})
    assert failed and result["msg"].startswith("name: node %s does not exist" % missing)


def test_node_maintenance_refusal_check_mode_drain_noop_and_uncordon(cluster):
    cluster.require_cluster_scoped("a Node object gpi-*-drain-0 (no kubelet), cordons and uncordons it")
    node, ns = cluster.namespace + "-drain-0", cluster.namespace
    cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {TEST_LABEL: ns}}})
    bound_pod(cluster, "loner", node, {"role": "evict"})
    bound_pod(cluster, "keeper", node, {"role": "keep"})
    params = {"name": node, "state": "drained", "pod_selector": "role=evict", "wait_timeout": "60s"}

    failed, refused = run(cluster, "node_maintenance", params)
    assert failed and "force: pods that no controller manages would not be recreated: %s/loner" % ns in refused["msg"]
    assert not unschedulable(cluster, node), "refused before the cordon"

    params["force"] = True
    checked = ok(run(cluster, "node_maintenance", params, check_mode=True, diff=True))
    assert checked["changed"] is True and checked["evicted"] == ["%s/loner" % ns]
    assert checked["not_evicted"] == [{"pod": "%s/keeper" % ns, "reason": "does not match pod_selector role=evict"}]
    assert checked["diff"][0]["after"] == {"unschedulable": True, "pods": ["%s/keeper" % ns]}
    assert not unschedulable(cluster, node)
    assert cluster.get("v1", "Pod", "loner", ns) is not None, "check mode evicted a pod"

    drained = ok(run(cluster, "node_maintenance", params))
    assert drained["changed"] is True and drained["cordoned"] is True and drained["evicted"] == ["%s/loner" % ns]
    assert unschedulable(cluster, node) is True
    assert cluster.get("v1", "Pod", "loner", ns) is None and cluster.get("v1", "Pod", "keeper", ns) is not None

    again = ok(run(cluster, "node_maintenance", params))
    assert again["changed"] is False and again["evicted"] == []

    uncordoned = ok(run(cluster, "node_maintenance", {"name": node, "state": "uncordoned"}))
    assert uncordoned["changed"] is True and uncordoned["cordoned"] is False
    assert not unschedulable(cluster, node)
    assert ok(run(cluster, "node_maintenance", {"name": node, "state": "uncordoned"}))["changed"] is False
