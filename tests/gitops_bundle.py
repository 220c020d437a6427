"""``make gitops-test``: the bundle site.yml renders converges on the real Flux controllers, in order.

    python -m tests.gitops_bundle [--keep]
    python -m tests.gitops_bundle --inventory inventories/aks --profile aks-nd-h100-v5 --gpu-nodes 2 \
        -e smoke_tests_nccl_image=<image pinned by digest> [--keep]

On a local control plane of its own with the Flux controllers (``up --gitops`` in ``build/gitops-cluster``):

1. **The flat layout fails** (the regression this layout fixes): the same platform's objects in one folder, applied
   by one Kustomization, are refused as a whole by the server-side dry-run ("no matches for kind"), and nothing
   of it is applied.
2. **Render and push**: ``site.yml -i inventories/cluster`` in render mode (the Network Operator at its previous
   pin), into a git working copy, pushed to the cluster's git server. The charts come from the cluster's loopback
   chart repository through the inventory's ``*_chart_repo_url`` overrides, at their pinned versions. The node
   labels the bundle leaves to a documented step (``*-node-labels.yaml``) are applied as docs/gitops.md says.
3. **Bootstrap one Kustomization at the root**, first with the RDMA shared device plugin's node agent stuck on one
   node (``make cluster-fault``): the network-config unit's NicClusterPolicy health check (``healthCheckExprs``) keeps
   it not Ready, and the GPU Operator's unit applies nothing for 45 s; then unstuck, wait (bounded) until every
   Kustomization and HelmRelease is Ready; every object of every unit exists on the cluster (admitted by the real
   API server).
4. **A second render changes nothing**: no file differs, nothing to commit, and a reconcile on request applies
   no new revision and no new Helm release revision.
5. **Self-heal**: a ClusterQueue and the time-slicing ConfigMap deleted by hand are put back.
6. **A bumped pin rolls out in order**: the Network Operator's current pin rendered, committed and pushed; its
   HelmRelease upgrades (a second Helm revision, the new chart's image), the units that depend on it are applied
   at the new revision only after it, and everything is Ready again.

It writes ``kubectl get kustomizations,helmreleases -A -o json`` to ``build/gitops/status.json`` and prints, last,
``gitops: K/N Kustomizations Ready, H/M HelmReleases Ready``, counted from that same list: K and H are the bundle's
Kustomizations and HelmReleases read from the cluster and Ready, N and M how many the rendered bundle makes (its root
Kustomization included); fewer read or Ready than the bundle has, or a Flux object the bundle does not make, fails.
Any failure is one message naming the step, the object and its condition, and exits 1; the cluster is stopped unless
``--keep``. The verdicts themselves are pure functions in tests/gitops_checks.py, unit-tested in
tests/unit/test_gitops_checks.py.

With ``--inventory``, another inventory's bundle (its own choices, the charts from the cluster's chart repository
through the ``connection.yml`` the cluster writes) is rendered, pushed, bootstrapped and converged, steps 2 and 3
alone, on a cluster of the fleet ``--profile`` names (``CLUSTER_PROFILE``; bare as its provider hands it over) in
``build/gitops-cluster-<inventory>``, with ``build/gitops-<inventory>/status.json``; ``make gitops-test-aks`` runs
inventories/aks on the bare AKS ND H100 v5 pool. The same last line and verdicts.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.flux import RESOURCE, Worktree, kubectl, wait_for
from tests.gitops_checks import (expected_flux_objects, image_problems, is_ready, missing_crd_kind, nic_repositories,
                                 order_problem, ready_condition, ready_summary, ready_times, unit_objects, waiting_for)
from local_gpu_cluster import pins
from local_gpu_cluster.testing import ROOT, LocalCluster, cluster_command
from tests.upgrade import release as release_checkout
from tests.schema.bundle_order import order_problems

CLUSTER_DIR = ROOT / "build" / "gitops-cluster"
OUT = ROOT / "build" / "gitops"
INVENTORY = ROOT / "inventories" / "cluster"
# Where the inventory pulls nvcr.io's images from.
MIRROR = yaml.safe_load((INVENTORY / "group_vars" / "all" / "platform.yml").read_text(encoding="utf-8"))[
    "gpu_platform_image_mirrors"]["nvcr.io"]
# The bump: from release 0.2.0's Network Operator (its chart and operator served beside the pins'
# with CLUSTER_PREVIOUS_RELEASE; not a validated pair with GPU Operator v26.7.0, so acknowledged) to the pin.
PREVIOUS_NETWORK_OPERATOR = "26.4.0"
CURRENT_NETWORK_OPERATOR = pins.role_defaults("network_operator", ROOT)["network_operator_chart_version"]
UNVERIFIED = "gpu_platform_accept_unverified=true"
CONVERGE = 900  # seconds for the whole platform to become Ready
FLUX_NS = "flux-system"
ROOT_NAME = "gpu-platform"
SOURCE = "flux-system"  # the GitRepository flux bootstrap makes, which the bundle's Kustomizations name by default


class Failed(Exception):
    """A step did not show what it must; the message says which and why."""


def say(text):
    print("gitops-test: " + text, flush=True)


# -- rendering ---------------------------------------------------------------------------------------------------

def playbook(cluster, name, *args, inventory=INVENTORY):
    """ansible-playbook ``name`` with ``inventory`` against ``cluster``: the finished process. The cluster inventory
    finds the cluster itself (CLUSTER_DIR); any other gets the cluster's connection.yml first, so ``args`` override
    it."""
    env = dict(os.environ, CLUSTER_DIR=str(cluster.dir), ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    env.pop("KUBECONFIG", None)
    connection = [] if inventory == INVENTORY else ["-e", "@%s" % (cluster.dir / "connection.yml")]
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
               str(ROOT / name)] + connection + list(args)
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(ROOT), timeout=900, check=False)


def render(cluster, folder, *extra, inventory=INVENTORY):
    """site.yml in render mode with the inventory's choices into ``folder`` (./platform in the repository)."""
    args = ["-e", "gpu_platform_render_to=%s" % folder, "-e", "gpu_platform_flux_path=./platform"]
    for item in extra:
        args += ["-e", item]
    proc = playbook(cluster, "site.yml", *args, inventory=inventory)
    if proc.returncode != 0:
        raise Failed("rendering failed (%s):\n%s%s" % (" ".join(args), proc.stdout[-3000:], proc.stderr[-2000:]))
    problems = order_problems(folder)
    if problems:
        raise Failed("the rendered bundle's order is wrong:\n" + "\n".join(problems))


