"""mig_profile on the fake cluster with a simulated MIG manager (per-node delay, failures, stuck nodes)."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube import KubeClient
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import mig_profile as workflow
from local_gpu_cluster.clock import FakeClock
from local_gpu_cluster.controllers import Controller, MigManager, default_controllers
from local_gpu_cluster.gpu_operator import gpu_node
from tests.modules.harness import run_module

CONFIG, STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"


class PendingWatcher(Controller):
    """Records the most nodes ever reconfiguring at the same time, and the order nodes were labelled."""

    watches = frozenset({("", "Node")})

    def __init__(self):
        self.most = 0
        self.order = []

    def handle(self, event):
        nodes = self.store.list("v1", "Node")
        self.most = max(self.most, sum(1 for n in nodes if n["metadata"]["labels"].get(STATE) == "pending"))
        if event.obj["metadata"]["labels"].get(CONFIG) and event.name not in self.order:
            self.order.append(event.name)


def mig_node(name, product="NVIDIA-A100-SXM4-80GB", capable="true", **labels):
    node = gpu_node(name, product=product)
    node["metadata"]["labels"].update({"nvidia.com/mig.capable": capable, "nodepool": "training"}, **labels)
    return node


@pytest.fixture
def cluster(fake_api_factory):
    def make(count=5, delay=30.0, fail_nodes=(), extra_nodes=()):
        clock = FakeClock()
        watcher = PendingWatcher()
        api = fake_api_factory(clock=clock, controllers=[MigManager(delay=delay, fail_nodes=fail_nodes), watcher]
                               + default_controllers())
        for i in range(count):
            api.store.create(mig_node("gpu-%02d" % i))
        for node in extra_nodes:
            api.store.create(node)
        api.clear_log()
        api.watcher = watcher
        return api, KubeClient(kubeconfig=api.kubeconfig)
    return make


def labels(api, name):
    return api.store.get("v1", "Node", name)["metadata"]["labels"]


@pytest.mark.parametrize("max_unavailable", [1, 2, 5])
def test_batches_never_exceed_max_unavailable_and_wait_for_each(cluster, max_unavailable):
    api, kube = cluster(count=5, delay=30.0)
    params = {"node_selector": "nodepool=training", "profile": "all-1g.10gb", "max_unavailable": max_unavailable,
              "wait_timeout": "10m"}
    started = api.clock.time()
    result = workflow.run(params, lambda: kube, clock=api.clock, interval=5.0)
    assert result["changed"]
    assert all(len(b) <= max_unavailable for b in result["batches"])
    assert api.watcher.most <= max_unavailable
    assert api.watcher.order == ["gpu-00", "gpu-01", "gpu-02", "gpu-03", "gpu-04"]
    batches = -(-5 // max_unavailable)
    assert batches * 30 <= api.clock.time() - started <= batches * 35, "each batch waited for, no fixed sleeps"
    assert all(labels(api, "gpu-%02d" % i)[STATE] == "success" for i in range(5))
    assert result["reboot_needed"] is True
    again = workflow.run(params, lambda: kube, clock=api.clock)
    assert again["changed"] is False and again["batches"] == []
    assert {n["action"] for n in again["nodes"]} == {"keep"}


def test_stop_on_first_failure_leaves_the_rest_untouched(cluster):
    api, kube = cluster(count=5, delay=10.0, fail_nodes=("gpu-02",))
    params = {"node_selector": "nodepool=training", "profile": "all-1g.10gb", "max_unavailable": 2}
    with pytest.raises(GpuPlatformError) as err:
        workflow.run(params, lambda: kube, clock=api.clock, interval=5.0)
    assert "failed on gpu-02" in err.value.msg and "gpu-04 left untouched" in err.value.msg
    assert err.value.details["untouched"] == ["gpu-04"]
    assert CONFIG not in labels(api, "gpu-04")
    assert labels(api, "gpu-00")[STATE] == "success"


def test_the_state_of_the_previous_layout_is_not_taken_for_the_new_ones(fake_api_factory):
    """A node at all-disabled reads mig.config.state=success until its MIG manager notices the new layout: that
    success is the old layout's. With no MIG manager acting, the rollout must wait (and time out), not succeed."""
    clock = FakeClock()
    api = fake_api_factory(clock=clock, controllers=default_controllers())
    api.store.create(mig_node("gpu-00", **{CONFIG: "all-disabled", STATE: "success"}))
    kube = KubeClient(kubeconfig=api.kubeconfig)
    with pytest.raises(GpuPlatformError) as err:
        workflow.run({"nodes": ["gpu-00"], "profile": "all-1g.10gb", "wait_timeout": "60s"}, lambda: kube,
                     clock=clock, interval=5.0)
    assert "did not finish within 60s" in err.value.msg and "gpu-00: state unset" in err.value.msg
    assert labels(api, "gpu-00")[CONFIG] == "all-1g.10gb" and STATE not in labels(api, "gpu-00")


