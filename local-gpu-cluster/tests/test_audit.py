"""The audit log reader (local_gpu_cluster/audit.py) over hand-made logs, the API server's audit flags, and the
run's own credential (a client certificate of the cluster's CA under a name of its own)."""

import base64
import gzip
import json
import os
import stat
import uuid
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from local_gpu_cluster import __main__ as cli
from local_gpu_cluster.audit import POLICY, AuditLog, Mark, describe, write_policy
from local_gpu_cluster.components import control_plane
from local_gpu_cluster.pki import Pki

RUN = "gpu-platform-run"
T0 = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)


def event(verb, resource, namespace="", name="", user=RUN, agent="kubectl/v1.35.8 (linux/amd64)", code=200,
          at=0.0, query="", subresource="", stage="ResponseComplete", audit_id=None, group=""):
    """One audit.k8s.io/v1 event as the API server writes it at Metadata level, ``at`` seconds after T0."""
    path = "/api/v1" if not group else "/apis/%s/v1" % group
    if namespace and resource != "namespaces":
        path += "/namespaces/" + namespace
    path += "/" + resource + ("/" + name if name and verb not in ("create",) else "")
    path += ("/" + subresource if subresource else "") + ("?" + query if query else "")
    ref = {"resource": resource, "namespace": namespace, "name": name, "apiGroup": group, "apiVersion": "v1"}
    if subresource:
        ref["subresource"] = subresource
    stamp = (T0 + timedelta(seconds=at)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
            "auditID": audit_id or str(uuid.uuid4()), "stage": stage, "requestURI": path, "verb": verb,
            "user": {"username": user, "groups": ["system:masters", "system:authenticated"]},
            "sourceIPs": ["127.0.0.1"], "userAgent": agent, "objectRef": {k: v for k, v in ref.items() if v},
            "responseStatus": {"metadata": {}, "code": code}, "requestReceivedTimestamp": stamp,
            "stageTimestamp": stamp}


def write(path, events, mode="w"):
    with open(path, mode) as handle:
        for item in events:
            handle.write(item if isinstance(item, str) else json.dumps(item) + "\n")
    return path


def since(seconds):
    return Mark(T0 + timedelta(seconds=seconds))


def test_writes_of_the_run_in_the_window_reads_others_and_dry_runs_left_out(tmp_path):
    log = write(tmp_path / "audit.log", [
        event("create", "configmaps", "team-a", "before", at=-1),  # before the mark
        event("get", "nodes", name="gpu-node-1", at=1),  # a read
        event("list", "namespaces", at=1.5),
        event("patch", "nodes", name="gpu-node-1", at=2),  # a node's label: cluster-scoped
        event("patch", "clusterpolicies", name="cluster-policy", group="nvidia.com", at=3, query="dryRun=All"),
        event("create", "namespaces", name="team-b", at=4, query="fieldManager=kubectl-create&dryRun=All"),
        event("update", "leases", "kube-node-lease", "gpu-node-1", user="system:kwok-controller", at=5),
        event("delete", "pods", "gpu-operator", "p1", user="gpu-platform-admin", at=6),  # the tests' own
        event("create", "namespaces", name="team-c", at=7),
        event("deletecollection", "secrets", "team-c", at=8),
        event("update", "nodes", name="gpu-node-2", subresource="status", at=9),
        event("create", "selfsubjectaccessreviews", group="authorization.k8s.io", at=9.5, code=201),  # a question
        event("create", "configmaps", "team-a", "after", at=20),  # after the window
    ])
    audit = AuditLog(log)
    found = audit.writes(since(0), until=since(10), user=RUN)
    assert [(r.verb, r.resource, r.namespace, r.name) for r in found] == [
        ("patch", "nodes", "", "gpu-node-1"), ("create", "namespaces", "", "team-c"),
        ("deletecollection", "secrets", "team-c", ""), ("update", "nodes/status", "", "gpu-node-2")]
    assert found[0].user == RUN and found[0].user_agent.startswith("kubectl/") and found[0].code == 200
    assert found[0].request_uri == "/api/v1/nodes/gpu-node-1"
    assert str(found[0]) == "patch nodes gpu-node-1 by gpu-platform-run (kubectl/v1.35.8 (linux/amd64)): 200 " \
                            "/api/v1/nodes/gpu-node-1"
    # every client's, without the user filter; the dry-runs on their own when asked for
    assert len(audit.writes(since(0), until=since(10))) == 6
    assert [r.resource for r in audit.writes(since(0), until=since(10), user=RUN, dry_run=True)] == [
        "clusterpolicies", "namespaces"]
    assert [r.name for r in audit.writes(since(0), user=RUN)][-1] == "after"  # no end: to the end of the log
    assert len(audit.requests(since(0), until=since(10), user=RUN)) == 9
    assert "patch nodes gpu-node-1" in describe(found) and describe([]) == "(none)"