def label_nodes(cluster, folder, inventory=INVENTORY):
    """The documented step for the node labels the bundle does not apply (docs/gitops.md): playbooks/node_labels.yml.
    Its --check fails while the nodes differ from the bundle, the run applies them, and its --check then passes."""
    bundle = "gpu_platform_bundle=%s" % folder
    before = playbook(cluster, "playbooks/node_labels.yml", "--check", "-e", bundle, inventory=inventory)
    if before.returncode == 0 or "differ from the bundle's" not in before.stdout:
        raise Failed("node_labels.yml --check passed on unlabelled nodes:\n%s" % before.stdout[-2000:])
    applied = playbook(cluster, "playbooks/node_labels.yml", "-e", bundle, inventory=inventory)
    after = playbook(cluster, "playbooks/node_labels.yml", "--check", "-e", bundle, inventory=inventory)
    if applied.returncode != 0 or after.returncode != 0:
        raise Failed("node_labels.yml failed:\n%s\n%s" % (applied.stdout[-2000:], after.stdout[-2000:]))
    patches = sum(len((doc or {}).get("patches") or []) for path in sorted(folder.glob("*/*-node-labels.yaml"))
                  for doc in yaml.safe_load_all(path.read_text()))
    return "%d patches: --check failed before, applied, --check passed after" % patches


# -- the cluster's Flux objects -----------------------------------------------------------------------------------

