"""The helm adapter: argv per helm major, JSON parsing, redaction, errors (helm itself is faked here;
tests/modules run the real binaries)."""
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import helm as h
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ToolError


class Recorder:
    def __init__(self, version="v3.18.0", outputs=None):
        self.version = version
        self.outputs = outputs or {}
        self.argv = []

    def __call__(self, argv, env):
        self.argv.append(argv)
        if argv[1] == "version":
            return 0, self.version, ""
        return self.outputs.get(argv[1], (0, "", ""))


@pytest.mark.parametrize("version, wait_flag, atomic_flag", [("v3.18.0", "--wait", "--atomic"),
                                                             ("v4.1.4", "--wait=watcher", "--rollback-on-failure")])
def test_upgrade_flags_per_major(version, wait_flag, atomic_flag):
    rec = Recorder(version, {"upgrade": (0, json.dumps({"name": "r"}), "")})
    helm = h.Helm("helm", run=rec, kube_flags=["--kubeconfig", "/k"])
    out = helm.upgrade_install("r", "ns", "chart", "1.0.0", "/v.json", repo_url="http://repo", wait=True,
                               timeout=90, atomic=True)
    assert out == {"name": "r"}
    argv = rec.argv[-1]
    assert argv[:4] == ["helm", "upgrade", "r", "chart"]
    assert wait_flag in argv and atomic_flag in argv
    assert argv[argv.index("--timeout") + 1] == "90s"
    assert argv[argv.index("--repo") + 1] == "http://repo"
    assert argv[-2:] == ["--kubeconfig", "/k"]
    assert rec.argv[0] == ["helm", "version", "--template", "{{.Version}}"]


def test_version_is_asked_once_and_unsupported_refused():
    rec = Recorder("v3.18.0")
    helm = h.Helm("helm", run=rec)
    assert helm.major == 3 and helm.major == 3
    assert sum(1 for a in rec.argv if a[1] == "version") == 1
    with pytest.raises(ToolError, match="unsupported helm version"):
        h.Helm("helm", run=Recorder("v2.17.0")).major


def test_reads_do_not_ask_the_version():
    rec = Recorder(outputs={"list": (0, "[]", ""), "get": (0, "null", "")})
    helm = h.Helm("helm", run=rec)
    assert helm.list_releases() == []
    assert helm.get_values("r", "ns") == {}
    assert [a[1] for a in rec.argv] == ["list", "get"]


def test_failure_is_a_tool_error_with_stderr():
    rec = Recorder(outputs={"list": (1, "", "Error: Kubernetes cluster unreachable")})
    with pytest.raises(ToolError) as err:
        h.Helm("helm", run=rec).list_releases()
    assert "cluster unreachable" in err.value.msg and err.value.details["rc"] == 1


def test_bad_json_is_a_tool_error():
    rec = Recorder(outputs={"list": (0, "NAME STATUS", "")})
    with pytest.raises(ToolError, match="not JSON"):
        h.Helm("helm", run=rec).list_releases()


def test_missing_binary_is_clear():
    def boom(argv, env):
        raise FileNotFoundError(2, "No such file or directory")
    with pytest.raises(ToolError, match="binary_path"):
        h.Helm("/nope/helm", run=boom).list_releases()


def test_token_is_redacted_in_recorded_commands():
    rec = Recorder(outputs={"list": (0, "[]", "")})
    helm = h.Helm("helm", run=rec, kube_flags=h.kube_flags(host="https://api", api_key="s3cr3t", validate_certs=False))
    helm.list_releases()
    assert "s3cr3t" not in " ".join(helm.commands)
    assert "--kube-token ********" in helm.commands[0]
    assert "s3cr3t" in rec.argv[0]  # the real argv still carries it
    assert h.redact(["--kube-token=abc"]) == ["--kube-token=********"]


def test_kube_flags():
    assert h.kube_flags(kubeconfig="/k", context="c", ca_cert="/ca") == ["--kubeconfig", "/k", "--kube-context", "c", "--kube-ca-file", "/ca"]
    assert h.kube_flags() == []


def test_find_helm(tmp_path):
    exe = tmp_path / "helm"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert h.find_helm(str(exe)) == str(exe)
    assert h.find_helm(None, search_path=str(tmp_path)) == str(exe)
    with pytest.raises(h.ParamError, match="binary_path: no helm on the PATH"):
        h.find_helm(None, search_path=str(tmp_path / "empty"))
    exe.chmod(0o644)
    with pytest.raises(h.ParamError, match="is not an executable file"):
        h.find_helm(str(exe))
