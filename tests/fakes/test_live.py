"""tests/fakes/live.py and its parts, against the fake API server standing in for a real one.

The fake runs no controllers here (``controllers=[]``) unless a test says so: the test plays the real
kube-controller-manager where one is needed (a DaemonSet's status), and ``LiveRunner`` reaches the fake only
over HTTP through ``LiveStore``, as it reaches the local control plane. LiveStore's own tests and the gang
placement's are in test_live_store.py.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from scripts.local_cluster.fleet import fleet

from .controllers import Controller
from .gpu_operator import OPERAND_NAMES, gpu_node
from .live_controllers import LiveGpuOperator
from .live_network import LiveNetworkOperator
from .node_agent_effects import default_mig_parted_config
from .live_volcano import LiveVolcanoJobs
from .helpers import wait_until
from .test_live_store import _policy

ROOT = Path(__file__).resolve().parents[2]


CONTAINERS = [{"name": "c", "image": "img:1"}]


# ---------------------------------------------------------------- the runner and its controllers


def _operator(namespace="gpu-operator"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "gpu-operator", "namespace": namespace, "labels": {"app": "gpu-operator"}},
            "spec": {"selector": {"matchLabels": {"app": "gpu-operator"}},
                     "template": {"metadata": {"labels": {"app": "gpu-operator"}}, "spec": {"containers": CONTAINERS}}}}


def _state(fake):
    policy = fake.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
    return ((policy or {}).get("status") or {}).get("state")


def test_gpu_operator_state_follows_the_daemonsets_and_makes_no_pods(fake, live):
    node = gpu_node("gpu-node-1")
    node["metadata"]["labels"] = {"kubernetes.io/hostname": "gpu-node-1", "nvidia.com/mig.capable": "true",
                                  "feature.node.kubernetes.io/pci-10de.present": "true",
                                  "nvidia.com/gpu.deploy.dcgm-exporter": "false"}  # a value set is kept
    fake.store.create(node)
    fake.store.create(gpu_node("cpu-node-1"))  # no NFD label: not a GPU node for the operator
    fake.store.patch("v1", "Node", "cpu-node-1", {"metadata": {"labels": {
        "nvidia.com/gpu.present": None, "feature.node.kubernetes.io/pci-10de.present": None}}})
    fake.store.create(_operator())
    live([LiveGpuOperator()])
    fake.store.create(_policy(driver={"enabled": True, "version": "595.91.07"}, toolkit={"enabled": True},
                              devicePlugin={"enabled": True}, dcgmExporter={"enabled": True}))
    wait_until(lambda: _state(fake) == "notReady", what="state notReady")
    names = OPERAND_NAMES | {"nvidia-mig-manager"}
    daemonsets = wait_until(lambda: len(fake.store.list("apps/v1", "DaemonSet", "gpu-operator")) == len(names)
                            and fake.store.list("apps/v1", "DaemonSet", "gpu-operator"), what="the operands")
    assert {ds["metadata"]["name"] for ds in daemonsets} == names
    selectors = {ds["metadata"]["name"]: ds["spec"]["template"]["spec"]["nodeSelector"] for ds in daemonsets}
    assert selectors["nvidia-mig-manager"] == {"nvidia.com/gpu.deploy.mig-manager": "true"}
    assert selectors["gpu-feature-discovery"] == {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}
    labels = wait_until(lambda: fake.store.get("v1", "Node", "gpu-node-1")["metadata"]["labels"].get(
        "nvidia.com/gpu.present") and fake.store.get("v1", "Node", "gpu-node-1")["metadata"]["labels"],
        what="the GPU node labelled")
    assert labels["nvidia.com/gpu.deploy.driver"] == "true" and labels["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert labels["nvidia.com/gpu.deploy.dcgm-exporter"] == "false"
    assert "nvidia.com/gpu.present" not in fake.store.get("v1", "Node", "cpu-node-1")["metadata"]["labels"]
    mig_config = fake.store.get("v1", "ConfigMap", "default-mig-parted-config", "gpu-operator")
    assert "all-1g.10gb" in mig_config["data"]["config.yaml"]
    assert fake.store.list("v1", "Pod") == []  # the real DaemonSet controller makes them
    for ds in daemonsets:  # play the DaemonSet controller: each operand ready on the one GPU node
        assert _state(fake) == "notReady"
        fake.store.patch_status("apps/v1", "DaemonSet", ds["metadata"]["name"],
                                {"desiredNumberScheduled": 1, "numberReady": 1}, "gpu-operator")
    wait_until(lambda: _state(fake) == "ready", what="state ready")
    assert fake.store.get("nvidia.com/v1", "ClusterPolicy", "cluster-policy")["status"]["namespace"] == "gpu-operator"
    fake.store.patch_status("apps/v1", "DaemonSet", "nvidia-driver-daemonset", {"numberReady": 0}, "gpu-operator")
    wait_until(lambda: _state(fake) == "notReady", what="state notReady again")


def test_network_operator_makes_its_daemonsets_and_follows_them(fake, live):
    """NicClusterPolicy -> one DaemonSet per component (the NIC driver's per OS release NFD found), placed by the
    policy's nodeAffinity; a component is ready only when its DaemonSet has a node and every pod available."""
    node = gpu_node("gpu-node-1")
    node["metadata"]["labels"].update({"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                                       "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04"})
    fake.store.create(node)
    fake.store.create({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "network-operator", "namespace": "network", "labels": {"app": "network-operator"}},
                       "spec": {"selector": {"matchLabels": {"app": "n"}}, "template": {
                           "metadata": {"labels": {"app": "n"}}, "spec": {"containers": CONTAINERS}}}})
    live([LiveNetworkOperator()])
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}]}]}}
    fake.store.create({"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                       "metadata": {"name": "nic-cluster-policy"},
                       "spec": {"nodeAffinity": affinity, "ofedDriver": {"image": "doca-driver"},
                                "rdmaSharedDevicePlugin": {"image": "p"}}})

    def nic_status():
        policy = fake.store.get("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
        return policy.get("status") or {}
    daemonsets = wait_until(lambda: len(fake.store.list("apps/v1", "DaemonSet", "network")) == 2
                            and fake.store.list("apps/v1", "DaemonSet", "network"), what="the component DaemonSets")
    by_name = {d["metadata"]["name"]: d for d in daemonsets}
    assert set(by_name) == {"mofed-ubuntu22.04-ds", "rdma-shared-dp-ds"}
    assert by_name["rdma-shared-dp-ds"]["spec"]["template"]["spec"]["affinity"] == {"nodeAffinity": affinity}
    assert by_name["mofed-ubuntu22.04-ds"]["metadata"]["ownerReferences"][0]["kind"] == "NicClusterPolicy"
    wait_until(lambda: nic_status().get("state") == "notReady", what="notReady while no pod runs")
    for name in by_name:  # play the DaemonSet controller: the one node's pods available
        fake.store.patch_status("apps/v1", "DaemonSet", name, {"desiredNumberScheduled": 1, "numberAvailable": 1,
                                                               "updatedNumberScheduled": 1}, "network")
    wait_until(lambda: nic_status().get("state") == "ready", what="ready")
    assert {s["name"]: s["state"] for s in nic_status()["appliedStates"]} == {
        "state-OFED": "ready", "state-RDMA-device-plugin": "ready"}
    # no node matches any more: desired 0 is not ready (upstream's isDaemonSetReady)
    fake.store.patch_status("apps/v1", "DaemonSet", "rdma-shared-dp-ds", {"desiredNumberScheduled": 0,
                                                                          "numberAvailable": 0,
                                                                          "updatedNumberScheduled": 0}, "network")
    wait_until(lambda: nic_status().get("state") == "notReady", what="notReady with no node desired")


def _volcano_job(name, replicas, gpus, anti_affinity=False):
    spec = {"restartPolicy": "Never", "containers": [{"name": "m", "image": "img:1", "resources": {
        "limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"gang": name}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": replicas, "tasks": [{
                "name": "member", "replicas": replicas,
                "template": {"metadata": {"labels": {"gang": name}}, "spec": spec}}]}}


def _nodes_of(fake, job):
    pods = fake.store.list("v1", "Pod", "default", label_selector="volcano.sh/job-name=" + job)
    return sorted((p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods)


def test_volcano_gangs_are_created_bound_or_not_at_all(fake, live):
    for name in ("gpu-node-1", "gpu-node-2"):
        fake.store.create(gpu_node(name))
    fake.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cordoned", "labels": {}},
                       "spec": {"unschedulable": True}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}})
    live([LiveVolcanoJobs(retry=60)])
    fake.store.create(_volcano_job("gang", 2, 1))
    assert wait_until(lambda: len(_nodes_of(fake, "gang")) == 2 and _nodes_of(fake, "gang")) == [
        ("gang-member-0", "gpu-node-1"), ("gang-member-1", "gpu-node-2")]  # spread, cordoned node left out
    pod = fake.store.get("v1", "Pod", "gang-member-0", "default")
    assert pod["spec"]["schedulerName"] == "volcano" and pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    fake.store.create(_volcano_job("too-big", 3, 8, anti_affinity=True))  # three nodes needed, two usable
    assert wait_until(lambda: len(_nodes_of(fake, "too-big")) == 3 and _nodes_of(fake, "too-big")) == [
        ("too-big-member-0", None), ("too-big-member-1", None), ("too-big-member-2", None)]
    fake.store.create(_volcano_job("full", 2, 8))  # 7 GPUs left on each node: a gang of 2 x 8 does not fit
    assert [node for pod, node in wait_until(lambda: _nodes_of(fake, "full"))] == [None, None]
    live([LiveVolcanoJobs(retry=60)])  # a restart sees the Jobs again, and makes no second set of pods


class _Recorder(Controller):
    """Records ConfigMap events; raises on the one named ``boom``."""

    watches = frozenset({("", "ConfigMap")})

    def __init__(self):
        self.events = []

    def handle(self, event):
        self.events.append((event.type, event.name, event.old is not None, event.group, event.kind))
        if event.name == "boom":
            raise RuntimeError("boom")


def test_events_are_shaped_as_the_fakes_and_errors_do_not_stop_the_loop(fake, live, capsys):
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before"}})
    recorder = _Recorder()
    runner = live([recorder])
    assert recorder.events == [("ADDED", "before", False, "", "ConfigMap")]
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "boom"}})
    fake.store.patch("v1", "ConfigMap", "before", {"data": {"a": "b"}})
    fake.store.delete("v1", "ConfigMap", "before")
    wait_until(lambda: len(recorder.events) == 4)
    assert recorder.events[1:] == [("ADDED", "boom", False, "", "ConfigMap"),
                                   ("MODIFIED", "before", True, "", "ConfigMap"),
                                   ("DELETED", "before", True, "", "ConfigMap")]
    assert len(runner.errors) == 1 and "RuntimeError: boom" in runner.errors[0]
    runner.errors.clear()

    watcher = runner.watchers[0]  # what a relist after 410 Gone emits: the difference with what was seen
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fresh"}})
    wait_until(lambda: len(recorder.events) == 5)
    watcher.cache.pop(("default", "fresh"))
    watcher.cache[("default", "boom")] = dict(watcher.cache[("default", "boom")], metadata=dict(
        watcher.cache[("default", "boom")]["metadata"], resourceVersion="1"))
    watcher.cache[("default", "phantom")] = {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "phantom", "namespace": "default"}}
    recorder.events.clear()
    watcher.relist()
    wait_until(lambda: len(recorder.events) == 3)
    assert sorted(e[:2] for e in recorder.events) == [("ADDED", "fresh"), ("DELETED", "phantom"),
                                                      ("MODIFIED", "boom")]
    runner.errors.clear()  # the MODIFIED boom raised again


