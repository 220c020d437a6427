"""Volcano on a real API server: ``SimulatedVolcanoJobs``' pods, placed as a gang and bound to nodes.

On a real cluster nothing schedules a pod whose ``schedulerName`` is ``volcano`` but Volcano's own scheduler,
which is not there: the default scheduler leaves such pods Pending for ever. ``LiveVolcanoJobs`` reuses
``SimulatedVolcanoJobs`` (``smoke.py``) to build a Job's pods, then plays the Volcano scheduler's part: it places
the whole gang at once (``place_gang``) and creates the pods already bound (``spec.nodeName`` set), so KWOK runs
them. A gang that does not fit is created unbound (Pending, as Volcano leaves it) and placed again every
``retry`` seconds, through the ``pods/binding`` subresource, until it fits or the Job is gone.

``place_gang`` is a small scheduler, enough for the smoke tests' gangs: Ready and schedulable nodes only; the
pod's ``nodeSelector``; NoSchedule/NoExecute taints must be tolerated; resources given as whole numbers
(``nvidia.com/gpu``, ``rdma/shared_ib``, ...; a container's requests, else its limits) must fit in the node's
allocatable minus what the active pods bound there ask for; required pod anti-affinity on
``kubernetes.io/hostname``. Among the nodes that fit it takes the one with the fewest pods of the gang, then
the first by name. Not modelled: node affinity, preferred terms, cpu/memory in other units than whole numbers.
"""

import collections

from .selectors import LabelSelector
from .smoke import VOLCANO_JOB_NAME, SimulatedVolcanoJobs

HOSTNAME = "kubernetes.io/hostname"
FINISHED = ("Succeeded", "Failed")


def _count(value):
    text = str(value)
    return int(text) if text.isdigit() else None


def requests(pod):
    """The pod's whole-number resource requests (a container's requests, else its limits), summed."""
    total = collections.Counter()
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for name, value in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}.items():
            number = _count(value)
            if number is not None:
                total[name] += number
    return total


def _ready(node):
    ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
    return not ready or ready[0].get("status") == "True"


def _tolerates(toleration, taint):
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def _admits(node, pod):
    """The node is Ready, schedulable, matches the nodeSelector and its taints are tolerated."""
    spec, labels = pod.get("spec") or {}, node["metadata"].get("labels") or {}
    if not _ready(node) or (node.get("spec") or {}).get("unschedulable"):
        return False
    if any(labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    return all(any(_tolerates(t, taint) for t in spec.get("tolerations") or [])
               for taint in (node.get("spec") or {}).get("taints") or []
               if taint.get("effect") in ("NoSchedule", "NoExecute"))


def _repelled(pod, others):
    """True when one of ``others`` (pods on the node) matches the pod's required anti-affinity on hostname."""
    terms = (((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    for term in terms:
        if term.get("topologyKey") != HOSTNAME:
            continue
        selector = LabelSelector.from_spec(term.get("labelSelector") or {})
        namespaces = term.get("namespaces") or [pod["metadata"].get("namespace")]
        if any(o["metadata"].get("namespace") in namespaces and selector.matches(o["metadata"].get("labels"))
               for o in others):
            return True
    return False


def place_gang(store, pods):
    """{pod name: node name} for every pod of the gang, or {} when the gang does not fit as a whole."""
    nodes = {n["metadata"]["name"]: n for n in store.list("v1", "Node")}
    used = collections.defaultdict(collections.Counter)
    on_node = collections.defaultdict(list)
    for other in store.list("v1", "Pod"):
        node = (other.get("spec") or {}).get("nodeName")
        if node and (other.get("status") or {}).get("phase") not in FINISHED:
            used[node].update(requests(other))
            on_node[node].append(other)
    placement, members = {}, collections.Counter()
    for pod in pods:
        wanted = requests(pod)
        fitting = []
        for name, node in sorted(nodes.items()):
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            free = {key: (_count(allocatable.get(key)) or 0) - used[name][key] for key in wanted}
            if _admits(node, pod) and all(free[key] >= count for key, count in wanted.items()) \
                    and not _repelled(pod, on_node[name]):
                fitting.append((members[name], name))
        if not fitting:
            return {}
        chosen = min(fitting)[1]
        placement[pod["metadata"]["name"]] = chosen
        members[chosen] += 1
        used[chosen].update(wanted)
        on_node[chosen].append(pod)
    return placement


class _Collect:
    """Stands in for the store while ``SimulatedVolcanoJobs`` builds a Job's pods: ``create`` only collects."""

    def __init__(self, store, pods):
        self._store, self._pods = store, pods

    def create(self, obj):
        self._pods.append(obj)
        return obj

    def __getattr__(self, name):
        return getattr(self._store, name)


class LiveVolcanoJobs(SimulatedVolcanoJobs):
    """``SimulatedVolcanoJobs`` whose pods are placed as a gang and created bound (see the module docstring)."""

    def __init__(self, retry=5.0):
        super().__init__()
        self.retry = retry
        self._waiting = set()

    def handle(self, event):
        if event.type != "ADDED":
            return
        meta = event.obj["metadata"]
        if self._job_pods(meta["namespace"], meta["name"]):
            self._place_waiting(meta["namespace"], meta["name"])  # made before a restart: place what waits
            return
        store, pods = self.store, []
        self.store = _Collect(store, pods)
        try:
            super().handle(event)
        finally:
            self.store = store
        placement = place_gang(store, pods)
        for pod in pods:
            if placement:
                pod["spec"]["nodeName"] = placement[pod["metadata"]["name"]]
            store.create(pod)
        if not placement:
            self._wait(meta["namespace"], meta["name"])

    def _job_pods(self, namespace, name):
        return self.store.list("v1", "Pod", namespace, label_selector="%s=%s" % (VOLCANO_JOB_NAME, name))

    def _wait(self, namespace, name):
        if (namespace, name) not in self._waiting:
            self._waiting.add((namespace, name))
            self.clock.call_later(self.retry, lambda: self._place_waiting(namespace, name))

    def _place_waiting(self, namespace, name):
        """Bind the Job's unbound pods if the gang now fits; else try again later (while the Job exists)."""
        self._waiting.discard((namespace, name))
        if self.store.get("batch.volcano.sh/v1alpha1", "Job", name, namespace) is None:
            return
        unbound = [p for p in self._job_pods(namespace, name) if not (p.get("spec") or {}).get("nodeName")
                   and not p["metadata"].get("deletionTimestamp")]
        if not unbound:
            return
        placement = place_gang(self.store, unbound)
        if not placement:
            self._wait(namespace, name)
            return
        for pod in unbound:
            self.store.bind(pod["metadata"]["name"], namespace, placement[pod["metadata"]["name"]])
