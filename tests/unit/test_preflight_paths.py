"""Every module option an inventory variable feeds has a preflight path (playbooks/checks.yml).

The walk: every task of every role that calls one of this collection's modules; for each option, the variables its
template uses (through the roles' defaults and vars, the facts their tasks set and a loop's items) down to the
inventory's variables. Each inventory variable an option depends on must be one that checks.yml's preflight task
(gpu_platform.cluster.preflight) reads: through a module request (the options a role gives a module, which the
module's own request() checks), or a value (a layer's plan or chart values, which its filters check). A new option,
or a new task, fed straight from the inventory fails here until checks.yml checks it before anything is written.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform.preflight import public, template_names

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "gpu_platform.cluster."
# Modules that only read, and run before checks.yml or only read the cluster: nothing they are given is written, and
# a wrong input fails the read (cluster_read: the reads of a layer's own verify steps; gpu_host_facts and
# gpu_driver_mode: driver_mode.yml, before checks.yml).
READ_ONLY = {"cluster_read", "gpu_host_facts", "gpu_driver_mode"}
# Options that decide where a layer writes, not what: the GitOps folder (gpu_platform_render_to, which checks.yml's
# platform settings check) and each layer's folder in it.
DELIVERY = {"render_to", "render_format", "render_name", "source", "dest"}
ROLE_TASKS = sorted((ROOT / "roles").glob("*/tasks/*.yml"))


def load(path):
    return yaml.safe_load(path.read_text()) or {}


def preflight_task():
    plays = load(ROOT / "playbooks" / "checks.yml")
    tasks = [t for play in plays for t in play["tasks"] if PREFIX + "preflight" in t]
    assert len(tasks) == 1, "checks.yml has one preflight task"
    return tasks[0]


def checked():
    """({module: {options variables}}, {variables the preflight evaluates}, {roles whose argument spec it checks})
    as checks.yml lists them."""
    requests, values, roles = {}, set(), set()
    for layer in preflight_task()["vars"]["_gpu_platform_checks"]:
        roles.update([layer["role"]] if layer["role"] else [])
        entries = layer["requests"]
        if isinstance(entries, str):  # a template that picks the entries, e.g. only in direct mode
            entries = [{"module": m, "options": o, "loop": loop or None} for m, o, loop in re.findall(
                r"'module': '(\w+)', 'options': '(\w+)'(?:, 'loop': '(\w+)')?", entries)]
        for entry in entries:
            requests.setdefault(entry["module"], set()).add(entry["options"])
            if entry.get("loop"):
                values.add(entry["loop"])
        values.update(layer["values"])
    return requests, values, roles


def refs(raw):
    """The names every template in ``raw`` (any nesting) uses."""
    if isinstance(raw, dict):
        return [n for v in raw.values() for n in refs(v)]
    if isinstance(raw, list):
        return [n for v in raw for n in refs(v)]
    return template_names(raw) if isinstance(raw, str) else []


def tasks_of(items):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from tasks_of(task.get(key))


def definitions():
    """Every variable the roles define (defaults, vars, set_fact, a task's vars): name -> the names it uses."""
    out = {}
    for path in sorted((ROOT / "roles").glob("*/defaults/main.yml")) + sorted((ROOT / "roles").glob("*/vars/main.yml")):
        for name, raw in load(path).items():
            out.setdefault(name, []).extend(refs(raw))
    for path in ROLE_TASKS:
        for task in tasks_of(load(path) if isinstance(load(path), list) else []):
            for name, raw in (task.get("ansible.builtin.set_fact") or {}).items():
                out.setdefault(name, []).extend(refs(raw))
            for name, raw in (task.get("vars") or {}).items():
                out.setdefault(name, []).extend(refs(raw))
    return out


DEFINED = definitions()
REQUESTS, VALUES, ROLES = checked()


def fixed_by_spec():
    """The variables the checked roles' argument specs leave no wrong value to (a choice, true or false): the
    preflight checks them there. Also each layer's GitOps folder and format (``*_render_to``, ``*_render_format``),
    which default to the platform's, whose folder the platform settings check."""
    out = set()
    for role in ROLES | {"gpu_platform"}:
        options = load(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
        out.update(n for n, spec in options.items() if spec.get("choices") or spec.get("type") == "bool"
                   or n.endswith(("_render_to", "_render_format")))
    return out


def reach(names, seen=None):
    """``names`` and every variable they use, through the roles' definitions."""
    seen = set() if seen is None else seen
    for name in names:
        if name not in seen:
            seen.add(name)
            reach(DEFINED.get(name, []), seen)
    return seen


COVERED = reach({n for options in REQUESTS.values() for n in options} | VALUES) | fixed_by_spec()


def module_tasks():
    """(role task file, task name, module, {option: raw}, loop raw) of every call of this collection's modules."""
    for path in ROLE_TASKS:
        for task in tasks_of(load(path) if isinstance(load(path), list) else []):
            module = next((k[len(PREFIX):] for k in task if k.startswith(PREFIX)), None)
            if module and isinstance(task[PREFIX + module], dict):
                yield path.relative_to(ROOT), task.get("name"), module, task[PREFIX + module], task.get("loop")


CALLS = list(module_tasks())


def unchecked(raw, loop):
    """The inventory variables an option's template depends on that the preflight does not read."""
    names = refs(raw)
    if "item" in names:
        names = [n for n in names if n != "item"] + refs(loop)
    missing = []
    for name in names:
        if name in COVERED:
            continue
        missing += [n for n in public(sorted(reach([name]))) if n not in COVERED and n not in missing]
    return missing


def test_the_walk_finds_the_calls_and_what_checks_yml_checks():
    modules = {c[2] for c in CALLS}
    assert {"helm_pinned_release", "nic_cluster_policy", "node_labels", "mig_profile", "smoke_test",
            "manifests"} <= modules, modules
    assert {"nic_cluster_policy", "helm_pinned_release", "node_labels", "mig_profile", "smoke_test"} <= set(REQUESTS)
    assert "network_operator_ip_range" in COVERED and "dra_driver_nodes" in COVERED
    assert "gpu_operator_release_name" in COVERED


@pytest.mark.parametrize("where, name, module, options, loop", CALLS, ids=["%s:%s" % (c[0], c[2]) for c in CALLS])
def test_every_option_an_inventory_variable_feeds_has_a_preflight_path(where, name, module, options, loop):
    if module in READ_ONLY:
        pytest.skip("%s only reads" % module)
    missing = {option: unchecked(raw, loop) for option, raw in options.items() if option not in DELIVERY}
    missing = {option: names for option, names in missing.items() if names}
    assert missing == {}, "%s (%r) gives %s options from inventory variables that checks.yml's preflight does not " \
        "check: %s" % (where, name, module, missing)


@pytest.mark.parametrize("module", sorted(REQUESTS))
def test_each_module_a_request_names_has_its_own_request_builder(module):
    """The preflight calls the module's own request(): the function the module's call() runs first."""
    code = importlib.import_module("ansible_collections.gpu_platform.cluster.plugins.modules." + module)
    assert callable(code.request) and code.ARGUMENT_SPEC


@pytest.mark.parametrize("module", sorted(REQUESTS))
def test_a_module_call_with_a_request_builder_takes_no_option_straight_from_the_inventory(module):
    """A task of a module whose options the preflight checks through its request() takes each option from a role
    variable (its request variable, a plan, a loop over one), never straight from an inventory variable (but one
    its role's argument spec leaves no wrong value to): the variable the preflight reads is the one the task
    reads."""
    fixed = fixed_by_spec()
    direct = ["%s %r %s: %s" % (where, name, option, public(refs(raw)))
              for where, name, called, options, loop in CALLS if called == module
              for option, raw in options.items()
              if option not in DELIVERY and [n for n in public(refs(raw)) if n not in fixed]]
    assert direct == []


def test_the_walk_fails_an_option_fed_straight_from_the_inventory():
    """The check can fail: an option fed straight from an inventory variable the preflight does not read."""
    assert unchecked("{{ gpu_sharing_verify_timeout }}", None) == ["gpu_sharing_verify_timeout"]
    assert unchecked("{{ item.x }}", "{{ [gpu_sharing_verify_timeout] }}") == ["gpu_sharing_verify_timeout"]
    assert unchecked("{{ _network_operator_policy_options.ip_range }}", None) == []
