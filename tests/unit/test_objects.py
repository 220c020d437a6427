"""Comparing objects as the server returns them."""
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import objects

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