STUCK = "rdma-shared-device-plugin:stuck:gpu-node-1"  # the network agent's fault on one RDMA node (docs/testing.md)
HELD = 45  # seconds the GPU Operator's unit must stay held back while the network is not ready


def fault(cluster, text):
    proc = cluster_command("fault", text, env=cluster.env())
    if proc.returncode != 0:
        raise Failed("make cluster-fault FAULT=%s failed: %s" % (text, proc.stderr.strip()))


def held_back(cluster, timeout=CONVERGE):
    """While the RDMA shared device plugin is stuck on a node, the network-config unit (its NicClusterPolicy's
    healthCheckExprs: status.state ready) stays not Ready, so the GPU Operator's unit, which depends on it, applies
    nothing: no gpu-operator HelmRelease for HELD seconds after the Network Operator's unit is Ready."""
    deadline = time.monotonic() + timeout

    def by_name():
        return {o["metadata"]["name"]: o for o in flux_list(cluster) if o["kind"] == "Kustomization"}
    while not is_ready(by_name().get("gpu-platform-network-operator")):
        if time.monotonic() > deadline:
            raise Failed("the network-operator unit is not Ready after %d s" % timeout)
        time.sleep(2)
    watched = time.monotonic()
    while time.monotonic() - watched < HELD:
        items = by_name()
        network, gpu = items.get("gpu-platform-network-config"), items.get("gpu-platform-gpu-operator")
        if is_ready(network):
            raise Failed("the network-config unit is Ready while the RDMA device plugin is stuck: %s"
                         % ready_condition(network))
        if exists(cluster, {"kind": "HelmRelease", "apiVersion": "helm.toolkit.fluxcd.io/v2",
                            "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"}}):
            raise Failed("the GPU Operator's HelmRelease was applied while the network is not ready")
        time.sleep(3)
    return ("network agent stuck (%s): network-config not Ready (%s), gpu-operator unit held back for %d s (%s)"
            % (STUCK, ready_condition(network).get("reason"), HELD, ready_condition(gpu).get("reason")))


def flux_list(cluster):
    proc = kubectl(cluster, "get", "%s,%s" % (RESOURCE["Kustomization"], RESOURCE["HelmRelease"]), "-A", "-o", "json")
    return json.loads(proc.stdout)["items"]


def wait_all_ready(cluster, expected, revision=None, timeout=CONVERGE):
    """Until every Kustomization (at ``revision``, when given) and HelmRelease the bundle makes (``expected``, from
    expected_flux_objects) exists and is Ready; returns the list read last."""
    deadline = time.monotonic() + timeout
    shown = None
    while True:
        items = flux_list(cluster)
        waiting = waiting_for(items, expected, revision)
        if not waiting:
            return items
        if len(waiting) != shown:
            shown = len(waiting)
            say("waiting for %d: %s" % (len(waiting), waiting[0]))
        if time.monotonic() > deadline:
            raise Failed("not Ready after %d s:\n%s\nController logs: %s" % (timeout, "\n".join(waiting), cluster.logs))
        time.sleep(2)


def reconcile(cluster, kind, name, namespace=FLUX_NS):
    """Ask Flux to reconcile now (reconcile.fluxcd.io/requestedAt) and wait until it has."""
    token = "gitops-test-%d" % time.time_ns()
    kubectl(cluster, "-n", namespace, "annotate", "--overwrite", RESOURCE[kind], name,
            "reconcile.fluxcd.io/requestedAt=" + token)
    return wait_for(cluster, kind, name, namespace,
                    lambda obj: is_ready(obj) and obj["status"].get("lastHandledReconcileAt") == token,
                    "reconciled on request", timeout=300)


def helm_revisions(cluster):
    """{namespace/release: [revisions]} from helm's release Secrets."""
    secrets = json.loads(kubectl(cluster, "get", "secrets", "-A", "-l", "owner=helm", "-o", "json").stdout)["items"]
    out = {}
    for secret in secrets:
        labels = secret["metadata"]["labels"]
        out.setdefault("%s/%s" % (secret["metadata"]["namespace"], labels["name"]), []).append(int(labels["version"]))
    return {k: sorted(v) for k, v in out.items()}


