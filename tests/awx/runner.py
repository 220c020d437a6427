"""AWX's way of running a job, without AWX: the Galaxy artifact installed into a clean collections path, an
ansible-runner private data directory laid out as AWX lays it out, and the job run by ansible-runner from PyPI.

What AWX does, and what this does in its place:

- project: AWX checks the project out and installs ``collections/requirements.yml``; here the project is the one the
  artifact ships (``meta/awx/project``: that file and one playbook per job template, each importing the collection's
  playbooks), and the collection comes from the artifact ``ansible-galaxy collection build`` writes, installed on its
  own (``installed_collection``);
- survey answers and the template's extra variables: ``env/extravars``, every string a user typed tagged ``!unsafe``
  (AWX's ``safe_dump``: never templated);
- credentials: the "OpenShift or Kubernetes API Bearer Token" type's injector (``K8S_AUTH_HOST``, ``K8S_AUTH_API_KEY``,
  ``K8S_AUTH_VERIFY_SSL`` and the CA written to a 0600 file in ``env/``, ``K8S_AUTH_SSL_CA_CERT`` naming it) in
  ``env/envvars``; a custom type's ``extra_vars`` injector rendered with Jinja's immutable sandbox, as AWX renders it,
  into a 0600 file in ``env/`` that ``env/cmdline`` passes with ``-e @`` (so the survey's answers win over it);
- the job: ``ansible-runner run`` in a clean environment (no kubeconfig anywhere, HOME a fresh folder); its events
  (``artifacts/<ident>/job_events/*.json``) are what AWX stores and shows to anyone who may read the job.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parents[2]
AWX_DATA = ROOT / "meta" / "awx"
VENV_BIN = Path(sys.executable).parent
HELM = ROOT / "tools" / "bin" / "helm3"


def cluster_inventory(chart_repo_url):
    """inventories/cluster's variables (every layer on the local control plane's fake fleet), minus its kubeconfig and
    its lookups of the checkout's build folder: a job reaches the cluster through its credential alone."""
    out = {}
    for path in sorted((ROOT / "inventories" / "cluster" / "group_vars" / "all").glob("*.yml")):
        for key, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if key.startswith("local_cluster_") or key == "gpu_platform_kubeconfig":
                continue
            if isinstance(value, str):
                value = value.replace("{{ local_cluster_charts }}", chart_repo_url)
            out[key] = value
    return out


def job_templates():
    """meta/awx/job_templates.yml, each template with its survey and the collection playbooks its project playbook
    (meta/awx/project) imports."""
    templates = yaml.safe_load((AWX_DATA / "job_templates.yml").read_text(encoding="utf-8"))
    for template in templates:
        template["survey_spec"] = json.loads((AWX_DATA / template["survey"]).read_text(encoding="utf-8"))
        template["imports"] = project_imports(template["playbook"])
    return {t["name"]: t for t in templates}


def project_imports(playbook):
    """The playbooks a playbook of meta/awx/project imports, in order."""
    plays = yaml.safe_load((AWX_DATA / "project" / playbook).read_text(encoding="utf-8"))
    return [play["ansible.builtin.import_playbook"] for play in plays]


