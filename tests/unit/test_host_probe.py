"""The probe Job's script and log round trip: the script really runs (sh) over a host's files laid out under a root
(the real H100 capture of ../shared/real-hosts, and the crafted hosts of tests/modules/test_gpu_host_checks.py in
each bad state), its log is parsed, and the node's ``gpu_host_checks`` fact and findings are the ones gpu_host_facts
gives reading the same tree over its own code path (SSH)."""
from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.gpu_platform.cluster.plugins.filter.gpu_hosts import host_checks
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.host_checks import probe
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import host_probe
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows.host_probe import checks_from_log, gpu_nodes
from tests.modules import test_gpu_host_checks as trees
from tests.unit.host_capture import capture_root


def run_script(root):
    proc = subprocess.run(["sh", "-c", probe.script()], env=dict(os.environ, GPU_PLATFORM_PROBE_ROOT=str(root)),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def without_packages(checks):
    """What the probe cannot know (no package database, no nvidia-smi on its PATH): left out of the comparison."""
    driver = dict(checks["driver"], packages={}, toolkit_packages={}, nvidia_smi="")
    return dict(checks, driver=driver)


def test_the_real_h100_through_the_probe_reads_as_over_ssh(tmp_path):
    root = capture_root(tmp_path)
    log = run_script(root)
    assert log.startswith(probe.MARKER + " begin 1\n") and log.endswith(probe.MARKER + " end\n")
    assert "%s absent /etc/containerd/*.toml" % probe.MARKER in log  # no containerd config on that host
    checks = checks_from_log(log, "h100")
    assert checks["gpus"] == [{"address": "0000:00:06.0", "device": "0x2330"}]
    assert checks["driver"]["loaded"] and checks["driver"]["version"] == "580.159.04"
    assert checks["driver"]["module_type"] == "open" and checks["driver"]["packages"] == {}
    assert checks["kernel"] == {"release": "6.18.44-fc-v657-gpu", "modules_dir": False, "headers": False,
                                "headers_candidate": None}
    assert checks["default_routes"] == [{"interface": "eth0", "drivers": {"eth0": "virtio_net"}, "mlx5": False}]
    assert without_packages(checks) == without_packages(trees.read(root, "h100"))
    platform = dict(trees.EVERYTHING, driver_mode="operator", mig=False)
    verdict = host_checks([checks], platform)
    assert trees.ids(verdict["blocking"]) == ["driver-already-loaded", "no-kernel-headers"]
    assert verdict["message"] == host_checks([trees.read(root, "h100")], platform)["message"]
    assert host_checks([checks], dict(platform, driver_mode="host"))["blocking"] == []


STATES = ("drop_in_higher", "nvidia_drm", "nouveau", "default_route_on_mlx5", "default_route_on_a_bond_of_mlx5",
          "iommu_translating", "no_driver", "no_modules_dir", "no_headers_on_disk", "secure_boot_on",
          "secure_boot_on_unsigned_loaded")


@pytest.mark.parametrize("state", (None,) + STATES)
def test_each_crafted_host_gives_the_same_findings_through_the_probe(tmp_path, state):
    root = trees.clean_tree(tmp_path)
    if state:
        getattr(trees, state)(root)
    over_ssh = trees.read(root, "gpu-node-01")
    through_probe = checks_from_log(run_script(root), "gpu-node-01")
    assert without_packages(through_probe) == without_packages(over_ssh)
    for mode in ("auto", "host", "operator"):
        platform = dict(trees.EVERYTHING, driver_mode=mode)
        assert host_checks([through_probe], platform)["message"] == host_checks([over_ssh], platform)["message"]


def test_a_blocking_state_names_the_node_the_id_and_the_fix(tmp_path):
    root = trees.clean_tree(tmp_path)
    trees.drop_in_higher(root)
    verdict = host_checks([checks_from_log(run_script(root), "gpu-node-03")], trees.EVERYTHING)
    assert trees.ids(verdict["blocking"]) == ["containerd-dropin-version"]
    assert "gpu-node-03: [containerd-dropin-version] containerd drop-in /etc/containerd/conf.d/99-nvidia.toml " \
           "has version = 3" in verdict["message"] and "Fix: " in verdict["message"]


def test_credentials_in_a_containerd_config_never_reach_the_log(tmp_path):
    root = trees.clean_tree(tmp_path)
    trees.write(root / "etc/containerd/config.toml", 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.'
                'configs."r.example.com".auth]\npassword = "s3cret"\n')
    log = run_script(root)
    assert "s3cret" not in log and "version = 2" in log


def test_a_cut_log_is_refused():
    with pytest.raises(ToolError, match="incomplete"):
        probe.parse("%s begin 1\n%s text /proc/modules\nnvidia 1 0 - Live\n" % (probe.MARKER, probe.MARKER))


def test_a_file_without_a_final_newline_reads_back_as_it_is():
    log = "%s begin 1\n%s text /a\nx\n%s text /b\ny\n\n%s end\n" % ((probe.MARKER,) * 4)
    assert probe.parse(log) == {"/a": ("text", "x"), "/b": ("text", "y\n")}


def test_the_job_mounts_read_only_on_the_node_network_pinned_to_its_node():
    job = probe.job("gpu-node-01", "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04")
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeName"] == "gpu-node-01" and pod["hostNetwork"] is True and pod["restartPolicy"] == "Never"
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == set(probe.HOST_PATHS)
    assert all(v["hostPath"]["type"] == "Directory" for v in pod["volumes"])
    assert all(m["readOnly"] for m in pod["containers"][0]["volumeMounts"])
    context = pod["containers"][0]["securityContext"]
    assert context["privileged"] is False and context["readOnlyRootFilesystem"] and context["capabilities"]
    assert pod["containers"][0]["command"] == ["sh", "-c", probe.script()]
    assert probe.namespace_object()["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert len(probe.job_name("a" * 253)) <= 63 and probe.job_name("a.b") != probe.job_name("a-b")


def test_gpu_nodes_by_selector_or_name():
    nodes = [{"metadata": {"name": "cpu", "labels": {}}},
             {"metadata": {"name": "g1", "labels": {"nvidia.com/gpu.present": "true"}}},
             {"metadata": {"name": "g2", "labels": {"node-role.kubernetes.io/gpu": ""}}}]
    assert gpu_nodes(nodes, [{"nvidia.com/gpu.present": "true"}, {"node-role.kubernetes.io/gpu": ""}], []) == \
        ["g1", "g2"]
    assert gpu_nodes(nodes, [], ["cpu"]) == ["cpu"]
    with pytest.raises(Exception, match="nodes: nope is not a node"):
        gpu_nodes(nodes, [], ["nope"])


# -- the workflow: the namespace goes whatever happens ------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Kube:
    """Just enough of KubeClient: the probe's namespace and Jobs; each Job's pod ends in ``phase`` with ``log``."""

    def __init__(self, phase="Succeeded", log=None):
        self.phase, self.log_text, self.objects, self.deleted = phase, log, {}, []
        self.nodes = [{"metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.present": "true"}}},
                      {"metadata": {"name": "cpu-1", "labels": {}}}]

    def list(self, api_version, kind, namespace=None, label_selector=None):
        if kind == "Node":
            return self.nodes
        if kind == "Pod" and namespace:
            return [{"metadata": {"name": name + "-x", "namespace": namespace, "labels": {"job-name": name}},
                     "status": {"phase": self.phase}} for (k, name) in self.objects if k == "Job"]
        return []

    def get(self, api_version, kind, name, namespace=None):
        return self.objects.get((kind, name))

    def apply(self, obj):
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        return obj

    def delete(self, api_version, kind, name, namespace=None):
        self.deleted.append((kind, name))
        if kind == "Namespace":  # its Jobs go with it
            self.objects = {}
        return True

    def log(self, name, namespace, container=None):
        return self.log_text


