"""What runs on a real API server besides the operators' own processes.

``live_controllers()`` is the set ``live.py`` runs against the local control plane (local_gpu_cluster), whose
kube-controller-manager makes the pods of Deployments, DaemonSets and Jobs, whose scheduler binds them and whose KWOK
nodes run them. The operators' controllers are the real ones (GPU Operator, Network Operator, Kueue, Volcano: their
processes run for their pods, ``operator_processes.py``); what is left is what happens on a node, which needs the
hardware:

* ``NodeAgents`` (``node_agents.py``): what happens on a node while a component's pod runs there (NFD, GFD, the
  device plugin, drivers, peermem, the MIG manager, the RDMA and SR-IOV device plugins, the DRA kubelet plugin's
  ResourceSlices), from the node's declared hardware.
* ``SmokeLogs`` (``node_agent_smoke.py``): the smoke pods' logs, from what each pod was given on its node.
* ``ProbeLogs`` (``node_agent_probe.py``): the host preflight's probe pods' logs, their script run against the
  node's declared host.

An operator that ``CLUSTER_OPERATORS`` leaves out has no controller at all: its chart is installed (the fixture
chart), KWOK runs its pods, and nothing reconciles its resources. The simulations of the fake API server
(``gpu_operator.py``, ``network_operator.py``, ``driver_upgrade.py``, the Volcano Jobs of
``workload_controllers.py``) stay there, for the faults they inject. Not run here either: ``SmokePods`` (phases are
KWOK's) and the fake's workload controllers (the real ones run).
"""

from .node_agent_probe import ProbeLogs
from .node_agent_smoke import SmokeLogs
from .node_agents import NodeAgents


def live_controllers(mig_delay=1.0, logs_dir=None):
    """Fresh instances of the controllers ``live.py`` runs against the local control plane."""
    return [NodeAgents(mig_delay=mig_delay), SmokeLogs(logs_dir), ProbeLogs(logs_dir)]
