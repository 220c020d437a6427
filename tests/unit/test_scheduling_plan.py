"""Tests of the scheduling domain's plans: good input that looks odd, the shape of a realistic plan,
borrowing ceilings, order and purity."""
import copy
import json

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling import (
    queues as scheduling, flavors as scheduling_flavors, teams as scheduling_teams)
from tests.unit.scheduling_helpers import A100, H100, PROD, RESEARCH, SPEC, by_kind, changed, spec_with


# ---------------------------------------------------------------- good input that looks odd

def test_quoted_whole_numbers_are_taken_as_numbers():
    """Jinja renders "{{ n }}" as text in older Ansible: " 4 " must mean 4, emitted as Kubernetes writes a
    Quantity ("4", as Kueue's controller writes the ClusterQueue back)."""
    got = scheduling.plan(spec_with(teams=[changed(RESEARCH, quota={"h100": "8", "a100": " 4 "})]), "none")
    assert got["resources"]["research"] == {"h100": 8, "a100": 4}
    (queue,) = [o for o in got["objects"] if o["kind"] == "ClusterQueue"]
    assert [f["resources"][0]["nominalQuota"] for f in queue["spec"]["resourceGroups"][0]["flavors"]] == ["8", "4"]


def test_zero_quota_is_allowed_when_the_team_can_borrow():
    team = {"name": "scavenger", "namespaces": ["batch"], "quota": {"h100": 0}}
    got = scheduling.plan(spec_with(teams=[PROD, team]), "volcano")
    assert got["resources"]["scavenger"] == {"h100": 0}
    (queue,) = [o for o in by_kind(got, "Queue") if o["metadata"]["name"] == "scavenger"]
    assert queue["spec"]["capability"] == {"nvidia.com/gpu": "16"}  # all of prod's idle H100s


def test_empty_spec_plans_nothing():
    for scheduler in scheduling.SCHEDULERS:
        got = scheduling.plan({}, scheduler)
        assert got["objects"] == [] and got["resources"] == {}
    assert scheduling.plan(None, "kai")["objects"] == []


def test_flavors_without_teams_give_only_resource_flavors_and_a_warning():
    got = scheduling.plan({"flavors": [H100]}, "volcano")
    assert [o["kind"] for o in got["objects"]] == ["ResourceFlavor"]
    assert any("warning: no team has quota in it" in line for line in got["summary"])


def test_team_cohort_overrides_the_global_one():
    teams = [RESEARCH, changed(PROD, cohort="prod-only")]
    got = scheduling.plan(spec_with(teams=teams), "none")
    cohorts = {o["metadata"]["name"]: o["spec"].get("cohortName") for o in by_kind(got, "ClusterQueue")}
    assert cohorts == {"research": "gpu-shared", "prod": "prod-only"}


def test_team_cohort_allows_borrowing_without_a_global_cohort():
    teams = [changed(RESEARCH, cohort="pair"), changed(PROD, cohort="pair")]
    got = scheduling.plan(spec_with(teams=teams, cohort=None), "none")
    assert {o["spec"]["cohortName"] for o in by_kind(got, "ClusterQueue")} == {"pair"}


def test_without_cohort_no_borrowing_fields_at_all():
    teams = [{"name": "a", "namespaces": ["a"], "quota": {"h100": 4}},
             {"name": "b", "namespaces": ["b"], "quota": {"a100": 2}}]
    got = scheduling.plan(spec_with(teams=teams, cohort=None), "volcano")
    for queue in by_kind(got, "ClusterQueue"):
        assert "cohortName" not in queue["spec"] and "preemption" not in queue["spec"]
        resource = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        assert set(resource) == {"name", "nominalQuota"}
    capability = {q["metadata"]["name"]: q["spec"]["capability"] for q in by_kind(got, "Queue")}
    assert capability == {"a": {"nvidia.com/gpu": "4"}, "b": {"nvidia.com/gpu": "2"}}
    assert any("no cohort: never borrows or lends" in line for line in got["summary"])


# ---------------------------------------------------------------- a realistic plan

