"""The hostile-input corpus through site.yml: a wrong inventory variable stops the run before anything is written.

test_hostile_inputs.py gives each module its hostile inputs; here the whole platform gets them, as a user's inventory
would: the offline default inventory (inventories/local) with one wrong variable (or a batch of wrong variables, each
of which must be named), run through site.yml. Each case must fail naming every wrong variable and write no file into
or beside the empty render folder; where the checks of playbooks/checks.yml find it (all but the few the first play
refuses: the platform contract, the version matrix), the run fails in one task - the preflight - whose message has
one line per mistake, ``<variable>: <what is wrong>. Fix: <how>``, without Ansible's words around a failed filter.

The cases: the five inputs that were refused only after other layers wrote (issue 32), one wrong value per option
the roles give nic_cluster_policy, helm_pinned_release and node_labels from the inventory, and one wrong value for
every option of each enabled layer role's argument spec whose type or choices can be wrong (one run per role, every
option named; peermem's with a cloud image owning the driver, so that its loader is on). The control: the same
inventory unchanged converges. The five inputs also run on the local control plane
(direct mode, tests/cluster/test_site_on_cluster.py): the same text, and no write in the API server's audit log.

The runs are independent, so they run side by side (a few at a time) the first time a test asks for one.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-inputs")]

ROOT = Path(__file__).resolve().parents[2]
PREFLIGHT = "Every enabled layer's inputs, before anything is written (each mistake on a line of its own)"
LINE = re.compile(r"^[\w.\[\]-]+: .+\. Fix: .+$")
LONG = "a" * 60

# The five inputs of issue 32: each was refused only after other layers had written.
FIVE = {
    "ip_range": {"network_operator_ip_range": "192.168.100.0/33"},
    "ip_gateway": {"network_operator_ip_gateway": "10.9.9.9"},
    "release_name": {"gpu_operator_release_name": LONG},
    "credentials": {"gpu_operator_registry_credentials": [
        {"name": "ngc", "registry": "nvcr.io", "username": "$oauthtoken"}]},
    "dra_nodes": {"dra_driver_nodes": "nodepool==dra==x"},
}

# One wrong value per option the roles give the modules from the inventory, batched where no mistake hides another
# (a wrong option the module's argument spec refuses, such as a wrong type, stops that call's own checks, so those
# are in the role batches below; a wrong ip_range leaves the gateway unchecked, wrong selectors the IPoIB master).
MODULE_BATCHES = {
    # nic_cluster_policy
    "nic-1": {"network_operator_selectors": {"vendors": ["zzzz"]}, "network_operator_rdma_hca_max": 0,
              "gpu_platform_rdma_resource_name": "has space", "gpu_platform_rdma_network_name": "UPPER",
              "gpu_platform_rdma_network_namespace": "A B", "network_operator_image_pull_secrets": ["UPPER_X"],
              "network_operator_node_affinity": {"bogus": 1}, "network_operator_driver_upgrade_policy": {"bogus": 1},
              "network_operator_image_mirrors": {"nvcr.io": "harbor"}},
    "nic-2": {"gpu_platform_rdma_nics_per_pod": 2, "network_operator_ipoib_master": "a/b"},
    "nic-3": {"gpu_platform_rdma_node_type": "nd-bogus-v9", "gpu_platform_network_operator_namespace": "UPPER",
              "gpu_operator_depends_on": [{"name": "UPPER"}]},
    # helm_pinned_release, of every layer that releases a chart
    "helm": {"gpu_platform_network_operator_release_name": "UPPER", "gpu_platform_gpu_operator_namespace": "UPPER",
             "dra_driver_namespace": "A B", "scheduling_kueue_namespace": "-x",
             "gpu_operator_chart_ref": "../../charts/x", "dra_driver_chart_version": "latest",
             "gpu_operator_chart_sha256": "abc", "scheduling_wait_timeout": 0,
             "network_operator_chart_repo_url": "https://robot:s3cr3t@charts.example.com"},
    # node_labels: the DRA nodes' selector
    "labels-empty": {"dra_driver_nodes": ""},
    "labels-parens": {"dra_driver_nodes": "(("},
    "labels-set": {"dra_driver_nodes": "a in b"},
}
# The layer roles site.yml runs with the offline default inventory, and peermem's loader DaemonSet, which runs where a
# cloud image owns the driver (host_driver checks its arguments on each GPU host, and this inventory has none).
ROLES = ("network_operator", "gpu_operator", "gpu_sharing", "dra_driver", "scheduling", "monitoring", "smoke_tests",
         "peermem")
# What a case needs besides its wrong values (not itself wrong).
SETTINGS = {"spec-peermem": {"gpu_platform_driver_mode": "host", "gpu_platform_cloud_driver": "present"}}


def wrong_value(spec):
    """A value of the wrong type or outside the choices for an argument spec option; None when every value of its
    type is accepted (a string without choices, a list of strings: the modules' cases check those)."""
    kind = spec.get("type", "str")
    if spec.get("choices"):
        return "not-a-choice"
    if kind == "list" and spec.get("elements") in ("dict", "int", "bool", "float"):
        return ["x"] if spec["elements"] != "bool" else ["maybe"]
    return {"bool": "maybe", "int": "many", "float": "much", "dict": "not a dict"}.get(kind)


def role_batch(role):
    options = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    options = options["argument_specs"]["main"]["options"]
    return {name: wrong_value(spec) for name, spec in options.items() if wrong_value(spec) is not None}


ROLE_BATCHES = {"spec-" + role: role_batch(role) for role in ROLES}
CASES = dict(FIVE, **MODULE_BATCHES, **ROLE_BATCHES, control={})


class Run:
    """One site.yml run into an empty folder (json callback), and what it left."""

    def __init__(self, tmp, over):
        self.out = tmp / "platform"
        extra = tmp / "extra.json"
        extra.write_text(json.dumps(dict(over, gpu_platform_render_to=str(self.out))))
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
                   ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), HOME=str(tmp))
        for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY"):
            env.pop(name, None)
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(ROOT / "inventories" / "local"),
                   str(ROOT / "site.yml"), "-e", "@" + str(extra)]
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(tmp), check=False, timeout=300)
        self.rc, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.data = json.loads(proc.stdout[proc.stdout.find("{"):])
        self.failed = [(task["task"]["name"], res) for play in self.data["plays"] for task in play["tasks"]
                       for res in task["hosts"].values() if res.get("failed")]
        self.files = [p for p in tmp.rglob("*") if p.is_file() and p.name != "extra.json"
                      and p.relative_to(tmp).parts[0] not in (".ansible",)]

    @property
    def messages(self):
        return [str(res.get("msg", "")) for dummy, res in self.failed]


