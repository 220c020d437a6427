"""Table-driven tests of the driver_mode domain: who owns the NVIDIA driver (host, cloud image or the GPU
Operator), over every combination of per-node and cluster evidence, checked against an independent oracle
written here from the rules in the module's docstring and comments; refusal messages; bad inputs."""
import copy
import itertools

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import driver_mode, host_facts
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

VERSION = "535.247.01"
PACKAGE = ("nvidia-driver-535-server", "535.247.01-0ubuntu0.22.04.1")
TOOLKIT = {"nvidia-container-toolkit": "1.17.8-1", "nvidia-container-toolkit-base": "1.17.8-1"}
SMI = "/usr/bin/nvidia-smi"

# ---------------------------------------------------------------- evidence builders


def facts(state, toolkit):
    """gpu_host_facts output (the shape host_facts.summarize returns) for a host whose driver is
    'loaded' (a .run install: module loaded, no packages), 'packages' (installed, not loaded yet) or 'neither'."""
    loaded = state == "loaded"
    return {
        "node_name": "ignored", "gpu_present": True, "gpus": [{"address": "0000:3b:00.0", "device": "0x2330"}],
        "driver_loaded": loaded, "driver_version": VERSION if loaded else "",
        "modules": ["nvidia", "nvidia_uvm"] if loaded else [], "peermem_loaded": False, "nouveau_loaded": False,
        "driver_packages": dict([PACKAGE]) if state == "packages" else {},
        "toolkit_packages": dict(TOOLKIT) if toolkit else {},
        "nvidia_smi": SMI if state != "neither" else "",
    }


def pod_name(name):
    return "gpu-operator/nvidia-driver-daemonset-%s" % name


def make_node(name, ev):
    """``ev``: {host: None|'loaded'|'packages'|'neither', toolkit, preinstalled, gfd, pod, in_cluster}."""
    labels = None
    if ev["in_cluster"]:
        labels = {"nvidia.com/gpu.present": "true", "kubernetes.io/hostname": name}
        if ev["preinstalled"]:
            labels["nvidia.com/gpu.deploy.driver"] = "pre-installed"
        if ev["gfd"]:
            labels["nvidia.com/cuda.driver.major"] = "535"
    return {"name": name, "host": facts(ev["host"], ev["toolkit"]) if ev["host"] else None, "labels": labels,
            "driver_pods": [pod_name(name)] if ev["pod"] else []}


def ev(host=None, toolkit=False, preinstalled=False, gfd=False, pod=False, in_cluster=True):
    return {"host": host, "toolkit": toolkit, "preinstalled": preinstalled, "gfd": gfd, "pod": pod,
            "in_cluster": in_cluster}


def single_node_evidence():
    """Every combination for one node: host facts absent / driver loaded / packages / neither (with and
    without a host toolkit), pre-installed label, GFD driver label, operator driver pod."""
    hosts = [(None, False)] + list(itertools.product(("loaded", "packages", "neither"), (False, True)))
    for (host, toolkit), pre, gfd, pod in itertools.product(hosts, (False, True), (False, True), (False, True)):
        yield ev(host, toolkit, pre, gfd, pod)


SINGLE = list(single_node_evidence())
# A smaller set per node for two-node clusters, so that every mix of two kinds of node is covered.
SMALL = [
    ev(),                                       # a cluster node without any driver and without a host
    ev(gfd=True),                               # GFD says a driver works, no operator pod, no host
    ev(preinstalled=True),                      # the operator labelled it pre-installed, no host
    ev(gfd=True, pod=True),                     # the operator's driver runs here (GFD label too)
    ev("neither"),                              # managed host, no driver yet
    ev("neither", pod=True),                    # managed host, operator driver pod
    ev("loaded", toolkit=True),                 # managed host with a loaded driver and a host toolkit
    ev("packages"),                             # managed host with driver packages, not loaded
    ev("loaded", pod=True, gfd=True),           # both owners on one node
    ev("neither", in_cluster=False),            # an inventory host not (yet) a node
]
# driver_enabled None: the ClusterPolicy does not set driver.enabled.
POLICIES = [None] + [{"name": "cluster-policy", "use_nvidia_driver_crd": crd, "driver_enabled": enabled}
                     for crd, enabled in itertools.product((True, False), (True, False, None))]
