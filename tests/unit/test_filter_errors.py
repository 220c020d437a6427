"""The filters' one error conversion (plugins/plugin_utils/filter_errors.py): what the user reads, the renaming to
the user's variable, what is not caught, and that every exported filter goes through it."""
from __future__ import annotations

import ast
import glob
import importlib
import inspect
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError, Refusal
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils import filter_errors
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER_FILES = sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")))
FIELDS = {"gpu_operator": "gpu_operator_chart_version", "kubernetes": "gpu_platform_kubernetes_version"}


def filter_module(path):
    return importlib.import_module("ansible_collections.gpu_platform.cluster.plugins.filter." + os.path.basename(path)[:-3])


def failing(exc):
    def func(value, fields=None):  # pylint: disable=unused-argument
        """A filter that fails."""
        raise exc
    return func


def message(call, *args, **kwargs):
    with pytest.raises(AnsibleFilterError) as err:
        call(*args, **kwargs)
    return err.value.message


# ---------------------------------------------------------------- ParamError.renamed

def test_renamed_puts_the_users_variable_in_front_of_the_same_problem_and_fix():
    exc = ParamError("gpu_operator", "'latest' is not a version", "give a version such as v26.3.3")
    renamed = exc.renamed(FIELDS)
    assert isinstance(renamed, ParamError) and renamed.field == "gpu_operator_chart_version"
    assert renamed.msg == "gpu_operator_chart_version: 'latest' is not a version. Fix: give a version such as v26.3.3"
    assert renamed.msg == "gpu_operator_chart_version" + exc.msg[len(exc.field):], "what the filters printed before"


@pytest.mark.parametrize("fields", [None, {}, {"driver": "gpu_platform_driver_version"}, {"gpu_operator": ""},
                                    {"gpu_operator": "gpu_operator"}, ["gpu_operator"], "gpu_operator"])
def test_renamed_without_a_name_for_the_field_is_the_same_error(fields):
    exc = ParamError("gpu_operator", "bad", "fix it")
    assert exc.renamed(fields) is exc


# ---------------------------------------------------------------- user_errors

@pytest.mark.parametrize("exc", [
    ParamError("gpu_platform_node_pools[0].replicas", "1 is below 2", "use 2 or more"),
    Refusal("Known-broken combination: x. Fix: choose another"),
    GpuPlatformError("node label patches: a file cannot be read (x). Fix: point gpu_platform_bundle at the folder"),
])
def test_a_platform_error_reaches_the_user_as_its_message(exc):
    assert message(user_errors(failing(exc)), 1) == exc.msg


@pytest.mark.parametrize("exc", [ValueError("a bug"), KeyError("item"), TypeError("x")])
def test_any_other_exception_is_not_caught(exc):
    with pytest.raises(type(exc)):
        user_errors(failing(exc))(1)


def test_fields_from_a_mapping_or_from_the_filters_own_arguments():
    exc = ParamError("gpu_operator", "'latest' is not a version", "give one")
    assert message(user_errors(fields=FIELDS)(failing(exc)), 1).startswith("gpu_operator_chart_version: 'latest'")
    by_argument = user_errors(fields=lambda value, fields=None: fields)(failing(exc))
    assert message(by_argument, 1, FIELDS).startswith("gpu_operator_chart_version: ")
    assert message(by_argument, 1, fields=FIELDS).startswith("gpu_operator_chart_version: ")
    assert message(by_argument, 1) == exc.msg, "no mapping: the field as the domain named it"
    # Only a ParamError has a field to rename.
    refusal = Refusal("gpu_operator: refused. Fix: x")
    assert message(user_errors(fields=FIELDS)(failing(refusal)), 1) == refusal.msg


def test_the_wrapper_keeps_the_filters_name_signature_and_result():
    def plan(spec, scheduler="volcano"):
        """The plan."""
        return (spec, scheduler)
    wrapped = user_errors(plan)
    assert wrapped.__name__ == "plan" and wrapped.__doc__ == "The plan."
    assert list(inspect.signature(wrapped).parameters) == ["spec", "scheduler"]
    assert wrapped({"a": 1}, scheduler="kai") == ({"a": 1}, "kai")
    assert getattr(wrapped, filter_errors.MARKER) is True and not hasattr(plan, filter_errors.MARKER)


# ---------------------------------------------------------------- every filter goes through it

def exported():
    return [(os.path.basename(path), name, func) for path in FILTER_FILES
            for name, func in filter_module(path).FilterModule().filters().items()]


