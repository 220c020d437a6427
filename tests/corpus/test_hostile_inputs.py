"""The hostile-input corpus: every module, on a cluster and (where it renders) into a GitOps folder, given inputs a
careless or malicious inventory could hold. Each case must fail with a message that names the option by its exact
path, carries no Python traceback, sends no write to the cluster and writes nothing into (or beside) the render folder.

Each row is (module, option path, hostile value, the option path the message names, options dropped from the base);
the base parameters of each module are valid (each base runs once as a control that must succeed, in each mode its
rows use), so the row's value is the only thing wrong. The path the message names is the row's own or one under it
(``objects[0].metadata`` -> ``objects[0].metadata.name``), never another option. `len(CASES)` is the corpus size the
hardening note quotes.
"""
from __future__ import annotations

import copy
import re

import pytest

from local_gpu_cluster.controllers import MigManager, default_controllers
from local_gpu_cluster.gpu_operator import NVIDIA_SMI
from local_gpu_cluster.smoke import Outcome, SmokePods
from local_gpu_cluster.audit import describe
from local_gpu_cluster.fixtures import isolate_client_caches
from local_gpu_cluster.testing import ROOT, RUN_USER, fleet_cluster
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
# the namespaces the bases use (their own, or the modules' defaults): they exist on the fake cluster
NAMESPACES = ("gpu-operator", "nvidia-network-operator", "gpu-platform-smoke")
RENDERS = {"manifests", "helm_pinned_release", "nic_cluster_policy", "mig_profile", "smoke_test"}