def exists(cluster, obj):
    meta = obj["metadata"]
    args = ["get", "%s.%s" % (obj["kind"].lower(), obj["apiVersion"].rpartition("/")[0]) if "/" in obj["apiVersion"]
            else obj["kind"].lower(), meta["name"], "-o", "name"]
    if meta.get("namespace"):
        args = ["-n", meta["namespace"]] + args
    return kubectl(cluster, *args, check=False).returncode == 0


# -- the steps ------------------------------------------------------------------------------------------------------

def flat_layout_fails(cluster, work, units):
    """Step 1: the former flat layout on the same rig (before any chart is installed): refused as a whole, because a
    custom resource's CRD is not there yet (the message names that kind; any other refusal, or a "not found" of
    something else, fails the step)."""
    flat = Worktree(work / "flat", cluster.git_repo("flat"))
    files = {"flat/objects-%d.yaml" % i: objs for i, objs in enumerate(units.values())}
    files["flat/kustomization.yaml"] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                        "resources": sorted(p.split("/", 1)[1] for p in files)}
    revision = flat.commit_and_push(files, "the platform as one flat folder")
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(bootstrap("flat", flat.url, "./flat", "flat")))
    failed = wait_for(cluster, "Kustomization", "flat", FLUX_NS,
                      lambda o: ready_condition(o).get("status") == "False"
                      and o["status"].get("lastAttemptedRevision") == revision,
                      "refused", timeout=300)
    message = ready_condition(failed).get("message", "")
    kinds = {o["kind"]: o["apiVersion"] for objs in units.values() for o in objs}
    if missing_crd_kind(message, kinds) is None:
        raise Failed("the flat layout failed for another reason than a missing CRD of one of its kinds: %s" % message)
    if failed["status"].get("lastAppliedRevision"):
        raise Failed("the flat layout was (partly) applied: %s" % failed["status"]["lastAppliedRevision"])
    kubectl(cluster, "-n", FLUX_NS, "delete", RESOURCE["Kustomization"], "flat", "--wait=true", "--timeout=120s")
    kubectl(cluster, "-n", FLUX_NS, "delete", RESOURCE["GitRepository"], "flat", "--wait=true", "--timeout=120s")
    return message.splitlines()[0][:200]


def bootstrap(name, url, path, source):
    """What a user applies once (flux bootstrap makes the GitRepository): the GitRepository ``source`` and one
    Kustomization ``name`` at the bundle's root."""
    return [
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
         "metadata": {"name": source, "namespace": FLUX_NS},
         "spec": {"url": url, "interval": "15s", "ref": {"branch": "main"}}},
        {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
         "metadata": {"name": name, "namespace": FLUX_NS},
         "spec": {"interval": "10m", "retryInterval": "15s", "timeout": "15m", "path": path, "prune": True,
                  "wait": True, "sourceRef": {"kind": "GitRepository", "name": source}}},
    ]


def commit_folder(worktree, message):
    """Commit and push what the render changed; None when nothing did."""
    worktree.git("add", "--all")
    if not worktree.git("status", "--porcelain"):
        return None
    worktree.git("commit", "--quiet", "-m", message)
    worktree.git("push", "--quiet", worktree.url, "main")
    return "main@sha1:" + worktree.git("rev-parse", "HEAD")