@pytest.mark.parametrize("path, name, func", exported(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_exported_filter_goes_through_user_errors(path, name, func):
    assert getattr(func, filter_errors.MARKER, False), "%s (%s) is not wrapped by user_errors" % (name, path)


@pytest.mark.parametrize("path", FILTER_FILES, ids=os.path.basename)
def test_no_filter_converts_errors_by_hand(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in ast.walk(tree)
             if isinstance(n, (ast.Name, ast.Attribute))}
    assert "AnsibleFilterError" not in names, "raise GpuPlatformError and let user_errors convert it"
    for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
        caught = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in ast.walk(handler.type)} \
            if handler.type is not None else {"<bare except>"}
        assert not caught & {"GpuPlatformError", "ParamError", "Refusal", "ToolError", "<bare except>", "Exception"}, \
            "line %d catches %s by hand" % (handler.lineno, sorted(caught))


# ---------------------------------------------------------------- what users read from the filters

def filters():
    out = {}
    for path in FILTER_FILES:
        out.update(filter_module(path).FilterModule().filters())
    return out


def test_version_matrix_check_names_the_users_variable():
    check = filters()["version_matrix_check"]
    msg = message(check, {"gpu_operator": "latest", "driver": ""}, FIELDS)
    assert msg.startswith("gpu_operator_chart_version: 'latest' is not") and "Fix:" in msg
    assert message(check, {"gpu_operator": "latest"}).startswith("gpu_operator: 'latest' is not")
    assert message(check, "v26.3.3").startswith("combo: must be a dictionary")
    # Keys left empty are not judged.
    assert check({"gpu_operator": "v26.3.3", "network_operator": None, "driver": "", "features": []}) \
        == check({"gpu_operator": "v26.3.3"})


def test_platform_support_check_names_the_users_variable_from_its_settings():
    check = filters()["platform_support_check"]
    settings = {"combo": {"gpu_operator": "latest"}, "fields": FIELDS, "inventory": {}}
    assert message(check, settings).startswith("gpu_operator_chart_version: 'latest' is not")
    # The inventory's Kubernetes version is gpu_platform_kubernetes_version, whichever check finds it bad.
    bad = {"combo": {"gpu_operator": "v26.3.3"}, "fields": FIELDS, "inventory": {"kubernetes": "one.thirty"}}
    assert message(check, bad).startswith("gpu_platform_kubernetes_version: 'one.thirty'")
    refused = {"combo": {"kubernetes": "1.33", "features": ["dra"]}, "fields": FIELDS, "accept": True}
    assert "Known-broken" in message(check, refused)


def test_node_label_patches_of_an_unreadable_bundle(tmp_path):
    (tmp_path / "gpu-sharing").mkdir()
    (tmp_path / "gpu-sharing" / "gpu-sharing-node-labels.yaml").write_text("a: [\n", encoding="utf-8")
    msg = message(filters()["node_label_patches"], str(tmp_path))
    assert msg.startswith("node label patches: ") and "cannot be read" in msg
    assert msg.endswith("Fix: point gpu_platform_bundle at the folder site.yml rendered")
    assert filters()["node_label_patches"](str(tmp_path / "missing")) == []


@pytest.mark.parametrize("name, args, words", [
    ("namespace_objects", (["ok", "Not_OK"],), "namespaces[1]: 'Not_OK' is not a valid name"),
    ("gpu_sharing_plan", ([{"name": "t", "node_selector": {"p": "t"}, "sharing": "time-slicing", "replicas": 1}],),
     "gpu_platform_node_pools[0].replicas"),
    ("smoke_tests_plan", ({}, [{"name": "t", "node_selector": {"p": "t"}, "sharing": "time-slicing", "replicas": 1}]),
     "gpu_platform_node_pools[0].replicas"),
    ("runtime_restore_plan", ({"format": 2}, "/var/backups/x"), "manifest: is not a runtime backup manifest"),
    ("platform_check", ({"mirrors": {"gpu_platform_image_mirrors": {"nvcr.io": "https://u:p@harbor/x"}}},),
     "gpu_platform_image_mirrors.nvcr.io"),
    ("monitoring_dashboard", ("monitoring", {"grafana_dashboard": True}), "monitoring_dashboard_label"),
])
def test_a_bad_input_fails_the_filter_naming_the_field(name, args, words):
    assert words in message(filters()[name], *args)
