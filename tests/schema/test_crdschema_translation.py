"""Tests of tests/schema/crdschema.py's translation rules of a CRD schema into JSON Schema, on a synthetic CRD."""
import pytest
import yaml

from tests.schema.crdschema import crd_errors, to_json_schema


# -- translation rules on a synthetic CRD -------------------------------------------------

SYNTHETIC_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.test"},
    "spec": {
        "group": "example.test",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Cluster",
        "versions": [
            {"name": "v1old", "served": False, "storage": False,
             "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}},
                    "spec": {"type": "object", "properties": {
                        "nullableText": {"type": "string", "nullable": True},
                        "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
                        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                        "small": {"type": "integer", "format": "int32"},
                        "when": {"type": "string", "format": "date-time"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "empty": {"type": "object"},
                        "anyKeys": {"type": "object", "additionalProperties": True},
                        "closed": {"type": "object", "additionalProperties": False},
                        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                 "properties": {"known": {"type": "integer"}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                                     "x-kubernetes-preserve-unknown-fields": True},
                        "either": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
                                   "oneOf": [{"required": ["x"]}, {"required": ["y"]}]},
                    }},
                },
            }}},
        ],
    },
}


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("upstream")
    (root / "example").mkdir()
    (root / "example" / "widgets.example.test.yaml").write_text(yaml.safe_dump(SYNTHETIC_CRD), encoding="utf-8")
    (root / "example" / "values.default.yaml").write_text("not: [a, crd]\n", encoding="utf-8")  # skipped
    return root


def _widget(spec=None, name="w1"):
    return {"apiVersion": "example.test/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec or {}}


@pytest.mark.parametrize("spec", [
    {"nullableText": None}, {"mode": None}, {"mode": "a"}, {"ratio": 0.5}, {"small": 2**31 - 1},
    {"when": "not a date: format is ignored"}, {"labels": {"a": "b"}}, {"empty": {}},
    {"anyKeys": {"a": {"b": 1}}}, {"closed": {}},
    {"open": {"known": 1, "unknown": {"deep": True}}},
    {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}}},
    {"either": {"x": "1"}},
], ids=lambda s: next(iter(s)))
def test_translation_accepts(synthetic_dir, spec):
    assert crd_errors(_widget(spec), upstream_dir=synthetic_dir) == []


@pytest.mark.parametrize("spec,expected", [
    ({"mode": "c"}, "spec.mode: 'c' is not one of ['a', 'b', None]"),
    ({"ratio": 0}, "spec.ratio: 0 is less than or equal to the minimum of 0"),
    ({"small": 2**31}, "spec.small: 2147483648 is greater than the maximum of 2147483647"),
    ({"labels": {"a": 1}}, "spec.labels.a: 1 is not of type 'string'"),
    ({"empty": {"x": 1}}, "spec.empty.x: unknown field"),
    ({"closed": {"x": 1}}, "spec.closed.x: unknown field"),
    ({"nullableText": 1}, "spec.nullableText: 1 is not of type 'string', 'null'"),
    ({"open": {"known": "one"}}, "spec.open.known: 'one' is not of type 'integer'"),
    ({"template": {"metadata": {"nmae": "p"}}}, "spec.template.metadata.nmae: unknown field"),
    ({"either": {"x": "1", "y": "2"}}, "spec.either: {'x': '1', 'y': '2'} is valid under each of"),
    ({"either": {"x": "1", "z": "2"}}, "spec.either.z: unknown field"),
], ids=lambda v: str(v)[:30])
def test_translation_rejects(synthetic_dir, spec, expected):
    errors = crd_errors(_widget(spec), upstream_dir=synthetic_dir)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_crd_restrictions_on_metadata_name_apply(synthetic_dir):
    errors = crd_errors(_widget(name="much-too-long"), upstream_dir=synthetic_dir)
    assert errors == ["metadata.name: 'much-too-long' is too long"]


def test_version_with_served_false_is_rejected(synthetic_dir):
    errors = crd_errors({**_widget(), "apiVersion": "example.test/v1old"}, upstream_dir=synthetic_dir)
    assert errors == ["apiVersion: example.test/v1old Widget is not served by CRD widgets.example.test "
                      "(example/widgets.example.test.yaml; served: false); served versions: v1"]


def test_junctor_branches_add_no_unknown_field_rule():
    schema = to_json_schema({"type": "object", "properties": {"a": {"type": "string"}},
                             "anyOf": [{"properties": {"a": {"minLength": 1}}}]})
    assert schema["additionalProperties"] is False
    assert "additionalProperties" not in schema["anyOf"][0]
    assert "additionalProperties" not in schema["anyOf"][0]["properties"]["a"]