def test_a_refused_write_is_reported_unless_asked_not_to(tmp_path):
    """A write a webhook refused is still a write the client attempted: reported by default."""
    log = write(tmp_path / "audit.log", [event("create", "localqueues", "team-a", "q", group="kueue.x-k8s.io",
                                               code=403, at=1),
                                         event("patch", "nodes", name="n", code=404, at=2),
                                         event("patch", "nodes", name="m", code=200, at=3)])
    audit = AuditLog(log)
    assert [(r.name, r.code) for r in audit.writes(since(0), user=RUN)] == [("q", 403), ("n", 404), ("m", 200)]
    assert [r.name for r in audit.writes(since(0), user=RUN, failed=False)] == ["m"]


def test_user_agent_is_a_prefix_and_allow_takes_rules_and_predicates(tmp_path):
    probe, client = "gpu-platform-host-probe", "OpenAPI-Generator/33.1.0/python"
    log = write(tmp_path / "audit.log", [
        event("patch", "namespaces", name=probe, namespace=probe, at=1, agent=client),
        event("create", "namespaces", name=probe, at=1.1, agent=client),
        event("patch", "jobs", probe, "probe-gpu-node-1", group="batch", at=2, agent=client),
        event("delete", "jobs", probe, "probe-gpu-node-1", group="batch", at=3, agent=client),
        event("delete", "namespaces", name=probe, namespace=probe, at=4, agent=client),  # as the server logs it
        event("create", "jobs", "default", "other", group="batch", at=5, agent=client),
        event("create", "secrets", "gpu-operator", "sh.helm.release.v1.gpu-operator.v1", at=6, agent="Helm/3.19.0"),
    ])
    audit = AuditLog(log)
    assert [r.name for r in audit.writes(since(0), user_agent="Helm/")] == ["sh.helm.release.v1.gpu-operator.v1"]
    assert audit.writes(since(0), user_agent="Helm/3.18") == []
    rules = [("namespaces", probe), ("jobs", probe), ("pods", probe)]
    left = audit.writes(since(0), user=RUN, allow=rules)
    assert [(r.resource, r.namespace, r.name) for r in left] == [
        ("jobs", "default", "other"), ("secrets", "gpu-operator", "sh.helm.release.v1.gpu-operator.v1")]
    assert [r.name for r in audit.writes(since(0), allow=rules + [("secrets", "gpu-*")])] == ["other"]
    assert audit.writes(since(0), allow=[lambda r: True]) == []
    assert len(audit.writes(since(0), allow=[("jobs", "gpu-platform-*")])) == 5  # a pattern names no other kind
    deleted = audit.writes(since(3.5), until=since(4.5))[0]
    assert (deleted.namespace, deleted.name) == ("", probe)  # a namespace is cluster-scoped
    assert str(deleted).startswith("delete namespaces %s by" % probe)


def test_rotated_files_are_read_and_those_last_written_before_the_mark_are_not_opened(tmp_path):
    old = write(tmp_path / "audit-2026-11-28T11-00-00.000.log", ["not an event at all\n"])
    os.utime(old, (T0.timestamp() - 3600,) * 2)
    gz = tmp_path / "audit-2026-11-28T12-00-01.000.log.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(json.dumps(event("create", "namespaces", name="in-gzip", at=0.5)) + "\n")
    rotated = write(tmp_path / "audit-2026-11-28T12-00-02.000.log", [event("create", "namespaces", name="rotated",
                                                                           at=1)])
    current = write(tmp_path / "audit.log", [event("create", "namespaces", name="current", at=2)])
    write(tmp_path / "audit-policy.yaml", ["{}\n"])  # beside it, not a log
    for path in (gz, rotated, current):
        os.utime(path, (T0.timestamp() + 10,) * 2)
    audit = AuditLog(current)
    assert [p.name for p in audit.files()] == [old.name, gz.name, rotated.name, "audit.log"]
    assert [r.name for r in audit.writes(since(0))] == ["in-gzip", "rotated", "current"]
    os.utime(old, (T0.timestamp() + 10,) * 2)  # now it is read, and it is not a log
    with pytest.raises(ValueError, match=r"audit-2026-11-28T11-00-00.000.log, line 1, is not an audit event"):
        audit.writes(since(0))


def test_the_mark_starts_at_the_end_of_the_file_current_then_even_once_it_is_rotated(tmp_path):
    current = tmp_path / "audit.log"
    audit = AuditLog(current)
    assert audit.mark().offset == 0  # no log yet, and no answer: an empty one would read as "nothing written"
    with pytest.raises(FileNotFoundError, match="no audit log at %s" % current):
        audit.writes(audit.mark())
    write(current, ["garbage the reader must not reach\n"])
    mark = audit.mark()
    assert mark.offset == current.stat().st_size and mark.time > T0
    now = (mark.time - T0).total_seconds()
    write(current, [event("patch", "nodes", name="n1", at=now + 1)], mode="a")
    assert [r.name for r in audit.writes(mark)] == ["n1"]
    write(current, ["not an event\n"], mode="a")
    with pytest.raises(ValueError, match="audit.log, line 2 after byte %d, is not an audit event" % mark.offset):
        audit.writes(mark)
    write(current, ["garbage the reader must not reach\n", event("patch", "nodes", name="n1", at=now + 1)])
    current.rename(tmp_path / "audit-2099-01-01T00-00-00.000.log")  # lumberjack renames, the inode stays
    write(current, [event("patch", "nodes", name="n2", at=now + 2)])
    assert [r.name for r in audit.writes(mark)] == ["n1", "n2"]
    with pytest.raises(ValueError, match="line 1, is not an audit event"):
        audit.writes(Mark(mark.time))  # without the offset, the whole file is read


