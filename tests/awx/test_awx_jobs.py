"""The documented AWX job templates (meta/awx/job_templates.yml, docs/awx.md) run as AWX runs them: the Galaxy
artifact installed on its own, an ansible-runner private data directory with the survey's answers, AWX's
Kubernetes bearer-token credential (no kubeconfig anywhere) and the NGC registry credential type shipped in
meta/awx, against the local control plane. Each job ends ``successful`` and its second run changes nothing; no
job event, stdout, stderr or fact cache holds the token, the CA's or the admin's key, the registry password or a
password answer; a failed job's last failure names the field in a short sentence. The counts go to
build/awx/report.json.
"""
from __future__ import annotations

import base64
import json
import secrets
import socket
from pathlib import Path

import pytest
import yaml

from tests.awx.runner import Job, KubernetesBearerToken, cluster_inventory, credential_type, job_templates, scan
from local_gpu_cluster.testing import ROOT, CommandLines, api_server_and_ca, kubectl, service_account_token

pytestmark = pytest.mark.slow
NAMESPACE = "awx-jobs"
BINDING = "awx-jobs-deployer"
REPORT = ROOT / "build" / "awx" / "report.json"
NGC = "GPU platform NGC registry"
PULL_SECRET = "ngc-registry"
# The answers an operator gives; every other question takes the survey's default. The network and scheduler
# answers are the local cluster inventory's own choices (a survey answer overrides the inventory).
SITE_ANSWERS = {"gpu_platform_driver_mode": "operator", "gpu_platform_network_mode": "rdma_shared",
                "gpu_platform_scheduler": "volcano"}
UNINSTALL_ANSWERS = {"gpu_platform_uninstall_confirm": "true", "gpu_platform_uninstall_crds": "true"}


class Awx:
    """The jobs of this module: one artifact, one credential, every run recorded and scanned."""

    def __init__(self, cluster, collections, workdir):
        self.cluster, self.collections, self.workdir = cluster, collections, Path(workdir)
        self.templates = job_templates()
        token = service_account_token(cluster, NAMESPACE, BINDING)
        host, ca_pem = api_server_and_ca(cluster)
        self.kubernetes = KubernetesBearerToken(host=host, bearer_token=token, ssl_ca_cert=ca_pem)
        self.inventory = cluster_inventory(cluster.chart_repo_url)
        self.registry_password = "ngc-" + secrets.token_hex(16)
        self.survey_password = "survey-" + secrets.token_hex(16)
        admin = yaml.safe_load(Path(cluster.kubeconfig).read_text(encoding="utf-8"))["users"][0]["user"]
        self.secrets = {"token": token, "registry password": self.registry_password,
                        "survey password": self.survey_password,
                        # the pull Secret's auth field, as it would leak from a dockerconfigjson
                        "registry auth": registry_auth(self.registry_password),
                        "survey password auth": registry_auth(self.survey_password),
                        "admin client key": key_body(base64.b64decode(admin["client-key-data"]).decode()),
                        "CA key": key_body((cluster.dir / "pki" / "ca.key").read_text(encoding="utf-8"))}
        self.runs = []

    def job(self, name, answers=None, registry=False, kubernetes=None):
        custom = [(credential_type(NGC), {"password": self.registry_password})] if registry else []
        return Job(self.templates[name], self.collections, self.inventory, answers=answers or {},
                   kubernetes=kubernetes or self.kubernetes, custom=custom)

    def run(self, job, label, controls=None):
        ident = "%02d-%s" % (len(self.runs) + 1, label)
        pdd = self.workdir / ident
        job.layout(pdd)
        result = job.run(pdd, ident)
        files, events, hits, found = scan(result.artifacts, self.secrets, controls)
        self.runs.append({"job": ident, "template": job.template["name"], "status": result.status,
                          "changed": result.changed, "ok": result.count("ok"), "failures": result.count("failures"),
                          "events": len(result.events), "files_scanned": files, "events_scanned": events,
                          "secret_hits": hits, "controls_found": found, "seconds": round(result.seconds, 1)})
        assert not hits, "secrets in the job's artifacts: %s" % hits
        # ansible-runner's own record of the command and its environment (the credential's variables with it) is
        # no job event: AWX removes the private data directory after the job. It is the owner's alone meanwhile.
        assert (result.artifacts / "command").stat().st_mode & 0o077 == 0
        assert events == len(result.events) > 0
        assert all(found.values()), "the scan did not find what it must: %s" % found
        return result


