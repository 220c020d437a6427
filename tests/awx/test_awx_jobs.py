"""The documented AWX job templates (meta/awx/job_templates.yml, docs/awx.md) run as AWX runs them: the Galaxy
artifact installed on its own, an ansible-runner private data directory with the survey's answers, AWX's
Kubernetes bearer-token credential (no kubeconfig anywhere) and the NGC registry credential type shipped in
meta/awx, against the local control plane. Each job ends ``successful`` and its second run changes nothing; no
job event, stdout or fact cache holds the token, the CA's or the admin's key, the registry password or a password
answer; a failed job's last failure names the field in a short sentence. The counts go to build/awx/report.json.
"""
from __future__ import annotations

import base64
import json
import secrets
import socket
from pathlib import Path

import pytest
import yaml

from tests.awx.runner import Job, KubernetesBearerToken, credential_type, installed_collection, job_templates, scan
from tests.local_cluster import ROOT, api_server_and_ca, kubectl, service_account_token

pytestmark = pytest.mark.slow
NAMESPACE = "awx-jobs"
BINDING = "awx-jobs-deployer"
REPORT = ROOT / "build" / "awx" / "report.json"
CLUSTER_VARS = ROOT / "inventories" / "cluster" / "group_vars" / "all"
NGC = "GPU platform NGC registry"
PULL_SECRET = "ngc-registry"
# The answers an operator gives; everything else is the survey's default. The network and scheduler answers are
# the local cluster inventory's own choices (a survey answer overrides the inventory).
SITE_ANSWERS = {"gpu_platform_driver_mode": "operator", "network_operator_mode": "rdma_shared",
                "scheduling_scheduler": "volcano"}


def cluster_inventory(chart_repo_url):
    """inventories/cluster's variables, minus its kubeconfig and the lookups of the checkout's build folder: the
    job reaches the cluster through the credential alone."""
    out = {}
    for path in sorted(CLUSTER_VARS.glob("*.yml")):
        for key, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if key.startswith("local_cluster_") or key == "gpu_platform_kubeconfig":
                continue
            if isinstance(value, str):
                value = value.replace("{{ local_cluster_charts }}", chart_repo_url)
            out[key] = value
    return out


class Awx:
    """The jobs of this module: one artifact, one credential, every run recorded."""

    def __init__(self, cluster, workdir):
        self.cluster, self.workdir = cluster, Path(workdir)
        self.collections = installed_collection(self.workdir / "artifact")
        self.templates = job_templates()
        token = service_account_token(cluster, NAMESPACE, BINDING)
        host, ca_pem = api_server_and_ca(cluster)
        self.kubernetes = KubernetesBearerToken(host=host, bearer_token=token, ssl_ca_cert=ca_pem)
        self.inventory = cluster_inventory(cluster.chart_repo_url)
        self.registry_password = "ngc-" + secrets.token_hex(16)
        self.survey_password = "survey-" + secrets.token_hex(16)
        admin = yaml.safe_load(Path(cluster.kubeconfig).read_text())["users"][0]["user"]
        self.secrets = {"token": token, "registry password": self.registry_password,
                        "survey password": self.survey_password,
                        "admin client key": key_body(base64.b64decode(admin["client-key-data"]).decode()),
                        "CA key": key_body((cluster.dir / "pki" / "ca.key").read_text())}
        self.runs = []

    def job(self, name, answers=None, registry=False, kubernetes=None, inventory=None):
        custom = [(credential_type(NGC), {"password": self.registry_password})] if registry else []
        return Job(self.templates[name], self.collections, dict(self.inventory, **(inventory or {})),
                   answers=answers or {}, kubernetes=kubernetes or self.kubernetes, custom=custom)

    def run(self, job, label):
        ident = "%02d-%s" % (len(self.runs) + 1, label)
        pdd = self.workdir / ident
        job.layout(pdd)
        result = job.run(pdd, ident)
        files, events, hits = scan(result.artifacts, self.secrets)
        self.runs.append({"job": ident, "template": job.template["name"], "status": result.status,
                          "changed": result.changed, "ok": result.count("ok"), "failures": result.count("failures"),
                          "events": len(result.events), "files_scanned": files, "events_scanned": events,
                          "secret_hits": hits, "seconds": round(result.seconds, 1)})
        assert not hits, "secrets in the job's artifacts: %s" % hits
        assert events == len(result.events) > 0
        return result


def key_body(pem):
    """The base64 body of a PEM key (what would leak), without its armour lines."""
    return "".join(line for line in pem.splitlines() if line and not line.startswith("-----"))[:64]


@pytest.fixture(scope="module")
def awx(local_cluster, tmp_path_factory):
    record = Awx(local_cluster, tmp_path_factory.mktemp("awx-jobs"))
    yield record
    kubectl(local_cluster, "delete", "clusterrolebinding", BINDING, "--ignore-not-found", check=False)
    kubectl(local_cluster, "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"runs": record.runs, "secret_hits": sum(len(r["secret_hits"]) for r in record.runs),
                                  "events_scanned": sum(r["events_scanned"] for r in record.runs)}, indent=1))