def test_the_line_being_written_is_left_and_a_watch_counts_once(tmp_path):
    watch = event("watch", "nodes", at=1, stage="ResponseStarted", audit_id="a1")
    log = write(tmp_path / "audit.log", [watch, dict(watch, stage="ResponseComplete"),
                                         event("patch", "nodes", name="n", at=2),
                                         json.dumps(event("delete", "nodes", name="half", at=3))[:80]])
    audit = AuditLog(log)
    assert [r.verb for r in audit.requests(since(0))] == ["watch", "patch"]
    assert [r.name for r in audit.writes(since(0))] == ["n"]
    version = dict(event("get", "", at=4), requestURI="/version", objectRef=None)
    write(log, ["\n", json.dumps(version) + "\n"], mode="a")  # the half line is whole now (the next one went on)
    with pytest.raises(ValueError, match="line 4, is not an audit event"):
        audit.requests(since(0))
    write(log, [version])
    assert str(audit.requests(since(3))[0]) == "get by gpu-platform-run (kubectl/v1.35.8 (linux/amd64)): 200 /version"


def test_the_api_server_writes_the_log_into_the_cluster_directory_with_the_policy(tmp_path):
    state = SimpleNamespace(dir=tmp_path)
    ports = dict.fromkeys(("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                           "kwok"), 1)
    (apiserver,) = [c for c in control_plane(tmp_path / "bin", state, Pki(tmp_path / "pki"), ports)
                    if c.name == "kube-apiserver"]
    flags = dict(a.split("=", 1) for a in apiserver.argv[1:])
    assert flags["--audit-log-path"] == str(tmp_path / "audit.log")
    assert flags["--audit-log-format"] == "json" and flags["--audit-log-mode"] == "blocking"
    assert int(flags["--audit-log-maxsize"]) > 0 and int(flags["--audit-log-maxbackup"]) > 0
    policy = yaml.safe_load(open(flags["--audit-policy-file"]))
    assert policy == POLICY and policy["rules"] == [{"level": "Metadata"}]
    assert policy["omitStages"] == ["RequestReceived"] and write_policy(tmp_path).name == "audit-policy.yaml"


def test_the_run_gets_a_certificate_of_its_own_with_the_admins_rights_in_a_0600_kubeconfig(tmp_path):
    pki = Pki(tmp_path / "pki").ensure()
    path = pki.user_kubeconfig(tmp_path / ("kubeconfig-" + RUN), "https://127.0.0.1:6443", RUN)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(pki.key("client-user-" + RUN).stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    user = config["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == RUN
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert cert.issuer == x509.load_pem_x509_certificate(pki.ca.read_bytes()).subject
    assert base64.b64decode(user["client-key-data"]) == pki.key("client-user-" + RUN).read_bytes()
    again = pki.user_kubeconfig(tmp_path / "again", "https://127.0.0.1:7443", RUN)  # the same certificate, kept
    assert yaml.safe_load(again.read_text())["users"][0]["user"]["client-certificate-data"] == \
        user["client-certificate-data"]
    for bad in ("system:admin", "Admin", "../x", "", "a" * 64):
        with pytest.raises(ValueError, match="is not a user name for the local cluster"):
            pki.user_kubeconfig(tmp_path / "bad", "https://127.0.0.1:6443", bad)


def test_the_kubeconfig_command_refuses_without_a_traceback(tmp_path, monkeypatch, capsys):
    """No running cluster, or a name that is not one: a one-line message and exit status 1."""
    monkeypatch.setenv("CLUSTER_DIR", str(tmp_path))
    assert cli.main(["kubeconfig", "--user", RUN]) == 1
    err = capsys.readouterr().err
    assert err == "cluster-kubeconfig: the local cluster in %s is not running (make cluster-up)\n" % tmp_path
    (tmp_path / "state.json").write_text(json.dumps({"ports": {"kube-apiserver": 6443}}))
    monkeypatch.setattr(cli, "_running", lambda state, data: True)
    assert cli.main(["kubeconfig", "--user", "system:admin"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cluster-kubeconfig: 'system:admin' is not a user name for the local cluster"), err
    assert "Traceback" not in err and not (tmp_path / "kubeconfig-system:admin").exists()


def test_down_takes_the_audit_log_with_etcds_data_unless_it_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLUSTER_DIR", str(tmp_path))
    logs = [write(tmp_path / name, []) for name in ("audit.log", "audit-2026-11-28T12-00-00.000.log")]
    assert cli.main(["down", "--keep-data"]) == 0 and all(p.exists() for p in logs)
    assert cli.main(["down"]) == 0 and not any(p.exists() for p in logs)
    assert (tmp_path / "state.json").exists() and "nothing was running" in capsys.readouterr().out
