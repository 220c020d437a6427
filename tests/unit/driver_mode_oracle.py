"""Evidence builders and an independent oracle for the gpu_driver_mode domain tests: who owns the NVIDIA driver
(host, cloud image or the GPU Operator), written here from the rules in the module's docstring and comments."""
import copy
import itertools

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import Refusal

VERSION = "535.247.01"
PACKAGE = ("nvidia-driver-535-server", "535.247.01-0ubuntu0.22.04.1")
TOOLKIT = {"nvidia-container-toolkit": "1.17.8-1", "nvidia-container-toolkit-base": "1.17.8-1"}
SMI = "/usr/bin/nvidia-smi"


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
        got = gpu_driver_mode.decide(mode, nodes, make_cluster(policy, drivers), cloud_driver=cloud, rdma=rdma,
                                     host_mofed=mofed)
    except Refusal as exc:
        if expected[0] != "refuse":
            return ["refused, expected %r: %s" % (expected[1], exc.msg)]
        dummy, kind, offending, counts = expected
        msg = exc.msg
        if not msg.startswith(HEADLINES[kind] % counts):
            problems.append("expected refusal %r (%s), got: %s" % (kind, HEADLINES[kind] % counts, msg))
        if gpu_driver_mode.WAYS_OUT[kind] not in msg:
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


OUTER = list(itertools.product(gpu_driver_mode.MODES, gpu_driver_mode.CLOUD_DRIVER, RDMA))