def rows():
    out = []

    def add(module, path, values, named=None, modes=None, drop=()):
        for value in values:
            out.append((module, path, value, named or path, tuple(drop), modes))

    # manifests: the object's identity builds file names and API paths
    add("manifests", "objects[0].kind", [TRAVERSAL, "", "Config Map", LONG, 5, None, "a/b"])
    add("manifests", "objects[0].apiVersion", [TRAVERSAL, "", "V1", "apps/v1/x", 3, None])
    add("manifests", "objects[0].metadata.name", NAMES + ["", None, 7])
    add("manifests", "objects[0].metadata.namespace", [LONG, TRAVERSAL, "UPPER", "a/b", ""])
    add("manifests", "objects[0].metadata", [None, "x", []], named="objects[0].metadata.name")
    add("manifests", "objects", ["not a list", [None], [5]])
    add("manifests", "state", ["gone", ""])
    add("manifests", "unserved", ["ignore"])
    add("manifests", "missing", ["maybe"])
    # helm_pinned_release: names, the pin, the source, durations, dependencies, labels
    add("helm_pinned_release", "release_name", NAMES + [""])
    add("helm_pinned_release", "release_namespace", NAMES + [""])
    add("helm_pinned_release", "chart_version", ["latest", "", "^1.2.0", "~26", "1.2", "*", ">=1.0.0", "v26.7.0 || v1",
                                                 LONG])
    add("helm_pinned_release", "chart_repo_url", ["https://robot:s3cr3t@charts.example.com", "ftp://x.example.com",
                                                  "javascript:alert(1)", "charts.example.com"])
    add("helm_pinned_release", "chart_ref", ["../../charts/x", "a/b"])
    # an oci:// reference names its registry: without chart_repo_url, so that the reference itself is what is refused
    add("helm_pinned_release", "chart_ref", ["oci://ghcr.io/x:1.0", "oci://u:p@ghcr.io/a/b", "oci://nochart"],
        drop=["chart_repo_url"])
    add("helm_pinned_release", "flux_interval", ["forever", "10", "-1m", "0s", "999999h", "10d"])
    add("helm_pinned_release", "wait_timeout", ["forever", "-5m", "0", "1y"])
    add("helm_pinned_release", "depends_on", [[{"name": "UPPER"}]], named="depends_on[0].name")
    add("helm_pinned_release", "depends_on", [[{"name": "x", "namespace": "A B"}]], named="depends_on[0].namespace")
    add("helm_pinned_release", "depends_on", [[{"name": "gpu-operator"}]])
    add("helm_pinned_release", "depends_on", [[{"name": "x", "kind": "y"}]], named="depends_on.kind")
    add("helm_pinned_release", "namespace_labels", [{"bad key!": "x"}, {"k": "v" * 64}, {"k": "bad value!"}])
    add("helm_pinned_release", "chart_sha256", ["abc", "g" * 64, LONG])
    add("helm_pinned_release", "argocd_namespace", ["UPPER", TRAVERSAL, LONG])
    add("helm_pinned_release", "render_format", ["helmfile"])
    add("helm_pinned_release", "release_values", [["a"], 5])
    # nic_cluster_policy: the policy's every input
    add("nic_cluster_policy", "network_operator_version", ["latest", "99.1.0", "", "26.4"])
    add("nic_cluster_policy", "ip_range", ["not-a-cidr", "192.168.1.0/33", "300.1.1.0/24", "", "192.168.1.1/24"])
    add("nic_cluster_policy", "ip_gateway", ["10.9.9.9", "not-an-ip"])
    add("nic_cluster_policy", "selectors.vendors", [["zzzz"], ["15b"], [LONG]])
    add("nic_cluster_policy", "selectors.device_ids", [["xyz"], ["1017a"]])
    add("nic_cluster_policy", "selectors.interfaces", [[LONG], ["a/b"], ["has space"], [""]])
    add("nic_cluster_policy", "selectors.link_type", ["token-ring"])
    add("nic_cluster_policy", "rdma_hca_max", [0, -1, 100000])
    add("nic_cluster_policy", "resource_name", ["has space", "a/b", LONG, "rdma/x"])
    add("nic_cluster_policy", "network_name", NAMES[:6])
    add("nic_cluster_policy", "network_namespace", NAMES[:6])
    add("nic_cluster_policy", "operator_namespace", ["UPPER", TRAVERSAL, LONG])
    add("nic_cluster_policy", "nv_ipam_pool", ["UPPER", TRAVERSAL])
    add("nic_cluster_policy", "nv_ipam_block_size", [0, -4, 1 << 40])
    add("nic_cluster_policy", "image_mirrors", [{"nvcr.io": "https://u:p@x.example.com"}, {"nvcr.io": "harbor"},
                                                {"nvcr.io": "x.example.com/a:b"}], named="image_mirrors.nvcr.io")
    add("nic_cluster_policy", "image_mirrors", [{"not a host": "x.example.com"}], named="image_mirrors.not a host")
    add("nic_cluster_policy", "mode", ["none", "infiniband"])
    # mig_profile
    add("mig_profile", "profile", ["", LONG, "all-9g.99gb!", TRAVERSAL, "has space"])
    add("mig_profile", "nodes", [[LONG], [TRAVERSAL], [""], ["UPPER"]], named="nodes[0]")
    add("mig_profile", "max_unavailable", [0, -1])
    add("mig_profile", "wait_timeout", ["forever", "-1m", "0"])
    add("mig_profile", "config_map_name", [LONG, TRAVERSAL, "UPPER"])
    add("mig_profile", "operator_namespace", [LONG, TRAVERSAL, "UPPER"])
    add("mig_profile", "strategy", ["none", "all"])
    # smoke_test
    add("smoke_test", "image", ["nvcr.io/nvidia/cuda", "nvcr.io/nvidia/cuda:latest", "UPPER/x:1", TRAVERSAL, "",
                                "x:" + LONG])
    add("smoke_test", "namespace", NAMES[:6] + [""])
    add("smoke_test", "resources", [{"nvidia.com/gpu": -1}, {"nvidia.com/gpu": "many"}, {"bad key!": 1}, {}])
    add("smoke_test", "suffix", [LONG, TRAVERSAL, "UPPER"])
    add("smoke_test", "timeout", [0, -5, 10 ** 9])
    add("smoke_test", "check", ["everything", ""])
    add("smoke_test", "node_selector", [{"bad key!": "x"}, {"k": "bad value!"}])
    # node_labels
    add("node_labels", "nodes[0].selector", ["", "a=b,", "((", "a in b", LONG + "=x"])
    add("node_labels", "nodes[0].labels", [{}, {"bad key!": "x"}, {"k": "v" * 64}, {"k": "bad value!"},
                                           {"kubernetes.io/" + "a" * 70: "x"}])
    add("node_labels", "nodes", [[], "nodepool=dra"])
    # node_maintenance
    add("node_maintenance", "name", [LONG, TRAVERSAL, "", "UPPER CASE"])
    add("node_maintenance", "pod_selector", ["((", "a in b"])
    add("node_maintenance", "wait_timeout", ["forever", "-1m", "0"])
    add("node_maintenance", "state", ["rebooted"])
    # gpu_driver_upgrade
    add("gpu_driver_upgrade", "node_selector", ["((", "a in b"])
    add("gpu_driver_upgrade", "driver_selector", ["((", "a in b"])
    add("gpu_driver_upgrade", "expected_driver_version", ["latest", "5", TRAVERSAL])
    add("gpu_driver_upgrade", "wait_timeout", ["forever", "-1m"])
    add("gpu_driver_upgrade", "stuck_timeout", ["forever", "0"])
    add("gpu_driver_upgrade", "poll_interval", [0, -1])
    add("gpu_driver_upgrade", "operator_namespace", [TRAVERSAL, "UPPER"])
    add("gpu_driver_upgrade", "nodes", [[TRAVERSAL], [LONG]])
    # gpu_driver_mode
    add("gpu_driver_mode", "mode", ["both", ""])
    add("gpu_driver_mode", "node_selector", ["((", "a in b"])
    add("gpu_driver_mode", "hosts", [["not a dict"]])
    add("gpu_driver_mode", "hosts", [[{"name": TRAVERSAL, "host": "x"}]], named="hosts[0]")  # no node_name
    # kube auth, on every module that reaches a cluster
    for module in sorted(BASES):  # a connection option: checked where a cluster is reached, unused when rendering
        add(module, "api_read_timeout", [0, -1, 99999], modes=["direct"])
    return out


