"""Resource types served by the fake API server, and the registry that discovery reads.

Built-in kinds are one line each in ``BUILTIN_TABLE``. CustomResourceDefinitions add and
remove kinds at run time through ``Registry.register_crd`` / ``Registry.unregister_crd``.

Objects are stored per *group and plural* (not per version), so an object created through
one served version of a CRD is visible through every other served version, as with a CRD
whose conversion strategy is ``None``.
"""

import dataclasses
import re
import threading

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
                     "log": ("get",), "eviction": ("create",)}

# apiVersion  kind  plural  scope(N=namespaced, C=cluster)  shortNames(, or -)
# subresources(, or -)  since(minor version of Kubernetes, or -)
BUILTIN_TABLE = """
v1 Namespace namespaces C ns status -
v1 ConfigMap configmaps N cm - -
v1 Secret secrets N - - -
v1 Service services N svc status -
v1 ServiceAccount serviceaccounts N sa - -
v1 Pod pods N po status,log,eviction -
v1 Node nodes C no status -
v1 Event events N ev - -
v1 Endpoints endpoints N ep - -
v1 PersistentVolumeClaim persistentvolumeclaims N pvc status -
v1 PersistentVolume persistentvolumes C pv status -
v1 ResourceQuota resourcequotas N quota status -
v1 LimitRange limitranges N limits - -
apps/v1 Deployment deployments N deploy status,scale -
apps/v1 ReplicaSet replicasets N rs status,scale -
apps/v1 DaemonSet daemonsets N ds status -
apps/v1 StatefulSet statefulsets N sts status,scale -
batch/v1 Job jobs N - status -
batch/v1 CronJob cronjobs N cj status -
rbac.authorization.k8s.io/v1 Role roles N - - -
rbac.authorization.k8s.io/v1 RoleBinding rolebindings N - - -
rbac.authorization.k8s.io/v1 ClusterRole clusterroles C - - -
rbac.authorization.k8s.io/v1 ClusterRoleBinding clusterrolebindings C - - -
apiextensions.k8s.io/v1 CustomResourceDefinition customresourcedefinitions C crd,crds status -
policy/v1 PodDisruptionBudget poddisruptionbudgets N pdb status -
scheduling.k8s.io/v1 PriorityClass priorityclasses C pc - -
node.k8s.io/v1 RuntimeClass runtimeclasses C - - -
coordination.k8s.io/v1 Lease leases N - - -
storage.k8s.io/v1 StorageClass storageclasses C sc - -
networking.k8s.io/v1 NetworkPolicy networkpolicies N netpol - -
admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration validatingwebhookconfigurations C - - -
admissionregistration.k8s.io/v1 MutatingWebhookConfiguration mutatingwebhookconfigurations C - - -
resource.k8s.io/v1 DeviceClass deviceclasses C - - 34
resource.k8s.io/v1 ResourceClaim resourceclaims N - status 34
resource.k8s.io/v1 ResourceClaimTemplate resourceclaimtemplates N - - 34
resource.k8s.io/v1 ResourceSlice resourceslices C - - 34
resource.k8s.io/v1beta2 DeviceClass deviceclasses C - - 33
resource.k8s.io/v1beta2 ResourceClaim resourceclaims N - status 33
resource.k8s.io/v1beta2 ResourceClaimTemplate resourceclaimtemplates N - - 33
resource.k8s.io/v1beta2 ResourceSlice resourceslices C - - 33
resource.k8s.io/v1beta1 DeviceClass deviceclasses C - - 32
resource.k8s.io/v1beta1 ResourceClaim resourceclaims N - status 32
resource.k8s.io/v1beta1 ResourceClaimTemplate resourceclaimtemplates N - - 32
resource.k8s.io/v1beta1 ResourceSlice resourceslices C - - 32
"""

# How metadata.name is validated, per plural (default: RFC 1123 subdomain).
NAME_RULES = {"namespaces": "label", "services": "dns1035", "roles": "path",
              "rolebindings": "path", "clusterroles": "path", "clusterrolebindings": "path"}


