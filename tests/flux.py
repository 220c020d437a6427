"""Flux on the local control plane, for tests and ``make gitops-test``: kubectl, waiting for a Flux object to be
Ready (failing with its condition and its controller's log), and a git working copy pushing to the cluster's git
server. Used by tests/cluster/test_flux.py and tests/gitops_bundle.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from local_gpu_cluster.processes import tail
from tests.gitops_checks import ready_condition
from local_gpu_cluster.testing import kubectl

CONVERGE_TIMEOUT = 300
CONTROLLER = {"GitRepository": "source-controller", "HelmRepository": "source-controller",
              "HelmChart": "source-controller", "Kustomization": "kustomize-controller",
              "HelmRelease": "helm-controller"}
RESOURCE = {"GitRepository": "gitrepository.source.toolkit.fluxcd.io",
            "HelmRepository": "helmrepository.source.toolkit.fluxcd.io",
            "HelmChart": "helmchart.source.toolkit.fluxcd.io",
            "Kustomization": "kustomization.kustomize.toolkit.fluxcd.io",
            "HelmRelease": "helmrelease.helm.toolkit.fluxcd.io", "ConfigMap": "configmap"}


def get(cluster, kind, name, namespace):
    """The object as the API server has it, or None when it does not exist."""
    proc = kubectl(cluster, "-n", namespace, "get", RESOURCE[kind], name, "-o", "json", check=False)
    if proc.returncode != 0:
        if "NotFound" in proc.stderr:
            return None
        raise AssertionError("kubectl get %s %s/%s failed: %s" % (kind, namespace, name, proc.stderr))
    return json.loads(proc.stdout)


def wait_for(cluster, kind, name, namespace, check, what, timeout=CONVERGE_TIMEOUT):
    """Poll the object until ``check(obj)`` is true (returns the object); at the deadline, fail naming the object,
    its Ready condition and the log of the controller that reconciles it."""
    deadline = time.monotonic() + timeout
    while True:
        obj = get(cluster, kind, name, namespace)
        if obj is not None and check(obj):
            return obj
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    condition = ready_condition(obj)
    log = cluster.logs / ("%s.log" % CONTROLLER.get(kind, "kustomize-controller"))
    raise AssertionError("%s %s/%s: not %s after %d s. Ready=%s (%s): %s\nController log: %s, last lines:\n%s"
                         % (kind, namespace, name, what, timeout, condition.get("status", "<none>"),
                            condition.get("reason", ""), condition.get("message", "<no Ready condition>")
                            if obj is not None else "<the object does not exist>", log, tail(log, 25)))


class Worktree:
    """A git working copy pushing to the cluster's git server (git's own client, no user configuration)."""

    def __init__(self, path, url):
        self.path = Path(path)
        self.url = url
        self.env = dict(os.environ, HOME=str(self.path.parent), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="test",
                        GIT_AUTHOR_EMAIL="test@example.invalid", GIT_COMMITTER_NAME="test",
                        GIT_COMMITTER_EMAIL="test@example.invalid")
        self.path.mkdir(parents=True)
        self.git("init", "--quiet", "--initial-branch=main")

    def git(self, *args):
        proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, env=self.env,
                              timeout=60, check=False)
        if proc.returncode != 0:
            raise AssertionError("git %s failed: %s" % (" ".join(args), proc.stderr))
        return proc.stdout.strip()

    def commit_and_push(self, files, message):
        """Write ``files`` (relative path -> object or list of objects, as YAML; None removes), commit, push;
        the new revision as Flux names it (``main@sha1:<sha>``)."""
        for relative, content in files.items():
            path = self.path / relative
            if content is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump_all(content if isinstance(content, list) else [content], sort_keys=False))
        self.git("add", "--all")
        self.git("commit", "--quiet", "-m", message)
        self.git("push", "--quiet", self.url, "main")
        return "main@sha1:" + self.git("rev-parse", "HEAD")