CASES = [(m, p, v, named, drop, mode) for m, p, v, named, drop, modes in rows()
         for mode in (modes or (["direct", "render"] if m in RENDERS else ["direct"]))]
CONTROLS = sorted({(m, mode) for m, dummy_p, dummy_v, dummy_n, dummy_d, mode in CASES})

# Ansible's own argument-spec checks (choices, types, sub-options) name the option in their own words; the
# collection's messages start with "<path>: ". Either way the option is named exactly, by its whole path.
ANSIBLE_FORMS = (
    r"value of {path} must be one of: ",
    r"Elements value for option '{path}' is of type ",
    r"argument '{path}' is of type ",
    r"Unsupported parameters for \([^)]*\) module: {path}\. Supported parameters include: ",
    r"missing required arguments: [\w, ]+ found in {path}$",
)


def names_option(message, path):
    """Whether ``message`` names the option ``path`` exactly (not a longer path that starts with it, nor a shorter
    one it ends with)."""
    if message.startswith(path + ": "):
        return True
    return any(re.match(form.format(path=re.escape(path)), message) for form in ANSIBLE_FORMS)


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


def case_params(module, mode, kubeconfig, bundle, path=None, value=None, drop=()):
    params = copy.deepcopy(BASES[module])
    for name in drop:
        del params[name]
    if path is not None:
        set_path(params, path, copy.deepcopy(value))
    if mode == "render":
        params["render_to"] = str(bundle)
    else:
        params["kubeconfig"] = kubeconfig
    return params