def test_two_teams_two_flavors_with_cohort_and_borrowing():
    got = scheduling.plan(SPEC, "volcano")
    assert sorted(got) == ["objects", "resources", "summary"]
    assert got["resources"] == {"research": {"h100": 8, "a100": 4}, "prod": {"h100": 16, "a100": 0}}
    assert list(got["resources"]["research"]) == ["h100", "a100"]
    kinds = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
             for o in got["objects"]]
    assert kinds == [
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor", None, "h100"),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor", None, "a100"),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", None, "research"),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", None, "prod"),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", "ml-research", "gpu"),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", "ml-eval", "gpu"),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", "inference", "gpu"),
        ("scheduling.volcano.sh/v1beta1", "Queue", None, "research"),
        ("scheduling.volcano.sh/v1beta1", "Queue", None, "prod"),
    ]
    for obj in got["objects"]:
        assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu_platform.cluster"}

    h100, a100 = by_kind(got, "ResourceFlavor")
    assert h100["spec"] == {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    assert a100["spec"] == {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "pool": "a100"}}

    research, prod = by_kind(got, "ClusterQueue")
    assert research["spec"] == {
        "cohortName": "gpu-shared",
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-research", "ml-eval"]}]},
        "preemption": {"reclaimWithinCohort": "Any"},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4"}]},
            {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4", "lendingLimit": "2"}]},
        ]}],
    }
    assert prod["spec"]["cohortName"] == "gpu-shared"
    assert prod["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["inference"]
    assert prod["spec"]["resourceGroups"][0]["flavors"] == [
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]},
        {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "0"}]},
    ]
    assert [q["spec"] for q in by_kind(got, "LocalQueue")] == [
        {"clusterQueue": "research"}, {"clusterQueue": "research"}, {"clusterQueue": "prod"}]

    volcano = {q["metadata"]["name"]: q["spec"] for q in by_kind(got, "Queue")}
    # research: 8+4 own; borrows at most 4 H100 (prod lends all 16) and no A100 (prod has 0 A100)
    # prod: 16 own; borrows all 8 of research's H100 and the 2 A100 research lends
    assert volcano == {"research": {"capability": {"nvidia.com/gpu": "16"}, "reclaimable": True},
                       "prod": {"capability": {"nvidia.com/gpu": "26"}, "reclaimable": True}}


def test_kai_queues_carry_the_gpu_quota_and_unlimited_cpu_memory():
    got = scheduling.plan(SPEC, "kai")
    queues = by_kind(got, "Queue", "scheduling.run.ai/v2")
    assert [q["metadata"]["name"] for q in queues] == [scheduling.KAI_PARENT_QUEUE, "research", "prod"]
    assert got["objects"][-3:] == queues  # after the Kueue objects
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    parent, research, prod = queues
    assert parent["spec"] == {"resources": {"gpu": {"quota": 28, "limit": -1, "overQuotaWeight": 1},
                                            "cpu": unlimited, "memory": unlimited}}
    assert research["spec"] == {"parentQueue": scheduling.KAI_PARENT_QUEUE, "resources": {
        "gpu": {"quota": 12, "limit": 16, "overQuotaWeight": 1}, "cpu": unlimited, "memory": unlimited}}
    assert prod["spec"]["resources"]["gpu"] == {"quota": 16, "limit": 26, "overQuotaWeight": 1}
    assert not by_kind(got, "Queue", "scheduling.volcano.sh/v1beta1")


def test_none_adds_no_scheduler_queue():
    got = scheduling.plan(SPEC, "none")
    assert {o["apiVersion"] for o in got["objects"]} == {"kueue.x-k8s.io/v1beta2"}
    assert len(got["objects"]) == 7
    assert any("scheduler none" in line for line in got["summary"])


def test_local_queue_name_is_used_everywhere():
    got = scheduling.plan(spec_with(local_queue_name="team-gpus"), "none")
    assert {q["metadata"]["name"] for q in by_kind(got, "LocalQueue")} == {"team-gpus"}
    assert any("kueue.x-k8s.io/queue-name: team-gpus" in line for line in got["summary"])


