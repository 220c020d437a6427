# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The door to the ``helm`` binary (Helm 3 and 4): argv building, JSON parsing, flag differences.

Private to the collection: not a public API. No Ansible imports: the caller passes a
``run(argv, env) -> (rc, stdout, stderr)`` function (AnsibleModule.run_command in modules,
subprocess in tests and benchmarks).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError

SECRET_FLAGS = ("--kube-token", "--password")


def subprocess_run(argv, env=None):
    """(rc, stdout, stderr) of ``argv`` with ``env`` (None: this process's); stdin is closed, so a tool that would
    prompt fails instead of waiting."""
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def redact(argv):
    """The argv as it may be shown to users: values of secret flags hidden."""
    out, hide = [], False
    for arg in argv:
        if hide:
            out.append("********")
            hide = False
            continue
        flag, eq, dummy = arg.partition("=")
        if flag in SECRET_FLAGS:
            if eq:
                out.append(flag + "=********")
            else:
                out.append(arg)
                hide = True
            continue
        out.append(arg)
    return out


def find_helm(binary_path=None, search_path=None):
    """The helm executable: ``binary_path`` if given, else ``helm`` on the PATH."""
    if binary_path:
        if os.path.isfile(binary_path) and os.access(binary_path, os.X_OK):
            return binary_path
        raise ParamError("binary_path", "%s is not an executable file" % binary_path,
                         "give the path of a helm 3.x or 4.x binary, or drop binary_path to use helm on the PATH")
    found = shutil.which("helm", path=search_path)
    if not found:
        raise ParamError("binary_path", "no helm on the PATH", "install helm 3.x or 4.x or set binary_path")
    return found


class Helm:
    """A helm binary plus connection flags; records every command it runs (redacted)."""

    def __init__(self, binary="helm", run=subprocess_run, env=None, kube_flags=None):
        self.binary = binary
        self._run = run
        self.env = env
        self.kube_flags = list(kube_flags or [])
        self.commands = []
        self._major = None

    # -- plumbing ---------------------------------------------------------
    def run(self, args, kube=True, ok_codes=(0,)):
        argv = [self.binary] + list(args) + (self.kube_flags if kube else [])
        self.commands.append(" ".join(redact(argv)))
        try:
            rc, out, err = self._run(argv, self.env)
        except OSError as exc:
            raise ToolError("could not run helm (%s): %s. Fix: install helm 3 or 4 and set binary_path"
                            % (self.binary, exc))
        if rc not in ok_codes:
            raise ToolError("helm %s failed (rc=%s): %s" % (args[0], rc, (err or out).strip()),
                            command=" ".join(redact(argv)), rc=rc, stderr=err, stdout=out)
        return rc, out, err

    def run_json(self, args, default=None):
        out = self.run(list(args) + ["--output", "json"])[1]
        text = out.strip()
        if not text or text == "null":
            return default
        try:
            return json.loads(text)
        except ValueError:
            raise ToolError("helm %s printed something that is not JSON: %s" % (args[0], text[:200]))

    # -- versions and flags -----------------------------------------------
    @property
    def major(self):
        """3 or 4, asked once from ``helm version``."""
        if self._major is None:
            out = self.run(["version", "--template", "{{.Version}}"], kube=False)[1]
            match = re.match(r"v?(\d+)\.", out.strip())
            if not match or int(match.group(1)) not in (3, 4):
                raise ToolError("unsupported helm version %r. Fix: use helm 3.x or 4.x" % out.strip())
            self._major = int(match.group(1))
        return self._major

    def wait_flags(self, wait, timeout):
        flags = ["--timeout", "%ds" % timeout]
        if wait:
            flags.append("--wait=watcher" if self.major >= 4 else "--wait")
        return flags

    def rollback_on_failure_flag(self):
        return "--rollback-on-failure" if self.major >= 4 else "--atomic"

    # -- reads --------------------------------------------------------------
    def list_releases(self):
        """Every release in every namespace and every state (deployed, failed, pending-*, ...)."""
        return self.run_json(["list", "--all-namespaces", "--deployed", "--failed", "--pending", "--uninstalling", "--max", "0"], default=[]) or []

    def get_values(self, name, namespace):
        return self.run_json(["get", "values", name, "--namespace", namespace], default={}) or {}

    def history(self, name, namespace):
        return self.run_json(["history", name, "--namespace", namespace, "--max", "20"], default=[]) or []

    # -- writes -------------------------------------------------------------
    def upgrade_install(self, name, namespace, chart, version, values_file, repo_url="", wait=False,
                        timeout=300, atomic=False, plain_http=False):
        args = ["upgrade", name, chart, "--install", "--namespace", namespace, "--version", version,
                "--values", values_file, "--reset-values"]
        if repo_url:
            args += ["--repo", repo_url]
        if plain_http:
            args.append("--plain-http")
        args += self.wait_flags(wait, timeout)
        if atomic:
            args.append(self.rollback_on_failure_flag())
        return self.run_json(args)

    def rollback(self, name, namespace, revision, wait=False, timeout=300):
        self.run(["rollback", name, str(revision), "--namespace", namespace] + self.wait_flags(wait, timeout))

    def uninstall(self, name, namespace, wait=False, timeout=300):
        args = ["uninstall", name, "--namespace", namespace, "--timeout", "%ds" % timeout]
        if wait:
            args.append("--wait")
        self.run(args)

    def pull(self, chart, version, dest, repo_url="", plain_http=False):
        args = ["pull", chart, "--version", version, "--destination", dest]
        if repo_url:
            args += ["--repo", repo_url]
        if plain_http:
            args.append("--plain-http")
        self.run(args, kube=False)


