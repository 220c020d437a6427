"""local_gpu_cluster/live.py and its parts, against the fake API server standing in for a real one.

The fake runs no controllers here (``controllers=[]``) unless a test says so: the test plays the real
kube-controller-manager where one is needed (a DaemonSet's status), and ``LiveRunner`` reaches the fake only
over HTTP through ``LiveStore``, as it reaches the local control plane. LiveStore's own tests are in
test_live_store.py.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from local_gpu_cluster.fleet import fleet
from local_gpu_cluster.paths import python_path_env
from local_gpu_cluster.processes import pick_ports

from local_gpu_cluster.controllers import Controller
from local_gpu_cluster.node_agent_effects import default_mig_parted_config
from local_gpu_cluster.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]


CONTAINERS = [{"name": "c", "image": "img:1"}]


# ---------------------------------------------------------------- the runner and its controllers


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


class _Refused(Controller):
    """Refused by the server (a webhook down: 500) on its first two tries at ConfigMap ``flaky``."""

    watches = frozenset({("", "ConfigMap")})

    def __init__(self):
        self.seen = []

    def handle(self, event):
        from kubernetes.dynamic.exceptions import InternalServerError
        if event.name != "flaky":
            return
        self.seen.append((event.type, (event.obj.get("data") or {}).get("v")))
        if len(self.seen) <= 2:
            refusal = type("E", (Exception,), {"status": 500, "reason": "webhook down", "body": "", "headers": {}})
            error = InternalServerError(refusal())
            error.status = 500
            raise error


def test_a_write_refused_for_now_is_tried_again_on_the_object_as_it_is_then(fake, live, monkeypatch):
    """A kubelet or controller requeues what the server refused for now (Kueue's pod webhook while its process
    restarts refused a node agent's write during the upgrade, and the node's agents were never reconciled again)."""
    from local_gpu_cluster import live as live_module
    monkeypatch.setattr(live_module, "RETRY_DELAY", 0.2)
    refused = _Refused()
    runner = live([refused])
    fake.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flaky"}, "data": {"v": "1"}})
    wait_until(lambda: len(refused.seen) >= 1)
    fake.store.patch("v1", "ConfigMap", "flaky", {"data": {"v": "2"}})  # changed before the next try
    wait_until(lambda: len(refused.seen) >= 4)
    assert refused.seen[0] == ("ADDED", "1") and ("MODIFIED", "2") in refused.seen[1:]
    assert runner.settle()
    tries = len(refused.seen)
    assert runner.settle() and len(refused.seen) == tries  # accepted: not tried again
    assert len(runner.errors) == 2
    runner.errors.clear()


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


def _health(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return None, ""


def test_a_kind_that_went_away_is_looked_for_again_only_every_poll(monkeypatch):
    """After a CRD is deleted, discovery can still name its kind while a list of it answers 404: the watcher must
    wait ``poll`` between tries, not spin on the 404 (it did, keeping a core busy after every uninstall)."""
    from local_gpu_cluster import live as live_module
    lists = []

    class _Store:
        def preferred(self, group, kind):
            return type("RType", (), {"api_version": "example.com/v1", "store_key": ("example.com", "Widget")})()

        def list_raw(self, rtype):
            lists.append(time.monotonic())
            raise live_module.NotServed("example.com/v1 Widget is not served")

    class _Runner:
        store = _Store()

        def log(self, *args, **kwargs):
            pass

        def submit(self, fn):
            fn()

        submit_event = submit

    watcher = live_module.Watcher(_Runner(), "example.com", "Widget", poll=0.2).start()
    time.sleep(1.0)
    watcher.stop()
    assert 2 <= len(lists) <= 7, "%d lists in 1 s with a poll of 0.2 s" % len(lists)
    assert all(b - a >= 0.15 for a, b in zip(lists, lists[1:])), lists


def test_command_line_serves_healthz_and_stops_on_sigterm(fake, tmp_path):
    port = pick_ports(("health",))["health"]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "nvidia-smi.log").write_text("table\n")
    env = python_path_env(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "local_gpu_cluster.live", "--kubeconfig", fake.kubeconfig,
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
