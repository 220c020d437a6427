"""The ``pods/<name>/eviction`` subresource (``policy/v1`` Eviction) of the fake API server.

What kube-apiserver's eviction REST handler does, reduced to what drains need:

* the body is an ``Eviction`` (``policy/v1``, ``policy/v1beta1`` accepted) whose
  ``metadata.name`` (if given) is the pod's name on the URL, else 400;
* a missing pod is 404 ``pods "<name>" not found``;
* ``deleteOptions.preconditions.uid`` must match (409), ``dryRun: [All]`` in the body or the
  ``?dryRun=All`` query checks everything and deletes nothing;
* a pod that is already terminating, or whose phase is Pending, Succeeded or Failed, is
  deleted without looking at budgets (as the real server does);
* otherwise the ``PodDisruptionBudget`` (policy/v1) of the pod's namespace whose selector
  matches the pod decides: more than one is 500 (the real server does not support that);
  disruptions allowed = healthy pods (matching, Running, not terminating) - desired healthy,
  where desired healthy comes from ``minAvailable`` or ``expected - maxUnavailable`` (ints or
  percentages of the matching pods, rounded up). Zero or less: 429 TooManyRequests with the
  real server's message and a ``DisruptionBudget`` cause naming the budget;
* then the pod is deleted as a DELETE would delete it (at once, or only marked with a
  ``deletionTimestamp`` while it has finalizers) and the answer is 201 with a success Status.

Not modelled: PDB ``status`` (the budget is computed from the pods at each request, no
``disruptedPods`` bookkeeping, ``observedGeneration`` is not checked), grace periods,
``unhealthyPodEvictionPolicy: AlwaysAllow`` (the default ``IfHealthyBudget`` rule is used).
"""

import math

from . import errors
from .selectors import LabelSelector

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


def _success():
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _too_many_requests(name, desired, healthy):
    return errors.ApiError(
        429, "TooManyRequests", PDB_MESSAGE,
        {"causes": [{"reason": "DisruptionBudget",
                     "message": f"The disruption budget {name} needs {desired} healthy pods "
                                f"and has {healthy} currently"}]})


def _scaled(value, expected, round_up):
    """An IntOrString budget field: an int, or a percentage of ``expected``."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise errors.bad_request(f"invalid value for IntOrString: {value!r}") from None
        exact = percent * expected / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise errors.bad_request(f"invalid value for IntOrString: {value!r}") from None


def _healthy(pod):
    meta, status = pod["metadata"], pod.get("status") or {}
    return not meta.get("deletionTimestamp") and status.get("phase") == "Running"


def _budget_matches(pdb, pod):
    spec = pdb.get("spec") or {}
    if spec.get("selector") is None:  # policy/v1: a null selector selects no pod
        return False
    return LabelSelector.from_spec(spec["selector"]).matches(pod["metadata"].get("labels"))


def budget(pdb, pods):
    """(desired healthy, currently healthy) of ``pdb`` over the namespace's ``pods``."""
    matching = [p for p in pods if _budget_matches(pdb, p)]
    spec = pdb.get("spec") or {}
    expected = len([p for p in matching if not p["metadata"].get("deletionTimestamp")])
    healthy = len([p for p in matching if _healthy(p)])
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = expected - _scaled(spec["maxUnavailable"], expected, round_up=True)
    else:
        desired = 0
    return max(desired, 0), healthy


def _eviction_options(body, dry_run):
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be an Eviction object")
    if body.get("kind") not in (None, "", "Eviction") or body.get("apiVersion") not in (
            None, "", *EVICTION_VERSIONS):
        raise errors.bad_request(f"the body is a {body.get('apiVersion')} {body.get('kind')}, "
                                 "not a policy/v1 Eviction")
    options = body.get("deleteOptions") or {}
    body_dry_run = "All" in (options.get("dryRun") or [])
    return options, dry_run or body_dry_run


def evict(server, rtype, namespace, name, body, dry_run):
    """Handle POST .../pods/<name>/eviction; returns (code, response body) or raises ApiError."""
    options, dry_run = _eviction_options(body, dry_run)
    body_name = (body.get("metadata") or {}).get("name")
    if body_name not in (None, "", name):
        raise errors.bad_request("name in URL does not match name in Eviction object")
    store = server.store
    pod = store.get_object(rtype, namespace, name)  # 404 pods "<name>" not found
    uid = (options.get("preconditions") or {}).get("uid")
    if uid and uid != pod["metadata"]["uid"]:
        raise errors.conflict(rtype, name)
    phase = (pod.get("status") or {}).get("phase")
    if not pod["metadata"].get("deletionTimestamp") and phase not in ("Pending", "Succeeded", "Failed"):
        pdb_type = store.registry.by_kind("policy/v1", "PodDisruptionBudget")
        budgets = [b for b in store.list("policy/v1", "PodDisruptionBudget", namespace=namespace)
                   if _budget_matches(b, pod)] if pdb_type else []
        if len(budgets) > 1:
            raise errors.ApiError(500, "InternalError", "This pod has more than one "
                                  "PodDisruptionBudget, which the eviction subresource does not support.")
        if budgets:
            pods = store.list("v1", "Pod", namespace=namespace)
            desired, healthy = budget(budgets[0], pods)
            if healthy - desired <= 0:
                raise _too_many_requests(budgets[0]["metadata"]["name"], desired, healthy)
    store.delete_object(rtype, namespace, name, dry_run, options.get("propagationPolicy") or "Background", uid)
    return 201, _success()
