# -*- coding: utf-8 -*-
"""The AWX data the collection ships (meta/awx): every survey is a survey_spec the AWX API accepts and can offer no
answer the play refuses; the NGC registry credential type is one AWX accepts and injects variables the roles take;
the job templates name surveys, playbooks and credential types that exist. The variables' specs are read from the
roles' meta/argument_specs.yml and from every validate_argument_spec task of the playbooks, never listed here."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from local_gpu_cluster import pins

from tests.awx.runner import project_imports, render_injector, scan, survey_answers

ROOT = Path(__file__).resolve().parents[2]
AWX = ROOT / "meta" / "awx"
SURVEYS = sorted((AWX / "surveys").glob("*.json"))
CREDENTIAL_TYPES = sorted((AWX / "credential_types").glob("*.json"))
# The AWX API's survey_spec and credential type formats (awx/main/models/mixins.py, awx/main/fields.py).
QUESTION_KEYS = {"question_name", "question_description", "required", "type", "variable", "min", "max", "default",
                 "choices", "new_question"}
QUESTION_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
# Which argument-spec types an answer of each survey type can meet.
SPEC_TYPES = {"text": {"str", "raw", "path"}, "textarea": {"str", "raw"}, "password": {"str", "raw"},
              "integer": {"int", "raw"}, "float": {"float", "raw"},
              "multiplechoice": {"str", "bool", "int", "raw"}, "multiselect": {"list"}}
VALIDATOR_KEYS = {"type", "elements", "choices", "required", "options", "no_log"}
AWX_BUILTIN_CREDENTIAL_TYPES = {"OpenShift or Kubernetes API Bearer Token", "Machine"}


def validate_specs(node, found):
    """Every inline argument_spec of a validate_argument_spec task anywhere in a playbook's YAML."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ansible.builtin.validate_argument_spec", "validate_argument_spec") and isinstance(value, dict):
                found.append(value.get("argument_spec") or {})
            else:
                validate_specs(value, found)
    elif isinstance(node, list):
        for item in node:
            validate_specs(item, found)
    return found