@pytest.fixture
def api(fake_api_factory):
    """The fake cluster every row and every control runs on: a MIG-capable GPU node that a MIG manager serves, the
    namespaces the bases name, the GPU Operator's ClusterPolicy and driver DaemonSet, and CUDA pods that pass, so
    that each module's base runs to the end on it (the controls) and a row is refused for its value, not for
    something missing from the cluster."""
    server = fake_api_factory(controllers=[SmokePods({"cuda": Outcome("Succeeded", NVIDIA_SMI)}), MigManager()]
                              + default_controllers(), require_namespaces=True)
    server.store.create({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": "gpu-a", "labels": {"nodepool": "dra", "nvidia.com/mig.capable": "true",
                                                                  "nvidia.com/gpu.present": "true",
                                                                  "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}})
    for namespace in NAMESPACES:
        server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    server.store.create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                         "spec": {"driver": {"enabled": True}}})
    driver = {"app": "nvidia-driver-daemonset"}
    server.store.create({"apiVersion": "apps/v1", "kind": "DaemonSet",
                         "metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator", "labels": driver},
                         "spec": {"selector": {"matchLabels": driver},
                                  "template": {"metadata": {"labels": driver},
                                               "spec": {"containers": [{"name": "driver", "image": "driver:1"}]}}}})
    server.clear_log()
    return server


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 300, len(CASES)
    assert {m for m, *dummy in CASES} == set(BASES), "every module"


def test_each_row_expects_its_own_option_or_one_under_it():
    wrong = [(m, p, named) for m, p, dummy_v, named, dummy_d, dummy_mode in CASES
             if named != p and not named.startswith((p + ".", p + "["))]
    assert wrong == []


@pytest.mark.parametrize("message, path, named", [
    ("objects[0].kind: 'a/b' is not a kind", "objects[0].kind", True),
    ("objects[0].kind: 'a/b' is not a kind", "kind", False),
    ("objects[0].kind: 'a/b' is not a kind", "objects", False),
    ("objects[0].metadata.name: is missing", "objects[0].metadata", False),
    ("chart_repo_url: must not be set with an oci:// chart_ref", "chart_ref", False),
    ("value of state must be one of: present, absent, got: gone", "state", True),
    ("value of state must be one of: present, absent, got: gone", "tate", False),
    ("Elements value for option 'objects' is of type int", "objects", True),
    ("argument 'release_values' is of type list", "release_values", True),
    ("Unsupported parameters for (basic.py) module: depends_on.kind. Supported parameters include: name.",
     "depends_on.kind", True),
    ("Unsupported parameters for (basic.py) module: depends_on.kind. Supported parameters include: name.",
     "depends_on", False),
    ("missing required arguments: labels, selector found in nodes", "nodes", True),
    ("missing required arguments: labels, selector found in nodes[0]", "nodes", False),
])
def test_names_option_matches_the_whole_path_only(message, path, named):
    assert names_option(message, path) is named


@pytest.mark.parametrize("module, mode", CONTROLS, ids=["%s-%s" % c for c in CONTROLS])
def test_each_base_is_accepted_as_the_control(api, tmp_path, module, mode):
    """The base a row changes is valid: run as it is, it succeeds, so a row's failure is its own value's.
    helm_pinned_release's base names NVIDIA's chart repository, which this machine does not reach: on the cluster it
    runs in check mode, which reads the cluster and the release but fetches no chart."""
    bundle = tmp_path / "bundle" / "unit"
    params = case_params(module, mode, api.kubeconfig, bundle)
    check_mode = module == "helm_pinned_release" and mode == "direct"
    failed, result = run_module(module, params, check_mode=check_mode)
    assert not failed, result.get("msg")
    if mode == "render":
        assert any(p.is_file() for p in bundle.rglob("*")), "render mode wrote nothing"
        assert api.request_log == [], "render mode reached the cluster"
    else:
        assert api.request_log, "the module did not reach the cluster"


DIRECT = [c for c in CASES if c[5] == "direct"]
RENDERED = [c for c in CASES if c[5] == "render"]


