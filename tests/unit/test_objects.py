"""Comparing objects as the server returns them."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

LIVE = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}, "status": {"x": 1},
        "metadata": {"name": "c", "namespace": "n", "uid": "u1", "resourceVersion": "7", "generation": 2,
                     "creationTimestamp": "t", "managedFields": [{}], "labels": {"l": "v"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}


def test_server_fields_and_status_do_not_count():
    proposed = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
                "metadata": {"name": "c", "namespace": "n", "uid": "u1", "resourceVersion": "8", "labels": {"l": "v"}}}
    assert not objects.differs(LIVE, proposed)


def test_real_changes_count():
    assert objects.differs(LIVE, dict(LIVE, data={"a": "2"}))
    assert objects.differs(None, LIVE)
    changed_labels = dict(LIVE, metadata=dict(LIVE["metadata"], labels={"l": "w"}))
    assert objects.differs(LIVE, changed_labels)


def test_comparable_does_not_mutate_and_identity():
    objects.comparable(LIVE)
    assert LIVE["metadata"]["uid"] == "u1"
    assert objects.identity(LIVE) == "ConfigMap n/c"
    assert objects.identity({"kind": "Namespace", "metadata": {"name": "x"}}) == "Namespace x"


def test_namespaces_with_and_without_labels():
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    out = objects.namespaces(["vision", "nlp"], labels)
    assert out == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": labels}}
                   for n in ("vision", "nlp")]
    assert out[0]["metadata"]["labels"] is not labels and out[0]["metadata"]["labels"] is not out[1]["metadata"]["labels"]
    assert objects.namespaces(["a"], {}) == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}]
    assert objects.namespaces(None) == [] and objects.namespaces([]) == []


@pytest.mark.parametrize("names, field", [(["ok", "Not_OK"], "namespaces[1]"), ([""], "namespaces[0]"),
                                          ([None], "namespaces[0]"), (["x" * 64], "namespaces[0]")])
def test_a_bad_namespace_name_names_its_entry(names, field):
    with pytest.raises(ParamError) as err:
        objects.namespaces(names)
    assert err.value.field == field
