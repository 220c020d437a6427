"""The preflight's verdict (module_utils/domain/platform/preflight.py): one line per mistake, under the inventory's names."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import preflight
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError
from ansible_collections.gpu_platform.cluster.plugins.modules import nic_cluster_policy

ROOT = Path(__file__).resolve().parents[2]

LINE = r"^[\w.\[\]]+: .+\. Fix: .+$"


def test_a_combined_error_is_split_into_its_mistakes():
    with pytest.raises(ParamError) as err:
        validate.every([lambda: validate.dns_label("a", "UPPER"), lambda: 1,
                        lambda: validate.release_name("b", "x" * 60)], "settings")
    assert [e.field for e in preflight.split(err.value)] == ["a", "b"]
    assert preflight.verdict([err.value]) == [e.msg for e in err.value.parts]


def test_the_verdict_has_each_mistake_once_on_one_line_in_the_order_found():
    one = ParamError("x", "is wrong\nacross lines", "fix it")
    assert preflight.verdict([one, "plain text", one, GpuPlatformError("a refusal")]) == [
        "x: is wrong across lines. Fix: fix it", "plain text", "a refusal"]


def test_a_variable_named_already_is_not_named_again_and_consequences_give_way():
    """The argument spec's line says all there is about a variable; a module's check of the same variable, or of a
    path under it, adds nothing. A line about the checks' own variable (a consequence) is left out beside others."""
    lines = preflight.verdict([
        "network_operator_selectors: is of type str, not a dictionary. Fix: give a dictionary",
        ParamError("network_operator_selectors.vendors", "is bad", "fix"),
        ParamError("network_operator_selectors", "must be a dictionary", "fix"),
        ParamError("_gpu_operator_release_options.release_values", "cannot be evaluated", "fix"),
        ParamError("network_operator_selectors_extra", "is a different variable", "fix"),
        ParamError("x.a", "one", "fix"), ParamError("x.b", "two", "fix")])
    assert [text.split(":")[0] for text in lines] == ["network_operator_selectors", "network_operator_selectors_extra",
                                                      "x.a", "x.b"]
    only = preflight.verdict([ParamError("_x", "cannot be evaluated", "fix")])
    assert only == ["_x: cannot be evaluated. Fix: fix"], "kept when it is the only one"


@pytest.mark.parametrize("field, fields, named", [
    ("ip_range", {"ip_range": "network_operator_ip_range"}, "network_operator_ip_range"),
    ("selectors.vendors", {"selectors": "network_operator_selectors"}, "network_operator_selectors.vendors"),
    ("nodes[0].selector", {"nodes[0].selector": "dra_driver_nodes", "nodes": "x"}, "dra_driver_nodes"),
    ("nodes[0].labels", {"nodes[0].selector": "dra_driver_nodes"}, "nodes[0].labels"),
    ("ip_range_x", {"ip_range": "network_operator_ip_range"}, "ip_range_x"),
    ("mode", {}, "mode"),
])
def test_a_mistake_is_renamed_to_the_variable_its_option_came_from(field, fields, named):
    renamed = preflight.rename(ParamError(field, "is bad", "fix"), fields)
    assert renamed.field == named and renamed.msg == "%s: is bad. Fix: fix" % named


def test_what_is_not_a_param_error_is_not_renamed():
    error = GpuPlatformError("refused")
    assert preflight.rename(error, {"refused": "x"}) is error


@pytest.mark.parametrize("text, names", [
    ("{{ network_operator_ip_gateway | default(omit, true) }}", ["network_operator_ip_gateway", "omit"]),
    ("{{ a if b in ['x', 'y'] else omit }}", ["a", "b", "omit"]),
    ("{{ {} if c | bool else (d or omit) }}", ["c", "d", "omit"]),
    ("{{ t }}s", ["t"]),
    ("{{ item.1.node_selector }}", ["item"]),
    ("{{ x is defined and y is not none }}", ["x", "y"]),
    ("{{ a | combine(b, recursive=true) }}", ["a", "b"]),
    ("{{ r | gpu_platform.cluster.bundle_unit('gpu-operator') }}", ["r"]),
    ("{{ dict(k | zip(query('ansible.builtin.vars', *k))) }}", ["k"]),
    ("{% if a %}{{ b }}{% endif %}", ["a", "b"]),
    ("no template", []),
    (5, []),
])
def test_the_names_a_template_uses(text, names):
    assert preflight.template_names(text) == names


@pytest.mark.parametrize("option, names, variable", [
    ("node_affinity", ["network_operator_all_nodes", "network_operator_node_affinity", "omit"],
     "network_operator_node_affinity"),
    ("rdma_hca_max", ["network_operator_rdma_hca_max", "gpu_platform_network_mode"], "network_operator_rdma_hca_max"),
    ("network_operator_version", ["network_operator_chart_version"], "network_operator_chart_version"),
    ("release_values", ["_network_operator_values"], None),
    ("nodes[0].selector", ["dra_driver_nodes"], "dra_driver_nodes"),
    ("mode", ["item", "omit"], None),
])
def test_the_variable_an_option_came_from(option, names, variable):
    assert preflight.pick_variable(option, names) == variable