def run(cluster, work):
    worktree = Worktree(work / "repo", cluster.git_repo("platform"))
    folder = worktree.path / "platform"
    render(cluster, folder, "network_operator_chart_version=" + PREVIOUS_NETWORK_OPERATOR, UNVERIFIED)
    units = unit_objects(folder)
    say("rendered %d units: %s" % (len(units), ", ".join(units)))

    say("1. the flat layout on the same rig: %s" % flat_layout_fails(cluster, work, units))

    say("1b. node labels (playbooks/node_labels.yml): %s" % label_nodes(cluster, folder))
    revision = commit_folder(worktree, "the GPU platform, rendered by site.yml")
    fault(cluster, STUCK)
    expected, started = bootstrap_root(cluster, worktree, folder)
    say("1c. %s" % held_back(cluster))
    fault(cluster, STUCK.replace(":stuck:", ":ok:"))
    items = converged(cluster, units, expected, revision, started)

    say("3b. images from the inventory's mirror: %s" % mirrored_images(cluster, units))

    render(cluster, folder, "network_operator_chart_version=" + PREVIOUS_NETWORK_OPERATOR, UNVERIFIED)
    if commit_folder(worktree, "rendered again") is not None:
        raise Failed("a second render changed files: %s" % worktree.git("show", "--stat", "HEAD"))
    before = helm_revisions(cluster)
    reconcile(cluster, "GitRepository", SOURCE)
    again = [reconcile(cluster, "Kustomization", o["metadata"]["name"]) for o in items if o["kind"] == "Kustomization"]
    moved = [o["metadata"]["name"] for o in again if o["status"].get("lastAppliedRevision") != revision]
    if moved or helm_revisions(cluster) != before:
        raise Failed("a second render and push applied something new: %s %s" % (moved, helm_revisions(cluster)))
    say("4. a second render and push: nothing to commit, no new revision, Helm revisions %s" % before)

    for kind, name, namespace, unit in (("clusterqueue.kueue.x-k8s.io", "vision", None, "scheduling-config"),
                                        ("configmap", "time-slicing-config", "gpu-operator", "gpu-sharing")):
        scope = ["-n", namespace] if namespace else []
        kubectl(cluster, *scope, "delete", kind, name, "--wait=true")
        reconcile(cluster, "Kustomization", "gpu-platform-" + unit)
        if kubectl(cluster, *scope, "get", kind, name, check=False).returncode != 0:
            raise Failed("%s %s deleted by hand was not put back by gpu-platform-%s" % (kind, name, unit))
    say("5. a ClusterQueue and the time-slicing ConfigMap deleted by hand: put back")

    # to the pin: the default release pair, validated for GPUDirect RDMA by NVIDIA's recipe (docs/versions.md)
    render(cluster, folder, "network_operator_chart_version=" + CURRENT_NETWORK_OPERATOR)
    bumped = commit_folder(worktree, "Network Operator %s" % CURRENT_NETWORK_OPERATOR)
    if bumped is None:
        raise Failed("bumping the Network Operator's pin changed no file")
    changed = worktree.git("show", "--name-only", "--format=", "HEAD").split()
    reconcile(cluster, "GitRepository", SOURCE)
    items = wait_all_ready(cluster, expected, bumped)
    release = next(o for o in items if o["kind"] == "HelmRelease" and o["metadata"]["name"] == "network-operator")
    history = release["status"].get("history") or []
    if not history or history[0].get("chartVersion") != CURRENT_NETWORK_OPERATOR:
        raise Failed("the network-operator HelmRelease is not at %s: %s" % (CURRENT_NETWORK_OPERATOR, history[:2]))
    revisions = helm_revisions(cluster)
    if revisions.get("nvidia-network-operator/network-operator") != [1, 2] or any(
            v != before[k] for k, v in revisions.items() if k != "nvidia-network-operator/network-operator"):
        raise Failed("the bump should upgrade the Network Operator alone: %s (before %s)" % (revisions, before))
    image = json.loads(kubectl(cluster, "-n", "nvidia-network-operator", "get", "deployment", "network-operator",
                               "-o", "json").stdout)["spec"]["template"]["spec"]["containers"][0]["image"]
    # The local test chart tags the image 26.4.1; the real chart (CLUSTER_OPERATORS=...,network-operator) v26.4.1.
    if image.rpartition(":")[2] not in (CURRENT_NETWORK_OPERATOR, "v" + CURRENT_NETWORK_OPERATOR):
        raise Failed("the Network Operator runs %s after the bump" % image)
    order = applied_order(items)
    problem = order_problem(order, "gpu-platform-network-operator", "gpu-platform-network-config")
    if problem:
        raise Failed("the NicClusterPolicy's unit was not applied after the Network Operator's: %s (Ready times: %s)"
                     % (problem, {k: v.isoformat() if v else v for k, v in order.items()}))
    say("6. %s changed; network-operator upgraded to %s (Helm revision 2), units applied in order: %s"
        % (", ".join(changed), CURRENT_NETWORK_OPERATOR, " -> ".join(sorted(order, key=order.get))))
    return expected


