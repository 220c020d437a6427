"""helm_pinned_release, run in-process against a cluster: install, wait, no-op, upgrade and uninstall.

The test bodies are the same for the fake API server and a real one (see conftest.py); objects are read back
through the kubernetes client, never from the fake's store. Each test works in its own throwaway namespace."""
import pytest
from tests.integration.modules_cluster_helpers import ok, run


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