def credential_type(name):
    """A custom credential type shipped in meta/awx/credential_types, by its name."""
    for path in sorted((AWX_DATA / "credential_types").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["name"] == name:
            return data
    raise AssertionError("no credential type named %r in %s" % (name, AWX_DATA / "credential_types"))


def installed_collection(workdir):
    """Build the Galaxy artifact from the checkout and install it, alone, into ``workdir/collections``; its path.
    kubernetes.core comes from the ansible package (site-packages), as an execution environment has it."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    dist, collections = workdir / "dist", workdir / "collections"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), PATH="%s:%s" % (VENV_BIN, env.get("PATH", "")))
    for command in (["ansible-galaxy", "collection", "build", "--force", "--output-path", str(dist), str(ROOT)],
                    ["ansible-galaxy", "collection", "install", "--no-deps", "--force", "-p", str(collections)]):
        if command[2] == "install":
            command.append(str(next(dist.glob("gpu_platform-cluster-*.tar.gz"))))
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False,
                              cwd=str(workdir))
        if proc.returncode:
            raise AssertionError("%s failed: %s%s" % (" ".join(command), proc.stdout, proc.stderr))
    installed = collections / "ansible_collections" / "gpu_platform" / "cluster"
    assert (installed / "MANIFEST.json").is_file() and not installed.is_symlink(), installed
    return collections


class UnsafeText(str):
    """A string AWX writes with the ``!unsafe`` tag (survey answers, launch-time variables)."""


class AwxDumper(yaml.SafeDumper):
    pass


AwxDumper.add_representer(UnsafeText, lambda dumper, data: dumper.represent_scalar("!unsafe", str(data)))


def unsafe(value):
    """``value`` with every string in it tagged ``!unsafe``, as AWX's safe_dump does to what users typed."""
    if isinstance(value, dict):
        return {unsafe(k): unsafe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsafe(v) for v in value]
    return UnsafeText(value) if isinstance(value, str) else value


def survey_answers(spec, answers):
    """The extra variables AWX makes of a survey: the answers given, and each unanswered question's default
    (a multiselect default is one choice per line); a password question without a default is left out."""
    out = {}
    for question in spec["spec"]:
        name = question["variable"]
        if name in answers:
            out[name] = answers[name]
        elif "default" in question and question["default"] is not None:
            default = question["default"]
            if question["type"] == "multiselect" and isinstance(default, str):
                default = [line for line in default.split("\n") if line]
            out[name] = default
    unknown = set(answers) - {q["variable"] for q in spec["spec"]}
    assert not unknown, "answers to questions the survey does not ask: %s" % sorted(unknown)
    return out


def render_injector(ctype, inputs):
    """A custom credential type's injectors rendered as AWX renders them: (env, extra_vars)."""
    sandbox = ImmutableSandboxedEnvironment()
    fields = {f["id"]: f.get("default", "") for f in ctype["inputs"]["fields"]}
    fields.update(inputs)
    injectors = ctype.get("injectors", {})
    env = {k: sandbox.from_string(v).render(**fields) for k, v in injectors.get("env", {}).items()}
    extra = {k: sandbox.from_string(v).render(**fields) for k, v in injectors.get("extra_vars", {}).items()}
    return env, extra


def private_file(folder, content):
    """A 0600 file in ``folder`` with ``content`` (AWX's tempfile.mkstemp in env/); its path."""
    handle, path = tempfile.mkstemp(dir=str(folder))
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        out.write(content)
    return path


@dataclass
class KubernetesBearerToken:
    """AWX's "OpenShift or Kubernetes API Bearer Token" credential (host, bearer_token, verify_ssl, ssl_ca_cert)."""
    host: str
    bearer_token: str
    ssl_ca_cert: str = ""
    verify_ssl: bool = True

    def inject(self, env_dir):
        env = {"K8S_AUTH_HOST": self.host, "K8S_AUTH_API_KEY": self.bearer_token}
        if self.verify_ssl and self.ssl_ca_cert:
            env["K8S_AUTH_VERIFY_SSL"] = "True"
            env["K8S_AUTH_SSL_CA_CERT"] = private_file(env_dir, self.ssl_ca_cert)
        else:
            env["K8S_AUTH_VERIFY_SSL"] = "False"
        return env


@dataclass
class Job:
    """One job: its template, survey answers, credentials and inventory variables."""
    template: dict
    collections: Path
    inventory_vars: dict
    answers: dict = field(default_factory=dict)
    kubernetes: KubernetesBearerToken | None = None
    custom: list = field(default_factory=list)   # [(credential type dict, inputs)]

    def layout(self, pdd):
        """Write the private data directory as AWX does before it hands it to ansible-runner."""
        pdd = Path(pdd)
        project, inventory, env_dir = pdd / "project", pdd / "inventory", pdd / "env"
        # The project as shipped in the artifact (meta/awx/project): collections/requirements.yml and the playbooks.
        shipped = self.collections / "ansible_collections" / "gpu_platform" / "cluster" / "meta" / "awx" / "project"
        shutil.copytree(shipped, project)
        for folder in (inventory / "group_vars", env_dir):
            folder.mkdir(parents=True, exist_ok=True)
        (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
            "k8s_api": {"hosts": {"localhost": {"ansible_connection": "local",
                                                "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}},
            "gpu_hosts": {"hosts": {}}}}}))
        (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(self.inventory_vars))
        extravars = survey_answers(self.template["survey_spec"], self.answers)
        (env_dir / "extravars").write_text(yaml.dump(unsafe(extravars), Dumper=AwxDumper))
        envvars = {"ANSIBLE_COLLECTIONS_PATH": str(self.collections), "ANSIBLE_HOST_KEY_CHECKING": "False",
                   "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_FORCE_COLOR": "False", "JOB_ID": "1",
                   "AWX_HOST": "https://awx.example.com", "PROJECT_REVISION": "test"}
        cmdline = []
        if self.kubernetes:
            envvars.update(self.kubernetes.inject(env_dir))
        for ctype, inputs in self.custom:
            env, extra = render_injector(ctype, inputs)
            envvars.update(env)
            if extra:
                cmdline += ["-e", "@" + private_file(env_dir, yaml.dump(unsafe(extra), Dumper=AwxDumper))]
        (env_dir / "envvars").write_text(yaml.safe_dump(envvars))
        (env_dir / "cmdline").write_text(" ".join(cmdline))
        (env_dir / "settings").write_text(yaml.safe_dump({"job_timeout": 1200, "pexpect_timeout": 5,
                                                          "suppress_ansible_output": True}))
        return extravars

    def run(self, pdd, ident):
        """``ansible-runner run`` in a clean environment; the job's outcome."""
        pdd = Path(pdd)
        home = pdd.parent / ("home-" + ident)
        bindir = home / "bin"
        bindir.mkdir(parents=True, exist_ok=True)
        if not (bindir / "helm").exists():
            (bindir / "helm").symlink_to(HELM)   # the execution environment's helm
        env = {"PATH": "%s:%s:/usr/local/bin:/usr/bin:/bin" % (bindir, VENV_BIN), "HOME": str(home),
               "LANG": "C.UTF-8", "TMPDIR": str(home)}
        started = time.monotonic()
        proc = subprocess.run([str(VENV_BIN / "ansible-runner"), "run", str(pdd), "-p", self.template["playbook"],
                               "--ident", ident], env=env, capture_output=True, text=True, timeout=1500,
                              check=False)
        return JobResult(pdd / "artifacts" / ident, proc, time.monotonic() - started)


