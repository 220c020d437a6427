"""Table-driven tests of the scheduling domain's spec validation: every bad input names its role variable,
the problem and the fix."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling import queues as scheduling
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.unit.scheduling_helpers import A100, H100, PROD, RESEARCH, SPEC, changed, spec_with


# ---------------------------------------------------------------- bad input

BAD = [
    # (spec, scheduler, field, words in the message)
    (SPEC, "slurm", "gpu_platform_scheduler", "'slurm' is not a scheduler"),
    (SPEC, None, "gpu_platform_scheduler", "use one of volcano, kai, none"),
    (SPEC, "Volcano", "gpu_platform_scheduler", "is not a scheduler"),
    ("teams", "none", "scheduling", "must be a dictionary"),
    (spec_with(queues=[]), "none", "queues", "is not a scheduling setting"),
    # global settings
    (spec_with(cohort="Shared"), "none", "scheduling_cohort", "is not a valid name"),
    (spec_with(cohort=""), "none", "scheduling_cohort", "is an empty string"),
    (spec_with(local_queue_name="GPU queue"), "none", "scheduling_local_queue_name", "is not a valid name"),
    (spec_with(local_queue_name=""), "none", "scheduling_local_queue_name", "is empty"),
    # flavors
    (spec_with(flavors={"h100": "NVIDIA-H100"}), "none", "scheduling_flavors", "must be a list"),
    (spec_with(flavors=["h100"]), "none", "scheduling_flavors[0]", "is not a flavor"),
    (spec_with(flavors=[changed(H100, product="x")]), "none", "scheduling_flavors[0]", "unknown key(s) product"),
    (spec_with(flavors=[changed(H100, name="H100")]), "none", "scheduling_flavors[0].name", "is not a valid name"),
    (spec_with(flavors=[changed(H100, name="h_100")]), "none", "scheduling_flavors[0].name", "is not a valid name"),
    (spec_with(flavors=[changed(H100, name=None)]), "none", "scheduling_flavors[0].name", "is empty"),
    (spec_with(flavors=[H100, changed(A100, name="h100")]), "none", "scheduling_flavors[1].name",
     "'h100' is also the name of scheduling_flavors[0]"),
    (spec_with(flavors=[H100, changed(A100, gpu_product="")]), "none", "scheduling_flavors[1].gpu_product",
     "is empty"),
    (spec_with(flavors=[changed(H100, gpu_product=None)]), "none", "scheduling_flavors[0].gpu_product", "is empty"),
    (spec_with(flavors=[changed(H100, gpu_product="NVIDIA H100")]), "none", "scheduling_flavors[0].gpu_product",
     "not a valid label value"),
    (spec_with(flavors=[changed(H100, node_labels={"pool": 1})]), "none", "scheduling_flavors[0].node_labels",
     "not a string"),
    (spec_with(flavors=[changed(H100, node_labels={"nvidia.com/gpu.product": "x"})]), "none",
     "scheduling_flavors[0].node_labels", "gpu_product already sets"),
    (spec_with(flavors=[H100, changed(A100, gpu_product=H100["gpu_product"], node_labels={})]), "none",
     "scheduling_flavors[1]", "selects the same nodes as scheduling_flavors[0]"),
    (spec_with(flavors=[changed(H100, tolerations={"key": "x"})]), "none", "scheduling_flavors[0].tolerations",
     "must be a list"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "operator": "Exists"}] * 9)]), "none",
     "scheduling_flavors[0].tolerations", "at most 8"),
    (spec_with(flavors=[changed(H100, tolerations=["nvidia.com/gpu"])]), "none",
     "scheduling_flavors[0].tolerations[0]", "is not a toleration"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "operator": "Exists", "effects": "x"}])]), "none",
     "scheduling_flavors[0].tolerations[0]", "unknown key(s) effects"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "operator": "In"}])]), "none",
     "scheduling_flavors[0].tolerations[0].operator", "'In' is not a toleration operator"),
    (spec_with(flavors=[changed(H100, tolerations=[{"effect": "NoSchedule"}])]), "none",
     "scheduling_flavors[0].tolerations[0]", "must use operator Exists"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])]), "none",
     "scheduling_flavors[0].tolerations[0].value", "a value is not allowed"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "effect": "NoExec"}])]), "none",
     "scheduling_flavors[0].tolerations[0].effect", "'NoExec' is not a taint effect"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 60}])]),
     "none", "scheduling_flavors[0].tolerations[0].tolerationSeconds", "only to effect NoExecute"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "k", "effect": "NoExecute", "tolerationSeconds": "60"}])]),
     "none", "scheduling_flavors[0].tolerations[0].tolerationSeconds", "not a whole number of seconds"),
    (spec_with(flavors=[changed(H100, tolerations=[{"key": "bad key", "operator": "Exists"}])]), "none",
     "scheduling_flavors[0].tolerations[0].key", "not a valid Kubernetes label name"),
    # teams: shape
    (spec_with(teams={"research": {}}), "none", "gpu_platform_teams", "must be a list"),
    (spec_with(teams=["research"]), "none", "gpu_platform_teams[0]", "is not a team"),
    (spec_with(teams=[changed(RESEARCH, borrow_limit={"h100": 1})]), "none", "gpu_platform_teams[0]",
     "unknown key(s) borrow_limit"),
    (spec_with(teams=[changed(RESEARCH, name="Research")]), "none", "gpu_platform_teams[0].name", "is not a valid name"),
    (spec_with(teams=[changed(RESEARCH, name="r" * 64)]), "none", "gpu_platform_teams[0].name", "at most 63"),
    (spec_with(teams=[RESEARCH, changed(PROD, name="research")]), "none", "gpu_platform_teams[1].name",
     "'research' is also the name of gpu_platform_teams[0]"),
    # teams: namespaces
    (spec_with(teams=[changed(RESEARCH, namespaces=[])]), "none", "gpu_platform_teams[0].namespaces",
     "is required and empty"),
    (spec_with(teams=[changed(RESEARCH, namespaces=None)]), "none", "gpu_platform_teams[0].namespaces",
     "is required and empty"),
    (spec_with(teams=[changed(RESEARCH, namespaces="ml-research")]), "none", "gpu_platform_teams[0].namespaces",
     "must be a list of namespace names"),
    (spec_with(teams=[changed(RESEARCH, namespaces=["ml-research", "ML_eval"])]), "none",
     "gpu_platform_teams[0].namespaces[1]", "is not a valid name"),
    (spec_with(teams=[changed(RESEARCH, namespaces=["a", "b", "a"])]), "none", "gpu_platform_teams[0].namespaces[2]",
     "listed twice"),
    (spec_with(teams=[RESEARCH, changed(PROD, namespaces=["inference", "ml-eval"])]), "none",
     "gpu_platform_teams[1].namespaces[1]", "'ml-eval' is also a namespace of team research (gpu_platform_teams[0])"),
    # teams: quota
    (spec_with(teams=[RESEARCH, changed(PROD, quota={"h100": "eight"})]), "none", "gpu_platform_teams[1].quota.h100",
     "'eight' is not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": True})]), "none", "gpu_platform_teams[0].quota.h100",
     "True is not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": False})]), "none", "gpu_platform_teams[0].quota.h100",
     "not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": -2})]), "none", "gpu_platform_teams[0].quota.h100",
     "-2 is negative"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": "-2"})]), "none", "gpu_platform_teams[0].quota.h100",
     "-2 is negative"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": 1.5})]), "none", "gpu_platform_teams[0].quota.h100",
     "not a whole number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": None})]), "none", "gpu_platform_teams[0].quota.h100",
     "None is not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": "8Gi"})]), "none", "gpu_platform_teams[0].quota.h100",
     "not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, quota={"b200": 8})]), "none", "gpu_platform_teams[0].quota.b200",
     "names no flavor in scheduling_flavors (it has: h100, a100)"),
    (spec_with(teams=[changed(RESEARCH, quota={})]), "none", "gpu_platform_teams[0].quota", "quota in no flavor"),
    (spec_with(teams=[changed(RESEARCH, quota=None)]), "none", "gpu_platform_teams[0].quota", "quota in no flavor"),
    (spec_with(teams=[changed(RESEARCH, quota=8)]), "none", "gpu_platform_teams[0].quota",
     "must map flavor names to GPUs"),
    (spec_with(flavors=[], teams=[RESEARCH]), "none", "gpu_platform_teams[0].quota.h100",
     "names no flavor in scheduling_flavors (it has: none)"),
    # teams: all zero, with nothing to borrow
    (spec_with(teams=[changed(PROD, quota={"h100": 0})], cohort=None), "none", "gpu_platform_teams[0].quota",
     "quota in no flavor (0 GPUs everywhere)"),
    (spec_with(teams=[changed(RESEARCH, quota={"a100": 0}, borrowing_limit={}, lending_limit={}), PROD]), "none",
     "gpu_platform_teams[0].quota", "nothing it could borrow"),
    # teams: borrowing and lending
    (spec_with(teams=[RESEARCH], cohort=None), "none", "gpu_platform_teams[0].borrowing_limit",
     "the team is in no cohort, so there is no team to borrow from"),
    (spec_with(teams=[changed(RESEARCH, borrowing_limit={})], cohort=None), "none",
     "gpu_platform_teams[0].lending_limit", "Kueue refuses lendingLimit without spec.cohortName"),
    (spec_with(teams=[changed(RESEARCH, borrowing_limit={"b200": 1})]), "none",
     "gpu_platform_teams[0].borrowing_limit.b200", "names no flavor in scheduling_flavors (it has: h100, a100)"),
    (spec_with(teams=[changed(RESEARCH, lending_limit={"b200": 1})]), "none",
     "gpu_platform_teams[0].lending_limit.b200", "names no flavor in scheduling_flavors"),
    (spec_with(teams=[changed(RESEARCH, quota={"h100": 8}, lending_limit={"a100": 1})]), "none",
     "gpu_platform_teams[0].lending_limit.a100", "the team has no quota in flavor 'a100'"),
    (spec_with(teams=[changed(RESEARCH, lending_limit={"a100": 5})]), "none", "gpu_platform_teams[0].lending_limit.a100",
     "5 is more than the team's quota of 4"),
    (spec_with(teams=[changed(RESEARCH, borrowing_limit={"h100": "lots"})]), "none",
     "gpu_platform_teams[0].borrowing_limit.h100", "'lots' is not a number of GPUs"),
    (spec_with(teams=[changed(RESEARCH, borrowing_limit={"h100": -1})]), "none",
     "gpu_platform_teams[0].borrowing_limit.h100", "-1 is negative"),
    (spec_with(teams=[changed(RESEARCH, borrowing_limit=[4])]), "none", "gpu_platform_teams[0].borrowing_limit",
     "must map flavor names to GPUs"),
    (spec_with(teams=[changed(RESEARCH, cohort="Gpu")]), "none", "gpu_platform_teams[0].cohort", "is not a valid name"),
    # names the scheduler itself owns
    (spec_with(teams=[changed(RESEARCH, name="default")]), "volcano", "gpu_platform_teams[0].name",
     "a queue Volcano creates"),
    (spec_with(teams=[changed(RESEARCH, name="root")]), "volcano", "gpu_platform_teams[0].name",
     "a queue Volcano creates"),
    (spec_with(teams=[changed(RESEARCH, name=scheduling.KAI_PARENT_QUEUE)]), "kai", "gpu_platform_teams[0].name",
     "parent KAI queue"),
]


def bad_case_id(case):
    return "%s-%s" % (case[2], case[3][:30])


@pytest.mark.parametrize("spec, scheduler, field, words", BAD, ids=[bad_case_id(c) for c in BAD])
def test_bad_input_names_the_field_and_the_fix(spec, scheduler, field, words):
    with pytest.raises(ParamError) as info:
        scheduling.plan(spec, scheduler)
    err = info.value
    assert err.field == field
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    fix = str(err).split(". Fix: ", 1)
    assert len(fix) == 2 and fix[1].strip()


@pytest.mark.parametrize("field, words, fix", [
    ("gpu_platform_teams[1].quota.h100", "eight", "give a whole number such as 8"),
    ("gpu_platform_teams[0].borrowing_limit", "no cohort",
     "set scheduling_cohort (or this team's cohort), or remove borrowing_limit"),
    ("gpu_platform_teams[0].name", "Research", "use lower-case letters, digits and '-', e.g. research"),
    ("scheduling_flavors[0].name", "H100", "use lower-case letters, digits and '-', e.g. h100"),
    ("gpu_platform_teams[0].namespaces[1]", "ML_eval", "use lower-case letters, digits and '-', e.g. ml-research"),
    ("scheduling_cohort", "Shared", "use lower-case letters, digits and '-', e.g. gpu-shared"),
    ("gpu_platform_teams[0].lending_limit.a100", "5 is more", "give at most 4"),
    ("gpu_platform_teams[0].lending_limit.a100", "no quota", "add gpu_platform_teams[0].quota.a100 (0 to only borrow), "
     "or remove this limit"),
])
def test_fixes_say_what_to_do(field, words, fix):
    messages = []
    for spec, scheduler, case_field, dummy in BAD:
        if case_field == field:
            with pytest.raises(ParamError) as info:
                scheduling.plan(spec, scheduler)
            messages.append(str(info.value))
    (message,) = [m for m in messages if words in m.split(". Fix: ")[0]]
    assert message.endswith("Fix: " + fix)


def test_unknown_flavor_fix_offers_both_ways_out():
    with pytest.raises(ParamError) as info:
        scheduling.plan(spec_with(teams=[changed(RESEARCH, quota={"b200": 8})]), "none")
    assert "use one of those names, or add a flavor 'b200' to scheduling_flavors" in str(info.value)


def test_same_names_are_fine_for_other_schedulers():
    """default/root are only Volcano's; the KAI parent name only KAI's."""
    team = changed(RESEARCH, name="default")
    for scheduler in ("none", "kai"):
        assert "default" in scheduling.plan(spec_with(teams=[team, PROD]), scheduler)["resources"]
    team = changed(RESEARCH, name=scheduling.KAI_PARENT_QUEUE)
    assert scheduling.KAI_PARENT_QUEUE in scheduling.plan(spec_with(teams=[team, PROD]), "volcano")["resources"]
