"""mig_profile, run in-process against a cluster: a missing node, check mode, rollout and no-op, with a thread
standing in for the MIG manager.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
import threading

from tests.integration.conftest import TEST_LABEL
from tests.integration.modules_cluster_helpers import ok, run

MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"


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
