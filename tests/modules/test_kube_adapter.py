"""The kube adapter against the fake API server, through the real kubernetes client."""
from __future__ import annotations

import socket

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import kube, kube_wait
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ToolError
from local_gpu_cluster.clock import FakeClock

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "labels": {"a": "1"}},
      "data": {"k": "v"}}


@pytest.fixture
def client(fake_api):
    return kube.KubeClient(kubeconfig=fake_api.kubeconfig)


def test_apply_creates_then_updates(client, fake_api):
    created = client.apply(CM)
    assert created["metadata"]["uid"] and created["data"] == {"k": "v"}
    updated = client.apply(dict(CM, data={"k": "w"}))
    assert updated["data"] == {"k": "w"}
    assert fake_api.store.get("v1", "ConfigMap", "c", "default")["data"] == {"k": "w"}
    patches = [r for r in fake_api.request_log if r["method"] == "PATCH"]
    assert all(r["content_type"].startswith("application/apply-patch") for r in patches)
    assert all(r["query"].get("fieldManager") in ("gpu-platform", ["gpu-platform"]) for r in patches)


def test_dry_run_apply_stores_nothing(client, fake_api):
    result = client.apply(CM, dry_run=True)
    assert result["data"] == {"k": "v"}
    assert fake_api.store.get("v1", "ConfigMap", "c", "default") is None
    assert fake_api.writes() == []


def test_get_list_selectors(client, fake_api):
    client.apply(CM)
    client.apply({**CM, "metadata": {"name": "d", "namespace": "default", "labels": {"a": "2"}}})
    assert client.get("v1", "ConfigMap", "nope", "default") is None
    assert client.get("v1", "ConfigMap", "c", "default")["metadata"]["labels"] == {"a": "1"}
    names = [o["metadata"]["name"] for o in client.list("v1", "ConfigMap", "default", label_selector="a=2")]
    assert names == ["d"]
    names = [o["metadata"]["name"] for o in client.list("v1", "ConfigMap", "default", field_selector="metadata.name=c")]
    assert names == ["c"]


def test_patch_labels_adds_and_removes(client, fake_api):
    client.apply(CM)
    client.patch_labels("v1", "ConfigMap", "c", {"b": "2", "a": None}, namespace="default")
    assert fake_api.store.get("v1", "ConfigMap", "c", "default")["metadata"]["labels"] == {"b": "2"}
    client.patch_labels("v1", "ConfigMap", "c", {"c": "3"}, namespace="default", dry_run=True)
    assert "c" not in fake_api.store.get("v1", "ConfigMap", "c", "default")["metadata"]["labels"]


def test_delete(client, fake_api):
    client.apply(CM)
    assert client.delete("v1", "ConfigMap", "c", "default", dry_run=True) is True
    assert fake_api.store.get("v1", "ConfigMap", "c", "default") is not None
    assert client.delete("v1", "ConfigMap", "c", "default") is True
    assert client.delete("v1", "ConfigMap", "c", "default") is False


def test_ensure_namespace(client, fake_api):
    labels = {"pod-security.kubernetes.io/enforce": "privileged"}
    expected = dict(labels, **{"kubernetes.io/metadata.name": "gpu"})  # the API server adds this one
    changed, before, after = client.ensure_namespace("gpu", labels, dry_run=True)
    assert changed and before is None and after == expected
    assert fake_api.store.get("v1", "Namespace", "gpu") is None
    assert client.ensure_namespace("gpu", labels)[0] is True
    fake_api.clear_log()
    assert client.ensure_namespace("gpu", labels) == (False, expected, expected)
    assert fake_api.writes() == []


def test_unserved_kind_is_a_clear_error(client):
    assert client.serves("nvidia.com/v1", "ClusterPolicy")
    assert not client.serves("example.com/v1", "Nothing")
    with pytest.raises(ToolError, match="does not serve example.com/v1 Nothing"):
        client.get("example.com/v1", "Nothing", "x")


def test_a_kind_whose_crd_went_is_not_served_though_the_discovery_cache_names_it(fake_api):
    # The kubernetes library keeps discovery in a file later runs read: uninstall.yml deleted the CRD (the real
    # Network Operator's NV-IPAM IPPool) since a run cached it; the next site.yml must wait for it, not apply to a 404.
    assert kube.KubeClient(kubeconfig=fake_api.kubeconfig).serves("nvidia.com/v1", "ClusterPolicy")
    fake_api.store.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "clusterpolicies.nvidia.com")
    fresh = kube.KubeClient(kubeconfig=fake_api.kubeconfig)
    assert not fresh.serves("nvidia.com/v1", "ClusterPolicy")
    assert fresh.serves("v1", "ConfigMap") and fresh.serves("apps/v1", "Deployment")