PARAMS = {"image": "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04", "node_selectors": [{"nvidia.com/gpu.present": "true"}],
          "namespace": probe.NAMESPACE, "timeout": 30}


def test_the_probe_reads_the_gpu_nodes_and_removes_its_namespace(tmp_path):
    kube = Kube(log=run_script(trees.clean_tree(tmp_path)))
    result = host_probe.run(dict(PARAMS), lambda: kube, clock=Clock())
    assert result["nodes"] == ["gpu-1"] and result["removed"] and kube.objects == {}
    assert [c["node_name"] for c in result["gpu_host_checks"]] == ["gpu-1"]
    assert ("Namespace", probe.NAMESPACE) in kube.deleted


@pytest.mark.parametrize("phase, log, words", [
    ("Pending", None, "did not finish within 30s on gpu-1"),
    ("Failed", "sh: od: not found\n", "node gpu-1: the host probe's log is incomplete"),
])
def test_a_probe_that_fails_still_removes_its_namespace(phase, log, words):
    kube = Kube(phase, log)
    with pytest.raises(ToolError, match=words):
        host_probe.run(dict(PARAMS), lambda: kube, clock=Clock())
    assert kube.objects == {} and ("Namespace", probe.NAMESPACE) in kube.deleted


def test_check_mode_and_no_gpu_node_create_nothing():
    kube = Kube()
    assert "check mode" in host_probe.run(dict(PARAMS), lambda: kube, check_mode=True)["skipped_reason"]
    result = host_probe.run(dict(PARAMS, exclude_nodes=["gpu-1"]), lambda: kube)
    assert result["nodes"] == [] and "no GPU node left" in result["skipped_reason"]
    assert kube.objects == {} and kube.deleted == []


@pytest.mark.parametrize("image, words", [
    ("nvcr.io/nvidia/cuda", "image: 'nvcr.io/nvidia/cuda' has no tag or digest"),
    ("", "image: is required"),
])
def test_the_probe_refuses_an_unpinned_image_before_anything_is_asked(image, words):
    from ansible_collections.gpu_platform.cluster.plugins.modules import host_probe as module
    with pytest.raises(ParamError) as err:
        module.request({"image": image, "node_selectors": [{"nvidia.com/gpu.present": "true"}], "timeout": 30})
    assert words in err.value.msg and "Fix:" in err.value.msg