@dataclasses.dataclass(frozen=True)
class ResourceType:
    """One served resource (a group/version/plural) and what discovery says about it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple = ()
    subresources: tuple = ()
    categories: tuple = ()
    since_minor: int = 0

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self):
        return self.api_version

    @property
    def store_key(self):
        """Objects are stored per group and plural, shared by all versions."""
        return (self.group, self.plural)

    @property
    def group_resource(self):
        """``plural.group`` as used in API error messages (``deployments.apps``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self):
        return self.kind.lower()

    @property
    def has_status(self):
        return "status" in self.subresources

    @property
    def name_rule(self):
        return NAME_RULES.get(self.plural, "subdomain")


def split_api_version(api_version):
    """``apps/v1`` -> ("apps", "v1"); ``v1`` -> ("", "v1")."""
    group, dummy, version = (api_version or "").rpartition("/")
    return group, version


def _parse_table(table):
    types = []
    for line in table.strip().splitlines():
        api_version, kind, plural, scope, short, subs, since = line.split()
        group, version = split_api_version(api_version)
        types.append(ResourceType(
            group, version, kind, plural, scope == "N",
            short_names=() if short == "-" else tuple(short.split(",")),
            subresources=() if subs == "-" else tuple(subs.split(",")),
            categories=("all",) if plural in _ALL_CATEGORY else (),
            since_minor=0 if since == "-" else int(since)))
    return types


_ALL_CATEGORY = {"pods", "services", "deployments", "replicasets", "daemonsets",
                 "statefulsets", "jobs", "cronjobs"}
BUILTIN_TYPES = tuple(_parse_table(BUILTIN_TABLE))
BUILTIN_GROUPS = frozenset(t.group for t in BUILTIN_TYPES)

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version):
    """Sort key for Kubernetes versions: GA before beta before alpha, newer first."""
    match = _VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def crd_resource_types(crd):
    """The ResourceTypes a CustomResourceDefinition object serves (served versions only)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    types = []
    for ver in spec.get("versions") or []:
        if not ver.get("served", True):
            continue
        declared = ver.get("subresources") or {}
        subs = tuple(name for name in ("status", "scale") if name in declared)
        types.append(ResourceType(
            spec.get("group", ""), ver["name"], names.get("kind", ""), names.get("plural", ""),
            namespaced, short_names=tuple(names.get("shortNames") or ()), subresources=subs,
            categories=tuple(names.get("categories") or ())))
    return types


class Registry:
    """Thread-safe set of served resource types (built-ins plus registered CRDs).

    ``minor_version`` is a callable giving the cluster's minor version; types whose
    ``since_minor`` is newer than that are not served.
    """

    def __init__(self, minor_version=lambda: 99):
        self._lock = threading.RLock()
        self._minor_version = minor_version
        self._builtin = list(BUILTIN_TYPES)
        self._crds = {}  # CRD name -> list of ResourceType

    def all_types(self):
        minor = self._minor_version()
        with self._lock:
            types = self._builtin + [t for ts in self._crds.values() for t in ts]
        return [t for t in types if t.since_minor <= minor]

    def register_crd(self, crd):
        with self._lock:
            self._crds[crd["metadata"]["name"]] = crd_resource_types(crd)

    def unregister_crd(self, name):
        with self._lock:
            return self._crds.pop(name, [])

    def by_plural(self, group, version, plural):
        for rtype in self.all_types():
            if (rtype.group, rtype.version, rtype.plural) == (group, version, plural):
                return rtype
        return None

    def by_kind(self, api_version, kind):
        group, version = split_api_version(api_version)
        for rtype in self.all_types():
            if (rtype.group, rtype.version, rtype.kind) == (group, version, kind):
                return rtype
        return None

    def versions_of(self, store_key):
        """Every served ResourceType storing into ``store_key`` (all versions of a resource)."""
        return [t for t in self.all_types() if t.store_key == store_key]

    def groups(self):
        """{group: [versions sorted by preference]} for every served group (core is "")."""
        found = {}
        for rtype in self.all_types():
            versions = found.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        return {group: sorted(vs, key=version_priority) for group, vs in found.items()}

    def types_in(self, group, version):
        return [t for t in self.all_types() if (t.group, t.version) == (group, version)]
