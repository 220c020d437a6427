"""domain/node_maintenance: options, the kubectl-drain pod rules, the plan and its messages."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_maintenance as nm
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


def pod(name, namespace="team-a", owner="ReplicaSet", labels=None, phase="Running", emptydir=False,
        annotations=None, deleting=None, finalizers=None):
    meta = {"name": name, "namespace": namespace, "labels": labels or {}, "uid": "uid-" + name}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": owner.lower() + "-1",
                                    "uid": "u", "controller": True}]
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = deleting
    if finalizers:
        meta["finalizers"] = finalizers
    spec = {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "x:1"}]}
    if emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def node(unschedulable=None):
    spec = {} if unschedulable is None else {"unschedulable": unschedulable}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}, "spec": spec}


def opts(**over):
    return nm.options(dict({"name": "gpu-1", "state": "drained"}, **over))


# -- options -------------------------------------------------------------------------------------

def test_defaults():
    got = nm.options({"name": "gpu-1"})
    assert (got.state, got.delete_emptydir_data, got.force, got.selector, got.timeout) == (
        "drained", False, False, (), 300)


@pytest.mark.parametrize("params, start", [
    ({"name": ""}, "name: is required and empty"),
    ({"name": None}, "name: is required and empty"),
    ({"name": "GPU_1"}, "name: 'GPU_1' is not a valid node name"),
    ({"name": "a" * 254}, "name: 'aaaa"),
    ({"name": "gpu-1", "state": "drain"}, "state: 'drain' is not a maintenance state"),
    ({"name": "gpu-1", "force": "yes"}, "force: 'yes' is not a boolean"),
    ({"name": "gpu-1", "delete_emptydir_data": 1}, "delete_emptydir_data: 1 is not a boolean"),
    ({"name": "gpu-1", "wait_timeout": "forever"}, "wait_timeout: 'forever' is not a duration"),
    ({"name": "gpu-1", "wait_timeout": 0}, "wait_timeout: must be greater than zero"),
    ({"name": "gpu-1", "pod_selector": "app=a,,b"}, "pod_selector: 'app=a,,b' has an empty term"),
    ({"name": "gpu-1", "pod_selector": "app in ()"}, "pod_selector: 'app in ()' lists no values"),
    ({"name": "gpu-1", "pod_selector": "app=a b"}, "pod_selector: cannot parse 'app=a b'"),
    ({"name": "gpu-1", "pod_selector": "app=" + "x" * 64}, "pod_selector: 'xxx"),
    ({"name": "gpu-1", "pod_selector": "-bad-=x"}, "pod_selector: label key '-bad-'"),
    ({"name": "gpu-1", "pod_selector": ["app=a"]}, "pod_selector: must be a label selector string"),
])
def test_bad_options_name_the_field_and_the_fix(params, start):
    with pytest.raises(ParamError) as err:
        nm.options(params)
    assert err.value.msg.startswith(start), err.value.msg
    assert "Fix:" in err.value.msg


@pytest.mark.parametrize("selector, labels, matches", [
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "web"}, True),
    ("app=web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("app in (web, db)", {"app": "db"}, True),
    ("app in (web,db)", {}, False),
    ("app notin (web,db)", {"app": "x"}, True),
    ("app notin(web,db)", {"app": "web"}, False),
    ("app notin (web,db)", {"app": "web"}, False),
    ("gpu-platform.io/workload", {"gpu-platform.io/workload": ""}, True),
    ("!gpu-platform.io/workload", {"gpu-platform.io/workload": "a"}, False),
    ("app=web,tier in (a,b),!skip", {"app": "web", "tier": "b"}, True),
    ("app=web,tier in (a,b),!skip", {"app": "web", "tier": "b", "skip": "1"}, False),
])
def test_selector(selector, labels, matches):
    assert validate.selector_matches(validate.parse_selector("pod_selector", selector), labels) is matches


# -- pod rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("the_pod, action, words", [
    (pod("web"), "evict", None),
    (pod("ds", owner="DaemonSet"), "skip", "DaemonSet-managed (DaemonSet daemonset-1)"),
    (pod("static", owner=None, annotations={nm.MIRROR_ANNOTATION: "abc"}, emptydir=True), "skip", "mirror pod"),
    (pod("done", owner=None, phase="Succeeded", emptydir=True), "skip", "already finished (Succeeded)"),
    (pod("bad", phase="Failed"), "skip", "already finished (Failed)"),
    (pod("going", deleting="2026-01-01T00:00:00Z"), "wait", "already terminating since 2026-01-01T00:00:00Z"),
    (pod("job", owner="Job", phase="Pending"), "evict", None),
])
def test_decide(the_pod, action, words):
    got, detail = nm.decide(the_pod, opts())
    assert got == action
    if words:
        assert words in detail


def test_emptydir_and_unmanaged_are_refused_with_their_options():
    action, detail = nm.decide(pod("lonely", owner=None, emptydir=True), opts())
    assert action == "block"
    assert [option for dummy, option in detail] == ["delete_emptydir_data", "force"]
    assert "emptyDir volumes (scratch)" in detail[0][0]
    assert nm.decide(pod("lonely", owner=None, emptydir=True), opts(delete_emptydir_data=True, force=True)) == (
        "evict", None)
    assert nm.decide(pod("lonely", owner=None), opts(force=True)) == ("evict", None)
    assert nm.decide(pod("cache", emptydir=True), opts(delete_emptydir_data=True)) == ("evict", None)


def test_a_controller_reference_must_say_controller():
    the_pod = pod("adopted")
    the_pod["metadata"]["ownerReferences"][0]["controller"] = False
    assert nm.decide(the_pod, opts())[0] == "block"


def test_pod_selector_narrows_the_drain():
    got = nm.decide(pod("other", labels={"app": "web"}, owner=None), opts(pod_selector="app=trainer"))
    assert got == ("skip", "does not match pod_selector app=trainer")
    assert nm.decide(pod("t", labels={"app": "trainer"}), opts(pod_selector="app=trainer")) == ("evict", None)


# -- plan ----------------------------------------------------------------------------------------

def test_plan_of_a_drain():
    pods = [pod("web"), pod("ds", owner="DaemonSet"), pod("done", phase="Succeeded"),
            pod("going", deleting="2026-01-01T00:00:00Z"), pod("a-db", namespace="team-b")]
    got = nm.plan(node(), pods, opts())
    assert got.cordon and not got.uncordon and got.changes
    assert got.evict == ["team-a/web", "team-b/a-db"]
    assert [s["pod"] for s in got.skip] == ["team-a/done", "team-a/ds"]
    assert got.terminating == ["team-a/going"] and got.blocking == []
    assert got.pods == sorted(nm.pod_id(p) for p in pods)
    as_dict = got.as_dict()
    assert as_dict["cordon"] is True and as_dict["unschedulable_before"] is False


def test_cordoned_node_with_nothing_to_evict_changes_nothing():
    got = nm.plan(node(True), [pod("ds", owner="DaemonSet"), pod("going", deleting="t")], opts())
    assert not got.changes and got.terminating == ["team-a/going"]


@pytest.mark.parametrize("state, unschedulable, cordon, uncordon", [
    ("cordoned", None, True, False), ("cordoned", True, False, False),
    ("uncordoned", True, False, True), ("uncordoned", False, False, False), ("uncordoned", None, False, False),
])
def test_cordon_and_uncordon_plans(state, unschedulable, cordon, uncordon):
    got = nm.plan(node(unschedulable), [pod("lonely", owner=None, emptydir=True)], opts(state=state))
    assert (got.cordon, got.uncordon, got.changes) == (cordon, uncordon, cordon or uncordon)
    assert got.evict == [] and got.blocking == [], "only a drain looks at the pods"


def test_refusal_message_names_pods_options_and_fixes():
    pods = [pod("scratch", emptydir=True), pod("debug", owner=None), pod("both", owner=None, emptydir=True)]
    got = nm.plan(node(), pods, opts())
    assert [b["pod"] for b in got.blocking] == ["team-a/both", "team-a/both", "team-a/debug", "team-a/scratch"]
    msg = nm.refusal_message(got)
    assert msg.startswith("drain of node gpu-1 refused before any change (the node was not cordoned)")
    assert "delete_emptydir_data: pods with emptyDir volumes would lose that data: team-a/both, team-a/scratch. " \
           "Fix: set delete_emptydir_data: true" in msg
    assert "force: pods that no controller manages would not be recreated: team-a/both, team-a/debug. " \
           "Fix: set force: true" in msg


def test_describe_remaining():
    pods = {"team-a/web": pod("web"), "team-a/held": pod("held", deleting="2026-01-01T00:00:00Z",
                                                         finalizers=["example.com/hold"])}
    got = nm.describe_remaining(pods, {"team-a/web": "The disruption budget web-pdb needs 1 healthy pods"})
    assert got == ("team-a/held (terminating since 2026-01-01T00:00:00Z, finalizers: example.com/hold), "
                   "team-a/web (eviction refused: The disruption budget web-pdb needs 1 healthy pods)")
    assert nm.describe_remaining({"team-a/x": pod("x")}, {}) == "team-a/x (not deleted yet)"