def registry_auth(password):
    return base64.b64encode(("$oauthtoken:" + password).encode()).decode()


def key_body(pem):
    """The first 64 characters of a PEM key's base64 body (what would leak), without its armour lines."""
    return "".join(line for line in pem.splitlines() if line and not line.startswith("-----"))[:64]


def pull_secret_password(cluster):
    secret = json.loads(kubectl(cluster, "-n", "gpu-operator", "get", "secret", PULL_SECRET, "-o", "json").stdout)
    return json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))["auths"]["nvcr.io"]


def names(cluster, kind):
    return set(kubectl(cluster, "get", kind, "-o", "name").stdout.split())


@pytest.fixture(scope="module")
def awx(local_cluster, awx_collections, tmp_path_factory):
    # The session's cluster is shared: the tests after this module (tests/cluster) expect no CRD of the charts.
    crds_before, namespaces_before = names(local_cluster, "crd"), names(local_cluster, "namespace")
    record = Awx(local_cluster, awx_collections, tmp_path_factory.mktemp("awx-jobs"))
    yield record
    kubectl(local_cluster, "delete", "clusterrolebinding", BINDING, "--ignore-not-found", check=False)
    kubectl(local_cluster, "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)
    left = sorted(names(local_cluster, "crd") - crds_before) + sorted(names(local_cluster, "namespace") - namespaces_before)
    if left:
        kubectl(local_cluster, "delete", "--ignore-not-found", "--wait=true", "--timeout=100s", *left, check=False)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({
        "runs": record.runs, "jobs": len(record.runs),
        "secret_hits": sum(len(r["secret_hits"]) for r in record.runs),
        "events_scanned": sum(r["events_scanned"] for r in record.runs),
        "files_scanned": sum(r["files_scanned"] for r in record.runs)}, indent=1))