def test_api_error_carries_the_status_message(client, fake_api):
    client.apply(CM)
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "resourceVersion": "1"}}
    with pytest.raises(ToolError) as err:
        client._call("replace", client.resource("v1", "ConfigMap").replace, body=bad, namespace="default")  # pylint: disable=protected-access
    assert err.value.details["status"] == 409


def test_the_version_is_the_servers_now_not_the_discovery_caches(fake_api):
    # The kubernetes library caches discovery, the version included, in a file named after the server's URL. A
    # cluster upgraded since (or another server on the same address) must not be checked against the old version.
    fake_api.git_version = "v1.33.5"
    assert kube.KubeClient(kubeconfig=fake_api.kubeconfig).version()["gitVersion"] == "v1.33.5"
    fake_api.git_version = "v1.34.2"
    assert kube.KubeClient(kubeconfig=fake_api.kubeconfig).version()["gitVersion"] == "v1.34.2"


def test_unreadable_kubeconfig_names_the_fix(tmp_path):
    with pytest.raises(ToolError, match="could not load the kubeconfig .*Fix: set kubeconfig or K8S_AUTH_KUBECONFIG"):
        kube.KubeClient(kubeconfig=str(tmp_path / "missing"))


def test_a_missing_kubeconfig_names_the_host_the_task_runs_on(tmp_path):
    """A delegated task runs on another host, whose paths are not the controller's: the message says where."""
    missing = str(tmp_path / "missing")
    with pytest.raises(ToolError) as error:
        kube.KubeClient(kubeconfig=missing)
    assert str(error.value).startswith("could not load the kubeconfig (%s): no such file on %s, where the task runs. "
                                       "Fix: " % (missing, socket.gethostname()))


def test_wait_for_with_injected_clock_times_out_with_description():
    clock = FakeClock()
    seen = []

    def fetch():
        seen.append(clock.time())
        return {"state": "notReady"}

    with pytest.raises(kube_wait.WaitTimeout) as err:
        kube_wait.wait_for(fetch, lambda v: v["state"] == "ready", timeout=10, clock=clock, interval=2,
                           describe=lambda v: "state is %s" % v["state"])
    assert "timed out after 10s: state is notReady" in err.value.msg
    assert len(seen) == 6  # t=0,2,4,6,8,10 without any real sleeping
    assert err.value.details["last"] == {"state": "notReady"}


def test_wait_for_returns_when_ready():
    clock = FakeClock()
    values = iter([{"s": 1}, {"s": 2}, {"s": 3}])
    assert kube_wait.wait_for(lambda: next(values), lambda v: v["s"] == 3, timeout=60, clock=clock) == {"s": 3}


def test_apply_objects_writes_only_what_changes(client, fake_api):
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "default"}, "data": {"x": "y"}}
    changed, diffs = client.apply_objects([CM, other], check_mode=True)
    assert changed == ["ConfigMap default/c", "ConfigMap default/d"] and diffs[0]["before"] == {}
    assert fake_api.writes() == []
    client.apply_objects([CM, other])
    fake_api.clear_log()
    changed, diffs = client.apply_objects([CM, dict(other, data={"x": "z"})])
    assert changed == ["ConfigMap default/d"]
    assert diffs[0]["before"]["data"] == {"x": "y"} and diffs[0]["after"]["data"] == {"x": "z"}
    assert len(fake_api.writes()) == 1


def test_a_client_that_reads_no_log_never_builds_the_typed_core_api(fake_api):
    """Importing CoreV1Api builds the kubernetes library's typed models: about a second of CPU in each module run.
    Only pod logs need it, so a module that applies, lists or waits does not pay for it. kubernetes 37 is the first
    client whose package imports its typed APIs on first use; older ones (requirements.txt's floor) import them all
    with the package, a cost the adapter cannot avoid there."""
    import subprocess
    import sys
    from importlib import metadata
    if int(metadata.version("kubernetes").split(".")[0]) < 37:
        pytest.skip("kubernetes %s imports CoreV1Api with the package (lazy from 37)" % metadata.version("kubernetes"))
    code = ("import sys\n"
            "from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import kube\n"
            "k = kube.KubeClient(kubeconfig=%r)\n"
            "k.list('v1', 'Secret', label_selector='owner=helm'); k.apply(%r)\n"
            "print('kubernetes.client.api.core_v1_api' in sys.modules)\n"
            "k.log('nope', 'default')\n"
            "print('kubernetes.client.api.core_v1_api' in sys.modules)\n") % (fake_api.kubeconfig, CM)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env=dict(__import__("os").environ, PYTHONPATH=":".join(sys.path)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