RUNS = {}


def run(name, tmp_path_factory):
    """The run of case ``name``; the first call runs every case, a few at a time."""
    if not RUNS:
        def one(case):
            return case, Run(tmp_path_factory.mktemp(case), dict(SETTINGS.get(case, {}), **CASES[case]))
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            RUNS.update(pool.map(one, sorted(CASES)))
    return RUNS[name]


def names(message, variable):
    """Whether a failure message names ``variable``: a line of the preflight that starts with it (or a path under
    it), or Ansible's own words for the platform contract's and the first play's checks."""
    for text in message.splitlines():
        if re.match(r"^%s(:|\.|\[)" % re.escape(variable), text) or \
                re.search(r"(value of|argument '|option '|found in '?)%s\b" % re.escape(variable), text):
            return True
    return False


def nothing_written(result):
    assert result.files == [], "written: %s" % [str(p) for p in result.files]


def test_the_control_converges_into_the_empty_folder(tmp_path_factory):
    result = run("control", tmp_path_factory)
    assert result.rc == 0 and result.failed == [], result.messages or result.stderr[-3000:]
    assert len(list(result.out.rglob("*.yaml"))) > 40


def test_the_corpus_covers_every_module_option_and_role():
    assert set(ROLE_BATCHES) == {"spec-" + r for r in ROLES}
    assert all(len(batch) >= 3 for batch in ROLE_BATCHES.values()), {k: len(v) for k, v in ROLE_BATCHES.items()}
    assert sum(len(b) for b in CASES.values()) >= 60, sum(len(b) for b in CASES.values())


