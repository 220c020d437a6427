"""The hostile-input corpus: every module, on a cluster and (where it renders) into a GitOps folder, given inputs a
careless or malicious inventory could hold. Each case must fail with a message that names the option, carries no
Python traceback, sends no write to the cluster and writes nothing into (or beside) the render folder.

Each row is (module, option path, hostile value); the base parameters of each module are valid, so the row's value
is the only thing wrong. `len(CASES)` is the corpus size the hardening note quotes.
"""
from __future__ import annotations

import copy

import pytest

from tests.fakes.controllers import default_controllers
from tests.modules.harness import run_module

LONG = "a" * 300
TRAVERSAL = "../../etc/passwd"
NAMES = [LONG, TRAVERSAL, "UPPER", "has space", "x\ny", "ünï", "-lead", "trail-", "a/b"]
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
      "data": {"k": "v"}}
IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"

BASES = {
    "manifests": {"objects": [CM]},
    "helm_pinned_release": {"release_name": "gpu-operator", "release_namespace": "gpu-operator",
                            "chart_ref": "gpu-operator", "chart_repo_url": "https://helm.ngc.nvidia.com/nvidia",
                            "chart_version": "v26.7.0"},
    "nic_cluster_policy": {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
                           "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}},
    "mig_profile": {"profile": "all-1g.10gb", "nodes": ["gpu-a"]},
    "smoke_test": {"check": "cuda", "image": IMAGE},
    "node_labels": {"nodes": [{"selector": "nodepool=dra", "labels": {"nvidia.com/dra-kubelet-plugin": "true"}}]},
    "node_maintenance": {"name": "gpu-a", "state": "cordoned"},
    "gpu_driver_upgrade": {"report_only": True},
    "gpu_driver_mode": {"mode": "operator"},
}
RENDERS = {"manifests", "helm_pinned_release", "nic_cluster_policy", "mig_profile", "smoke_test"}


def rows():
    out = []

    def add(module, path, values, field=None, modes=None):
        for value in values:
            out.append((module, path, value, field or path.split(".")[-1].split("[")[0], modes))

    # manifests: the object's identity builds file names and API paths
    add("manifests", "objects[0].kind", [TRAVERSAL, "", "Config Map", LONG, 5, None, "a/b"], "kind")
    add("manifests", "objects[0].apiVersion", [TRAVERSAL, "", "V1", "apps/v1/x", 3, None], "apiVersion")
    add("manifests", "objects[0].metadata.name", NAMES + ["", None, 7], "name")
    add("manifests", "objects[0].metadata.namespace", [LONG, TRAVERSAL, "UPPER", "a/b", ""], "namespace")
    add("manifests", "objects[0].metadata", [None, "x", []], "metadata")
    add("manifests", "objects", ["not a list", [None], [5]], "objects")
    add("manifests", "state", ["gone", ""], "state")
    add("manifests", "unserved", ["ignore"], "unserved")
    add("manifests", "missing", ["maybe"], "missing")
    # helm_pinned_release: names, the pin, the source, durations, dependencies, labels
    add("helm_pinned_release", "release_name", NAMES + [""], "release_name")
    add("helm_pinned_release", "release_namespace", NAMES + [""], "release_namespace")
    add("helm_pinned_release", "chart_version", ["latest", "", "^1.2.0", "~26", "1.2", "*", ">=1.0.0", "v26.7.0 || v1",
                                                 LONG], "chart_version")
    add("helm_pinned_release", "chart_repo_url", ["https://robot:s3cr3t@charts.example.com", "ftp://x.example.com",
                                                  "javascript:alert(1)", "charts.example.com"], "chart_repo_url")
    add("helm_pinned_release", "chart_ref", ["../../charts/x", "a/b", "oci://ghcr.io/x:1.0", "oci://u:p@ghcr.io/a/b",
                                             "oci://nochart"], "chart_ref")
    add("helm_pinned_release", "flux_interval", ["forever", "10", "-1m", "0s", "999999h", "10d"], "flux_interval")
    add("helm_pinned_release", "wait_timeout", ["forever", "-5m", "0", "1y"], "wait_timeout")
    add("helm_pinned_release", "depends_on", [[{"name": "UPPER"}], [{"name": "x", "namespace": "A B"}],
                                              [{"name": "gpu-operator"}], [{"name": "x", "kind": "y"}]], "depends_on")
    add("helm_pinned_release", "namespace_labels", [{"bad key!": "x"}, {"k": "v" * 64}, {"k": "bad value!"}],
        "namespace_labels")
    add("helm_pinned_release", "chart_sha256", ["abc", "g" * 64, LONG], "chart_sha256")
    add("helm_pinned_release", "argocd_namespace", ["UPPER", TRAVERSAL, LONG], "argocd_namespace")
    add("helm_pinned_release", "render_format", ["helmfile"], "render_format")
    add("helm_pinned_release", "release_values", [["a"], 5], "release_values")
    # nic_cluster_policy: the policy's every input
    add("nic_cluster_policy", "network_operator_version", ["latest", "99.1.0", "", "26.4"], "network_operator_version")
    add("nic_cluster_policy", "ip_range", ["not-a-cidr", "192.168.1.0/33", "300.1.1.0/24", "", "192.168.1.1/24"],
        "ip_range")
    add("nic_cluster_policy", "ip_gateway", ["10.9.9.9", "not-an-ip"], "ip_gateway")
    add("nic_cluster_policy", "selectors.vendors", [["zzzz"], ["15b"], [LONG]], "vendors")
    add("nic_cluster_policy", "selectors.device_ids", [["xyz"], ["1017a"]], "device_ids")
    add("nic_cluster_policy", "selectors.interfaces", [[LONG], ["a/b"], ["has space"], [""]], "interfaces")
    add("nic_cluster_policy", "selectors.link_type", ["token-ring"], "link_type")
    add("nic_cluster_policy", "rdma_hca_max", [0, -1, 100000], "rdma_hca_max")
    add("nic_cluster_policy", "resource_name", ["has space", "a/b", LONG, "rdma/x"], "resource_name")
    add("nic_cluster_policy", "network_name", NAMES[:6], "network_name")
    add("nic_cluster_policy", "network_namespace", NAMES[:6], "network_namespace")
    add("nic_cluster_policy", "operator_namespace", ["UPPER", TRAVERSAL, LONG], "operator_namespace")
    add("nic_cluster_policy", "nv_ipam_pool", ["UPPER", TRAVERSAL], "nv_ipam_pool")
    add("nic_cluster_policy", "nv_ipam_block_size", [0, -4, 1 << 40], "nv_ipam_block_size")
    add("nic_cluster_policy", "image_mirrors", [{"nvcr.io": "https://u:p@x.example.com"}, {"nvcr.io": "harbor"},
                                                {"not a host": "x.example.com"}, {"nvcr.io": "x.example.com/a:b"}],
        "image_mirrors")
    add("nic_cluster_policy", "mode", ["none", "infiniband"], "mode")
    # mig_profile
    add("mig_profile", "profile", ["", LONG, "all-9g.99gb!", TRAVERSAL, "has space"], "profile")
    add("mig_profile", "nodes", [[LONG], [TRAVERSAL], [""], ["UPPER"]], "nodes")
    add("mig_profile", "max_unavailable", [0, -1], "max_unavailable")
    add("mig_profile", "wait_timeout", ["forever", "-1m", "0"], "wait_timeout")
    add("mig_profile", "config_map_name", [LONG, TRAVERSAL, "UPPER"], "config_map_name")
    add("mig_profile", "operator_namespace", [LONG, TRAVERSAL, "UPPER"], "operator_namespace")
    add("mig_profile", "strategy", ["none", "all"], "strategy")
    # smoke_test
    add("smoke_test", "image", ["nvcr.io/nvidia/cuda", "nvcr.io/nvidia/cuda:latest", "UPPER/x:1", TRAVERSAL, "",
                                "x:" + LONG], "image")
    add("smoke_test", "namespace", NAMES[:6] + [""], "namespace")
    add("smoke_test", "resources", [{"nvidia.com/gpu": -1}, {"nvidia.com/gpu": "many"}, {"bad key!": 1}, {}],
        "resources")
    add("smoke_test", "suffix", [LONG, TRAVERSAL, "UPPER"], "suffix")
    add("smoke_test", "timeout", [0, -5, 10 ** 9], "timeout")
    add("smoke_test", "check", ["everything", ""], "check")
    add("smoke_test", "node_selector", [{"bad key!": "x"}, {"k": "bad value!"}], "node_selector")
    # node_labels
    add("node_labels", "nodes[0].selector", ["", "a=b,", "((", "a in b", LONG + "=x"], "selector")
    add("node_labels", "nodes[0].labels", [{}, {"bad key!": "x"}, {"k": "v" * 64}, {"k": "bad value!"},
                                           {"kubernetes.io/" + "a" * 70: "x"}], "labels")
    add("node_labels", "nodes", [[], "nodepool=dra"], "nodes")
    # node_maintenance
    add("node_maintenance", "name", [LONG, TRAVERSAL, "", "UPPER CASE"], "name")
    add("node_maintenance", "pod_selector", ["((", "a in b"], "pod_selector")
    add("node_maintenance", "wait_timeout", ["forever", "-1m", "0"], "wait_timeout")
    add("node_maintenance", "state", ["rebooted"], "state")
    # gpu_driver_upgrade
    add("gpu_driver_upgrade", "node_selector", ["((", "a in b"], "node_selector")
    add("gpu_driver_upgrade", "driver_selector", ["((", "a in b"], "driver_selector")
    add("gpu_driver_upgrade", "expected_driver_version", ["latest", "5", TRAVERSAL], "expected_driver_version")
    add("gpu_driver_upgrade", "wait_timeout", ["forever", "-1m"], "wait_timeout")
    add("gpu_driver_upgrade", "stuck_timeout", ["forever", "0"], "stuck_timeout")
    add("gpu_driver_upgrade", "poll_interval", [0, -1], "poll_interval")
    add("gpu_driver_upgrade", "operator_namespace", [TRAVERSAL, "UPPER"], "operator_namespace")
    add("gpu_driver_upgrade", "nodes", [[TRAVERSAL], [LONG]], "nodes")
    # gpu_driver_mode
    add("gpu_driver_mode", "mode", ["both", ""], "mode")
    add("gpu_driver_mode", "node_selector", ["((", "a in b"], "node_selector")
    add("gpu_driver_mode", "hosts", [["not a dict"], [{"name": TRAVERSAL, "host": "x"}]], "hosts")
    # kube auth, on every module that reaches a cluster
    for module in sorted(BASES):  # a connection option: checked where a cluster is reached, unused when rendering
        add(module, "api_read_timeout", [0, -1, 99999], "api_read_timeout", modes=["direct"])
    return out


CASES = [(m, p, v, f, mode) for m, p, v, f, modes in rows()
         for mode in (modes or (["direct", "render"] if m in RENDERS else ["direct"]))]


def set_path(params, path, value):
    parts = path.replace("]", "").replace("[", ".").split(".")
    node = params
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return params


@pytest.fixture
def api(fake_api_factory):
    server = fake_api_factory(controllers=default_controllers(), require_namespaces=True)
    server.store.create({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": "gpu-a", "labels": {"nodepool": "dra", "nvidia.com/mig.capable": "true",
                                                                  "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}})
    server.clear_log()
    return server


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 300, len(CASES)
    assert {m for m, *dummy in CASES} == set(BASES), "every module"


@pytest.mark.parametrize("module, path, value, field, mode", CASES,
                         ids=["%s-%s-%d-%s" % (c[0], c[1], i, c[4]) for i, c in enumerate(CASES)])
def test_a_hostile_input_is_refused_naming_it_and_changes_nothing(api, tmp_path, module, path, value, field, mode):
    params = set_path(copy.deepcopy(BASES[module]), path, copy.deepcopy(value))
    bundle = tmp_path / "bundle" / "unit"
    if mode == "render":
        params["render_to"] = str(bundle)
    else:
        params["kubeconfig"] = api.kubeconfig
    failed, result = run_module(module, params)
    message = str(result.get("msg", ""))
    assert failed, "accepted: %r" % (result,)
    assert field in message, message
    assert "Traceback" not in message
    assert api.writes() == [], "a write reached the cluster"
    assert not (tmp_path / "bundle").exists() or not any(p.is_file() for p in (tmp_path / "bundle").rglob("*"))
    # tmp/ and home/ hold the Kubernetes client's discovery cache (tests/fakes/fixtures.isolate_client_caches).
    assert [p for p in tmp_path.rglob("*") if p.is_file() and "bundle" not in str(p)
            and not p.name.startswith("kubeconfig")
            and p.relative_to(tmp_path).parts[0] not in ("tmp", "home")] == [], "a file written outside render_to"
