"""Table-driven tests of the peermem domain: the Namespace and the DaemonSet that load nvidia-peermem on
GPU nodes whose driver the host image owns, their schema validity, and the refusals of bad inputs."""
import copy
import inspect
import json
import re
import types

import pytest
from kubernetes import client as k8s_client

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import peermem
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema import crdschema

IMAGE = "docker.io/library/busybox:1.37.0"
DIGEST = "docker.io/library/busybox@sha256:" + "a" * 64


def render(namespace="gpu-peermem", image=IMAGE, module="nvidia-peermem", node_selector=None):
    return peermem.daemonset(namespace, image, module, node_selector)


def pod_spec(objects):
    return objects[1]["spec"]["template"]["spec"]


def container(objects):
    (only,) = pod_spec(objects)["containers"]
    return only


# ---------------------------------------------------------------- the objects

def test_namespace_is_privileged_for_pod_security():
    ns, ds = render()
    assert ns == {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "gpu-peermem", "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}
    assert ds["metadata"]["namespace"] == "gpu-peermem"


def test_daemonset_identity_and_selector_match_the_template():
    ds = render()[1]
    assert (ds["apiVersion"], ds["kind"], ds["metadata"]["name"]) == ("apps/v1", "DaemonSet", "nvidia-peermem-loader")
    selector = ds["spec"]["selector"]["matchLabels"]
    template_labels = ds["spec"]["template"]["metadata"]["labels"]
    assert selector and all(template_labels.get(k) == v for k, v in selector.items())
    assert ds["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gpu-platform"
    assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"


def test_pod_runs_privileged_with_host_pid_on_every_tainted_node():
    spec = pod_spec(render())
    assert spec["hostPID"] is True
    assert container(render())["securityContext"]["privileged"] is True
    # tolerates every taint (GPU nodes are commonly tainted nvidia.com/gpu:NoSchedule)
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["priorityClassName"] == "system-node-critical"


def test_host_root_is_mounted_read_only_at_host():
    spec = pod_spec(render())
    assert spec["volumes"] == [{"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}}]
    assert container(render())["volumeMounts"] == [{"name": "host-root", "mountPath": "/host", "readOnly": True}]


@pytest.mark.parametrize("module, loaded", [
    ("nvidia-peermem", "nvidia_peermem"),
    ("nvidia-current-peermem", "nvidia_current_peermem"),  # Debian's packaged driver
    ("nvidia_peermem", "nvidia_peermem"),
])
def test_container_loads_the_module_and_probes_grep_its_loaded_name(module, loaded):
    c = container(render(module=module))
    assert c["image"] == IMAGE
    assert c["command"] == ["/bin/sh", "-c"]
    (script,) = c["args"]
    assert script.startswith("chroot /host /sbin/modprobe %s && " % module)
    assert script.endswith("exec sleep infinity")
    grep = {"exec": {"command": ["grep", "-q", "^%s " % loaded, "/proc/modules"]}}
    assert c["startupProbe"] == dict(grep, periodSeconds=5, failureThreshold=24)
    assert c["livenessProbe"] == dict(grep, periodSeconds=30, failureThreshold=2)


def test_probe_pattern_matches_proc_modules_lines():
    pattern = container(render())["livenessProbe"]["exec"]["command"][2]
    proc_modules = ["nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)",
                    "nvidia 54308864 12 nvidia_peermem,nvidia_uvm, Live 0x0000000000000000 (POE)",
                    "ib_core 430080 9 nvidia_peermem,rdma_cm, Live 0x0000000000000000"]
    assert [bool(re.search(pattern, line)) for line in proc_modules] == [True, False, False]


def test_default_and_custom_node_selector():
    # NFD's label, there before the peermem layer (GFD's nvidia.com/gpu.present only comes with the GPU Operator)
    assert pod_spec(render())["nodeSelector"] == {"feature.node.kubernetes.io/pci-10de.present": "true"}
    custom = {"kubernetes.azure.com/accelerator": "nvidia", "agentpool": "gpu"}
    objects = render(node_selector=custom)
    assert pod_spec(objects)["nodeSelector"] == custom
    assert pod_spec(objects)["nodeSelector"] is not custom  # a copy, not the caller's dictionary
    custom["agentpool"] = "changed"
    assert pod_spec(objects)["nodeSelector"]["agentpool"] == "gpu"


def test_resources_are_bounded():
    resources = container(render())["resources"]
    assert resources["requests"] == {"cpu": "10m", "memory": "16Mi"}
    assert resources["limits"] == {"memory": "64Mi"}


@pytest.mark.parametrize("image", [IMAGE, DIGEST, "registry.example.com:5000/tools/busybox:1.37.0",
                                   "busybox:1.37.0", "registry.example.com:5000/busybox@sha256:" + "b" * 64,
                                   "busybox:latest@sha256:" + "c" * 64])
def test_pinned_images_are_accepted(image):
    assert container(render(image=image))["image"] == image


def test_every_call_returns_fresh_objects():
    first = render()
    first[1]["metadata"]["labels"]["x"] = "y"
    first[1]["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    assert "x" not in render()[1]["metadata"]["labels"]
    assert "x" not in render()[1]["spec"]["template"]["metadata"]["labels"]
    assert "x" not in peermem.LABELS


# ---------------------------------------------------------------- schema validity

SELECTORS = [None, {"kubernetes.azure.com/accelerator": "nvidia"}, {"nvidia.com/gpu.present": "true", "pool": "a"}]
MODULES = ["nvidia-peermem", "nvidia-current-peermem"]


def as_volcano_job(ds):
    """The DaemonSet's pod template inside a Volcano Job: that CRD embeds the upstream core PodTemplateSpec
    schema (the only core pod schema under ../shared/upstream), so crdschema.validate checks every field of
    the pod, container, probes and volumes strictly."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "peermem-template-check", "namespace": ds["metadata"]["namespace"]},
            "spec": {"tasks": [{"name": "loader", "replicas": 1, "template": copy.deepcopy(ds["spec"]["template"])}]}}


def round_trip(obj, model):
    """obj through the Kubernetes client's typed model and back. kubernetes 37 takes the answer's text and content
    type; older clients (requirements.txt's floor, make requirement-floors) take a response with the text as .data."""
    api = k8s_client.ApiClient()
    text = json.dumps(obj)
    if "content_type" in inspect.signature(api.deserialize).parameters:
        model_object = api.deserialize(text, model, "application/json")
    else:
        model_object = api.deserialize(types.SimpleNamespace(data=text), model)
    return api.sanitize_for_serialization(model_object)


@pytest.mark.parametrize("selector", SELECTORS)
@pytest.mark.parametrize("module", MODULES)
def test_objects_are_valid_kubernetes_objects(selector, module):
    ns, ds = render(module=module, node_selector=selector)
    crdschema.validate_core(ns)  # raises with every failing path
    crdschema.validate(as_volcano_job(ds))
    # The DaemonSet level (selector, updateStrategy, template): the Kubernetes client's apps/v1 model; a
    # round trip keeps only fields the model knows, so any misspelt or misplaced field shows as a difference.
    assert round_trip(ds, "V1DaemonSet") == ds


def test_the_schema_checks_catch_mistakes():
    """The checks above are not vacuous: a misspelt pod field, a misplaced probe field and a misspelt
    DaemonSet field are each caught."""
    ds = render()[1]
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["hostPid"] = True
    assert any("hostPid" in e for e in crdschema.crd_errors(as_volcano_job(bad)))
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["exec"]["periodSeconds"] = 5
    assert any("periodSeconds" in e for e in crdschema.crd_errors(as_volcano_job(bad)))
    bad = copy.deepcopy(ds)
    bad["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailble"] = 1
    assert round_trip(bad, "V1DaemonSet") != bad
    bad_ns = copy.deepcopy(render()[0])
    bad_ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged!"
    assert crdschema.core_errors(bad_ns)


# ---------------------------------------------------------------- bad inputs

BAD = [
    # (changes, field, words in the problem)
    ({"namespace": "GPU-Peermem"}, "peermem_namespace", "is not a valid name"),
    ({"namespace": "gpu_peermem"}, "peermem_namespace", "is not a valid name"),
    ({"namespace": "-gpu"}, "peermem_namespace", "is not a valid name"),
    ({"namespace": "a" * 64}, "peermem_namespace", "is not a valid name"),
    ({"namespace": ""}, "peermem_namespace", "is empty"),
    ({"namespace": None}, "peermem_namespace", "is empty"),
    ({"image": "busybox"}, "peermem_loader_image", "'busybox' has no tag or digest"),
    ({"image": "registry.example.com:5000/busybox"}, "peermem_loader_image", "has no tag or digest"),
    ({"image": ""}, "peermem_loader_image", "is empty"),
    ({"image": None}, "peermem_loader_image", "is empty"),
    ({"image": 1.37}, "peermem_loader_image", "is empty"),
    ({"image": "busybox:latest"}, "peermem_loader_image", "'busybox:latest' uses the tag latest, which is not pinned"),
    ({"image": "docker.io/library/busybox:latest"}, "peermem_loader_image", "is not pinned"),
    ({"module": "nvidia peermem"}, "peermem_module", "is not a kernel module name"),
    ({"module": "nvidia-peermem; reboot"}, "peermem_module", "is not a kernel module name"),
    ({"module": "Nvidia-Peermem"}, "peermem_module", "is not a kernel module name"),
    ({"module": "../nvidia"}, "peermem_module", "is not a kernel module name"),
    ({"module": ""}, "peermem_module", "is not a kernel module name"),
    ({"module": None}, "peermem_module", "None is not a kernel module name"),
    ({"node_selector": {}}, "peermem_node_selector", "must be a non-empty dictionary of node labels"),
    ({"node_selector": []}, "peermem_node_selector", "must be a non-empty dictionary"),
    ({"node_selector": "nvidia.com/gpu.present=true"}, "peermem_node_selector", "must be a non-empty dictionary"),
]


@pytest.mark.parametrize("changes, field, words", BAD)
def test_bad_input_names_the_field_and_the_fix(changes, field, words):
    with pytest.raises(ParamError) as info:
        render(**changes)
    err = info.value
    assert err.field == field
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    assert ". Fix: " in str(err) and not str(err).endswith("Fix: ")


def test_an_image_with_an_empty_tag_is_refused():
    with pytest.raises(ParamError):
        render(image="docker.io/library/busybox:")


def test_a_module_with_a_trailing_newline_is_refused():
    with pytest.raises(ParamError):
        render(module="nvidia-peermem\n")


def test_a_node_selector_with_a_boolean_value_is_refused():
    with pytest.raises(ParamError):
        render(node_selector={"nvidia.com/gpu.present": True})


# ---------------------------------------------------------------- readiness

def ds_status(desired, ready):
    return {"metadata": {"name": peermem.NAME}, "status": {"desiredNumberScheduled": desired, "numberReady": ready}}


def nodes(*names):
    return [{"metadata": {"name": n}} for n in names]


def test_loader_ready_on_every_matching_node():
    verdict = peermem.loader_ready(ds_status(2, 2), nodes("gpu-1", "gpu-0"))
    assert verdict == {"ready": True, "msg": "nvidia-peermem is loaded on all 2 GPU node(s): gpu-0, gpu-1"}


def test_a_daemonset_that_schedules_nothing_is_not_ready():
    verdict = peermem.loader_ready(ds_status(0, 0), [], {"nvidia.com/gpu.present": "true"})
    assert verdict["ready"] is False
    assert "no GPU node matched the node selector nvidia.com/gpu.present=true" in verdict["msg"]


@pytest.mark.parametrize("status, names, words", [
    (ds_status(1, 1), ("gpu-0", "gpu-1"), "schedules 1 loader pod(s) but 2 GPU node(s) match"),
    (ds_status(2, 1), ("gpu-0", "gpu-1"), "1 of 2 loader pods are ready"),
    (ds_status(0, 0), ("gpu-0",), "schedules 0 loader pod(s) but 1 GPU node(s) match"),
    (None, ("gpu-0",), "was not found"),
])
def test_loader_not_ready_says_why(status, names, words):
    verdict = peermem.loader_ready(status, nodes(*names))
    assert verdict["ready"] is False and words in verdict["msg"]