def variable_specs():
    """{variable: [(where, spec)]} over every role's entry points and every playbook's validate_argument_spec."""
    specs = {}
    for path in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        for entry, data in (yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"] or {}).items():
            for name, spec in (data.get("options") or {}).items():
                specs.setdefault(name, []).append(("%s (%s)" % (path.relative_to(ROOT), entry), spec))
    for path in sorted(ROOT.glob("playbooks/**/*.yml")):
        for found in validate_specs(yaml.safe_load(path.read_text(encoding="utf-8")), []):
            for name, spec in found.items():
                specs.setdefault(name, []).append((str(path.relative_to(ROOT)), spec))
    return specs


SPECS = variable_specs()


def as_ansible_reads_it(value):
    """An answer as the play sees it: AWX writes every answer as ``!unsafe '<text>'`` and ansible-core 2.19 resolves
    the text as a plain YAML scalar ('' is null, 'true' a bool, '8' an int)."""
    if isinstance(value, list):
        return [as_ansible_reads_it(v) for v in value]
    if not isinstance(value, str):
        return value
    node = yaml.ScalarNode(tag=yaml.SafeLoader.resolve(yaml.SafeLoader(""), yaml.ScalarNode, value, (True, False)),
                           value=value)
    return yaml.SafeLoader("").construct_object(node)


def refusal(name, spec, value):
    """Why the play's check refuses ``value`` for ``name`` (None: accepted)."""
    plain = {k: v for k, v in spec.items() if k in VALIDATOR_KEYS}
    result = ArgumentSpecValidator({name: plain}).validate({name: as_ansible_reads_it(value)})
    return "; ".join(str(e) for e in result.errors) or None


def possible_answers(question):
    """Every answer the question lets an AWX user give that can be listed: its default and each choice."""
    kind, choices = question["type"], question.get("choices") or []
    if isinstance(choices, str):
        choices = [c for c in choices.split("\n") if c]
    answers = [[c] for c in choices] if kind == "multiselect" else list(choices)
    if "default" in question:
        answers.append(survey_answers({"spec": [question]}, {})[question["variable"]])
    return answers


def survey_errors(survey, specs=None):
    """What is wrong with a survey_spec, as sentences naming the question (empty: nothing)."""
    specs = SPECS if specs is None else specs
    errors = []
    if set(survey) - {"name", "description", "spec"} or not survey.get("name") or not isinstance(survey.get("spec"), list):
        errors.append("a survey_spec is {name, description, spec: [questions]}")
    seen = set()
    for question in survey.get("spec") or []:
        name, kind = question.get("variable"), question.get("type")
        where = "question %r (%s)" % (question.get("question_name"), name)
        if set(question) - QUESTION_KEYS:
            errors.append("%s: keys AWX does not know: %s" % (where, sorted(set(question) - QUESTION_KEYS)))
        if kind not in QUESTION_TYPES or not question.get("question_name") or not isinstance(question.get("required"),
                                                                                             bool):
            errors.append("%s: needs a question_name, a type AWX knows and required true or false" % where)
            continue
        if name in seen:
            errors.append("%s: asked twice" % where)
        seen.add(name)
        choices = question.get("choices")
        if kind in ("multiplechoice", "multiselect") and not choices:
            errors.append("%s: a %s question needs choices" % (where, kind))
        if kind == "multiplechoice" and "default" in question and question["default"] not in choices:
            errors.append("%s: the default %r is not a choice" % (where, question["default"]))
        if kind in ("text", "textarea", "password") and "default" in question:
            if not question.get("min", 0) <= len(question["default"]) <= question.get("max", 1024):
                errors.append("%s: the default is outside min/max" % where)
        if name not in specs:
            errors.append("%s: no role or playbook checks the variable %s" % (where, name))
            continue
        for source, spec in specs[name]:
            spec_type = spec.get("type", "str")
            if spec_type not in SPEC_TYPES[kind]:
                errors.append("%s: a %s answer for a %s variable (%s)" % (where, kind, spec_type, source))
                continue
            if spec.get("required") and not question["required"]:
                errors.append("%s: %s requires the variable, the survey does not" % (where, source))
            if spec.get("choices") and kind not in ("multiplechoice", "multiselect"):
                errors.append("%s: %s has choices %s, the survey asks for free text" % (where, source, spec["choices"]))
            if kind == "password" and not spec.get("no_log"):
                errors.append("%s: a password answer for a variable %s does not mark no_log" % (where, source))
            for answer in possible_answers(question):
                why = refusal(name, spec, answer)
                if why:
                    errors.append("%s: the play refuses the answer %r (%s): %s" % (where, answer, source, why))
            default = spec.get("default")
            if name.endswith("_chart_version") and "{{" in str(default):
                # the two operators' pins read the release pair: the default pair's version is the collection's
                default = pins.resolve(name, default, ROOT)
            if "default" in question and default is not None and "{{" not in str(default):
                offered = as_ansible_reads_it(survey_answers({"spec": [question]}, {})[name])
                if offered != default and not (offered is None and default == ""):
                    errors.append("%s: the survey's default %r is not the collection's %r (%s): an unchanged answer "
                                  "would change it" % (where, offered, default, source))
    return errors


@pytest.mark.parametrize("path", SURVEYS, ids=[p.stem for p in SURVEYS])
def test_every_survey_is_one_awx_accepts_and_offers_only_what_the_play_accepts(path):
    survey = json.loads(path.read_text(encoding="utf-8"))
    assert survey_errors(survey) == []


@pytest.mark.parametrize("change, expected", [
    (lambda q: q["choices"].append("slurm"), "refuses the answer 'slurm'"),
    (lambda q: q.update(type="text", choices=None), "has choices"),
    (lambda q: q.update(variable="scheduling_schedulr"), "no role or playbook checks the variable scheduling_schedulr"),
    (lambda q: q.update(default="kai"), "is not the collection's 'volcano'"),
    (lambda q: q.update(type="multiselect", default="volcano"), "a multiselect answer for a str variable"),
    (lambda q: q.update(type="password"), "does not mark no_log"),
    (lambda q: q.update(default="slurm"), "the default 'slurm' is not a choice"),
    (lambda q: q.update(required="yes"), "required true or false"),
])
def test_a_survey_offering_what_the_play_refuses_is_caught(change, expected):
    survey = json.loads((AWX / "surveys" / "site.json").read_text(encoding="utf-8"))
    question = next(q for q in survey["spec"] if q["variable"] == "gpu_platform_scheduler")
    change(question)
    errors = survey_errors(survey)
    assert [e for e in errors if expected in e], errors


def test_a_required_variable_must_be_required_by_the_survey():
    specs = {"x_mode": [("roles/x", {"type": "str", "required": True, "choices": ["a", "b"]})]}
    survey = {"name": "x", "description": "", "spec": [{"question_name": "Mode", "variable": "x_mode",
                                                        "type": "multiplechoice", "choices": ["a"],
                                                        "required": False}]}
    assert [e for e in survey_errors(survey, specs) if "requires the variable" in e]
    survey["spec"][0]["required"] = True
    assert survey_errors(survey, specs) == []


def test_a_boolean_question_is_read_as_a_boolean_and_an_empty_answer_as_null():
    assert as_ansible_reads_it("true") is True and as_ansible_reads_it("false") is False
    assert as_ansible_reads_it("") is None and as_ansible_reads_it("v26.3.3") == "v26.3.3"
    assert as_ansible_reads_it(["gpu_operator", "scheduling"]) == ["gpu_operator", "scheduling"]


def test_ansible_core_reads_awx_unsafe_answers_that_way():
    """The reason the playbooks take a null gpu_platform_render_to as empty (default('', true))."""
    from ansible.parsing.yaml.loader import AnsibleLoader
    data = AnsibleLoader("a: !unsafe ''\nb: !unsafe 'true'\nc: !unsafe 'v26.3.3'\n").get_single_data()
    assert data["a"] is None and data["b"] is True and data["c"] == "v26.3.3"


def credential_types():
    return [json.loads(p.read_text(encoding="utf-8")) for p in CREDENTIAL_TYPES]


@pytest.mark.parametrize("ctype", credential_types(), ids=[p.stem for p in CREDENTIAL_TYPES])
def test_the_credential_type_is_one_awx_accepts(ctype):
    assert set(ctype) <= {"name", "description", "kind", "inputs", "injectors"} and ctype["kind"] == "cloud"
    fields = ctype["inputs"]["fields"]
    ids = [f["id"] for f in fields]
    assert len(ids) == len(set(ids)) and "tower" not in ids
    assert set(ctype["inputs"].get("required", [])) <= set(ids)
    for field in fields:
        assert {"id", "label"} <= set(field) and field.get("type", "string") in ("string", "boolean"), field
        assert field.get("type", "string") == "string" or not {"choices", "multiline", "format", "secret"} & set(field)
    injectors = ctype["injectors"]
    assert set(injectors) <= {"file", "env", "extra_vars"}
    assert all(isinstance(v, str) for kind in ("env", "extra_vars") for v in injectors.get(kind, {}).values()), \
        "AWX's injector schema takes strings only"
    assert not [k for k in injectors.get("env", {}) if k.startswith("ANSIBLE_")]
    strict = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    namespace = {i: "EXAMPLE" for i in ids}
    for kind in ("env", "extra_vars"):
        for template in injectors.get(kind, {}).values():
            strict.from_string(template).render(**namespace)   # AWX refuses an undefined field


@pytest.mark.parametrize("ctype", credential_types(), ids=[p.stem for p in CREDENTIAL_TYPES])
def test_the_credential_type_injects_variables_the_roles_take_and_hide(ctype):
    secret_fields = {f["id"] for f in ctype["inputs"]["fields"] if f.get("secret")}
    assert secret_fields, "a registry credential has a secret"
    inputs = {f["id"]: "secret-value" if f["id"] in secret_fields else f.get("default", "x")
              for f in ctype["inputs"]["fields"]}
    env, extra = render_injector(ctype, inputs)
    assert extra and not env
    for name, value in extra.items():
        assert name in SPECS, "%s is no variable a role or playbook checks" % name
        for source, spec in SPECS[name]:
            assert refusal(name, spec, value) is None, (name, source)
            if value == "secret-value":
                assert spec.get("no_log"), "%s carries a secret, %s does not mark it no_log" % (name, source)
    assert "secret-value" in extra.values()


def job_templates():
    templates = yaml.safe_load((AWX / "job_templates.yml").read_text(encoding="utf-8"))
    for template in templates:
        template["imports"] = project_imports(template["playbook"])
    return templates


def imported(playbook):
    """The collection playbooks a playbook of the collection imports, in order."""
    plays = yaml.safe_load((ROOT / "playbooks" / (playbook + ".yml")).read_text(encoding="utf-8"))
    return [p["ansible.builtin.import_playbook"][:-len(".yml")] for p in plays if "ansible.builtin.import_playbook" in p]


def test_every_job_template_names_what_exists():
    templates = job_templates()
    assert {i for t in templates for i in t["imports"]} >= {"gpu_platform.cluster." + p for p in
                                                            ("site", "upgrade", "uninstall", "smoke")}
    shipped = {c["name"] for c in credential_types()}
    assert len({t["name"] for t in templates}) == len({t["playbook"] for t in templates}) == len(templates)
    for template in templates:
        assert (AWX / template["survey"]).is_file(), template
        for name in template["imports"]:
            assert name.startswith("gpu_platform.cluster.") and (
                ROOT / "playbooks" / (name.split(".")[-1] + ".yml")).is_file(), name
        assert set(template["credentials"]) <= shipped | AWX_BUILTIN_CREDENTIAL_TYPES, template
        assert isinstance(template["drains_nodes"], bool) and template["description"]
    assert {str(p.relative_to(AWX)) for p in SURVEYS} == {t["survey"] for t in templates}, "every survey is used"
    assert sorted(p.name for p in (AWX / "project").glob("*.yml")) == sorted(t["playbook"] for t in templates)
    requirements = yaml.safe_load((AWX / "project" / "collections" / "requirements.yml").read_text(encoding="utf-8"))
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
    assert requirements["collections"] == [{"name": "gpu_platform.cluster", "version": galaxy["version"]}]


def workflow_chain(workflow):
    """The workflow's nodes from its root along success_nodes (one path: the shipped workflows are chains)."""
    nodes = {n["identifier"]: n for n in workflow["workflow_nodes"]}
    targets = {e["identifier"] for n in nodes.values() for e in n.get("related", {}).get("success_nodes", [])}
    assert targets <= set(nodes), "an edge to no node"
    roots = [i for i in nodes if i not in targets]
    assert len(roots) == 1, roots
    chain, current = [], roots[0]
    while current:
        node = nodes[current]
        chain.append(node)
        after = node.get("related", {}).get("success_nodes", [])
        assert len(after) <= 1
        current = after[0]["identifier"] if after else None
    assert len(chain) == len(nodes), "a node off the chain"
    return chain


def test_the_workflows_run_the_layers_in_order_with_an_approval_before_every_drain():
    templates = {t["name"]: t for t in job_templates()}
    site_order = [name.split(".")[-1] for name in imported("site")]
    for workflow in yaml.safe_load((AWX / "workflow_templates.yml").read_text(encoding="utf-8")):
        chain = workflow_chain(workflow)
        layers = []
        for before, node in zip([None] + chain, chain):
            ujt = node["unified_job_template"]
            if ujt["type"] == "workflow_approval":
                assert ujt["name"] and ujt["description"] and ujt["timeout"] > 0
                continue
            assert ujt["type"] == "job_template" and ujt["name"] in templates, ujt
            template = templates[ujt["name"]]
            if template["drains_nodes"]:
                assert before and before["unified_job_template"]["type"] == "workflow_approval", \
                    "%s: no approval before %s, which can drain nodes" % (workflow["name"], ujt["name"])
            steps = [i.split(".")[-1] for i in template["imports"]]
            layers += [p for p in steps if p in site_order and p not in ("preflight", "driver_mode", "checks")]
        # The layers the workflow's jobs run come in site.yml's order, each once.
        assert layers == [p for p in site_order if p in layers] and len(layers) == len(set(layers)), layers
    layered = yaml.safe_load((AWX / "workflow_templates.yml").read_text(encoding="utf-8"))[0]
    run = [i.split(".")[-1] for n in workflow_chain(layered) if n["unified_job_template"]["type"] == "job_template"
           for i in templates[n["unified_job_template"]["name"]]["imports"]]
    assert set(site_order) <= set(run), "the layer-by-layer workflow runs every part of site.yml"


def test_docs_awx_shows_every_template_survey_and_credential_type():
    docs = (ROOT / "docs" / "awx.md").read_text(encoding="utf-8")
    for template in job_templates():
        assert template["name"] in docs and "meta/awx/" + template["survey"] in docs, template["name"]
    for path in CREDENTIAL_TYPES:
        assert "meta/awx/credential_types/" + path.name in docs


def test_the_scan_finds_a_planted_secret_and_its_controls(tmp_path):
    events = tmp_path / "job_events"
    events.mkdir()
    (events / "1-a.json").write_text(json.dumps({"event_data": {"res": {"msg": "pull Secret ngc-registry"}}}))
    (events / "2-b.json").write_text(json.dumps({"event_data": {"res": {"msg": "token s3cr3t-token"}}}))
    (tmp_path / "stdout").write_text("ok")
    files, count, hits, found = scan(tmp_path, {"token": "s3cr3t-token", "password": "hunter2"},
                                     {"name": "ngc-registry", "absent": "nowhere"})
    assert (files, count) == (3, 2)
    assert hits == {"token": ["job_events/2-b.json"]}
    assert found == {"name": 1, "absent": 0}


def test_survey_answers_are_what_awx_sends():
    survey = json.loads((AWX / "surveys" / "smoke.json").read_text(encoding="utf-8"))
    assert survey_answers(survey, {}) == {"smoke_tests_layers": survey["spec"][0]["choices"]}
    site = json.loads((AWX / "surveys" / "site.json").read_text(encoding="utf-8"))
    answers = survey_answers(site, {})
    assert "gpu_operator_registry_password" not in answers, "an unanswered password without a default is not sent"
    with pytest.raises(AssertionError, match="does not ask"):
        survey_answers(copy.deepcopy(site), {"no_such_question": 1})