@pytest.fixture(scope="module")
def corpus_cluster():
    """A real control plane of its own for the rows on a cluster, bare (no chart repository, operators or agents: a
    refused row needs nothing of them), stopped after this module's last test. Its audit log is the judge of
    "sends no write": a row runs with a credential of its own, and no create, update, patch or delete of that
    credential may reach the API server, on any object."""
    yield from fleet_cluster(ROOT / "build" / "test-cluster-corpus", None, 1, "--bare")


@pytest.fixture(scope="module")
def corpus_kubeconfig(corpus_cluster):
    return corpus_cluster.kubeconfig_for(RUN_USER)


def _refused_naming(result, named):
    message = str(result.get("msg", ""))
    assert names_option(message, named), "the message does not name %s: %s" % (named, message)
    assert "Traceback" not in message


def _nothing_written_outside_render_to(tmp_path):
    # tmp/ and home/ hold the Kubernetes client's discovery cache (local_gpu_cluster/fixtures.isolate_client_caches).
    assert [p for p in tmp_path.rglob("*") if p.is_file() and "bundle" not in str(p)
            and not p.name.startswith("kubeconfig")
            and p.relative_to(tmp_path).parts[0] not in ("tmp", "home")] == [], "a file written outside render_to"


@pytest.mark.parametrize("module, path, value, named, drop, mode", DIRECT,
                         ids=["%s-%s-%d-%s" % (c[0], c[1], i, c[5]) for i, c in enumerate(DIRECT)])
def test_a_hostile_input_on_a_cluster_is_refused_naming_it_and_writes_nothing(
        corpus_cluster, corpus_kubeconfig, tmp_path, monkeypatch, module, path, value, named, drop, mode):
    isolate_client_caches(tmp_path, monkeypatch)
    params = case_params(module, mode, corpus_kubeconfig, tmp_path / "bundle" / "unit", path, value, drop)
    mark = corpus_cluster.audit.mark()
    failed, result = run_module(module, params)
    assert failed, "accepted: %r" % (result,)
    _refused_naming(result, named)
    written = corpus_cluster.audit.writes(mark, user=RUN_USER)
    assert written == [], "a write reached the API server:\n" + describe(written)
    _nothing_written_outside_render_to(tmp_path)


def test_the_rows_credential_reaches_the_cluster_and_its_writes_are_named(corpus_cluster, corpus_kubeconfig,
                                                                          tmp_path, monkeypatch):
    """The judge above is not idle: the rows' credential works on the cluster (a valid base applied with it), and
    the audit log names that write under the credential, as it would name any row's."""
    isolate_client_caches(tmp_path, monkeypatch)
    mark = corpus_cluster.audit.mark()
    failed, result = run_module("manifests", case_params("manifests", "direct", corpus_kubeconfig, tmp_path))
    assert not failed, result.get("msg")
    written = corpus_cluster.audit.writes(mark, user=RUN_USER)
    assert [(w.verb, w.resource, w.namespace, w.name) for w in written] == [
        ("patch", "configmaps", "default", "settings")], describe(written)


@pytest.mark.parametrize("module, path, value, named, drop, mode", RENDERED,
                         ids=["%s-%s-%d-%s" % (c[0], c[1], i, c[5]) for i, c in enumerate(RENDERED)])
def test_a_hostile_input_to_render_is_refused_naming_it_and_writes_no_file(tmp_path, module, path, value, named,
                                                                           drop, mode):
    params = case_params(module, mode, None, tmp_path / "bundle" / "unit", path, value, drop)
    assert "kubeconfig" not in params
    failed, result = run_module(module, params)
    assert failed, "accepted: %r" % (result,)
    _refused_naming(result, named)
    assert not (tmp_path / "bundle").exists() or not any(p.is_file() for p in (tmp_path / "bundle").rglob("*"))
    _nothing_written_outside_render_to(tmp_path)
