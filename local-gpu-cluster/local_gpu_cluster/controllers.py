"""Simulated controllers for the fake API server (pluggable, driven by store events).

A controller subclasses ``Controller``: it names the (group, kind) pairs it ``watches`` and
implements ``handle(event)``. The server calls it synchronously after each write (outside
the store lock; writes it makes are dispatched by the same loop), and it may schedule
work on the server's clock with ``self.clock.call_later``. Controllers must be idempotent:
the store drops writes that change nothing, which is what ends the event chains.

Default controllers (``default_controllers()``):

* ``DeploymentController``: a ReplicaSet per pod template (owned by the Deployment, named
  ``<deployment>-<pod-template-hash>``; older ones scaled to 0) and a full ready status, at
  once. A pod template labelled ``fake.gpu-platform.io/never-ready: "true"`` never becomes
  available (Available=False, Progressing reason ReplicaSetUpdated).
* ``DaemonSetController``: desired/current/ready/available/updated = number of Nodes whose
  labels match the pod template's ``nodeSelector`` (affinity and taints are ignored);
  recomputed when Nodes change. The never-ready label keeps numberReady at 0.
* ``StatefulSetController``: replicas ready (or not, with the label), revisions equal.
* ``JobController``: one Pod at a time from the template; a Succeeded pod completes the Job
  (conditions SuccessCriteriaMet and Complete), a Failed one is retried until
  ``backoffLimit`` is exceeded, then the Job fails (FailureTarget and Failed). No backoff
  delay.
* ``PodController``: a Pod's phase comes from annotation ``fake.gpu-platform.io/phase``
  (Pending, Running, Succeeded or Failed; default Succeeded for Pods owned by a Job,
  Running otherwise), reached after ``fake.gpu-platform.io/phase-delay`` seconds on the
  clock (default 0). Pending stays Pending: a pod that hangs.

Helpers for later test layers: ``StatusSetter`` (sets a custom resource's status from a
function, optionally after a delay) and ``MigManager`` (answers ``nvidia.com/mig.config``
label changes on Nodes with ``nvidia.com/mig.config.state`` pending, then success/failed).

Deployments, DaemonSets and StatefulSets get no Pods; only Jobs do.

The code is in four parts, re-exported here: ``controller_base`` (``Controller``, annotations, helpers),
``workload_controllers`` (Deployments, DaemonSets, StatefulSets), ``job_controllers`` (Jobs and Pods) and
``layer_controllers`` (``StatusSetter``, ``MigManager``).
"""

from .controller_base import (
    LOG, NEVER_READY, PHASE, PHASE_DELAY, Controller, conditions, controlled_by, never_ready, owner_reference,
    set_status, template_hash)
from .job_controllers import JobController, PodController
from .layer_controllers import MigManager, StatusSetter
from .workload_controllers import DaemonSetController, DeploymentController, StatefulSetController

__all__ = [
    "LOG", "NEVER_READY", "PHASE", "PHASE_DELAY", "Controller", "conditions", "controlled_by", "never_ready",
    "owner_reference", "set_status", "template_hash", "JobController", "PodController", "MigManager", "StatusSetter",
    "DaemonSetController", "DeploymentController", "StatefulSetController", "default_controllers",
]


def default_controllers():
    """Fresh instances of the default controllers."""
    return [DeploymentController(), DaemonSetController(), StatefulSetController(),
            JobController(), PodController()]
