"""Every object the smoke_tests domain renders is a valid Kubernetes object.

- Volcano Jobs: the upstream Volcano v1.15.1 Job CRD in ../shared/upstream/volcano (its task template
  carries the full core PodSpec schema, so every pod field is checked strictly); a missing directory
  fails, never skips.
- Core objects (Pod, the Jobs' pod templates, the resource.k8s.io/v1 ResourceClaimTemplate): a round
  trip through the installed kubernetes client's models keeps only the fields those models know, so a
  misspelt or misplaced field, or a number where the API wants a string, shows up as a difference.
  Pods are also checked strictly against the Volcano CRD's pod template schema.
- The KAI Scheduler PodGroup: its CRD is not in ../shared/upstream (only the Queue CRD is), so its
  spec is checked against the fields of ``scheduling.run.ai_podgroups.yaml`` (v2alpha2) transcribed
  in local_gpu_cluster/fixture_crds, with the same unknown-field rule crdschema applies.
"""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest
import yaml
from kubernetes import client as k8s_client

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import (
    nccl as smoke_nccl, objects as smoke_objects)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as smoke_workflow
from local_gpu_cluster.paths import FIXTURE_CRDS_DIR
from tests.schema import crdschema

NS = "gpu-smoke"
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests:2.21.5-cuda12.4-ompi4.1"
API = k8s_client.ApiClient()