def test_the_fields_of_a_request_variable_as_the_role_writes_it():
    raw = yaml.safe_load((ROOT / "roles" / "network_operator" / "vars" / "main.yml").read_text())
    fields = preflight.fields_from(raw["_network_operator_policy_options"])
    assert fields["ip_range"] == "network_operator_ip_range"
    assert fields["ip_gateway"] == "network_operator_ip_gateway"
    assert fields["selectors"] == "network_operator_selectors"
    assert fields["node_affinity"] == "network_operator_node_affinity"
    assert fields["mode"] == "gpu_platform_network_mode"
    raw = yaml.safe_load((ROOT / "roles" / "dra_driver" / "vars" / "main.yml").read_text())
    assert preflight.fields_from(raw["_dra_driver_label_options"])["nodes[0].selector"] == "dra_driver_nodes"


def test_every_nic_cluster_policy_option_a_role_gives_is_named_after_its_variable():
    """Each option the network layer gives the module, but the literal and delivery ones, has its variable."""
    raw = yaml.safe_load((ROOT / "roles" / "network_operator" / "vars" / "main.yml").read_text())
    given = raw["_network_operator_policy_options"]
    fields = preflight.fields_from(given)
    assert set(given) - set(fields) <= {"wait"}
    assert set(given) <= set(nic_cluster_policy.ARGUMENT_SPEC)


def findings(spec, params):
    result = ArgumentSpecValidator(spec).validate(params, validate_role_argument_spec=True)
    return [(type(e).__name__, str(getattr(e, "error_message", e))) for e in result.errors.errors
            if type(e).__name__ != "NoLogError"]


CREDENTIALS = {"gpu_operator_registry_credentials": {"type": "list", "elements": "dict", "options": {
    name: {"type": "str", "required": True} for name in ("name", "registry", "username", "password")}}}


@pytest.mark.parametrize("spec, params, line", [
    (CREDENTIALS, {"gpu_operator_registry_credentials": [{"name": "a", "registry": "r", "username": "u"}]},
     "gpu_operator_registry_credentials: an entry has no password. Fix: give every entry name, registry, username, "
     "password"),
    (CREDENTIALS, {"gpu_operator_registry_credentials": [{"name": "a", "registry": "r", "username": "u",
                                                          "password": "p", "extra": 1}]},
     "gpu_operator_registry_credentials.extra: is not a known key. Fix: use only name, password, registry, username"),
    (CREDENTIALS, {"gpu_operator_registry_credentials": ["x"]},
     "gpu_operator_registry_credentials: has an element of type str, not a dictionary. Fix: give a list of "
     "dictionaries"),
    ({"w": {"type": "int"}}, {"w": "abc"}, "w: is of type str, not a whole number. Fix: give a whole number"),
    ({"b": {"type": "bool"}}, {"b": "maybe"}, "b: is of type str, not true or false. Fix: give true or false"),
    ({"s": {"type": "str", "choices": ["volcano", "kai"]}}, {"s": "slurm"},
     "s: 'slurm' is not one of volcano, kai. Fix: use one of volcano, kai"),
    ({"l": {"type": "list", "elements": "str", "choices": ["a", "b"]}}, {"l": ["c"]},
     "l: 'c' is not one of a, b. Fix: use one of a, b"),
])
def test_what_ansibles_argument_spec_validator_finds_reads_as_the_collections_errors(spec, params, line):
    [(kind, message)] = findings(spec, params)
    assert preflight.line(preflight.spec_error(kind, message, spec, next(iter(spec)))) == line


def test_a_finding_of_an_unknown_form_keeps_ansibles_words_under_the_option():
    error = preflight.spec_error("SomeError", "something new happened.", {}, "x", "ansible-doc -t role r")
    assert error.msg == "x: something new happened. Fix: see its description (ansible-doc -t role r)"


def test_a_value_that_does_not_evaluate_is_named_after_its_variable():
    assert preflight.value_error("_x", KeyError("'nope' is undefined")).msg == (
        "_x: cannot be evaluated (\"'nope' is undefined\"). Fix: correct the template, or the variables it uses")
    own = ParamError("smoke_tests_timeout", "is 0", "give 300")
    assert preflight.value_error("_smoke_tests_planned", own) is own


def test_every_line_reads_variable_problem_fix():
    with pytest.raises(ParamError) as err:
        validate.every([lambda: validate.dns_label("gpu_sharing_namespace", "A B"),
                        lambda: validate.duration_seconds("gpu_sharing_wait_timeout", "forever")])
    for text in preflight.verdict([err.value]):
        assert re.match(LINE, text), text