CLUSTERS = [(policy, drivers) for policy in POLICIES for drivers in ([], ["default"])]
RDMA = [(False, False), (True, False), (True, True)]


def make_cluster(policy, drivers):
    if policy is None and not drivers:
        return None  # the default: nothing read from the cluster
    return {"cluster_policy": copy.deepcopy(policy), "nvidia_drivers": list(drivers)}


# ---------------------------------------------------------------- the oracle


def node_truth(name, e, cloud):
    """What the rules say about one node: host driver?, operator driver?, host toolkit?, and the findings
    text that must (and must not) appear for it."""
    host_own = e["host"] in ("loaded", "packages") or e["preinstalled"]
    gfd_counts = e["gfd"] and not e["pod"] and not host_own
    must = []
    if e["host"] == "loaded":
        must.append("driver %s loaded" % VERSION)
    if e["host"] == "packages":
        must.append("driver packages installed: %s %s" % PACKAGE)
    if e["preinstalled"]:
        must.append("nvidia.com/gpu.deploy.driver=pre-installed")
    if gfd_counts:
        must.append("nvidia.com/cuda.driver.major=535")
    if cloud == "present":
        must.append("cloud_driver=present")
    if e["pod"]:
        must.append("operator driver pod %s" % pod_name(name))
    if not must:
        must.append("no NVIDIA driver found")
    must_not = ([] if gfd_counts else ["cuda.driver.major"]) + (
        ["nvidia-smi at"] if e["host"] in ("loaded", "packages") else [])  # only when nothing else is found
    return {
        "name": name,
        "managed": e["host"] is not None,
        "host_driver": host_own or gfd_counts or cloud == "present",
        "operator_driver": e["pod"],
        "host_toolkit": (e["host"] is not None and e["toolkit"]) or cloud == "present",
        "must": must, "must_not": must_not,
    }


def oracle(mode, named, policy, drivers, cloud, rdma, mofed):
    """The expected outcome: ('refuse', kind, [offending names], counts) or ('ok', expected result fields)."""
    nodes = sorted((node_truth(name, e, cloud) for name, e in named), key=lambda n: n["name"])
    names = [n["name"] for n in nodes]
    both = [n["name"] for n in nodes if n["host_driver"] and n["operator_driver"]]
    if both:
        return "refuse", "both", both, (len(both),)
    with_host = [n["name"] for n in nodes if n["host_driver"]]
    without = [n for n in nodes if not n["host_driver"]]
    chosen = mode
    if mode == "auto":
        if with_host and without:
            return "refuse", "mixed", names, (len(with_host), len(without))
        chosen = "host" if with_host else "operator"
    toolkit = not (cloud == "present" or (nodes and all(n["host_toolkit"] for n in nodes)))
    if chosen == "operator":
        if with_host:
            return "refuse", "host_in_operator", with_host, (len(with_host),)
        crd = {"enabled": True, "deployDefaultCR": False} if drivers else {"enabled": False}
        values = {"driver": {"enabled": True, "nvidiaDriverCRD": crd,
                             "rdma": {"enabled": rdma, "useHostMofed": mofed}},
                  "toolkit": {"enabled": toolkit}}
        owner, peermem = "operator", "operator"
    else:
        in_the_way = [n["name"] for n in nodes if n["operator_driver"]]
        if drivers or (policy and policy["use_nvidia_driver_crd"]):
            in_the_way.append("cluster")
        if in_the_way:
            return "refuse", "operator_in_host", in_the_way, ()
        unmanaged = [n["name"] for n in without if not n["managed"]]
        if unmanaged:
            return "refuse", "unmanaged", unmanaged, (len(unmanaged),)
        values = {"driver": {"enabled": False, "nvidiaDriverCRD": {"enabled": False}}, "toolkit": {"enabled": toolkit}}
        owner = "cloud" if cloud == "present" else "host"
        peermem = "host" if nodes and all(n["managed"] for n in nodes) and owner == "host" else "daemonset"
    return "ok", {"mode": chosen, "owner": owner, "peermem": peermem, "values": values, "nodes": nodes}