def test_the_site_job_converges_with_the_token_alone_then_changes_nothing(awx):
    first = awx.run(awx.job("GPU platform", SITE_ANSWERS, registry=True), "site")
    assert first.status == "successful", first.summary()
    assert first.changed > 0
    # The roles ran from the installed artifact, not from the checkout.
    paths = {e["event_data"].get("task_path", "") for e in first.events if e["event_data"].get("task_path")}
    assert paths and all(p.startswith(str(awx.collections)) or "/project/" in p for p in paths), sorted(paths)[:5]
    # The NGC credential's injected values became the GPU Operator's pull Secret, named in the chart's values.
    secret = json.loads(kubectl(awx.cluster, "-n", "gpu-operator", "get", "secret", PULL_SECRET, "-o", "json").stdout)
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert config["auths"]["nvcr.io"]["password"] == awx.registry_password
    assert config["auths"]["nvcr.io"]["username"] == "$oauthtoken"
    summary = [e["event_data"]["res"]["msg"] for e in first.events if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task") == "What was written and which versions are pinned"]
    assert summary and summary[-1][0] == "The platform was installed directly on the cluster.", summary

    second = awx.run(awx.job("GPU platform", SITE_ANSWERS, registry=True), "site-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()


def test_the_smoke_job_proves_every_layer(awx):
    result = awx.run(awx.job("GPU platform smoke tests"), "smoke")
    assert result.status == "successful", result.summary()
    verdict = [e for e in result.task_results() if e.get("task") == "The verdict"]
    assert verdict, "the smoke play's verdict task ran"


def test_the_upgrade_job_at_the_pins_takes_a_new_key_then_changes_nothing(awx):
    answers = dict(SITE_ANSWERS, gpu_operator_registry_password=awx.survey_password)
    answers = {k: v for k, v in answers.items() if k in {q["variable"] for q in awx.templates[
        "GPU platform upgrade"]["survey_spec"]["spec"]}}
    inventory = {k: v for k, v in SITE_ANSWERS.items()}   # the site survey's answers, kept in the inventory
    first = awx.run(awx.job("GPU platform upgrade", answers, registry=True, inventory=inventory), "upgrade")
    assert first.status == "successful", first.summary()
    # The survey's password answer wins over the credential's (AWX passes extravars after the credential's file).
    secret = json.loads(kubectl(awx.cluster, "-n", "gpu-operator", "get", "secret", PULL_SECRET, "-o", "json").stdout)
    assert json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))["auths"]["nvcr.io"][
        "password"] == awx.survey_password
    second = awx.run(awx.job("GPU platform upgrade", answers, registry=True, inventory=inventory), "upgrade-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def last_failure(result):
    failed = result.failed_events()
    assert failed, result.summary()
    data = failed[-1]["event_data"]
    return data["task"], str((data.get("res") or {}).get("msg", ""))


@pytest.mark.parametrize("case, answers, field", [
    ("bad-answer", {"scheduling_scheduler": "slurm"}, "scheduling_scheduler"),
    ("bad-driver-mode", {"gpu_platform_driver_mode": "vendor"}, "gpu_platform_driver_mode"),
])
def test_a_bad_survey_answer_fails_naming_the_field(awx, case, answers, field):
    result = awx.run(awx.job("GPU platform", answers), case)
    assert result.status == "failed"
    assert result.changed == 0
    task, msg = last_failure(result)
    assert field in msg and len(msg) < 400 and "Traceback" not in msg, (task, msg)


def test_an_unreachable_api_fails_with_a_short_message(awx):
    down = KubernetesBearerToken(host="https://127.0.0.1:%d" % closed_port(), bearer_token=awx.secrets["token"],
                                 ssl_ca_cert=awx.kubernetes.ssl_ca_cert)
    result = awx.run(awx.job("GPU platform", SITE_ANSWERS, kubernetes=down), "unreachable")
    assert result.status == "failed"
    task, msg = last_failure(result)
    assert "127.0.0.1" in msg and len(msg) < 600 and "Traceback" not in msg, (task, msg)


def test_the_site_job_renders_a_bundle_without_the_cluster(awx, tmp_path):
    answers = dict(SITE_ANSWERS, gpu_platform_render_to=str(tmp_path / "bundle"))
    result = awx.run(awx.job("GPU platform", answers), "render")
    assert result.status == "successful", result.summary()
    assert list((tmp_path / "bundle").rglob("*.yaml")), "the bundle was written"


def test_the_uninstall_job_removes_the_platform_then_changes_nothing(awx):
    refused = awx.run(awx.job("GPU platform uninstall"), "uninstall-unconfirmed")
    assert refused.status == "failed" and refused.changed == 0
    task, msg = last_failure(refused)
    assert "gpu_platform_uninstall_confirm" in msg and "Traceback" not in msg, (task, msg)
    answers = {"gpu_platform_uninstall_confirm": "true", "gpu_platform_uninstall_crds": "true"}
    first = awx.run(awx.job("GPU platform uninstall", answers, inventory=SITE_ANSWERS), "uninstall")
    assert first.status == "successful", first.summary()
    assert first.changed > 0
    left = kubectl(awx.cluster, "get", "secrets", "-A", "-l", "owner=helm", "-o", "name").stdout.split()
    assert left == []
    second = awx.run(awx.job("GPU platform uninstall", answers, inventory=SITE_ANSWERS), "uninstall-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()
