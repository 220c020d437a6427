# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""When a custom resource of the platform is ready, told to Flux: CEL health check expressions.

Private to the collection: not a public API. Pure: standard library only.

Flux waits for what a Kustomization applies through kstatus, which judges an object by the conditions it knows
(``Ready``, ``Reconciling``, ``Stalled``) and counts one without them as ready once it exists. The operators' policies
report their readiness in ``status.state`` instead, the field the direct mode waits on (domain/network/nic_cluster_policy.py
``policy_ready``, roles/gpu_operator/tasks/verify.yml). kustomize-controller v1.9 (and helm-controller v1.6) take
``healthCheckExprs``: per API group and kind, CEL expressions evaluated against the object, ``failed`` before
``current``; an object for which neither holds, or whose status the operator has not written yet (the expression
cannot be evaluated), is still in progress. The states are those of the CRDs in shared/upstream:

* NicClusterPolicy (``mellanox.com/v1alpha1``): ready, notReady, ignore (not the one policy the Network Operator
  serves, ``nic-cluster-policy``), error;
* ClusterPolicy (``nvidia.com/v1``): ready, notReady, ignored (another ClusterPolicy owns the cluster).

``failed`` is a failure state of the CRD (an error, or the object ignored, which the operator does not leave by
itself): Flux stops waiting and reports it instead of running into its time-out, and tries again at its next
reconciliation. See docs/gitops.md ("What ready means").
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

# (API group, kind) -> (the apiVersion Flux is given, current, failed). Flux matches on the group and kind only.
RULES = {
    ("mellanox.com", "NicClusterPolicy"): (
        "mellanox.com/v1alpha1", "status.state == 'ready'", "status.state in ['error', 'ignore']"),
    ("nvidia.com", "ClusterPolicy"): (
        "nvidia.com/v1", "status.state == 'ready'", "status.state == 'ignored'"),
}


def group_kind(api_version, kind):
    """(API group, kind) of an object's ``apiVersion`` and ``kind`` (the core group is '')."""
    if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
        raise ParamError("objects", "(%r, %r) is not an apiVersion and a kind" % (api_version, kind),
                         "give each object's apiVersion (group/version, or v1) and kind")
    return api_version.rpartition("/")[0], kind


def health_check_exprs(kinds):
    """Flux ``healthCheckExprs`` for the kinds among ``kinds`` ((apiVersion, kind) pairs, repeats allowed) whose
    readiness is a status field: one entry per kind, in a stable order; [] when none of them has one."""
    present = set()
    for item in kinds:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ParamError("objects", "%r is not an (apiVersion, kind) pair" % (item,),
                             "give each object as its apiVersion and kind")
        present.add(group_kind(*item))
    found = sorted(present & set(RULES))
    out = []
    for group, kind in found:
        api_version, current, failed = RULES[(group, kind)]
        out.append({"apiVersion": api_version, "kind": kind, "current": current, "failed": failed})
    return out