HEADLINES = {
    "both": "Both a host driver and the GPU Operator's driver container are on %d node(s)",
    "mixed": "gpu_platform_driver_mode is auto but the GPU nodes disagree: %d have a host driver and %d do not",
    "host_in_operator": "gpu_platform_driver_mode is operator but %d GPU node(s) already have a host driver",
    "operator_in_host": "gpu_platform_driver_mode is host but the GPU Operator deploys drivers",
    "unmanaged": "gpu_platform_driver_mode is host but %d GPU node(s) have no driver and no host in the gpu_hosts",
}


def segment(msg, name):
    """The findings the message gives for ``name`` ('<name>: f1, f2; <next>: ...' up to '. Either (1)')."""
    start = msg.index("%s: " % name)
    ends = [i for i in (msg.find("; ", start), msg.find(". Either (1)", start)) if i != -1]
    return msg[start + len(name) + 2:min(ends)]


def check(mode, named, policy, drivers, cloud, rdma, mofed):
    """Compare decide() with the oracle; return a list of problems (empty when they agree)."""
    nodes = [make_node(name, e) for name, e in named]
    given = copy.deepcopy(nodes)
    expected = oracle(mode, named, policy, drivers, cloud, rdma, mofed)
    problems = []
    try:
        got = driver_mode.decide(mode, nodes, make_cluster(policy, drivers), cloud_driver=cloud, rdma=rdma,
                                 host_mofed=mofed)
    except Refusal as exc:
        if expected[0] != "refuse":
            return ["refused, expected %r: %s" % (expected[1], exc.msg)]
        dummy, kind, offending, counts = expected
        msg = exc.msg
        if not msg.startswith(HEADLINES[kind] % counts):
            problems.append("expected refusal %r (%s), got: %s" % (kind, HEADLINES[kind] % counts, msg))
        if driver_mode.WAYS_OUT[kind] not in msg:
            problems.append("the ways out of %r are missing: %s" % (kind, msg))
        if "Either (1)" not in msg or "(2)" not in msg or not msg.endswith("Nothing was changed."):
            problems.append("no two ways out / 'Nothing was changed': %s" % msg)
        if "nodes" not in exc.details or sorted(n["name"] for n in exc.details["nodes"]) != sorted(offending):
            problems.append("details['nodes'] is not %s: %r" % (offending, exc.details.get("nodes")))
        truths = {n["name"]: n for n in (node_truth(name, e, cloud) for name, e in named)}
        for name in (n for n, dummy in named):
            if name not in offending and "%s: " % name in msg:
                problems.append("%s is named but not in the way: %s" % (name, msg))
        for name in offending:
            if "%s: " % name not in msg:
                problems.append("%s is not named: %s" % (name, msg))
                continue
            text = segment(msg, name)
            if name == "cluster":
                must = (["NVIDIADriver objects default"] if drivers else []) + (
                    ["ClusterPolicy cluster-policy has driver.useNvidiaDriverCRD=true"]
                    if policy and policy["use_nvidia_driver_crd"] else [])
                if policy and policy["use_nvidia_driver_crd"] and policy["driver_enabled"] is False:
                    must.append("gpu-operator#1795")
                must_not = [] if (policy and policy["use_nvidia_driver_crd"]) else ["ClusterPolicy"]
                if not (policy and policy["driver_enabled"] is False):
                    must_not.append("gpu-operator#1795")
            else:
                must, must_not = truths[name]["must"], truths[name]["must_not"]
            problems += ["%s: %r not in %r" % (name, m, text) for m in must if m not in text]
            problems += ["%s: %r should not be in %r" % (name, m, text) for m in must_not if m in text]
        return problems
    if expected[0] != "ok":
        return ["expected refusal %r of %s, got mode %s owner %s" % (
            expected[1], expected[2], got["mode"], got["owner"])]
    want = expected[1]
    for key in ("mode", "owner", "peermem"):
        if got[key] != want[key]:
            problems.append("%s: got %r, expected %r" % (key, got[key], want[key]))
    if got["requested"] != mode or got["rdma"] is not rdma:
        problems.append("requested/rdma not echoed: %r %r" % (got["requested"], got["rdma"]))
    if got["gpu_operator_values"] != want["values"]:
        problems.append("values: got %r, expected %r" % (got["gpu_operator_values"], want["values"]))
    if not got["reason"].startswith("auto:" if mode == "auto" else "requested: %s" % mode):
        problems.append("reason %r" % got["reason"])
    keys = ("name", "managed", "host_driver", "operator_driver", "host_toolkit")
    if [{k: n[k] for k in keys} for n in got["nodes"]] != [{k: n[k] for k in keys} for n in want["nodes"]]:
        problems.append("nodes: %r" % got["nodes"])
    for n, truth in zip(got["nodes"], want["nodes"]):
        text = ", ".join(n["findings"])
        problems += ["%s: %r not in findings %r" % (n["name"], m, text) for m in truth["must"] if m not in text]
        problems += ["%s: %r in findings %r" % (n["name"], m, text) for m in truth["must_not"] if m in text]
    if nodes != given:
        problems.append("decide() changed its input")
    return problems