@pytest.mark.parametrize("teams, expected", [
    # alone in its cohort: the quota is the ceiling
    ([{"name": "a", "namespaces": ["a"], "quota": {"h100": 4}, "cohort": None}], {"a": 4}),
    # lenders lend everything unless lending_limit says otherwise; borrowing_limit caps the borrower
    ([{"name": "a", "namespaces": ["a"], "quota": {"h100": 4}, "borrowing_limit": {"h100": 1}},
      {"name": "b", "namespaces": ["b"], "quota": {"h100": 6}, "lending_limit": {"h100": 3}}], {"a": 5, "b": 10}),
    ([{"name": "a", "namespaces": ["a"], "quota": {"h100": 4}},
      {"name": "b", "namespaces": ["b"], "quota": {"h100": 6}, "lending_limit": {"h100": 3}}], {"a": 7, "b": 10}),
    # other cohorts and other flavors do not count
    ([{"name": "a", "namespaces": ["a"], "quota": {"h100": 4}},
      {"name": "b", "namespaces": ["b"], "quota": {"h100": 6}, "cohort": "elsewhere"},
      {"name": "c", "namespaces": ["c"], "quota": {"a100": 6}}], {"a": 4, "b": 6, "c": 6}),
])
def test_gpu_ceilings(teams, expected):
    flavors = scheduling_flavors.validate_flavors([H100, A100])
    validated = scheduling_teams.validate_teams(teams, flavors, "shared")
    assert scheduling_teams.gpu_ceilings(validated) == expected


def test_summary_tells_the_operator_what_happens():
    text = "\n".join(scheduling.plan(SPEC, "volcano")["summary"])
    assert "ClusterQueue research: 12 GPUs (h100 8, a100 4)" in text
    assert "borrows h100 up to 4, a100 without limit" in text
    assert "lends at most a100 2" in text
    assert "LocalQueue gpu in ml-research, ml-eval -> ClusterQueue research" in text
    assert "Volcano Queue prod: capability 26 nvidia.com/gpu" in text
    assert "scheduling.volcano.sh/queue-name: prod" in text
    kai = "\n".join(scheduling.plan(SPEC, "kai")["summary"])
    assert "KAI Queue research: GPU quota 12, limit 16" in kai and "kai.scheduler/queue: research" in kai


# ---------------------------------------------------------------- order and purity

def test_output_is_deterministic():
    first = json.dumps(scheduling.plan(SPEC, "kai"))
    for dummy in range(3):
        assert json.dumps(scheduling.plan(copy.deepcopy(SPEC), "kai")) == first


def test_order_follows_the_inventory_not_the_dict_order_of_the_quota():
    """Kueue tries a queue's flavors in list order: scheduling_flavors decides it, for every team."""
    team = changed(RESEARCH, quota={"a100": 4, "h100": 8})
    got = scheduling.plan(spec_with(teams=[team, PROD]), "none")
    research = by_kind(got, "ClusterQueue")[0]
    assert [f["name"] for f in research["spec"]["resourceGroups"][0]["flavors"]] == ["h100", "a100"]
    swapped = scheduling.plan(spec_with(flavors=[A100, H100], teams=[PROD, RESEARCH]), "volcano")
    assert [o["metadata"]["name"] for o in swapped["objects"] if o["kind"] != "LocalQueue"] == [
        "a100", "h100", "prod", "research", "prod", "research"]
    assert [f["name"] for f in by_kind(swapped, "ClusterQueue")[1]["spec"]["resourceGroups"][0]["flavors"]] == [
        "a100", "h100"]


def test_input_is_not_modified_and_output_shares_nothing_with_it():
    spec = copy.deepcopy(SPEC)
    before = copy.deepcopy(spec)
    got = scheduling.plan(spec, "volcano")
    assert spec == before
    got["objects"][0]["spec"]["tolerations"][0]["key"] = "changed"
    got["objects"][2]["spec"]["namespaceSelector"]["matchExpressions"][0]["values"].append("changed")
    got["resources"]["research"]["h100"] = 99
    assert spec == before
    assert scheduling.plan(spec, "volcano")["resources"]["research"]["h100"] == 8


def test_objects_are_plain_json():
    got = scheduling.plan(SPEC, "kai")
    assert json.loads(json.dumps(got)) == got