@pytest.mark.parametrize("case", sorted(set(CASES) - {"control"}))
def test_a_wrong_input_stops_site_yml_before_any_write_naming_it(tmp_path_factory, case):
    result = run(case, tmp_path_factory)
    assert result.rc != 0
    nothing_written(result)
    messages = result.messages
    for variable in CASES[case]:
        assert any(names(m, variable) for m in messages), "%s is not named: %s" % (variable, messages)
    assert "Finalization of task args" not in result.stdout and "filter plugin" not in result.stdout
    assert "s3cr3t" not in result.stdout
    if any(name == PREFLIGHT for name, dummy in result.failed):
        # checks.yml: one failed task, one line per mistake
        [(name, res)] = result.failed
        assert name == PREFLIGHT
        lines = res["msg"].splitlines()
        assert lines and all(LINE.match(line) for line in lines), lines
        assert len(lines) == len(set(lines)), "a mistake repeated"


@pytest.mark.parametrize("case", sorted(FIVE))
def test_each_of_the_five_is_found_by_checks_yml_in_one_line(tmp_path_factory, case):
    result = run(case, tmp_path_factory)
    [(name, res)] = result.failed
    assert name == PREFLIGHT
    [variable] = FIVE[case]
    assert [line.split(":")[0] for line in res["msg"].splitlines()] == [variable]


EXACT = {
    "ip_range": "network_operator_ip_range: '192.168.100.0/33' is not a CIDR subnet. Fix: give a CIDR such as "
                "192.168.100.0/24",
    "ip_gateway": "network_operator_ip_gateway: 10.9.9.9 is outside ip_range 192.168.100.0/24. Fix: give an address "
                  "inside 192.168.100.0/24, e.g. 192.168.100.1, or leave it empty",
    "release_name": "gpu_operator_release_name: '%s' is not a valid Helm release name (lower-case DNS-1123, at most 53 "
                    "characters). Fix: use lower-case letters, digits, '-' and '.', such as gpu-operator" % LONG,
    "credentials": "gpu_operator_registry_credentials: an entry has no password. Fix: give every entry name, registry, "
                   "username, password",
    "dra_nodes": "dra_driver_nodes: cannot parse 'nodepool==dra==x' in 'nodepool==dra==x'. Fix: write it as kubectl "
                 "-l takes it, e.g. app=trainer,tier!=system or app in (a,b)",
}


@pytest.mark.parametrize("case", sorted(EXACT))
def test_the_exact_text_of_the_five(tmp_path_factory, case):
    [(dummy, res)] = run(case, tmp_path_factory).failed
    assert res["msg"] == EXACT[case]


def test_three_mistakes_in_three_layers_one_run_one_message_three_lines_as_a_person_reads_it(tmp_path):
    """The default callback, as a terminal (and AWX's job output) shows it: the three lines once each in the
    preflight's message, none wrapped in Ansible's words about task arguments or filter plugins."""
    out = tmp_path / "platform"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), HOME=str(tmp_path), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    extra = {"gpu_platform_render_to": str(out), "network_operator_ip_range": "192.168.100.0/33",
             "gpu_operator_release_name": LONG, "monitoring_thresholds": {"temperature_celsius": 300}}
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-i", str(ROOT / "inventories" / "local"), str(ROOT / "site.yml"), "-e", json.dumps(extra)],
                          env=env, capture_output=True, text=True, cwd=str(tmp_path), check=False, timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and not out.exists()
    assert text.count("Finalization of task args") == 0 and "filter plugin" not in text
    expected = [EXACT["ip_range"], EXACT["release_name"],
                "monitoring_thresholds.temperature_celsius: 300 is out of range. Fix: give degrees Celsius between 30 "
                "and 120, e.g. 85"]
    # The failed task's message, as the callback prints it under msg: |-
    block = text.split("    msg: |-\n", 1)[1].split("\n\n", 1)[0]
    assert [line.strip() for line in block.splitlines()] == expected
    assert text.count("FAILED!") == 1, "one failed task"