def test_a_kind_served_later_is_picked_up(fake, live):
    recorder = _Recorder()
    recorder.watches = frozenset({("example.com", "Widget")})
    runner = live([recorder], poll=0.2)
    assert runner.synced  # not served: listed as empty
    fake.store.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                       "metadata": {"name": "widgets.example.com"},
                       "spec": {"group": "example.com", "scope": "Namespaced",
                                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                                "versions": [{"name": "v1", "served": True, "storage": True,
                                              "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    time.sleep(0.5)
    fake.store.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    wait_until(lambda: ("ADDED", "w", False, "example.com", "Widget") in recorder.events, what="the widget")
    fake.store.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com")
    wait_until(lambda: ("DELETED", "w", True, "example.com", "Widget") in recorder.events, what="the widget gone")
    watcher = runner.watchers[0]
    watcher.cache[("default", "left")] = {"metadata": {"name": "left", "namespace": "default"}}
    watcher._gone()  # what a kind that stops being served leaves behind is DELETED
    wait_until(lambda: ("DELETED", "left", True, "example.com", "Widget") in recorder.events, what="left gone")
    # the watcher's own thread may still be between two looks at discovery: its settled state is asserted
    wait_until(lambda: watcher.rtype is None and watcher.cache == {}, what="the kind forgotten")


# ---------------------------------------------------------------- the command line


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _health(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return None, ""


def test_command_line_serves_healthz_and_stops_on_sigterm(fake, tmp_path):
    port = _free_port()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "nvidia-smi.log").write_text("table\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.live", "--kubeconfig", fake.kubeconfig,
                             "--logs-dir", str(tmp_path / "logs"), "--health-port", str(port)],
                            cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: _health(port)[0] == 200 and _health(port), timeout=30) == (200, "ok")
        node = fleet(1, "mixed")[1]  # a node that declares its hardware, and a MIG manager's pod on it
        fake.store.create(node)
        fake.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "default-mig-parted-config", "namespace": "default"},
                           "data": {"config.yaml": default_mig_parted_config()}})
        fake.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "mig-manager", "namespace": "default", "labels": {"app": "nvidia-mig-manager"}},
            "spec": {"nodeName": "gpu-node-1", "containers": CONTAINERS}, "status": {"phase": "Running"}})
        fake.store.set_labels("v1", "Node", "gpu-node-1", {"nvidia.com/mig.config": "all-1g.10gb"})
        wait_until(lambda: fake.store.get("v1", "Node", "gpu-node-1")["metadata"]["labels"].get(
            "nvidia.com/mig.config.state") == "success", what="the MIG manager")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "smoke pods' logs (written here, served by KWOK): %s\n" % (tmp_path / "logs") in out
    assert "patch v1 Node gpu-node-1" in out and "watching core/Node" in out
    assert "Traceback" not in err
