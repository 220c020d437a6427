"""Every object the scheduling domain plans is valid against the real upstream CRDs: Kueue v0.19.2
(ResourceFlavor, ClusterQueue, LocalQueue), Volcano v1.15.1 (Queue) and KAI-Scheduler v0.13.0 (Queue).

The CRDs are the upstream files in ../shared/upstream; a missing directory fails, never skips. The
CEL rules of the Kueue CRDs (which crdschema does not evaluate) are checked here by hand for the
rules our objects touch, and the rule texts are pinned so an upstream change shows up.
"""
from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.scheduling import queues as scheduling
from tests.schema import crdschema

H100 = {"name": "h100", "gpu_product": "NVIDIA-H100-80GB-HBM3",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
A100 = {"name": "a100", "gpu_product": "NVIDIA-A100-SXM4-80GB", "node_labels": {"pool": "a100", "zone": "z1"},
        "tolerations": [{"key": "pool", "operator": "Equal", "value": "a100", "effect": "NoExecute",
                         "tolerationSeconds": 300},
                        {"operator": "Exists"}]}
L40S = {"name": "l40s", "gpu_product": "NVIDIA-L40S"}

PLANS = {
    "cohort-borrowing": {
        "flavors": [H100, A100], "cohort": "gpu-shared",
        "teams": [{"name": "research", "namespaces": ["ml-research", "ml-eval"], "quota": {"h100": 8, "a100": 4},
                   "borrowing_limit": {"h100": 4}, "lending_limit": {"a100": 2}},
                  {"name": "prod", "namespaces": ["inference"], "quota": {"h100": 16, "a100": 0}}],
    },
    "no-cohort": {
        "flavors": [L40S], "local_queue_name": "l40s",
        "teams": [{"name": "solo", "namespaces": ["solo"], "quota": {"l40s": 2}},
                  {"name": "other", "namespaces": ["other-a", "other-b"], "quota": {"l40s": "3"}}],
    },
    "mixed-cohorts": {
        "flavors": [H100, A100, L40S],
        "teams": [{"name": "a", "namespaces": ["a"], "quota": {"h100": 0, "l40s": 1}, "cohort": "pair",
                   "borrowing_limit": {"h100": 0}},
                  {"name": "b", "namespaces": ["b"], "quota": {"h100": 4}, "cohort": "pair",
                   "lending_limit": {"h100": 4}},
                  {"name": "c", "namespaces": ["c"], "quota": {"a100": 8}}],
    },
    "flavors-only": {"flavors": [H100, A100, L40S]},
}
CASES = [(name, scheduler) for name in PLANS for scheduler in scheduling.SCHEDULERS]


def _plan(name, scheduler):
    return scheduling.plan(copy.deepcopy(PLANS[name]), scheduler)


@pytest.mark.parametrize("name, scheduler", CASES, ids=["%s-%s" % c for c in CASES])
def test_every_object_validates_against_the_upstream_crds(name, scheduler):
    objects = _plan(name, scheduler)["objects"]
    assert objects
    for obj in objects:
        crdschema.validate(obj)  # raises listing every failing path


def test_every_kind_and_version_is_covered():
    seen = set()
    for name, scheduler in CASES:
        seen.update((o["apiVersion"], o["kind"]) for o in _plan(name, scheduler)["objects"])
    assert seen == {("kueue.x-k8s.io/v1beta2", "ResourceFlavor"), ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
                    ("kueue.x-k8s.io/v1beta2", "LocalQueue"), ("scheduling.volcano.sh/v1beta1", "Queue"),
                    ("scheduling.run.ai/v2", "Queue")}


@pytest.mark.parametrize("scheduler", ["volcano", "kai"])
def test_objects_have_the_upstream_scope(scheduler):
    for obj in _plan("cohort-borrowing", scheduler)["objects"]:
        (version,) = crdschema.catalog().lookup(obj["apiVersion"], obj["kind"])
        assert ("namespace" in obj["metadata"]) is version.namespaced, obj["kind"]
        assert version.namespaced is (obj["kind"] == "LocalQueue")


# ---------------------------------------------------------------- the validator would catch our mistakes

def _cluster_queue(plan):
    return next(o for o in plan["objects"] if o["kind"] == "ClusterQueue")


def test_a_misspelt_quota_field_is_caught():
    queue = copy.deepcopy(_cluster_queue(_plan("cohort-borrowing", "none")))
    resource = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    resource["nominalQuotas"] = resource.pop("nominalQuota")
    errors = crdschema.crd_errors(queue)
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuotas: unknown field" in errors
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: required field is missing" in errors


def test_the_cohort_field_is_the_v1beta2_one():
    """v1beta2 renamed spec.cohort to spec.cohortName: our field is valid only in the version we emit."""
    queue = _cluster_queue(_plan("cohort-borrowing", "none"))
    assert queue["spec"]["cohortName"] == "gpu-shared" and "cohort" not in queue["spec"]
    crdschema.validate(queue)
    as_v1beta1 = dict(queue, apiVersion="kueue.x-k8s.io/v1beta1")
    assert "spec.cohortName: unknown field" in crdschema.crd_errors(as_v1beta1)
    old_spelling = copy.deepcopy(queue)
    old_spelling["spec"]["cohort"] = old_spelling["spec"].pop("cohortName")
    assert "spec.cohort: unknown field" in crdschema.crd_errors(old_spelling)


def test_kai_quotas_must_be_numbers_and_sit_under_resources():
    queue = next(o for o in _plan("cohort-borrowing", "kai")["objects"]
                 if o["apiVersion"] == "scheduling.run.ai/v2" and o["metadata"]["name"] == "research")
    for key in ("quota", "limit", "overQuotaWeight"):
        assert isinstance(queue["spec"]["resources"]["gpu"][key], int)
    as_text = copy.deepcopy(queue)
    as_text["spec"]["resources"]["gpu"]["quota"] = "12"
    assert any(e.startswith("spec.resources.gpu.quota:") for e in crdschema.crd_errors(as_text))
    flat = copy.deepcopy(queue)
    flat["spec"]["gpu"] = flat["spec"].pop("resources")["gpu"]
    assert "spec.gpu: unknown field" in crdschema.crd_errors(flat)
    kueue_style = copy.deepcopy(queue)
    kueue_style["spec"]["resources"]["nvidia.com/gpu"] = kueue_style["spec"]["resources"].pop("gpu")
    assert any("nvidia.com/gpu" in e and "unknown field" in e for e in crdschema.crd_errors(kueue_style))
    assert "apiVersion" in crdschema.crd_errors(dict(queue, apiVersion="scheduling.run.ai/v2alpha2"))[0]


def test_volcano_misspelt_capability_is_caught():
    queue = next(o for o in _plan("cohort-borrowing", "volcano")["objects"] if o["kind"] == "Queue")
    crdschema.validate(queue)
    wrong = copy.deepcopy(queue)
    wrong["spec"]["capabilities"] = wrong["spec"].pop("capability")
    assert "spec.capabilities: unknown field" in crdschema.crd_errors(wrong)


def test_a_bad_toleration_field_is_caught():
    flavor = next(o for o in _plan("cohort-borrowing", "none")["objects"] if o["kind"] == "ResourceFlavor")
    wrong = copy.deepcopy(flavor)
    wrong["spec"]["tolerations"][0]["tolerationseconds"] = 5
    assert "spec.tolerations[0].tolerationseconds: unknown field" in crdschema.crd_errors(wrong)


# ---------------------------------------------------------------- the CEL rules crdschema does not evaluate

def _crd(shared_dir, name):
    with open(os.path.join(shared_dir, "upstream", name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _schema(crd, version):
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def _rules(node):
    return [r["rule"] for r in node.get("x-kubernetes-validations", [])]


def test_cluster_queue_cel_rules_hold(shared_dir):
    spec = _schema(_crd(shared_dir, "kueue/clusterqueues.kueue.x-k8s.io.yaml"), "v1beta2")["properties"]["spec"]
    assert any("borrowingLimit must be nil" in v["message"] for v in spec["x-kubernetes-validations"])
    group = spec["properties"]["resourceGroups"]["items"]
    assert _rules(group) == ["self.flavors.all(x, size(x.resources) == size(self.coveredResources))"]
    for name, scheduler in CASES:
        for queue in (o for o in _plan(name, scheduler)["objects"] if o["kind"] == "ClusterQueue"):
            resources = [r for g in queue["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"]]
            if "cohortName" not in queue["spec"]:
                # the CRD rule for borrowingLimit, and Kueue's webhook for lendingLimit
                assert not any("borrowingLimit" in r or "lendingLimit" in r for r in resources), queue
            for r in resources:
                assert int(r.get("lendingLimit", 0)) <= int(r["nominalQuota"])  # Kueue's webhook
            for g in queue["spec"]["resourceGroups"]:
                assert all(len(f["resources"]) == len(g["coveredResources"]) for f in g["flavors"])


def test_resource_flavor_toleration_cel_rules_hold(shared_dir):
    spec = _schema(_crd(shared_dir, "kueue/resourceflavors.kueue.x-k8s.io.yaml"), "v1beta2")["properties"]["spec"]
    assert _rules(spec["properties"]["tolerations"]) == [
        "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
        "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
        "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
    ]
    checked = 0
    for name, scheduler in CASES:
        for flavor in (o for o in _plan(name, scheduler)["objects"] if o["kind"] == "ResourceFlavor"):
            for x in flavor["spec"].get("tolerations", []):
                assert "key" in x or x.get("operator") == "Exists"
                assert "tolerationSeconds" not in x or x.get("effect") == "NoExecute"
                assert x.get("operator", "Equal") in ("Equal", "Exists")
                assert not (x.get("operator") == "Exists" and "value" in x)
                assert x.get("effect", "NoSchedule") in ("NoSchedule", "PreferNoSchedule", "NoExecute")
                checked += 1
    assert checked >= 3 * len(scheduling.SCHEDULERS)