class LateDiscovery(Controller):
    """GPU Feature Discovery labelling a new node ``after`` seconds (once its driver is loaded)."""

    watches = frozenset({("", "Node")})

    def __init__(self, after):
        self.after = after

    def handle(self, event):
        if event.type == "ADDED":
            self.clock.call_later(self.after, lambda: self.store.set_labels("v1", "Node", event.name, {
                "nvidia.com/mig.capable": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}))


def test_a_node_gfd_has_not_labelled_yet_is_waited_for_not_refused(fake_api_factory):
    clock = FakeClock()
    api = fake_api_factory(clock=clock, controllers=[LateDiscovery(30.0), MigManager(delay=5.0)] + default_controllers())
    node = gpu_node("gpu-00")
    for key in ("nvidia.com/mig.capable", "nvidia.com/gpu.product"):
        node["metadata"]["labels"].pop(key, None)
    api.store.create(node)
    kube = KubeClient(kubeconfig=api.kubeconfig)
    result = workflow.run({"nodes": ["gpu-00"], "profile": "all-1g.10gb", "wait_timeout": "5m"}, lambda: kube,
                          clock=clock, interval=5.0)
    assert result["changed"] and labels(api, "gpu-00")[STATE] == "success"
    assert clock.time() >= 30, "it waited for GFD's labels"


def test_a_node_that_stays_pending_times_out_as_stuck(cluster):
    api, kube = cluster(count=2, delay=10_000.0)
    with pytest.raises(GpuPlatformError) as err:
        workflow.run({"nodes": ["gpu-00", "gpu-01"], "profile": "all-1g.10gb", "max_unavailable": 1,
                      "wait_timeout": "60s"}, lambda: kube, clock=api.clock, interval=5.0)
    assert "did not finish within 60s" in err.value.msg and "gpu-00: state pending" in err.value.msg
    assert CONFIG not in labels(api, "gpu-01"), "the next batch is not started"


def test_stuck_nodes_are_reported_before_any_write_then_retriggered(cluster):
    stuck = mig_node("gpu-stuck", **{CONFIG: "all-1g.10gb", STATE: "pending",
                                     "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"})
    api, kube = cluster(count=1, delay=5.0, extra_nodes=[stuck])
    params = {"node_selector": "nodepool=training", "profile": "all-1g.10gb"}
    with pytest.raises(GpuPlatformError) as err:
        workflow.run(params, lambda: kube, clock=api.clock)
    assert "gpu-stuck (state pending, nvidia.com/gpu.deploy.device-plugin)" in err.value.msg
    assert "retrigger_stuck: true" in err.value.msg
    assert api.writes() == []
    result = workflow.run(dict(params, retrigger_stuck=True), lambda: kube, clock=api.clock, interval=5.0)
    actions = {n["name"]: n["action"] for n in result["nodes"]}
    assert actions == {"gpu-00": "change", "gpu-stuck": "retrigger"}
    assert labels(api, "gpu-stuck")[STATE] == "success"


def test_validation_names_nodes_before_any_write(cluster):
    t4 = mig_node("t4-node", product="Tesla-T4", capable="false")
    api, kube = cluster(count=1, extra_nodes=[t4])
    with pytest.raises(GpuPlatformError) as err:
        workflow.run({"node_selector": "nodepool=training", "profile": "all-1g.10gb"}, lambda: kube, clock=api.clock)
    assert err.value.msg.startswith("nodes: not MIG-capable: t4-node (Tesla-T4, mig.capable=false)")
    assert api.writes() == []


def test_layout_that_does_not_fit_the_gpu_is_refused(cluster):
    a100_40 = mig_node("a100-40", product="NVIDIA-A100-SXM4-40GB")
    api, kube = cluster(count=0, extra_nodes=[a100_40])
    with pytest.raises(GpuPlatformError) as err:
        workflow.run({"nodes": ["a100-40"], "profile": "all-3g.40gb"}, lambda: kube, clock=api.clock)
    assert err.value.msg.startswith("profile: does not fit node a100-40 (A100-40GB)")
    assert api.writes() == []