def kube_flags(kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None, validate_certs=True,
               tmpdir=None, api_connect_timeout=None, api_read_timeout=None):  # pylint: disable=unused-argument
    """helm's global connection flags from the collection's kube auth options, and the environment helm needs.

    Returns (flags, env). The API time-outs are the Python client's; helm keeps its own.
    Credentials never go on the command line (other users of the host see it in ps):
    a bearer token with a host, or a kubeconfig given as a dictionary, is written to a kubeconfig file of mode
    0600 in ``tmpdir`` (a private folder the caller removes: the module's tmpdir); a token without a host goes in
    helm's HELM_KUBETOKEN environment variable (readable by the same user only).
    """
    flags, env = [], {}
    if api_key and host:
        if not tmpdir:
            raise ValueError("a folder for the token's kubeconfig is needed")
        cluster = {"server": host}
        if ca_cert:
            cluster["certificate-authority"] = ca_cert
        if validate_certs is False:
            cluster["insecure-skip-tls-verify"] = True
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "gpu-platform",
                  "clusters": [{"name": "gpu-platform", "cluster": cluster}],
                  "users": [{"name": "gpu-platform", "user": {"token": api_key}}],
                  "contexts": [{"name": "gpu-platform", "context": {"cluster": "gpu-platform", "user": "gpu-platform"}}]}
        return ["--kubeconfig", private_file(tmpdir, "helm-token.kubeconfig", json.dumps(config))], env
    if isinstance(kubeconfig, dict):
        if not tmpdir:
            raise ValueError("a folder for the kubeconfig is needed")
        kubeconfig = private_file(tmpdir, "helm.kubeconfig", json.dumps(kubeconfig))
    if kubeconfig:
        flags += ["--kubeconfig", kubeconfig]
    if context:
        flags += ["--kube-context", context]
    if host:
        flags += ["--kube-apiserver", host]
    if api_key:
        env["HELM_KUBETOKEN"] = api_key
    if ca_cert:
        flags += ["--kube-ca-file", ca_cert]
    if validate_certs is False:
        flags.append("--kube-insecure-skip-tls-verify")
    return flags, env


def private_file(folder, name, text):
    """``text`` written to ``folder/name`` with mode 0600 (created so, never wider); returns the path."""
    path = os.path.join(folder, name)
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