class JobResult:
    """A finished job as AWX sees it: its status, its events, its stats."""

    def __init__(self, artifacts, proc, seconds):
        self.artifacts, self.proc, self.seconds = Path(artifacts), proc, seconds
        status = self.artifacts / "status"
        self.status = status.read_text().strip() if status.exists() else "error: %s" % proc.stderr[-2000:]
        self.events = [json.loads(p.read_text()) for p in sorted(
            (self.artifacts / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-")[0]))]
        stats = [e for e in self.events if e.get("event") == "playbook_on_stats"]
        self.stats = stats[-1]["event_data"] if stats else {}

    def count(self, key):
        return sum((self.stats.get(key) or {}).values())

    @property
    def changed(self):
        return self.count("changed")

    def task_results(self, event="runner_on_ok"):
        return [e["event_data"] for e in self.events if e.get("event") == event]

    def changed_tasks(self):
        return [e["task"] for e in self.task_results() if (e.get("res") or {}).get("changed")]

    def failed_events(self):
        return [e for e in self.events if e.get("event") in ("runner_on_failed", "runner_on_unreachable")
                and not e["event_data"].get("ignore_errors")]

    def failure_messages(self):
        return [(e["event_data"].get("task"), (e["event_data"].get("res") or {}).get("msg"))
                for e in self.failed_events()]

    def stdout(self):
        out = self.artifacts / "stdout"
        return out.read_text(errors="replace") if out.exists() else ""

    def summary(self):
        return "status %s, %d events, stats %s, failures %s\n%s" % (
            self.status, len(self.events), {k: self.stats.get(k) for k in ("ok", "changed", "failures", "dark")},
            self.failure_messages()[:5], self.stdout()[-3000:] if self.status != "successful" else "")


def scan(artifacts, secrets, controls=None):
    """Every file ansible-runner keeps of a job that AWX shows to the job's readers (the job events, stdout, stderr)
    or keeps beside it (the fact cache), searched for each secret. Returns (files scanned, events scanned,
    {secret name: [files it is in]}, {control name: files it is in}): a control is a value that is no secret and
    must be found, so a scan that reads nothing cannot pass."""
    artifacts = Path(artifacts)
    files = sorted(p for pattern in ("job_events/*.json", "stdout", "stderr", "fact_cache/**/*")
                   for p in artifacts.glob(pattern) if p.is_file())
    hits = {name: [] for name in secrets}
    found = {name: 0 for name in controls or {}}
    for path in files:
        text = path.read_text(errors="replace")
        for name, value in secrets.items():
            if value and value in text:
                hits[name].append(str(path.relative_to(artifacts)))
        for name, value in (controls or {}).items():
            found[name] += value in text
    events = sum(1 for p in files if p.parent.name == "job_events")
    return len(files), events, {k: v for k, v in hits.items() if v}, found