@pytest.mark.parametrize("over, words", [
    ({"nodes": ["gpu-00"], "node_selector": "nodepool=training"}, "nodes: give either nodes or node_selector"),
    ({"max_unavailable": 0}, "max_unavailable: 0 is not a positive whole number"),
    ({"node_selector": "nodepool=none"}, "node_selector: 'nodepool=none' selects no node"),
    ({"nodes": ["ghost"], "node_selector": None}, "nodes: node ghost does not exist"),
    ({"profile": "all-7g.99gb"}, "profile:"),
    ({"wait_timeout": "forever"}, "wait_timeout:"),
])
def test_bad_input_through_the_module(cluster, over, words):
    api, kube = cluster(count=1)
    params = dict({"node_selector": "nodepool=training", "profile": "all-1g.10gb", "kubeconfig": api.kubeconfig}, **over)
    failed, result = run_module("mig_profile", {k: v for k, v in params.items() if v is not None})
    assert failed and result["msg"].startswith(words), result["msg"]
    assert "Fix:" in result["msg"]
    assert api.writes() == []


def test_check_mode_and_diff_through_the_module(cluster):
    api, kube = cluster(count=2, delay=0.0)
    params = {"node_selector": "nodepool=training", "profile": "all-1g.10gb", "kubeconfig": api.kubeconfig}
    failed, result = run_module("mig_profile", params, check_mode=True, diff=True)
    assert not failed, result
    assert result["changed"] and result["batches"] == [["gpu-00"], ["gpu-01"]]
    assert "all-1g.10gb" in result["diff"][0]["after"] and "None" in result["diff"][0]["before"]
    assert api.writes() == []
    failed, result = run_module("mig_profile", params)
    assert not failed and result["changed"]
    failed, again = run_module("mig_profile", params)
    assert again["changed"] is False


def test_render_to_writes_the_label_patch_list(tmp_path):
    params = {"nodes": ["gpu-02", "gpu-01"], "profile": "all-balanced", "render_to": str(tmp_path)}
    failed, result = run_module("mig_profile", params)
    assert not failed and result["changed"]
    text = (tmp_path / "mig-profile-all-balanced-node-labels.yaml").read_text()
    assert text.index("gpu-01") < text.index("gpu-02") and "nvidia.com/mig.config: all-balanced" in text
    failed, again = run_module("mig_profile", params)
    assert again["changed"] is False


CUSTOM = {"version": "v1", "mig-configs": {
    "custom-training": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
    "too-big": [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.80gb": 2}}]}}


def test_custom_config_is_installed_and_rolled_out(cluster):
    api, kube = cluster(count=2, delay=5.0)
    result = workflow.run({"node_selector": "nodepool=training", "profile": "custom-training", "mig_config": CUSTOM,
                           "max_unavailable": 2}, lambda: kube, clock=api.clock, interval=5.0)
    assert result["changed"]
    cm = api.store.get("v1", "ConfigMap", "custom-mig-parted-config", "gpu-operator")
    assert "custom-training" in cm["data"]["config.yaml"]
    assert labels(api, "gpu-01")[CONFIG] == "custom-training" and labels(api, "gpu-01")[STATE] == "success"
    assert result["nodes"][0]["layout"] == CUSTOM["mig-configs"]["custom-training"]


def test_custom_config_that_does_not_fit_is_refused_before_any_write(cluster):
    api, kube = cluster(count=1)
    with pytest.raises(GpuPlatformError) as err:
        workflow.run({"nodes": ["gpu-00"], "profile": "too-big", "mig_config": CUSTOM}, lambda: kube, clock=api.clock)
    assert err.value.msg.startswith("mig_config: mig-configs.too-big[0].mig-devices")
    assert api.writes() == []


@pytest.mark.parametrize("strategy, expected", [
    ("single", {"nvidia.com/gpu": 56}),
    ("mixed", {"nvidia.com/mig-1g.10gb": 56}),
])
def test_expected_resources_per_node(cluster, strategy, expected):
    api, kube = cluster(count=1, delay=0.0)
    result = workflow.run({"nodes": ["gpu-00"], "profile": "all-1g.10gb", "strategy": strategy}, lambda: kube,
                          clock=api.clock, interval=5.0)
    assert result["nodes"][0]["expected_resources"] == expected  # 8 A100-80GB x 7 instances
