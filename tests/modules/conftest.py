"""Fixtures for module tests: real helm (3 and 4) against the fake API server and loopback repos."""
from __future__ import annotations

import base64
import gzip
import json
import os

import pytest

from local_gpu_cluster.clock import FakeClock
from tests.modules.harness import run_module


class HelmModuleEnv:
    """One test's world: the fake cluster, a chart repository, and a helm binary."""

    def __init__(self, api, repo, helm_bin):
        self.api = api
        self.repo = repo
        self.helm_bin = helm_bin

    def params(self, **over):
        base = {
            "release_name": "demo", "release_namespace": "demo", "chart_ref": "demo-operator",
            "chart_repo_url": self.repo.url, "chart_version": "1.0.0", "binary_path": self.helm_bin,
            "kubeconfig": self.api.kubeconfig, "wait_timeout": "20s",
        }
        base.update(over)
        return {k: v for k, v in base.items() if v is not None}

    def run(self, check_mode=False, diff=False, **over):
        return run_module("helm_pinned_release", self.params(**over), check_mode=check_mode, diff=diff)

    # -- what the cluster holds ------------------------------------------------
    def release_secrets(self, name="demo", namespace="demo"):
        return self.api.store.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % name)

    def releases(self, name="demo", namespace="demo"):
        """Decoded helm release records, by revision."""
        out = {}
        for secret in self.release_secrets(name, namespace):
            out[int(secret["metadata"]["labels"]["version"])] = decode_release(secret)
        return out

    def set_release_status(self, revision, status, name="demo", namespace="demo"):
        """Rewrite a stored release's status, as an interrupted helm would have left it."""
        def change(secret):
            record = decode_release(secret)
            record["info"]["status"] = status
            secret["data"]["release"] = encode_release(record)
            secret["metadata"]["labels"]["status"] = status
        self.api.store.modify("v1", "Secret", "sh.helm.release.v1.%s.v%d" % (name, revision), change, namespace)


def decode_release(secret):
    payload = base64.b64decode(secret["data"]["release"])
    return json.loads(gzip.decompress(base64.b64decode(payload)))


def encode_release(record):
    payload = base64.b64encode(gzip.compress(json.dumps(record).encode()))
    return base64.b64encode(payload).decode()


@pytest.fixture
def module_api(fake_api_factory):
    """A fake cluster that, like a real one, refuses objects in namespaces that do not exist."""
    server = fake_api_factory(clock=FakeClock(), require_namespaces=True)
    for name in ("demo", "team-a", "team-b"):
        server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    server.clear_log()
    return server


@pytest.fixture
def hm(module_api, chart_repo, helm_bin, helm_env, monkeypatch):
    """A HelmModuleEnv for helm 3 and then helm 4 (parametrized through helm_bin)."""
    fake_api = module_api
    for key, value in helm_env.items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    monkeypatch.delenv("HELM_DRIVER", raising=False)
    return HelmModuleEnv(fake_api, chart_repo, helm_bin)


@pytest.fixture
def helm_major(helm_bin):
    return 4 if os.path.basename(helm_bin).endswith("4") else 3