def test_the_site_job_converges_with_the_token_alone_then_changes_nothing(awx):
    watcher = CommandLines()
    watcher.start()
    try:
        first = awx.run(awx.job("GPU platform", SITE_ANSWERS, registry=True), "site",
                        controls={"pull Secret name": PULL_SECRET})
    finally:
        watcher.done.set()
        watcher.join()
    assert first.status == "successful", first.summary()
    assert first.changed > 0
    # helm ran, and reached the cluster through a kubeconfig file the module wrote, never a token on its command line.
    helm = [line for line in watcher.seen if line.split(" ")[0].endswith("helm")]
    assert helm and all("--kubeconfig" in line for line in helm if " upgrade " in line or " list " in line), helm
    assert not [line for line in watcher.seen if awx.secrets["token"] in line], "the token on a command line"
    # Every task ran from the installed artifact (or the project's one-line playbook), none from the checkout.
    paths = {e["event_data"]["task_path"] for e in first.events if e.get("event_data", {}).get("task_path")}
    assert paths and not [p for p in paths if not p.startswith(str(awx.collections)) and "/project/" not in p]
    # The NGC credential's injected values became the GPU Operator's pull Secret.
    assert pull_secret_password(awx.cluster) == {"username": "$oauthtoken", "password": awx.registry_password,
                                                 "auth": registry_auth(awx.registry_password)}
    summary = [e["event_data"]["res"]["msg"] for e in first.events if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task") == "What was written and which versions are pinned"]
    assert summary and summary[-1][0] == "The platform was installed directly on the cluster.", summary

    second = awx.run(awx.job("GPU platform", SITE_ANSWERS, registry=True), "site-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()


LAYERS = ("GPU platform: drivers, network and GPU Operator", "GPU platform: GPU sharing",
          "GPU platform: DRA, scheduling and monitoring")


def test_the_layer_jobs_of_the_workflow_run_and_agree_with_the_site_job(awx):
    """The workflow "GPU platform, layer by layer" (meta/awx/workflow_templates.yml) runs these three templates in
    order; on the platform the site job made, each succeeds and changes nothing."""
    for number, name in enumerate(LAYERS, 1):
        result = awx.run(awx.job(name, SITE_ANSWERS, registry=True), "layer-%d" % number)
        assert result.status == "successful", result.summary()
        assert result.changed == 0, (name, result.changed_tasks())


def test_the_smoke_job_proves_every_layer_and_changes_nothing(awx):
    result = awx.run(awx.job("GPU platform smoke tests"), "smoke")
    assert result.status == "successful", result.summary()
    assert result.changed == 0, result.changed_tasks()
    lines = [e["res"]["msg"] for e in result.task_results() if e.get("task") == "One line per layer"]
    layers = awx.templates["GPU platform smoke tests"]["survey_spec"]["spec"][0]["choices"]
    assert lines and sorted(lines[-1]) == sorted("%s: PASS" % layer for layer in layers), lines


def test_the_upgrade_job_at_the_pins_takes_a_new_key_then_changes_nothing(awx):
    answers = {"gpu_operator_registry_password": awx.survey_password}
    first = awx.run(awx.job("GPU platform upgrade", answers, registry=True), "upgrade")
    assert first.status == "successful", first.summary()
    # The password answer wins over the credential's (AWX passes the credential's file first, the survey's last);
    # at the pins, the new key is the only change.
    assert pull_secret_password(awx.cluster)["password"] == awx.survey_password
    assert first.changed == 1, first.changed_tasks()
    second = awx.run(awx.job("GPU platform upgrade", answers, registry=True), "upgrade-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def last_failure(result):
    """The task and message of the job's last failed event: what an AWX operator reads first."""
    failed = result.failed_events()
    assert failed, result.summary()
    data = failed[-1]["event_data"]
    return data["task"], str((data.get("res") or {}).get("msg", ""))


@pytest.mark.parametrize("answers", [{"gpu_platform_scheduler": "slurm"}, {"gpu_platform_driver_mode": "vendor"}],
                         ids=["scheduler", "driver-mode"])
def test_a_bad_survey_answer_fails_naming_the_field_before_any_change(awx, answers):
    (field, value), = answers.items()
    result = awx.run(awx.job("GPU platform", answers), "bad-" + field)
    assert result.status == "failed" and result.changed == 0
    task, msg = last_failure(result)
    assert field in msg and value in msg and len(msg) < 300 and "Traceback" not in msg, (task, msg)


def test_an_unreachable_api_fails_with_a_short_message_naming_it(awx):
    host = "https://127.0.0.1:%d" % closed_port()
    down = KubernetesBearerToken(host=host, bearer_token=awx.secrets["token"], ssl_ca_cert=awx.kubernetes.ssl_ca_cert)
    result = awx.run(awx.job("GPU platform", SITE_ANSWERS, kubernetes=down), "unreachable")
    assert result.status == "failed" and result.changed == 0
    task, msg = last_failure(result)
    # The credential's Host is the field: the message names the URL and that it came from K8S_AUTH_HOST.
    assert host in msg and "K8S_AUTH_HOST" in msg and len(msg) < 600 and "Traceback" not in msg, (task, msg)


def test_the_uninstall_job_removes_the_platform_then_changes_nothing(awx):
    refused = awx.run(awx.job("GPU platform uninstall"), "uninstall-unconfirmed")
    assert refused.status == "failed" and refused.changed == 0
    task, msg = last_failure(refused)
    assert msg.startswith("gpu_platform_uninstall_confirm is not true") and "Traceback" not in msg, (task, msg)
    first = awx.run(awx.job("GPU platform uninstall", UNINSTALL_ANSWERS), "uninstall")
    assert first.status == "successful", first.summary()
    assert first.changed > 0
    assert kubectl(awx.cluster, "get", "secrets", "-A", "-l", "owner=helm", "-o", "name").stdout.split() == []
    second = awx.run(awx.job("GPU platform uninstall", UNINSTALL_ANSWERS), "uninstall-again")
    assert second.status == "successful", second.summary()
    assert second.changed == 0, second.changed_tasks()
