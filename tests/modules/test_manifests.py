"""manifests: objects applied to the fake cluster only when they change, or rendered; absent; bad objects."""
from __future__ import annotations

import pytest

from local_gpu_cluster.controllers import default_controllers
from tests.modules.harness import run_module

OBJECTS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
     "data": {"gpus": "8"}},
]


@pytest.fixture
def api(fake_api_factory):
    server = fake_api_factory(controllers=default_controllers())
    server.clear_log()
    return server


def run(api, check_mode=False, diff=False, **params):
    params.setdefault("objects", OBJECTS)
    params.setdefault("kubeconfig", str(api.kubeconfig))
    return run_module("manifests", params, check_mode=check_mode, diff=diff)


def test_apply_then_nothing_to_do(api):
    failed, first = run(api, diff=True)
    assert not failed, first.get("msg")
    assert first["changed"] and first["changed_objects"] == ["Namespace team-a", "ConfigMap team-a/settings"]
    assert "gpus: '8'" in first["diff"][1]["after"]
    assert api.store.get("v1", "ConfigMap", "settings", "team-a")["data"] == {"gpus": "8"}
    api.clear_log()
    failed, second = run(api)
    assert not failed and second["changed"] is False and second["changed_objects"] == []
    assert api.writes() == [], "a converged object is not applied again"


def test_check_mode_reports_the_change_and_writes_nothing(api):
    run(api)
    changed = [OBJECTS[0], dict(OBJECTS[1], data={"gpus": "16"})]
    api.clear_log()
    failed, result = run(api, check_mode=True, diff=True, objects=changed)
    assert not failed and result["changed"] and result["changed_objects"] == ["ConfigMap team-a/settings"]
    assert "gpus: '16'" in result["diff"][0]["after"] and "gpus: '8'" in result["diff"][0]["before"]
    assert api.writes() == []
    assert api.store.get("v1", "ConfigMap", "settings", "team-a")["data"] == {"gpus": "8"}


def test_absent_deletes_in_reverse_order(api):
    run(api)
    api.clear_log()
    failed, result = run(api, state="absent")
    assert not failed and result["removed"] == ["configmap-team-a-settings.yaml", "namespace-team-a.yaml"]
    assert api.store.get("v1", "ConfigMap", "settings", "team-a") is None
    failed, again = run(api, state="absent")
    assert not failed and again["changed"] is False


def test_render_writes_stable_files_only_when_they_change(tmp_path):
    out = tmp_path / "bundle"
    failed, first = run_module("manifests", {"objects": OBJECTS, "render_to": str(out), "source": "scheduling"})
    assert not failed and first["changed"]
    assert first["rendered"]["files"] == ["configmap-team-a-settings.yaml", "namespace-team-a.yaml"]
    text = (out / "configmap-team-a-settings.yaml").read_text()
    assert text.startswith("# Rendered by gpu_platform.cluster scheduling.") and "gpus: '8'" in text
    failed, second = run_module("manifests", {"objects": OBJECTS, "render_to": str(out), "source": "scheduling"})
    assert not failed and second["changed"] is False and second["rendered"]["changed_files"] == []
    failed, removed = run_module("manifests", {"objects": OBJECTS, "render_to": str(out), "state": "absent"})
    assert not failed and sorted(removed["rendered"]["changed_files"]) == first["rendered"]["files"]
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("objects, words", [
    ([{"kind": "ConfigMap", "metadata": {"name": "x"}}], "objects[0].apiVersion: is missing"),
    ([{"apiVersion": "v1", "metadata": {"name": "x"}}], "objects[0].kind: is missing"),
    ([OBJECTS[0], {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}], "objects[1].metadata.name: is missing"),
    ([{"apiVersion": "v1", "kind": "../../etc", "metadata": {"name": "x"}}], "objects[0].kind: '../../etc' is not a kind"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "../x"}}], "objects[0].metadata.name: '../x'"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x" * 300}}], "objects[0].metadata.name: 'xxx"),
    ([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "A/B"}}],
     "objects[0].metadata.namespace: 'A/B' is not a valid name"),
    ([{"apiVersion": "../v1", "kind": "ConfigMap", "metadata": {"name": "x"}}], "objects[0].apiVersion: '../v1'"),
])
def test_bad_objects_are_refused_before_any_write(api, objects, words, tmp_path):
    failed, result = run(api, objects=objects)
    assert failed and words in result["msg"] and "Fix:" in result["msg"]
    assert api.writes() == []
    out = tmp_path / "bundle" / "unit"
    failed, rendered = run_module("manifests", {"objects": objects, "render_to": str(out)})
    assert failed and words in rendered["msg"]
    assert list(tmp_path.rglob("*.yaml")) == [], "nothing written, inside or outside render_to"


def test_a_long_name_gets_a_file_name_the_file_system_takes(tmp_path):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a" * 253, "namespace": "n" * 63}}
    failed, result = run_module("manifests", {"objects": [obj], "render_to": str(tmp_path)})
    assert not failed, result.get("msg")
    [name] = result["rendered"]["files"]
    assert len(name.encode()) <= 255 and name.startswith("configmap-" + "n" * 63 + "-aaa") and name.endswith(".yaml")
    failed, again = run_module("manifests", {"objects": [obj], "render_to": str(tmp_path)})
    assert not failed and again["changed"] is False, "the same name the next time"


