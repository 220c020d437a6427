# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> plan -> apply -> wait -> result for nic_cluster_policy.

Private to the collection: not a public API. The pure parts are domain/nic_policy*.py; this
ties them to the kube and render adapters. The clock is injectable for tests.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_wait import WaitTimeout, wait_for
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    nic_policy, nic_policy_render, nic_policy_validate, validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import manifests

POLICY = ("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy")


def _outputs(request):
    return {"pod_resources": nic_policy_render.pod_resources(request), "example_pod": nic_policy_render.example_pod(request),
            "network": {"name": request.network_name, "namespace": request.network_namespace},
            "warnings": list(request.warnings)}


def run_render(request, objects, directory, state, check_mode):
    result = manifests.render(objects, directory, "nic_cluster_policy " + request.mode, state, check_mode)
    if state != "absent":
        result["objects"] = objects
        result.update(_outputs(request))
    return result


def wait_ready(kube, timeout, clock=None, interval=2.0):
    """Wait for the NicClusterPolicy to be ready; the time-out names each component's state."""
    def fetch():
        return kube.get(POLICY[0], POLICY[1], POLICY[2])

    try:
        return wait_for(fetch, lambda p: p is not None and nic_policy.policy_ready(p), timeout, clock, interval,
                        describe=lambda p: nic_policy.describe_states(p) if p else "no NicClusterPolicy")
    except WaitTimeout as exc:
        last = exc.details.get("last")
        states = nic_policy.describe_states(last) if last else "no NicClusterPolicy"
        where = _components(kube, last) if last else ""
        raise GpuPlatformError(
            "NicClusterPolicy nic-cluster-policy is not ready after %ss: %s%s. Fix: kubectl -n <network operator "
            "namespace> get pods and read the log of the component that is not ready (a DOCA driver that does not "
            "build for the node's kernel is the usual cause)" % (timeout, states, ". " + where if where else ""),
            states=nic_policy.component_states(last) if last else {})


def _components(kube, policy):
    """The policy's component DaemonSets that are not ready, node by node (read once, after the time-out)."""
    daemonsets = kube.list("apps/v1", "DaemonSet")
    namespaces = {d["metadata"]["namespace"] for d in daemonsets
                  if any(r.get("uid") == policy["metadata"].get("uid") for r in d["metadata"].get("ownerReferences") or [])}
    pods = [p for namespace in sorted(namespaces) for p in kube.list("v1", "Pod", namespace)]
    return nic_policy.describe_components(policy["metadata"].get("uid"), daemonsets, pods)


def request(params):
    """(the NicPolicyRequest, the wait time-out in seconds) from the module's options: every check that needs no
    cluster. The module runs it first; the preflight (playbooks/checks.yml) runs it before anything is written."""
    params = validate.given(params, suboptions=("selectors",))
    return (nic_policy_validate.build_request(params),
            validate.duration_seconds("wait_timeout", params.get("wait_timeout") or 600))


def run(params, kube_factory, check_mode=False, clock=None, interval=2.0):
    policy, timeout = request(params)
    objects = nic_policy_render.render(policy)
    state = params.get("state") or "present"
    if params.get("render_to"):
        return run_render(policy, objects, params["render_to"], state, check_mode)
    kube = kube_factory()
    result = manifests.apply(kube, objects, state, check_mode)
    if state == "absent":
        return result
    result["objects"] = objects
    result.update(_outputs(policy))
    if params.get("wait") and not check_mode:
        live = wait_ready(kube, timeout, clock, interval)
        result["states"] = nic_policy.component_states(live)
    return result
