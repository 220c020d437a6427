"""Part of local_gpu_cluster/controllers.py: the simulated Deployment, DaemonSet and StatefulSet controllers (see
controllers.py's docstring for what each does)."""
import json

from .clock import rfc3339
from .selectors import LabelSelector
from .controller_base import (
    Controller, _replicas, _template, conditions, controlled_by, never_ready, owner_reference, set_status,
    template_hash)


# ---------------------------------------------------------------- workloads

class DeploymentController(Controller):
    """ReplicaSets and ready status for Deployments (see module docstring)."""

    watches = frozenset({("apps", "Deployment")})

    def handle(self, event):
        if event.type == "DELETED":
            return
        deployment = self.store.get("apps/v1", "Deployment", event.name, event.namespace)
        if deployment is None:
            return
        replicaset = self._sync_replicasets(deployment)
        self._set_deployment_status(deployment, replicaset)

    def _sync_replicasets(self, deployment):
        meta = deployment["metadata"]
        template = _template(deployment)
        pod_hash = template_hash(template)
        name = f"{meta['name']}-{pod_hash}"
        owned = [rs for rs in self.store.list("apps/v1", "ReplicaSet", meta["namespace"])
                 if controlled_by(rs, meta["uid"])]
        for old in owned:
            if old["metadata"]["name"] != name and _replicas(old) != 0:
                self._write(old, {**old["spec"], "replicas": 0}, {"replicas": 0})
        wanted = self._replicaset(deployment, name, pod_hash)
        current = next((rs for rs in owned if rs["metadata"]["name"] == name), None)
        if current is None:
            return self.store.create(wanted)
        return self._write(current, wanted["spec"], wanted["status"])

    def _write(self, replicaset, spec, status):
        generation = replicaset["metadata"]["generation"]
        if replicaset["spec"] != spec:
            generation += 1
        replicaset.update(spec=spec, status={**status, "observedGeneration": generation})
        return self.store.update(replicaset)

    @staticmethod
    def _replicaset(deployment, name, pod_hash):
        template = json.loads(json.dumps(_template(deployment)))
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = pod_hash
        selector = json.loads(json.dumps(deployment["spec"].get("selector") or {}))
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
        replicas = _replicas(deployment)
        ready = 0 if never_ready(template) else replicas
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": deployment["metadata"]["namespace"],
                             "labels": template["metadata"]["labels"],
                             "ownerReferences": [owner_reference(deployment)]},
                "spec": {"replicas": replicas, "selector": selector, "template": template},
                "status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
                           "readyReplicas": ready, "availableReplicas": ready,
                           "observedGeneration": 1}}

    def _set_deployment_status(self, deployment, replicaset):
        replicas = _replicas(deployment)
        ready = replicaset["status"]["readyReplicas"]
        rs_name = replicaset["metadata"]["name"]
        if ready >= replicas:
            wanted = [("Available", "True", "MinimumReplicasAvailable",
                       "Deployment has minimum availability."),
                      ("Progressing", "True", "NewReplicaSetAvailable",
                       f'ReplicaSet "{rs_name}" has successfully progressed.')]
        else:
            wanted = [("Available", "False", "MinimumReplicasUnavailable",
                       "Deployment does not have minimum availability."),
                      ("Progressing", "True", "ReplicaSetUpdated",
                       f'ReplicaSet "{rs_name}" is progressing.')]
        status = {"observedGeneration": deployment["metadata"]["generation"],
                  "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": ready,
                  "availableReplicas": ready,
                  "conditions": conditions(deployment.get("status"), wanted,
                                           rfc3339(self.clock.now()))}
        if replicas > ready:
            status["unavailableReplicas"] = replicas - ready
        set_status(self.store, deployment, status)


class DaemonSetController(Controller):
    """DaemonSet status from the Nodes matching the pod template's nodeSelector.

    The fake makes no DaemonSet pods; where a simulation made some (the GPU Operator's driver pods), an
    ``OnDelete`` DaemonSet counts as updated only its pods labelled with its current ``pod-template-generation``.
    """

    watches = frozenset({("apps", "DaemonSet"), ("", "Node"), ("", "Pod")})

    def handle(self, event):
        if event.kind == "Pod":
            for ref in event.obj["metadata"].get("ownerReferences") or []:
                daemonset = self.store.get("apps/v1", "DaemonSet", ref["name"], event.namespace) \
                    if ref.get("kind") == "DaemonSet" else None
                if daemonset is not None:
                    self._sync(daemonset)
        elif event.kind == "Node":
            # A node's status changes (most events at 1,000 nodes) change no DaemonSet's counts: only its labels,
            # its arrival and its removal do.
            if event.type == "MODIFIED" and event.old is not None and \
                    event.old["metadata"].get("labels") == event.obj["metadata"].get("labels"):
                return
            for daemonset in self.store.list("apps/v1", "DaemonSet"):
                self._sync(daemonset)
        elif event.type != "DELETED":
            daemonset = self.store.get("apps/v1", "DaemonSet", event.name, event.namespace)
            if daemonset is not None:
                self._sync(daemonset)

    def _sync(self, daemonset):
        template = _template(daemonset)
        selector = LabelSelector.from_spec(
            {"matchLabels": (template.get("spec") or {}).get("nodeSelector") or {}})
        desired = len(self.store.select("v1", "Node", lambda node: selector.matches(node["metadata"].get("labels"))))
        ready = 0 if never_ready(template) else desired
        updated = desired
        if ((daemonset.get("spec") or {}).get("updateStrategy") or {}).get("type") == "OnDelete":
            meta = daemonset["metadata"]
            pods = self.store.select("v1", "Pod", lambda p: controlled_by(p, meta["uid"]), meta.get("namespace"))
            if pods:
                generation = str(meta["generation"])
                updated = min(desired, sum(1 for p in pods if (p["metadata"].get("labels") or {}).get(
                    "pod-template-generation") == generation))
        status = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                  "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                  "updatedNumberScheduled": updated,
                  "observedGeneration": daemonset["metadata"]["generation"]}
        if desired > ready:
            status["numberUnavailable"] = desired - ready
        set_status(self.store, daemonset, status)


class StatefulSetController(Controller):
    """StatefulSet status: all replicas ready and updated (unless never-ready)."""

    watches = frozenset({("apps", "StatefulSet")})

    def handle(self, event):
        if event.type == "DELETED":
            return
        statefulset = self.store.get("apps/v1", "StatefulSet", event.name, event.namespace)
        if statefulset is None:
            return
        replicas = _replicas(statefulset)
        ready = 0 if never_ready(_template(statefulset)) else replicas
        revision = f"{event.name}-{template_hash(_template(statefulset))}"
        set_status(self.store, statefulset, {
            "observedGeneration": statefulset["metadata"]["generation"], "replicas": replicas,
            "readyReplicas": ready, "availableReplicas": ready, "currentReplicas": replicas,
            "updatedReplicas": replicas, "currentRevision": revision,
            "updateRevision": revision, "collisionCount": 0})
