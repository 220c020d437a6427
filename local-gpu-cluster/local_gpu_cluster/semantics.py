"""Per-kind defaulting and validation done by the fake API server on every write.

Defaulting is minimal: what clients dereference (Deployment ``replicas`` and
``strategy``, DaemonSet/StatefulSet ``updateStrategy``, Job ``completions``/``parallelism``
/``backoffLimit`` and generated selector, Service ``type``/``clusterIP``, Secret
``type``/``stringData``, Namespace and Pod status on create) and the pod spec fields every pod
and workload's pod template (not a Job's) gets (``restartPolicy``, ``dnsPolicy``, ``schedulerName``,
``terminationGracePeriodSeconds``, ``securityContext``), as the real server sets them. Validation covers names,
label syntax, workload selectors (required, matching the template, immutable), containers
with name and image, Job ``restartPolicy``, and the names of CRDs. Everything else is
stored as sent.
"""

import base64
import itertools
import re

from .selectors import LabelSelector

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_WORKLOADS = {"deployments", "replicasets", "daemonsets", "statefulsets"}
_CLUSTER_IPS = itertools.count(1)


# ---------------------------------------------------------------- defaulting

def _pod_template_spec(obj):
    return obj.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})


def _default_pod_spec(spec):
    """What the real server fills in every pod spec (pods and workloads' templates), as kubectl shows it."""
    for key, value in (("restartPolicy", "Always"), ("dnsPolicy", "ClusterFirst"),
                       ("schedulerName", "default-scheduler"), ("terminationGracePeriodSeconds", 30)):
        spec.setdefault(key, value)
    spec.setdefault("securityContext", {})


def _default_deployment(obj):
    spec = obj.setdefault("spec", {})
    _default_pod_spec(_pod_template_spec(obj))
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})


def _default_replicaset(obj):
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    _default_pod_spec(_pod_template_spec(obj))


def _default_daemonset(obj):
    spec = obj.setdefault("spec", {})
    _default_pod_spec(_pod_template_spec(obj))
    spec.setdefault("revisionHistoryLimit", 10)
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {"maxUnavailable": 1, "maxSurge": 0})


def _default_statefulset(obj):
    spec = obj.setdefault("spec", {})
    _default_pod_spec(_pod_template_spec(obj))
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {"partition": 0})


def _default_job(obj):
    spec = obj.setdefault("spec", {})
    for key, value in (("parallelism", 1), ("completions", 1), ("backoffLimit", 6),
                       ("completionMode", "NonIndexed"), ("suspend", False)):
        spec.setdefault(key, value)
    uid = obj["metadata"].get("uid", "")
    name = obj["metadata"].get("name", "")
    generated = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                 "batch.kubernetes.io/job-name": name, "job-name": name}
    if not spec.get("manualSelector") and uid and not spec.get("selector"):
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), **generated}


def _default_service(obj):
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName" and not spec.get("clusterIP"):
        number = next(_CLUSTER_IPS)
        spec["clusterIP"] = f"10.96.{number // 250 % 250}.{number % 250 + 1}"
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def _default_secret(obj):
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode("ascii")


def _default_namespace(obj):
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")
    labels = obj["metadata"].setdefault("labels", {})
    labels.setdefault("kubernetes.io/metadata.name", obj["metadata"].get("name", ""))


def _default_pod(obj):
    _default_pod_spec(obj.setdefault("spec", {}))
    obj.setdefault("status", {}).setdefault("phase", "Pending")


DEFAULTERS = {"deployments": _default_deployment, "replicasets": _default_replicaset,
              "daemonsets": _default_daemonset, "statefulsets": _default_statefulset,
              "jobs": _default_job, "services": _default_service, "secrets": _default_secret,
              "namespaces": _default_namespace, "pods": _default_pod}


def _crd_status(obj, now):
    """What the apiextensions controllers report: names accepted, established."""
    spec = obj.get("spec") or {}
    conditions = [{"type": kind, "status": "True", "reason": reason, "message": message,
                   "lastTransitionTime": now} for kind, reason, message in
                  (("NamesAccepted", "NoConflicts", "no conflicts found"),
                   ("Established", "InitialNamesAccepted", "the initial names have been "
                    "accepted"))]
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    obj["status"] = {"conditions": conditions, "acceptedNames": spec.get("names") or {},
                     "storedVersions": stored}