def bootstrap_root(cluster, worktree, folder):
    """Apply the bootstrap for the bundle pushed from ``folder``; the Flux objects it makes, and when it was applied."""
    kubectl(cluster, "apply", "-f", "-",
            stdin=yaml.safe_dump_all(bootstrap(ROOT_NAME, worktree.url, "./platform", SOURCE)))
    return expected_flux_objects(folder, (FLUX_NS, ROOT_NAME)), time.monotonic()


def converged(cluster, units, expected, revision, started):
    """Steps 2-3's end: every Kustomization (at ``revision``) and HelmRelease Ready, and every object of every unit
    on the cluster (admitted by the real API server); the Flux objects read last."""
    items = wait_all_ready(cluster, expected, revision)
    say("2-3. pushed %s; every Kustomization and HelmRelease Ready in %.0f s" % (revision, time.monotonic() - started))
    missing = ["%s %s" % (o["kind"], o["metadata"]["name"]) for objs in units.values() for o in objs
               if not exists(cluster, o)]
    if missing:
        raise Failed("objects of the bundle not on the cluster: %s" % ", ".join(missing))
    return items


def converge(cluster, work, inventory, extra):
    """``--inventory``: steps 2 and 3 alone. Render the inventory's bundle (``extra``: -e values), label the nodes
    where the bundle leaves labels to that step, push, bootstrap one Kustomization at the root, and wait until every
    Kustomization and HelmRelease is Ready and every object of every unit is on the cluster."""
    worktree = Worktree(work / "repo", cluster.git_repo("platform"))
    folder = worktree.path / "platform"
    render(cluster, folder, *extra, inventory=inventory)
    units = unit_objects(folder)
    say("rendered %s: %d units: %s" % (os.path.relpath(inventory, ROOT), len(units), ", ".join(units)))
    if list(folder.glob("*/*-node-labels.yaml")):
        say("node labels (playbooks/node_labels.yml): %s" % label_nodes(cluster, folder, inventory))
    revision = commit_folder(worktree, "the GPU platform, rendered by site.yml")
    expected, started = bootstrap_root(cluster, worktree, folder)
    converged(cluster, units, expected, revision, started)
    return expected


def mirrored_images(cluster, units):
    """The images the charts' Deployments, the GPU Operator's driver and the NicClusterPolicy's components name on
    the cluster: each must be on the inventory's mirror (inventories/cluster: gpu_platform_image_mirrors), and every
    component the rendered NicClusterPolicy names must be there to be judged (one missing is not a pass)."""
    found = {}
    for namespace, name in (("gpu-operator", "gpu-operator"), ("nvidia-network-operator", "network-operator")):
        deployment = json.loads(kubectl(cluster, "-n", namespace, "get", "deployment", name, "-o", "json").stdout)
        found["deployment/" + name] = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    policy = json.loads(kubectl(cluster, "get", "clusterpolicies.nvidia.com", "cluster-policy", "-o", "json").stdout)
    found["clusterpolicy driver"] = (policy["spec"].get("driver") or {}).get("repository", "")
    nic = json.loads(kubectl(cluster, "get", "nicclusterpolicies.mellanox.com", "nic-cluster-policy", "-o",
                             "json").stdout)["spec"]
    found.update(nic_repositories(nic))
    rendered = [o["spec"] for objs in units.values() for o in objs if o["kind"] == "NicClusterPolicy"]
    if len(rendered) != 1:
        raise Failed("the rendered bundle has %d NicClusterPolicies, not 1" % len(rendered))
    problems = image_problems(found, MIRROR, set(nic_repositories(rendered[0])))
    if problems:
        raise Failed("images not pulled from the mirror %s:\n%s" % (MIRROR, "\n".join(problems)))
    return "%d images (e.g. %s)" % (len(found), found["deployment/gpu-operator"])


