"""The helm adapter: argv per helm major, JSON parsing, redaction, errors (helm itself is faked here;
tests/modules run the real binaries)."""
import json
import os

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


def test_a_token_reaches_helm_in_a_private_kubeconfig_never_on_its_command_line(tmp_path):
    rec = Recorder(outputs={"list": (0, "[]", "")})
    flags, env = h.kube_flags(host="https://api:6443", api_key="s3cr3t", ca_cert="/ca.pem", validate_certs=False,
                              kubeconfig="/ignored", context="ignored", tmpdir=str(tmp_path))
    helm = h.Helm("helm", run=rec, env=env, kube_flags=flags)
    helm.list_releases()
    assert env == {} and "s3cr3t" not in " ".join(rec.argv[0]) and "s3cr3t" not in " ".join(helm.commands)
    path = rec.argv[0][rec.argv[0].index("--kubeconfig") + 1]
    assert os.path.dirname(path) == str(tmp_path) and os.stat(path).st_mode & 0o777 == 0o600
    config = json.loads(open(path, encoding="utf-8").read())
    assert config["users"][0]["user"] == {"token": "s3cr3t"}
    assert config["clusters"][0]["cluster"] == {"server": "https://api:6443", "certificate-authority": "/ca.pem",
                                                "insecure-skip-tls-verify": True}
    assert h.kube_flags(host="https://api", api_key="t2", tmpdir=str(tmp_path))[0] == ["--kubeconfig", path], \
        "a second helm in the same run rewrites its own file"
    assert h.redact(["--kube-token=abc"]) == ["--kube-token=********"]


def test_a_token_without_a_host_goes_in_helms_environment():
    flags, env = h.kube_flags(kubeconfig="/k", api_key="s3cr3t")
    assert flags == ["--kubeconfig", "/k"] and env == {"HELM_KUBETOKEN": "s3cr3t"}


def test_a_kubeconfig_given_as_a_dictionary_is_written_to_a_private_file(tmp_path):
    flags, env = h.kube_flags(kubeconfig={"apiVersion": "v1", "users": [{"name": "u", "user": {"token": "x"}}]},
                              context="c", tmpdir=str(tmp_path))
    assert flags[0] == "--kubeconfig" and flags[2:] == ["--kube-context", "c"] and env == {}
    assert os.stat(flags[1]).st_mode & 0o777 == 0o600 and json.loads(open(flags[1]).read())["users"][0]["name"] == "u"


def test_kube_flags():
    assert h.kube_flags(kubeconfig="/k", context="c", ca_cert="/ca") == (
        ["--kubeconfig", "/k", "--kube-context", "c", "--kube-ca-file", "/ca"], {})
    assert h.kube_flags() == ([], {})


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