# KAI Scheduler PodGroup v2alpha2: the CRD transcribed in local_gpu_cluster/fixture_crds (the fake API server serves the same).
KAI_PODGROUP_CRD = FIXTURE_CRDS_DIR / "podgroups.scheduling.run.ai.yaml"
KAI_PODGROUP_OPENAPI = yaml.safe_load(KAI_PODGROUP_CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
KAI_PODGROUP_OPENAPI = dict(KAI_PODGROUP_OPENAPI, required=["apiVersion", "kind", "metadata", "spec"], properties=dict(
    KAI_PODGROUP_OPENAPI["properties"], apiVersion={"type": "string", "enum": ["scheduling.run.ai/v2alpha2"]},
    kind={"type": "string", "enum": ["PodGroup"]}))


def podgroup_errors(obj):
    schema = crdschema.to_json_schema(KAI_PODGROUP_OPENAPI)
    schema["properties"]["metadata"] = crdschema.OBJECT_META_SCHEMA
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted("%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message)
                    for e in validator.iter_errors(obj))
    meta = obj.get("metadata") or {}
    if not meta.get("name") or not meta.get("namespace"):
        errors.append("metadata: a namespaced object needs a name and a namespace")
    return errors


def round_trip(obj, model):
    return API.sanitize_for_serialization(API.deserialize(json.dumps(obj), model, "application/json"))


def survives_round_trip(obj, model):
    """True when the model keeps the object as it is; a dropped field, or one the model refuses (the client's
    pydantic models reject wrong types and missing required fields), makes it False."""
    try:
        return round_trip(obj, model) == obj
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return False


def as_volcano_job(pod):
    """A Pod wrapped as the template of a Volcano Job task, so the CRD's strict PodSpec schema checks it."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "pod-template-check", "namespace": pod["metadata"]["namespace"]},
            "spec": {"tasks": [{"name": "check", "replicas": 1,
                                "template": {"metadata": copy.deepcopy(pod["metadata"]),
                                             "spec": copy.deepcopy(pod["spec"])}}]}}


def check_pod(pod):
    assert round_trip(pod, "V1Pod") == pod
    crdschema.validate(as_volcano_job(pod))


def check_volcano_job(job):
    crdschema.validate(job)  # raises with every failing path
    for task in job["spec"]["tasks"]:
        assert round_trip(task["template"], "V1PodTemplateSpec") == task["template"]


# ---------------------------------------------------------------- every object, in several configurations

CUDA_RESOURCES = [None, {"nvidia.com/gpu": 2}, {"nvidia.com/mig-1g.10gb": 1}, {"nvidia.com/gpu.shared": 1}]


@pytest.mark.parametrize("resources", CUDA_RESOURCES, ids=str)
def test_cuda_pod_is_a_valid_pod(resources):
    check_pod(smoke_objects.cuda_pod(NS, CUDA_IMAGE, resources))


@pytest.mark.parametrize("device_class", ["gpu.nvidia.com", "mig.nvidia.com"])
def test_dra_objects_are_valid_resource_v1_objects(device_class):
    template, pod = smoke_objects.dra_claim_pod(NS, CUDA_IMAGE, device_class)
    assert round_trip(template, "V1ResourceClaimTemplate") == template
    check_pod(pod)


def test_dra_template_uses_the_v1_request_shape():
    """``exactly.deviceClassName`` is the v1 (and v1beta2) shape; v1beta1 had deviceClassName on the request,
    so the v1beta1 model drops it: the template is written for resource.k8s.io/v1 as its apiVersion says."""
    template = smoke_objects.dra_claim_pod(NS, CUDA_IMAGE)[0]
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert not survives_round_trip(template, "V1beta1ResourceClaimTemplate")


@pytest.mark.parametrize("replicas", [2, 5])
@pytest.mark.parametrize("queue", ["default", "team-a.training"])
def test_volcano_gang_job_is_valid(replicas, queue):
    (job,) = smoke_objects.gang_job("volcano", NS, CUDA_IMAGE, replicas=replicas, queue=queue)
    check_volcano_job(job)


@pytest.mark.parametrize("replicas", [2, 5])
def test_kai_gang_objects_are_valid(replicas):
    group, *pods = smoke_objects.gang_job("kai", NS, CUDA_IMAGE, replicas=replicas, queue="default-queue")
    assert podgroup_errors(group) == []
    for pod in pods:
        check_pod(pod)


NCCL_CONFIGS = [
    {},
    {"network": "rdma-net"},
    {"network": ["default/rdma-net@net1", "ipoib-net"], "nodes": 4, "gpus_per_node": 4},
    {"rdma_resource": {}, "gpus_per_node": 1},
    {"rdma_resource": {"rdma/ib": 2}, "queue": "benchmarks"},
]


@pytest.mark.parametrize("config", NCCL_CONFIGS, ids=lambda c: json.dumps(c, sort_keys=True))
def test_nccl_job_is_valid(config):
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE, **config)
    check_volcano_job(job)


# ---------------------------------------------------------------- the checks above are not vacuous

def test_a_misspelt_volcano_job_field_is_caught():
    (job,) = smoke_nccl.nccl_job(NS, NCCL_IMAGE)
    bad = copy.deepcopy(job)
    bad["spec"]["minAvaliable"] = bad["spec"].pop("minAvailable")
    assert any("minAvaliable" in e for e in crdschema.crd_errors(bad))
    bad = copy.deepcopy(job)
    bad["spec"]["plugins"]["svc"] = "true"  # plugin arguments are a list of strings
    assert crdschema.crd_errors(bad)
    bad = copy.deepcopy(job)
    bad["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = "IPC_LOCK"
    assert crdschema.crd_errors(bad)


def test_a_misplaced_pod_field_is_caught():
    pod = smoke_objects.cuda_pod(NS, CUDA_IMAGE)
    bad = copy.deepcopy(pod)
    bad["spec"]["containers"][0]["limits"] = bad["spec"]["containers"][0].pop("resources")["limits"]
    assert not survives_round_trip(bad, "V1Pod")
    with pytest.raises(crdschema.SchemaValidationError):
        crdschema.validate(as_volcano_job(bad))
    bad = copy.deepcopy(pod)
    bad["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1  # a number: the model wants "1"
    assert not survives_round_trip(bad, "V1Pod")


def test_a_misspelt_claim_template_field_is_caught():
    template = smoke_objects.dra_claim_pod(NS, CUDA_IMAGE)[0]
    bad = copy.deepcopy(template)
    request = bad["spec"]["spec"]["devices"]["requests"][0]
    request["exactly"]["deviceClass"] = request["exactly"].pop("deviceClassName")
    assert not survives_round_trip(bad, "V1ResourceClaimTemplate")


def test_a_bad_podgroup_is_caught():
    group = smoke_objects.gang_job("kai", NS, CUDA_IMAGE)[0]
    bad = copy.deepcopy(group)
    bad["spec"]["minMembers"] = bad["spec"].pop("minMember")
    assert any("minMembers" in e for e in podgroup_errors(bad))
    bad = copy.deepcopy(group)
    bad["spec"]["minMember"] = 0
    assert podgroup_errors(bad)
    bad = copy.deepcopy(group)
    bad["apiVersion"] = "scheduling.run.ai/v2"
    assert podgroup_errors(bad)


# ---------------------------------------------------------------- what render mode writes to the bundle

def check_rendered(obj):
    """Any object the smoke_test module renders: a batch/v1 Job, a Volcano Job, a claim template, a PodGroup, a Pod."""
    if obj["apiVersion"] == "batch/v1":
        assert round_trip(obj, "V1Job") == obj
        check_pod({"apiVersion": "v1", "kind": "Pod", "metadata": dict(obj["spec"]["template"]["metadata"],
                                                                       name="x", namespace=NS),
                   "spec": obj["spec"]["template"]["spec"]})
    elif obj["kind"] == "Job":
        check_volcano_job(obj)
    elif obj["kind"] == "ResourceClaimTemplate":
        assert round_trip(obj, "V1ResourceClaimTemplate") == obj
    elif obj["kind"] == "PodGroup":
        assert podgroup_errors(obj) == []
    elif obj["kind"] == "Namespace":
        assert round_trip(obj, "V1Namespace") == obj
    else:
        check_pod(obj)


@pytest.mark.parametrize("params", [
    {"check": "cuda", "resources": {"nvidia.com/mig-1g.10gb": 1}, "node_selector": {"nodepool": "mig"},
     "suffix": "mig"},
    {"check": "dra"},
    {"check": "gang", "scheduler": "volcano", "replicas": 3},
    {"check": "gang", "scheduler": "kai", "replicas": 2, "queue": "vision"},
    {"check": "nccl", "image": NCCL_IMAGE, "network": "default/rdma-net"},
], ids=lambda p: "%s-%s" % (p["check"], p.get("scheduler", "")))
def test_rendered_smoke_objects_are_valid(params):
    full = dict({"namespace": NS, "image": CUDA_IMAGE, "timeout": 300, "window_seconds": 30, "min_busbw_gbps": 10,
                 "nodes": 2, "gpus_per_node": 8, "replicas": 2, "queue": "default", "scheduler": "volcano"}, **params)
    rendered = smoke_workflow.render_objects(full, smoke_workflow.build(full))
    assert rendered
    for obj in rendered:
        check_rendered(obj)
    if params["check"] in ("cuda", "dra"):
        assert [o["kind"] for o in rendered][-1] == "Job" and rendered[-1]["apiVersion"] == "batch/v1"