def test_a_symlink_out_of_render_to_is_refused(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("keep\n")
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "configmap-team-a-settings.yaml").symlink_to(outside)
    failed, result = run_module("manifests", {"objects": OBJECTS[1:], "render_to": str(folder)})
    assert failed and "resolves outside" in result["msg"]
    assert outside.read_text() == "keep\n"


def test_one_refused_object_means_none_is_applied(fake_api_factory):
    api = fake_api_factory(controllers=default_controllers(), require_namespaces=True)
    api.clear_log()
    objects = OBJECTS + [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nowhere"},
                          "data": {"a": "b"}}]
    failed, result = run(api, objects=objects)
    assert failed and "refused 1 of 3 objects in a server-side dry-run" in result["msg"]
    assert "ConfigMap nowhere/x" in result["msg"] or "nowhere" in result["msg"]
    assert api.writes() == [], "not even the Namespace"


def test_objects_in_a_namespace_of_the_same_list_go_on_after_it(fake_api_factory):
    api = fake_api_factory(controllers=default_controllers(), require_namespaces=True)
    failed, check = run(api, check_mode=True)
    assert not failed and check["changed"] is True and len(check["changed_objects"]) == 2
    assert api.writes() == []
    failed, first = run(api)
    assert not failed, first.get("msg")
    assert api.store.get("v1", "ConfigMap", "settings", "team-a") is not None


WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "team-a"}}


def test_an_unserved_kind_fails_before_any_write_naming_it(api):
    failed, result = run(api, objects=OBJECTS + [WIDGET])
    assert failed and "does not serve example.com/v1 Widget, so nothing was applied" in result["msg"]
    assert "unserved: skip" in result["msg"]
    assert api.writes() == [], "the Namespace and ConfigMap before the Widget are not applied either"


def test_unserved_skip_applies_the_rest_and_names_what_it_left_out(api):
    failed, result = run(api, objects=OBJECTS + [WIDGET], unserved="skip")
    assert not failed, result.get("msg")
    assert result["left_out"] == ["Widget team-a/w"]
    assert result["changed_objects"] == ["Namespace team-a", "ConfigMap team-a/settings"]
    api.clear_log()
    failed, again = run(api, objects=OBJECTS + [WIDGET], unserved="skip")
    assert not failed and again["changed"] is False and again["left_out"] == ["Widget team-a/w"]
    assert api.writes() == []
    failed, removed = run(api, objects=OBJECTS + [WIDGET], state="absent")
    assert not failed and removed["removed"] == ["configmap-team-a-settings.yaml", "namespace-team-a.yaml"]


def test_a_bad_unserved_choice_names_the_option():
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests
    with pytest.raises(ParamError) as err:
        manifests.run({"objects": OBJECTS, "unserved": "ignore"}, kube_factory=None)
    assert "unserved" in str(err.value) and "fail or skip" in str(err.value)


def test_missing_skip_patches_only_objects_that_exist(api):
    # someone else's object (an operator's): created outside this module, so its fields are not ours
    api.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    api.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
                      "data": {"gpus": "8"}})
    patch = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
             "data": {"extra": "1"}}
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "namespace": "team-a"},
             "data": {"extra": "1"}}
    api.clear_log()
    failed, result = run(api, objects=[patch, ghost], missing="skip")
    assert not failed, result.get("msg")
    assert result["changed_objects"] == ["ConfigMap team-a/settings"] and result["left_out"] == ["ConfigMap team-a/ghost"]
    assert api.store.get("v1", "ConfigMap", "ghost", "team-a") is None, "a partial object is never created"
    assert api.store.get("v1", "ConfigMap", "settings", "team-a")["data"] == {"gpus": "8", "extra": "1"}
    api.clear_log()
    failed, again = run(api, objects=[patch, ghost], missing="skip")
    assert not failed and again["changed"] is False and api.writes() == []


def test_a_secrets_data_never_reaches_the_diff_but_a_change_is_named(api):
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
    creds = [{"name": "ngc", "registry": "nvcr.io", "username": "$oauthtoken", "password": "s3cr3t-token"}]
    secrets = gpu_operator.pull_secrets(creds, "team-a")
    failed, first = run(api, diff=True, objects=[OBJECTS[0]] + secrets)
    assert not failed, first.get("msg")
    stored = api.store.get("v1", "Secret", "ngc", "team-a")
    assert stored["type"] == "kubernetes.io/dockerconfigjson"
    assert stored["data"][".dockerconfigjson"] == secrets[0]["data"][".dockerconfigjson"]
    text = repr(first)
    assert secrets[0]["data"][".dockerconfigjson"] not in text and "s3cr3t" not in text
    assert "(hidden: Secret data, changed)" in first["diff"][1]["after"]
    rotated = gpu_operator.pull_secrets([dict(creds[0], password="n3w-token")], "team-a")
    failed, second = run(api, diff=True, check_mode=True, objects=rotated)
    assert not failed and second["changed_objects"] == ["Secret team-a/ngc"]
    assert "(hidden: Secret data, changed)" in second["diff"][0]["after"]
    assert secrets[0]["data"][".dockerconfigjson"] not in repr(second)
    assert rotated[0]["data"][".dockerconfigjson"] not in repr(second)