def applied_order(items):
    """{unit Kustomization: when its Ready condition last changed (its latest apply), a datetime}; a unit without a
    readable time fails the run."""
    times = {name: at for name, at in ready_times(items).items() if name != ROOT_NAME}
    unreadable = sorted(name for name, at in times.items() if at is None)
    if unreadable:
        raise Failed("Kustomizations without a readable Ready time (lastTransitionTime): %s" % ", ".join(unreadable))
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster running (build/gitops-cluster[-<inventory>])")
    parser.add_argument("--inventory", type=Path,
                        help="render, push and converge this inventory's bundle alone (e.g. inventories/aks)")
    parser.add_argument("--profile", help="the cluster's fleet (CLUSTER_PROFILE), e.g. aks-nd-h100-v5")
    parser.add_argument("--gpu-nodes", type=int, help="the cluster's GPU nodes (CLUSTER_GPU_NODES)")
    parser.add_argument("-e", dest="extra", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable for the render (with --inventory), e.g. smoke_tests_nccl_image=...")
    args = parser.parse_args(argv)
    inventory = (ROOT / args.inventory).resolve() if args.inventory else INVENTORY
    if not inventory.is_dir():
        parser.error("--inventory %s: no such folder; name an inventory folder such as inventories/aks"
                     % args.inventory)
    if args.extra and inventory == INVENTORY:
        parser.error("-e goes with --inventory (the cluster inventory's run sets its own variables)")
    name = "" if inventory == INVENTORY else "-" + inventory.name
    cluster, out = LocalCluster(CLUSTER_DIR.with_name(CLUSTER_DIR.name + name)), OUT.with_name(OUT.name + name)
    env = cluster.env()
    if inventory == INVENTORY:  # the bump starts at release 0.2.0's Network Operator: its chart and operator too
        env["CLUSTER_PREVIOUS_RELEASE"] = str(release_checkout.checkout()["tree"])
    for variable, value in (("CLUSTER_PROFILE", args.profile), ("CLUSTER_GPU_NODES", args.gpu_nodes)):
        if value:
            env[variable] = str(value)
    cluster_command("down", env=env)
    up = cluster_command("up", "--gitops", env=env)
    if up.returncode != 0:
        print("gitops-test: the local control plane with Flux did not start:\n%s%s" % (up.stdout[-3000:], up.stderr[-3000:]),
              file=sys.stderr)
        return 1
    shutil.rmtree(out, ignore_errors=True)
    (out / "work").mkdir(parents=True)
    final = None
    try:
        if inventory == INVENTORY:
            expected = run(cluster, out / "work")
        else:
            expected = converge(cluster, out / "work", inventory, args.extra)
    except (Failed, AssertionError) as exc:
        print("gitops-test: FAILED: %s" % exc, file=sys.stderr)
        return 1
    finally:
        try:
            final = flux_list(cluster)  # what the summary counts, and status.json holds
            (out / "status.json").write_text(json.dumps({"items": final}, indent=1))
        except AssertionError as exc:
            print("gitops-test: could not read the Flux objects for status.json: %s" % exc, file=sys.stderr)
        if not args.keep:
            cluster_command("down", env=env)
    if final is None:
        print("gitops-test: FAILED: the Flux objects could not be read at the end, so nothing is counted",
              file=sys.stderr)
        return 1
    line, problems = ready_summary(final, expected)
    print(line)
    if problems:
        print("gitops-test: FAILED: the bundle's Flux objects on the cluster at the end:\n%s" % "\n".join(problems),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