def apply_defaults(rtype, obj, now):
    """Fill in defaults in place for built-in kinds (``now``: an RFC 3339 timestamp)."""
    if rtype.group in ("", "apps", "batch") and rtype.plural in DEFAULTERS:
        DEFAULTERS[rtype.plural](obj)
    elif rtype.store_key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        _crd_status(obj, now)
    return obj


# ---------------------------------------------------------------- validation

def _name_causes(rtype, name):
    rules = {"subdomain": (_SUBDOMAIN, 253, "a lowercase RFC 1123 subdomain"),
             "label": (_LABEL, 63, "a lowercase RFC 1123 label"),
             "dns1035": (_DNS1035, 63, "a DNS-1035 label")}
    if rtype.name_rule == "path":
        bad = name in (".", "..") or "/" in name or "%" in name
        return [("metadata.name", f'Invalid value: "{name}": may not contain "/" or "%"')] \
            if bad else []
    pattern, length, what = rules[rtype.name_rule]
    if len(name) > length or not pattern.match(name):
        return [("metadata.name", f'Invalid value: "{name}": must be {what} (at most '
                 f"{length} characters)")]
    return []


def _label_causes(labels):
    causes = []
    for key, value in (labels or {}).items():
        prefix, dummy, name = key.rpartition("/")
        if (prefix and not _SUBDOMAIN.match(prefix)) or len(name) > 63 \
                or not _QUALIFIED_NAME.match(name):
            causes.append(("metadata.labels", f'Invalid value: "{key}": name part must '
                           "consist of alphanumeric characters, '-', '_' or '.'"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(("metadata.labels", f'Invalid value: "{value}": a valid label must '
                           "be an empty string or consist of alphanumeric characters, '-', "
                           "'_' or '.' (at most 63 characters)"))
    return causes


def _containers_causes(pod_spec, field):
    containers = pod_spec.get("containers") or []
    if not containers:
        return [(f"{field}.containers", "Required value")]
    return [(f"{field}.containers[{i}]", "Required value: name and image")
            for i, c in enumerate(containers) if not c.get("name") or not c.get("image")]


def _workload_causes(obj, old):
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    template = spec.get("template") or {}
    if not selector:
        return [("spec.selector", "Required value")]
    causes = _containers_causes(template.get("spec") or {}, "spec.template.spec")
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    if not LabelSelector.from_spec(selector).matches(template_labels):
        causes.append(("spec.template.metadata.labels", "Invalid value: `selector` does not "
                       "match template `labels`"))
    if old is not None and (old.get("spec") or {}).get("selector") != selector:
        causes.append(("spec.selector", "Invalid value: field is immutable"))
    return causes


def _job_causes(obj, _old):
    pod_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    causes = _containers_causes(pod_spec, "spec.template.spec")
    if pod_spec.get("restartPolicy") not in ("Never", "OnFailure"):
        causes.append(("spec.template.spec.restartPolicy", 'Required value: valid values: '
                       '"OnFailure", "Never"'))
    return causes


def _pod_causes(obj, _old):
    return _containers_causes(obj.get("spec") or {}, "spec")


def _crd_causes(obj, _old):
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes = [(f"spec.{field}", "Required value") for field, value in
              (("group", spec.get("group")), ("names.plural", names.get("plural")),
               ("names.kind", names.get("kind")), ("versions", spec.get("versions")))
              if not value]
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if not causes and obj["metadata"].get("name") != expected:
        causes.append(("metadata.name", f'Invalid value: must be spec.names.plural+"."+'
                       f'spec.group ("{expected}")'))
    return causes


VALIDATORS = {("apps", p): _workload_causes for p in _WORKLOADS}
VALIDATORS.update({("batch", "jobs"): _job_causes, ("", "pods"): _pod_causes,
                   ("apiextensions.k8s.io", "customresourcedefinitions"): _crd_causes})


def validation_causes(rtype, obj, old=None):
    """[(field, message)] for everything wrong with ``obj`` (``old``: the stored version)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        return [("metadata.name", "Required value: name or generateName is required")]
    causes = _name_causes(rtype, name) + _label_causes(meta.get("labels"))
    validator = VALIDATORS.get(rtype.store_key)
    if validator:
        causes += validator(obj, old)
    return causes
