# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> plan -> apply -> wait -> result for nic_cluster_policy.

Private to the collection: not a public API. The pure parts are domain/network/nic_cluster_policy*.py; this
ties them to the kube and render adapters. The clock is injectable for tests.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, nic_cluster_policy_render, nic_cluster_policy_validate as
    nic_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import (
    objects as domain_objects, validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests

POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")
# The API groups whose CRDs the Network Operator installs itself when it reconciles the policy, not its chart: the
# nvIpam state applies NV-IPAM's IPPool and CIDRPool CRDs (v26.4.0 manifests/state-nv-ipam-cni/005-*.yaml; the
# chart's crds/ has none). Their objects are applied once the policy is and the cluster serves them.
OPERATOR_INSTALLED = (nic_cluster_policy.IPPOOL_API,)


def _outputs(request):
    return {"pod_resources": nic_cluster_policy_render.pod_resources(request), "example_pod": nic_cluster_policy_render.example_pod(request),
            "network": {"name": request.network_name, "namespace": request.network_namespace},
            "warnings": list(request.warnings)}


def run_render(request, objects, directory, state, check_mode, ipam_directory=None):
    """Write the objects to ``directory``, those of the API groups the operator installs (``OPERATOR_INSTALLED``,
    NV-IPAM's) to ``ipam_directory`` when it is another folder: the bundle's network-ipam unit, which a reconciler
    applies once the policy is ready (reported as ``rendered.ipam``; their files left in ``directory`` by an earlier
    render are removed)."""
    source = "nic_cluster_policy " + request.mode
    apart = bool(ipam_directory) and ipam_directory != directory
    later = [obj for obj in objects if apart and obj["apiVersion"] in OPERATOR_INSTALLED]
    result = manifests.render([obj for obj in objects if obj not in later], directory, source, state, check_mode)
    if apart:
        moved = manifests.render(later, ipam_directory, source, state, check_mode)
        stale = manifests.render(later, directory, source, "absent", check_mode)
        for part in (moved, stale):
            result["changed"] = result["changed"] or part["changed"]
            result["diff"] = list(result["diff"]) + list(part["diff"])
        result["rendered"]["changed_files"] = list(result["rendered"]["changed_files"]) + list(
            stale["rendered"]["changed_files"])
        result["rendered"]["ipam"] = moved["rendered"]
    if state != "absent":
        result["objects"] = objects
        result.update(_outputs(request))
    return result


def wait_ready(kube, timeout, clock=None, interval=2.0):
    """Wait for the NicClusterPolicy to be ready on two polls in a row (``interval`` apart); the time-out names each
    component's state.

    The Network Operator (v26.4.0 pkg/state/state_skel.go: a DaemonSet is ready when every desired pod is
    available) writes ``ready`` the moment each component's pods are Ready once; a component whose container crashes
    at start (the device plugins' manifests have no readiness probe) is Ready for that moment, and the next status is
    ``notReady``. One ``ready`` seen is not yet a policy that holds."""
    def fetch():
        return kube.get(POLICY[0], POLICY[1], POLICY[2])

    seen = []

    def held(policy):
        seen.append(policy is not None and nic_cluster_policy.policy_ready(policy))
        return seen[-2:] == [True, True]

    try:
        return wait_for(fetch, held, timeout, clock, interval,
                        describe=lambda p: nic_cluster_policy.describe_states(p) if p else "no NicClusterPolicy")
    except WaitTimeout as exc:
        last = exc.details.get("last")
        states = nic_cluster_policy.describe_states(last) if last else "no NicClusterPolicy"
        where = _components(kube, last) if last else ""
        raise GpuPlatformError(
            "NicClusterPolicy nic-cluster-policy is not ready after %ss: %s%s. Fix: kubectl -n <network operator "
            "namespace> get pods and read the log of the component that is not ready (a DOCA driver that does not "
            "build for the node's kernel is the usual cause)" % (timeout, states, ". " + where if where else ""),
            states=nic_cluster_policy.component_states(last) if last else {})


def _components(kube, policy):
    """The policy's component DaemonSets that are not ready, node by node (read once, after the time-out)."""
    daemonsets = kube.list("apps/v1", "DaemonSet")
    namespaces = {d["metadata"]["namespace"] for d in daemonsets
                  if any(r.get("uid") == policy["metadata"].get("uid") for r in d["metadata"].get("ownerReferences") or [])}
    pods = [p for namespace in sorted(namespaces) for p in kube.list("v1", "Pod", namespace)]
    return nic_cluster_policy.describe_components(policy["metadata"].get("uid"), daemonsets, pods)


def _unserved_until_reconciled(kube, objects):
    return [obj for obj in objects
            if obj["apiVersion"] in OPERATOR_INSTALLED and not kube.serves(obj["apiVersion"], obj["kind"])]


def apply(kube, objects, state, check_mode, timeout, clock=None, interval=2.0):
    """``manifests.apply`` of the objects; an object whose CRD the operator installs from the policy
    (``OPERATOR_INSTALLED``) and the cluster does not serve yet is applied after the rest, once it is served (within
    ``timeout``; in check mode it is reported as a change, left out)."""
    later = [] if state == "absent" else _unserved_until_reconciled(kube, objects)
    result = manifests.apply(kube, [obj for obj in objects if obj not in later], state, check_mode)
    if not later:
        return result
    names = [domain_objects.identity(obj) for obj in later]
    if check_mode:
        result["changed"] = True
        result["left_out"] = result.get("left_out", []) + names
        return result
    try:
        wait_for(lambda: not _unserved_until_reconciled(kube, later), bool, timeout, clock, interval)
    except WaitTimeout:
        raise GpuPlatformError(
            "the cluster does not serve %s %ss after the NicClusterPolicy was applied, so %s was not applied. The "
            "Network Operator installs that CRD when it reconciles the policy's nvIpam. Fix: kubectl -n <network "
            "operator namespace> logs deploy/network-operator, and check that the operator runs"
            % (" and ".join(sorted({"%s %s" % (o["apiVersion"], o["kind"]) for o in later})), timeout,
               ", ".join(names)), kinds=sorted({o["kind"] for o in later})) from None
    rest = manifests.apply(kube, later, state, check_mode)
    result["changed"] = result["changed"] or rest["changed"]
    for key in ("changed_objects", "left_out", "diff"):
        result[key] = list(result.get(key) or []) + list(rest.get(key) or [])
    return result


def request(params):
    """(the NicPolicyRequest, the wait time-out in seconds) from the module's options: every check that needs no
    cluster. The module runs it first; the preflight (playbooks/checks.yml) runs it before anything is written."""
    params = validate.given(params, suboptions=("selectors",))
    return (nic_policy_validate.build_request(params),
            validate.duration_seconds("wait_timeout", params.get("wait_timeout") or 600))


def run(params, kube_factory, check_mode=False, clock=None, interval=2.0):
    policy, timeout = request(params)
    objects = nic_cluster_policy_render.render(policy)
    state = params.get("state") or "present"
    if params.get("render_to"):
        return run_render(policy, objects, params["render_to"], state, check_mode, params.get("render_ipam_to"))
    kube = kube_factory()
    result = apply(kube, objects, state, check_mode, timeout, clock, interval)
    if state == "absent":
        return result
    result["objects"] = objects
    result.update(_outputs(policy))
    if params.get("wait") and not check_mode:
        live = wait_ready(kube, timeout, clock, interval)
        result["states"] = nic_cluster_policy.component_states(live)
    return result