def run_table(cases):
    failures = []
    count = 0
    for mode, named, policy, drivers, cloud, rdma, mofed in cases:
        count += 1
        problems = check(mode, named, policy, drivers, cloud, rdma, mofed)
        if problems:
            failures.append("mode=%s cloud=%s rdma=%s/%s policy=%r drivers=%r nodes=%r:\n    %s" % (
                mode, cloud, rdma, mofed, policy, drivers, named, "\n    ".join(problems)))
    return count, failures


OUTER = list(itertools.product(driver_mode.MODES, driver_mode.CLOUD_DRIVER, RDMA))


def _outer_id(p):
    mode, cloud, (rdma, mofed) = p
    return "%s-cloud_%s-rdma%s-mofed%s" % (mode, cloud, rdma, mofed)


# ---------------------------------------------------------------- the exhaustive tables


@pytest.mark.parametrize("outer", OUTER, ids=[_outer_id(p) for p in OUTER])
def test_single_node_every_combination(outer):
    mode, cloud, (rdma, mofed) = outer
    cases = ((mode, [("gpu-node-1", e)], policy, drivers, cloud, rdma, mofed)
             for e in SINGLE for policy, drivers in CLUSTERS)
    count, failures = run_table(cases)
    assert count == 56 * len(CLUSTERS) == 56 * 14
    assert not failures, "%d of %d cases disagree with the oracle:\n%s" % (
        len(failures), count, "\n".join(failures[:8]))


@pytest.mark.parametrize("outer", OUTER, ids=[_outer_id(p) for p in OUTER])
def test_two_nodes_every_mix(outer):
    mode, cloud, (rdma, mofed) = outer
    cases = ((mode, [("gpu-b", b), ("gpu-a", a)], policy, drivers, cloud, rdma, mofed)
             for a, b in itertools.product(SMALL, SMALL) for policy, drivers in CLUSTERS)
    count, failures = run_table(cases)
    assert count == len(SMALL) ** 2 * len(CLUSTERS)
    assert not failures, "%d of %d cases disagree with the oracle:\n%s" % (
        len(failures), count, "\n".join(failures[:8]))


# Zero nodes with cloud_driver=present are the subject of the xfail tests below.
NO_NODES = [p for p in OUTER if p[1] != "present"]


@pytest.mark.parametrize("outer", NO_NODES, ids=[_outer_id(p) for p in NO_NODES])
def test_no_nodes_yet(outer):
    mode, cloud, (rdma, mofed) = outer
    count, failures = run_table((mode, [], policy, drivers, cloud, rdma, mofed) for policy, drivers in CLUSTERS)
    assert count == len(CLUSTERS)
    assert not failures, "\n".join(failures)


