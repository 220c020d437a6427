"""The scheduling and monitoring layers in site.yml: on the fake cluster (direct) and in the GitOps bundle."""
from __future__ import annotations

import os

import pytest
import yaml

from tests.playbooks.conftest import bundle, kustomizations
from tests.schema import crdschema
from tests.schema.bundle_order import order_problems
from tests.schema.test_monitoring_schema import prometheus_rule_errors
from tests.schema.test_smoke_schema import check_rendered

pytestmark = pytest.mark.slow

FLAVORS = [{"name": "a100", "gpu_product": "NVIDIA-A100-SXM4-80GB"}]
TEAMS = [{"name": "vision", "namespaces": ["vision"], "quota": {"a100": 8}},
         {"name": "nlp", "namespaces": ["nlp"], "quota": {"a100": 8}, "borrowing_limit": {"a100": 4}}]
SPEC = {"scheduling_flavors": FLAVORS, "gpu_platform_teams": TEAMS, "scheduling_cohort": "research"}


def test_schedulers_and_team_queues_go_on_once(direct_site):
    runner, api, repo = direct_site()
    first = runner.run(**SPEC)
    assert first.failed == 0, first.failure_messages() or first.debug_text()
    for namespace, release in (("volcano-system", "volcano"), ("kueue-system", "kueue")):
        secrets = api.store.list("v1", "Secret", namespace, label_selector="owner=helm,status=deployed")
        assert [s["metadata"]["labels"]["name"] for s in secrets] == [release]
    queue = api.store.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "nlp")
    assert queue["spec"]["cohortName"] == "research"
    resources = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert resources == {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4"}
    assert api.store.get("kueue.x-k8s.io/v1beta2", "LocalQueue", "gpu", "vision")["spec"]["clusterQueue"] == "vision"
    assert api.store.get("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "a100")["spec"]["nodeLabels"] == {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert api.store.get("scheduling.volcano.sh/v1beta1", "Queue", "vision") is not None
    assert api.store.get("v1", "Namespace", "nlp") is not None
    shown = first.result("What each team gets")["msg"]
    assert any("nlp" in line for line in shown)
    assert first.result("Warn of a flavor that selects no node").get("skipped") is True
    api.clear_log()
    second = runner.run()
    assert second.failed == 0 and second.changed == 0, second.changed_tasks()
    # The only writes of a converged run are the smoke tests' objects, created and removed.
    assert [w["path"] for w in api.writes() if "/gpu-platform-smoke" not in w["path"]
            and not w["path"].endswith("/pods")] == []


def test_a_flavor_no_node_matches_is_named_with_the_product_gfd_gave_the_nodes(direct_site):
    runner, api, repo = direct_site()
    renamed = [{"name": "a100", "gpu_product": "NVIDIA-A100-SXM4"}]  # the nodes say NVIDIA-A100-SXM4-80GB
    result = runner.run(**dict(SPEC, scheduling_flavors=renamed))
    assert result.failed == 0, result.failure_messages()
    warning = result.result("Warn of a flavor that selects no node")["msg"]
    assert warning[1].startswith("ResourceFlavor a100: no node has nvidia.com/gpu.product=NVIDIA-A100-SXM4, so "), warning
    api.clear_log()
    strict = runner.run(**dict(SPEC, scheduling_flavors=renamed, scheduling_require_flavor_nodes=True,
                               gpu_platform_teams=[dict(TEAMS[0], quota={"a100": 4})]))
    assert strict.failed == 1
    assert any(m.startswith("ResourceFlavor a100: no node has") for m in strict.failure_messages())
    assert api.store.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "vision")["spec"]["resourceGroups"][0][
        "flavors"][0]["resources"][0]["nominalQuota"] == "8"  # the scheduling layer wrote nothing
    assert not [w for w in api.writes() if "kueue" in w["path"] or "volcano" in w["path"]]


def test_kai_instead_of_volcano(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_scheduler="kai", **SPEC)
    assert result.failed == 0, result.failure_messages()
    assert api.store.list("v1", "Secret", "kai-scheduler", label_selector="owner=helm,status=deployed")
    assert api.store.list("v1", "Secret", "volcano-system", label_selector="owner=helm") == []
    leaf = api.store.get("scheduling.run.ai/v2", "Queue", "vision")
    assert leaf["spec"]["resources"]["gpu"]["quota"] == 8


@pytest.mark.parametrize("over, words", [
    ({"gpu_platform_teams": [dict(TEAMS[0], quota={"a100": "eight"})]},
     "gpu_platform_teams[0].quota.a100: 'eight' is not a number of GPUs"),
    ({"gpu_platform_teams": [dict(TEAMS[0], quota={"h100": 8})]}, "gpu_platform_teams[0].quota.h100"),
    ({"gpu_platform_teams": [dict(TEAMS[0], namespaces=[])]}, "gpu_platform_teams[0].namespaces"),
    ({"monitoring_thresholds": {"temperature_celsius": 300}}, "monitoring_thresholds.temperature_celsius"),
    # A later layer's chart source or version, and the image mirrors, are checked before the first layer writes.
    ({"scheduling_kueue_chart_version": "latest"}, "scheduling_kueue_chart_version: 'latest' is not a version"),
    ({"gpu_operator_chart_repo_url": "https://robot:s3cr3t@charts.example.com/nvidia"},
     "gpu_operator_chart_repo_url: the URL holds credentials"),
    ({"scheduling_volcano_chart_repo_url": "ftp://charts.example.com"}, "scheduling_volcano_chart_repo_url: 'ftp:"),
    ({"gpu_platform_image_mirrors": {"nvcr.io": "harbor"}}, "gpu_platform_image_mirrors.nvcr.io"),
    ({"gpu_operator_extra_values": {"driver": {"version": "999.1.1"}}},
     "gpu_operator_extra_values.driver.version: would change a pinned image"),
    ({"network_operator_extra_values": {"operator": {"repository": "evil.example.com/x"}}},
     "network_operator_extra_values.operator.repository"),
])
def test_bad_layer_inputs_stop_site_before_any_write(direct_site, over, words):
    runner, api, repo = direct_site()
    result = runner.run(**dict(SPEC, **over))
    assert result.failed == 1
    assert any(words in m for m in result.failure_messages()), result.failure_messages()
    assert api.writes() == []
    assert "s3cr3t" not in result.stdout


def test_monitoring_applies_what_the_cluster_serves_and_says_what_it_skips(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(monitoring_release_label="kube-prometheus-stack")
    assert result.failed == 0, result.failure_messages()
    monitor = api.store.get("monitoring.coreos.com/v1", "ServiceMonitor", "gpu-platform-dcgm-exporter", "gpu-operator")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
    # The fake serves both Prometheus Operator CRDs (shared/upstream/monitoring): the rules go on too, nothing skipped.
    rule = api.store.get("monitoring.coreos.com/v1", "PrometheusRule", "gpu-platform-dcgm-exporter", "gpu-operator")
    assert rule is not None and rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert result.result("Say what is skipped and why").get("skipped") is True


def demo_choices():
    """The offline default inventory's choices (what `make demo` renders), without its render folder."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "inventories", "local", "group_vars", "all",
                        "platform.yml")
    with open(path, encoding="utf-8") as handle:
        return {k: v for k, v in yaml.safe_load(handle).items() if k != "gpu_platform_render_to"}


def test_the_demo_bundle_has_every_layer(render_site, shared_dir):
    runner, out = render_site
    choices = demo_choices()
    result = runner.run(**choices)
    assert result.failed == 0, result.failure_messages()
    summary = result.result("What was written and which versions are pinned")["msg"]
    assert summary[1] == ("Rendered: the network_operator, gpu_operator, gpu_sharing, dra_driver, scheduling and "
                          "monitoring layers."), summary
    files = bundle(out)
    kinds = {doc["kind"] for doc in files.values() if isinstance(doc, dict) and "kind" in doc}
    assert {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Queue", "ServiceMonitor", "PrometheusRule",
            "NicClusterPolicy", "HelmRelease", "ConfigMap"} <= kinds
    for name, doc in files.items():
        if doc.get("kind") in ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Queue", "ServiceMonitor"):
            crdschema.validate(doc)
    rule = files["prometheusrule-gpu-operator-gpu-platform-dcgm-exporter.yaml"]
    assert prometheus_rule_errors(rule) == []
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # Every layer's smoke test, as Jobs in their own folder (applied after the platform is ready).
    smoke_files = bundle(out / "smoke")
    assert sorted(smoke_files) == [
        "job-gpu-platform-smoke-gpu-platform-smoke-cuda-inference.yaml",
        "job-gpu-platform-smoke-gpu-platform-smoke-cuda-training.yaml",
        "job-gpu-platform-smoke-gpu-platform-smoke-cuda.yaml",
        "job-gpu-platform-smoke-gpu-platform-smoke-dra.yaml",
        "job-gpu-platform-smoke-gpu-platform-smoke-gang.yaml",
        "job-gpu-platform-smoke-gpu-platform-smoke-nccl.yaml",
        "namespace-gpu-platform-smoke.yaml",
        "resourceclaimtemplate-gpu-platform-smoke-gpu-platform-smoke-dra.yaml"]
    for name, doc in smoke_files.items():
        check_rendered(doc)
    assert sorted(kustomizations(out)["smoke"]["resources"]) == sorted(smoke_files)
    assert smoke_files["namespace-gpu-platform-smoke.yaml"]["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"] == "privileged", "nccl-tests workers add IPC_LOCK"
    smoke = files["gpu-platform-smoke.yaml"]["spec"]
    assert smoke["path"].endswith("/smoke") and smoke["force"] is True
    assert [d["name"] for d in smoke["dependsOn"]] == ["gpu-platform-network-ipam", "gpu-platform-gpu-sharing",
                                                       "gpu-platform-dra-driver", "gpu-platform-scheduling-config"], \
        "after every layer"
    ipam = files["gpu-platform-network-ipam.yaml"]["spec"]
    assert ipam["dependsOn"] == [{"name": "gpu-platform-network-config"}], "the IPPool once the policy is ready"
    assert [doc["kind"] for doc in bundle(out / "network-ipam").values()] == ["IPPool"]
    assert "IPPool" not in [doc["kind"] for doc in bundle(out / "network-config").values()]
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


def test_dra_moves_the_chosen_nodes_and_keeps_the_device_plugin_off_them(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(gpu_platform_dra_enabled=True, dra_driver_nodes="nodepool=training")
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    moved = api.store.get("v1", "Node", "gpu-node-2")["metadata"]["labels"]
    assert moved["nvidia.com/dra-kubelet-plugin"] == "true" and moved["nvidia.com/gpu.deploy.device-plugin"] == "false"
    kept = api.store.get("v1", "Node", "gpu-node-1")["metadata"]["labels"]
    assert "nvidia.com/dra-kubelet-plugin" not in kept and "nvidia.com/gpu.deploy.device-plugin" not in kept
    controller = api.store.get("apps/v1", "Deployment", "dra-driver-nvidia-gpu-controller", "dra-driver-nvidia-gpu")
    assert controller["metadata"]["annotations"]["driver-root"] == "/run/nvidia/driver"  # the operator's driver
    env = api.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["spec"]["driver"]["manager"]["env"]
    assert {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"} in env
    warnings = result.result("What could not be confirmed (not a failure)")["msg"]
    assert any("1.34.2" in w for w in warnings), warnings  # the fake cluster runs v1.34.1
    said = [name for name, res in result.tasks() if name.endswith("What could not be confirmed (not a failure)")
            and not res.get("skipped")]
    assert len(said) == 1, "the preflight ran by checks.yml is not run again by the layer: %s" % said
    again = runner.run()
    assert again.failed == 0 and again.changed == 0, again.changed_tasks()


@pytest.mark.parametrize("over, cluster, words", [
    ({}, {"git_version": "v1.33.5"}, "1.34"),
    # The version matrix knows the 580 floor too, so the platform preflight already refuses it.
    ({"gpu_platform_driver_version": "575.57.08"}, {}, "driver < 580"),
    ({"dra_driver_nodes": ""}, {}, "dra_driver_nodes: is missing"),
])
def test_dra_is_refused_before_any_write(direct_site, over, cluster, words):
    runner, api, repo = direct_site(**cluster)
    result = runner.run(**dict({"gpu_platform_dra_enabled": True, "dra_driver_nodes": "nodepool=training"}, **over))
    assert result.failed == 1
    assert any(words in m for m in result.failure_messages()), result.failure_messages()
    assert api.writes() == []


@pytest.mark.parametrize("fmt", ["flux", "argocd"])
def test_the_demo_bundle_applies_in_order(render_site, fmt):
    """The static check of the order (tests/schema/bundle_order.py) passes for the demo bundle in both formats."""
    runner, out = render_site
    choices = demo_choices()
    result = runner.run(**dict(choices, gpu_platform_render_format=fmt))
    assert result.failed == 0, result.failure_messages()
    assert order_problems(out) == []
    units = sorted(kustomizations(out))
    assert units == ["", "dra-driver", "gpu-operator", "gpu-sharing", "monitoring", "network-config",
                     "network-ipam", "network-operator", "scheduling", "scheduling-config", "smoke"]
    if fmt == "flux":
        release = bundle(out)["helmrelease-gpu-operator-gpu-operator.yaml"]
        assert release["spec"]["dependsOn"] == [{"name": "network-operator", "namespace": "nvidia-network-operator"}]


def test_the_order_check_fails_on_a_flat_bundle(tmp_path):
    """The check can fail: the former flat layout (charts and their custom resources in one unit) is refused."""
    flat = tmp_path / "platform" / "all"
    flat.mkdir(parents=True)
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-network-operator"}},
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
         "metadata": {"name": "network-operator", "namespace": "nvidia-network-operator"},
         "spec": {"install": {"disableWait": True}, "dependsOn": [{"name": "gpu-operator", "namespace": "gpu-operator"}]}},
        {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"}},
        {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
         "metadata": {"name": "rdma-net", "namespace": "nvidia-network-operator"}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
         "metadata": {"name": "dcgm", "namespace": "gpu-operator"}}]
    (flat / "all.yaml").write_text(yaml.safe_dump_all(objects))
    (flat / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["all.yaml"]}))
    (flat.parent / "gpu-platform-all.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "gpu-platform-all", "namespace": "flux-system"},
        "spec": {"path": "./platform/all", "dependsOn": [{"name": "gpu-platform-missing"}]}}))
    (flat.parent / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["gpu-platform-all.yaml"]}))
    problems = "\n".join(order_problems(flat.parent))
    assert "gpu-platform-all: neither wait nor health checks" in problems
    assert "dependsOn gpu-platform-missing, which is not in the bundle" in problems
    assert "all/NicClusterPolicy /nic-cluster-policy: its CRD comes with the network-operator chart (all)" in problems
    assert "all/ServiceMonitor gpu-operator/dcgm: its Namespace gpu-operator is not applied before it" in problems
    assert ("all/IPPool nvidia-network-operator/rdma-net: its CRD is installed by the operator once it reconciles the "
            "NicClusterPolicy (all), which is not applied before it") in problems
    assert "all/HelmRelease nvidia-network-operator/network-operator: disableWait" in problems
    assert ("all/HelmRelease nvidia-network-operator/network-operator: dependsOn the HelmRelease gpu-operator/"
            "gpu-operator, which is not in the bundle") in problems


def test_every_wrong_platform_setting_is_reported_in_one_run(direct_site):
    """One pass: a user with five mistakes learns of all five from one run, and nothing was written."""
    runner, api, repo = direct_site()
    result = runner.run(**dict(SPEC, scheduling_kueue_chart_version="latest",
                               gpu_platform_image_mirrors={"nvcr.io": "harbor"},
                               gpu_operator_extra_values={"driver": {"version": "1.2.3"}},
                               gpu_operator_chart_repo_url="https://robot:s3cr3t@charts.example.com",
                               gpu_operator_driver_upgrade_policy={"bogus": 1}))
    assert result.failed == 1
    [message] = result.failure_messages()  # checks.yml's preflight: one message, one line per mistake
    named = [line.split(": ")[0] for line in message.splitlines()]
    assert {"scheduling_kueue_chart_version", "gpu_platform_image_mirrors.nvcr.io",
            "gpu_operator_extra_values.driver.version", "gpu_operator_chart_repo_url",
            "gpu_operator_driver_upgrade_policy.bogus"} <= set(named), message
    assert len(named) == len(set(named)), "each mistake once"
    assert "s3cr3t" not in result.stdout
    assert api.writes() == []


def test_every_layers_mistakes_are_reported_in_one_run(direct_site):
    """A mistake in the platform settings, the team spec and the monitoring thresholds: one run names all three."""
    runner, api, repo = direct_site()
    result = runner.run(**dict(SPEC, scheduling_kueue_chart_version="latest",
                               gpu_platform_teams=[dict(TEAMS[0], quota={"a100": "eight"})],
                               monitoring_thresholds={"temperature_celsius": 300}))
    assert result.failed == 1
    [message] = result.failure_messages()  # checks.yml's preflight: one message, one line per mistake
    assert [line.split(": ")[0] for line in message.splitlines()] == [
        "scheduling_kueue_chart_version", "gpu_platform_teams[0].quota.a100", "monitoring_thresholds.temperature_celsius"]
    assert api.writes() == []


DRA_OWNER_CHANGES = """
- name: The DRA layer after checks.yml, once with the driver owner checks.yml saw, once with another
  hosts: k8s_api[0]
  gather_facts: false
  vars:
    dra_driver_nodes: nodepool=training
    dra_driver_kubernetes_version: v1.34.2
    gpu_platform_driver_branch: "580"
  tasks:
    - name: The contract
      ansible.builtin.import_role:
        name: gpu_platform.cluster.gpu_platform
        tasks_from: variables
    - name: The driver decision of driver_mode.yml
      ansible.builtin.set_fact:
        gpu_platform_driver_decision: {owner: operator}
    - name: What checks.yml does
      ansible.builtin.include_role:
        name: gpu_platform.cluster.dra_driver
        tasks_from: preflight
    - name: What checks.yml says after its checks
      ansible.builtin.set_fact:
        _gpu_platform_layers_checked: true
    - name: The layer, same owner
      ansible.builtin.include_role:
        name: gpu_platform.cluster.dra_driver
    - name: The GPU Operator layer decided again, and the hosts own the driver now
      ansible.builtin.set_fact:
        gpu_platform_driver_decision: {owner: host}
    - name: The layer, new owner
      ansible.builtin.include_role:
        name: gpu_platform.cluster.dra_driver
    - name: The values the layer released
      ansible.builtin.debug:
        msg: "{{ _dra_driver_values.nvidiaDriverRoot }}"
"""


def test_the_dra_layer_checks_again_only_when_the_driver_owner_changed_after_checks(render_site, tmp_path):
    """checks.yml's DRA preflight is reused by the layer (not run, nor its warnings printed, twice) only for the driver
    owner it saw: the values (nvidiaDriverRoot) and the 580 floor depend on it, and the GPU Operator layer may decide
    the owner again after checks.yml."""
    runner, out = render_site
    playbook = tmp_path / "dra.yml"
    playbook.write_text(DRA_OWNER_CHANGES)
    result = runner.run(playbook=str(playbook))
    assert result.failed == 0, result.failure_messages()
    preflights = [res.get("skipped", False) for name, res in result.tasks()
                  if name.endswith("Preflight (unless site.yml's checks ran it in this run for the same driver owner)")]
    assert preflights == [True, False], preflights
    assert result.result("The values the layer released")["msg"] == "/", "the hosts' driver root, not the operator's"