def test_the_tables_cover_every_outcome():
    """The oracle reaches every refusal and every (mode, owner, peermem) over the tables above."""
    outcomes = set()
    for mode, cloud, (rdma, mofed) in OUTER:
        for e in SINGLE:
            for policy, drivers in CLUSTERS:
                got = oracle(mode, [("n", e)], policy, drivers, cloud, rdma, mofed)
                outcomes.add(got[1] if got[0] == "refuse" else (got[1]["mode"], got[1]["owner"], got[1]["peermem"]))
        for a, b in itertools.product(SMALL, SMALL):
            got = oracle(mode, [("a", a), ("b", b)], None, [], cloud, rdma, mofed)
            outcomes.add(got[1] if got[0] == "refuse" else (got[1]["mode"], got[1]["owner"], got[1]["peermem"]))
    assert outcomes == {"both", "mixed", "host_in_operator", "operator_in_host", "unmanaged",
                        ("operator", "operator", "operator"), ("host", "host", "host"),
                        ("host", "host", "daemonset"), ("host", "cloud", "daemonset")}


# ---------------------------------------------------------------- chosen examples, spelled out


def test_operator_keeps_the_nvidiadriver_crd_when_objects_exist():
    node = make_node("gpu-a", ev(gfd=True, pod=True))
    got = driver_mode.decide("operator", [node], {"cluster_policy": None, "nvidia_drivers": ["a100", "h100"]})
    assert got["gpu_operator_values"]["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
    got = driver_mode.decide("operator", [node], {"cluster_policy": POLICIES[1], "nvidia_drivers": []})
    assert got["gpu_operator_values"]["driver"]["nvidiaDriverCRD"] == {"enabled": False}


def test_auto_with_every_node_managed_and_loaded_is_host_with_host_peermem_and_no_toolkit():
    nodes = [make_node(n, ev("loaded", toolkit=True)) for n in ("gpu-b", "gpu-a")]
    got = driver_mode.decide("auto", nodes, rdma=True, host_mofed=True)
    assert (got["mode"], got["owner"], got["peermem"]) == ("host", "host", "host")
    assert got["gpu_operator_values"] == {"driver": {"enabled": False, "nvidiaDriverCRD": {"enabled": False}},
                                          "toolkit": {"enabled": False}}
    assert [n["name"] for n in got["nodes"]] == ["gpu-a", "gpu-b"]
    assert got["reason"] == "auto: every GPU node (2) has a host driver"


def test_one_node_without_a_host_toolkit_keeps_the_operator_toolkit():
    nodes = [make_node("gpu-a", ev("loaded", toolkit=True)), make_node("gpu-b", ev("loaded", toolkit=False))]
    assert driver_mode.decide("host", nodes)["gpu_operator_values"]["toolkit"] == {"enabled": True}


def test_nvidia_smi_alone_counts_as_a_host_driver():
    host = facts("neither", False)
    host["nvidia_smi"] = SMI
    node = {"name": "gpu-a", "host": host, "labels": {}, "driver_pods": []}
    assert driver_mode.classify(node)["host_driver"] is True
    with pytest.raises(Refusal) as info:
        driver_mode.decide("operator", [node])
    assert "gpu-a: nvidia-smi at %s" % SMI in info.value.msg


def test_every_driver_pod_is_named_in_sorted_order():
    node = {"name": "gpu-a", "host": facts("packages", False), "labels": {},
            "driver_pods": ["gpu-operator/nvidia-gpu-driver-ubuntu22.04-x", "gpu-operator/nvidia-driver-daemonset-y"]}
    with pytest.raises(Refusal) as info:
        driver_mode.decide("auto", [node])
    assert ("operator driver pod gpu-operator/nvidia-driver-daemonset-y, operator driver pod "
            "gpu-operator/nvidia-gpu-driver-ubuntu22.04-x") in info.value.msg


def test_host_facts_summary_feeds_decide():
    """The facts gpu_host_facts builds (host_facts.summarize) are what classify reads."""
    summary = host_facts.summarize(
        "gpu-a", {"0000:3b:00.0": {"vendor": "0x10de\n", "class": "0x030200\n", "device": "0x2330\n"}},
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.247.01  Sat Apr 26 00:45:16 UTC 2025\n",
        "nvidia 56778752 2 nvidia_uvm, Live 0x0000000000000000 (POE)\n", {"nvidia-container-toolkit": "1.17.8-1"},
        SMI)
    got = driver_mode.classify({"name": "gpu-a", "host": summary, "labels": None, "driver_pods": []})
    assert got["host_driver"] and got["managed"] and got["host_toolkit"] and not got["in_cluster"]
    assert got["findings"] == ["driver 535.247.01 loaded (/proc/driver/nvidia/version)"]


# ---------------------------------------------------------------- bugs these tests found (fixed)

AKS_NOTE = ("cloud_driver=present says every GPU node's image ships the driver (e.g. an autoscaled AKS GPU pool "
            "at zero nodes), but with no node seen yet it is ignored")


def test_auto_without_nodes_follows_a_cloud_driver():
    got = driver_mode.decide("auto", [], cloud_driver="present")
    assert got["mode"] == "host" and got["owner"] == "cloud"
    assert got["gpu_operator_values"]["driver"]["enabled"] is False


def test_operator_without_nodes_refuses_a_cloud_driver():
    with pytest.raises(Refusal):
        driver_mode.decide("operator", [], cloud_driver="present")


def test_host_without_nodes_turns_the_toolkit_off_for_a_cloud_driver():
    got = driver_mode.decide("host", [], cloud_driver="present")
    assert got["gpu_operator_values"]["toolkit"] == {"enabled": False}


# ---------------------------------------------------------------- bad inputs

BOTH_NODE = [make_node("gpu-a", ev("loaded", pod=True))]
BAD = [
    # (changes, field, words in the problem, words in the fix)
    ({"mode": "Host"}, "mode", "'Host' is not a driver mode", "use host"),
    ({"mode": "hybrid"}, "mode", "'hybrid' is not a driver mode", "auto"),
    ({"mode": None}, "mode", "None is not a driver mode", "operator"),
    ({"cloud_driver": "yes"}, "cloud_driver", "'yes' is not one of unknown, present, absent", "--gpu-driver none"),
    ({"cloud_driver": None}, "cloud_driver", "None is not one of", "use present"),
    ({"cloud_driver": True}, "cloud_driver", "True is not one of", "use present"),
    ({"rdma": "true"}, "rdma", "'true' is not true or false", "set it to true or false"),
    ({"rdma": 1}, "rdma", "1 is not true or false", "set it to true or false"),
    ({"rdma": None}, "rdma", "None is not true or false", "set it to true or false"),
    ({"rdma": True, "host_mofed": "yes"}, "host_mofed", "'yes' is not true or false", "set it to true or false"),
    ({"host_mofed": 0}, "host_mofed", "0 is not true or false", "set it to true or false"),
    ({"host_mofed": True}, "host_mofed", "is true but rdma is false", "enable rdma or drop host_mofed"),
    ({"rdma": False, "host_mofed": True}, "host_mofed", "is true but rdma is false", "enable rdma"),
]


@pytest.mark.parametrize("changes, field, words, fix", BAD)
def test_bad_input_names_the_field_and_the_fix(changes, field, words, fix):
    args = {"mode": "auto", "cloud_driver": "unknown", "rdma": False, "host_mofed": False}
    args.update(changes)
    with pytest.raises(ParamError) as info:  # checked before any node (this one would be refused)
        driver_mode.decide(args["mode"], BOTH_NODE, None, cloud_driver=args["cloud_driver"], rdma=args["rdma"],
                           host_mofed=args["host_mofed"])
    err = info.value
    assert err.field == field and err.details == {"field": field}
    assert str(err).startswith(field + ": ")
    assert words in str(err)
    dummy, fix_text = str(err).split(". Fix: ", 1)
    assert fix in fix_text


def test_check_inputs_accepts_every_valid_combination():
    for mode, cloud, (rdma, mofed) in OUTER:
        assert driver_mode.check_inputs(mode, cloud, rdma, mofed) is None
