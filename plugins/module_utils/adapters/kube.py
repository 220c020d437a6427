# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The door to the Kubernetes API: a narrow client over the official ``kubernetes`` library.

Private to the collection: not a public API. get / list (label and field selectors) /
server-side apply / label patch / delete / wait, each write with server-side dry-run for
check mode. The ``kubernetes`` library is imported lazily; its absence is a clear error.
Waits take an injectable clock so tests and simulated controllers run without real sleeps.
"""

from __future__ import annotations

import json
import time

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import objects as domain_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ToolError

FIELD_MANAGER = "gpu-platform"


class WaitTimeout(GpuPlatformError):
    """A wait ran out of time; ``last`` is the last thing seen."""


class EvictionRefused(ToolError):
    """The API answered an eviction with 429 TooManyRequests (a PodDisruptionBudget); retry later."""


class RealClock:
    """Monotonic wall clock. A clock is anything with ``time()`` (seconds) and ``sleep(seconds)``."""

    @staticmethod
    def time():
        return time.monotonic()

    @staticmethod
    def sleep(seconds):
        time.sleep(seconds)


def wait_for(fetch, ready, timeout, clock=None, interval=2.0, describe=None):
    """Poll ``fetch()`` until ``ready(value)`` is true; raise WaitTimeout with ``describe(value)``."""
    clock = clock or RealClock()
    deadline = clock.time() + timeout
    while True:
        value = fetch()
        if ready(value):
            return value
        remaining = deadline - clock.time()
        if remaining <= 0:
            detail = describe(value) if describe else repr(value)
            raise WaitTimeout("timed out after %ss: %s" % (timeout, detail), last=value)
        clock.sleep(min(interval, remaining))


def _import_kubernetes():
    try:
        from kubernetes import client, config, dynamic  # pylint: disable=import-outside-toplevel
        from kubernetes.dynamic import exceptions  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise ToolError("the Python library 'kubernetes' is required (%s). Fix: pip install kubernetes "
                        "on the host that runs this task (the controller for connection: local)" % exc)
    return client, config, dynamic, exceptions


class KubeClient:
    """A small, typed-by-convention wrapper: objects in and out are plain dicts."""

    def __init__(self, kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None,
                 validate_certs=None, field_manager=FIELD_MANAGER):
        client, config, dynamic, exceptions = _import_kubernetes()
        self._exceptions = exceptions
        self.field_manager = field_manager
        configuration = client.Configuration()
        try:
            if kubeconfig or not host:
                if isinstance(kubeconfig, dict):
                    config.load_kube_config_from_dict(kubeconfig, context=context,
                                                      client_configuration=configuration)
                else:
                    config.load_kube_config(config_file=kubeconfig, context=context,
                                            client_configuration=configuration)
        except Exception as exc:  # the library raises ConfigException, TypeError, IOError ...
            raise ToolError("could not load the kubeconfig (%s): %s. Fix: set kubeconfig or K8S_AUTH_KUBECONFIG "
                            "to a readable kubeconfig, or give host and api_key" % (kubeconfig or "default", exc))
        if host:
            configuration.host = host
        if api_key:
            configuration.api_key = {"authorization": "Bearer " + api_key}
        if ca_cert:
            configuration.ssl_ca_cert = ca_cert
        if validate_certs is not None:
            configuration.verify_ssl = bool(validate_certs)
        try:
            api_client = client.ApiClient(configuration)
            self._dyn = dynamic.DynamicClient(api_client)
        except Exception as exc:
            raise ToolError("cannot reach the Kubernetes API at %s: %s" % (configuration.host, exc))
        # CoreV1Api is made on first use (pod logs only): importing it builds the client's typed models, about a
        # second of CPU in every module run that would otherwise pay for it without reading a log.
        self._client_module = client
        self._api_client = api_client
        self._core_api = None
        self._resources = {}

    # -- plumbing -----------------------------------------------------------
    def _core(self):
        if self._core_api is None:
            self._core_api = self._client_module.CoreV1Api(self._api_client)
        return self._core_api

    def resource(self, api_version, kind):
        key = (api_version, kind)
        if key not in self._resources:
            try:
                self._resources[key] = self._dyn.resources.get(api_version=api_version, kind=kind)
            except self._exceptions.ResourceNotFoundError:
                raise ToolError("the cluster does not serve %s %s. Fix: install the operator or CRD that "
                                "provides it first" % (api_version, kind), api_version=api_version, kind=kind)
        return self._resources[key]

    def serves(self, api_version, kind):
        try:
            self.resource(api_version, kind)
            return True
        except ToolError:
            return False

    def _call(self, what, func, *args, **kwargs):
        try:
            return func(*args, **kwargs)
        except self._exceptions.DynamicApiError as exc:
            raise ToolError("%s failed: %s %s" % (what, exc.status, _api_message(exc)), status=exc.status)

    # -- reads --------------------------------------------------------------
    def get(self, api_version, kind, name, namespace=None):
        res = self.resource(api_version, kind)
        try:
            return res.get(name=name, namespace=namespace).to_dict()
        except self._exceptions.NotFoundError:
            return None
        except self._exceptions.DynamicApiError as exc:
            raise ToolError("get %s %s failed: %s %s" % (kind, name, exc.status, _api_message(exc)))

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        res = self.resource(api_version, kind)
        result = self._call("list %s" % kind, res.get, namespace=namespace,
                            label_selector=label_selector, field_selector=field_selector)
        return list(result.to_dict().get("items", []))

    def log(self, name, namespace, container=None, tail_lines=None):
        """A pod's log as text; None when the pod is gone or has no log yet (it has not started)."""
        kwargs = {"container": container} if container else {}
        if tail_lines:
            kwargs["tail_lines"] = tail_lines
        try:
            return self._core().read_namespaced_pod_log(name, namespace, **kwargs)
        except self._client_module.ApiException as exc:
            if exc.status in (400, 404):  # 400: the container is still waiting to start
                return None
            raise ToolError("read the log of pod %s/%s failed: %s %s" % (namespace, name, exc.status, exc.reason))

    # -- writes -------------------------------------------------------------
    def apply(self, obj, dry_run=False, force=True):
        """Server-side apply ``obj``; returns the object as the server has (or would have) it."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata", {})
        kwargs = {"field_manager": self.field_manager, "force_conflicts": force}
        if dry_run:
            kwargs["dry_run"] = "All"
        result = self._call("apply %s %s" % (obj["kind"], meta.get("name")), self._dyn.server_side_apply,
                            res, body=obj, name=meta.get("name"), namespace=meta.get("namespace"), **kwargs)
        return result.to_dict()

    def patch_labels(self, api_version, kind, name, labels, namespace=None, dry_run=False):
        """Merge-patch labels; a value of None removes that label."""
        return self.patch_merge(api_version, kind, name, {"metadata": {"labels": labels}}, namespace=namespace,
                                dry_run=dry_run, what="label")

    def patch_merge(self, api_version, kind, name, body, namespace=None, dry_run=False, what="patch"):
        """JSON merge patch (RFC 7386) of ``body``; a value of None removes that field."""
        res = self.resource(api_version, kind)
        kwargs = {"content_type": "application/merge-patch+json"}
        if dry_run:
            kwargs["dry_run"] = "All"
        result = self._call("%s %s %s" % (what, kind, name), self._dyn.patch, res, body=body, name=name,
                            namespace=namespace, **kwargs)
        return result.to_dict()

    def evict(self, name, namespace, dry_run=False):
        """POST a policy/v1 Eviction to ``pods/<name>/eviction``; False when the pod is already gone.

        A 429 (the eviction would violate a PodDisruptionBudget) raises EvictionRefused with the
        server's message and its causes (which name the budget), so callers can retry.
        """
        pods = self.resource("v1", "Pod")
        eviction = pods.subresources.get("eviction")
        if eviction is None:
            raise ToolError("the cluster does not serve pods/eviction. Fix: use a Kubernetes API server that "
                            "serves the Eviction API (policy/v1, Kubernetes 1.22 or later)")
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        kwargs = {"dry_run": "All"} if dry_run else {}
        try:
            eviction.create(body=body, name=name, namespace=namespace, **kwargs)
            return True
        except self._exceptions.NotFoundError:
            return False
        except self._exceptions.DynamicApiError as exc:
            if exc.status == 429:
                raise EvictionRefused(_api_message(exc, causes=True), status=429)
            raise ToolError("evict pod %s/%s failed: %s %s" % (namespace, name, exc.status, _api_message(exc)),
                            status=exc.status)

    def delete(self, api_version, kind, name, namespace=None, dry_run=False):
        """Delete; returns False when it was already gone."""
        res = self.resource(api_version, kind)
        kwargs = {"dry_run": "All"} if dry_run else {}
        try:
            res.delete(name=name, namespace=namespace, **kwargs)
            return True
        except self._exceptions.NotFoundError:
            return False
        except self._exceptions.DynamicApiError as exc:
            raise ToolError("delete %s %s failed: %s %s" % (kind, name, exc.status, _api_message(exc)))

    def apply_objects(self, objs, check_mode=False, missing=None):
        """Server-side apply each object that would change; returns (changed identities, diffs).

        Each object is first applied with server-side dry-run and the answer compared with what
        the cluster holds, so an unchanged object causes no write and no new resourceVersion.
        With a list as ``missing``, an object that does not exist yet is not created: its identity
        is appended there instead (a patch of someone else's object, such as an operator's DaemonSet).
        """
        changed, diffs = [], []
        for obj in objs:
            meta = obj.get("metadata") or {}
            current = self.get(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"))
            if current is None and missing is not None:
                missing.append(domain_objects.identity(obj))
                continue
            proposed = self.apply(obj, dry_run=True)
            if not domain_objects.differs(current, proposed):
                continue
            name = domain_objects.identity(obj)
            changed.append(name)
            diffs.append({"before_header": name, "after_header": name,
                          "before": domain_objects.comparable(current) or {},
                          "after": domain_objects.comparable(proposed)})
            if not check_mode:
                self.apply(obj)
        return changed, diffs

    def ensure_namespace(self, name, labels, dry_run=False):
        """Create the namespace or add missing labels. Returns (changed, before, after) labels."""
        current = self.get("v1", "Namespace", name)
        before = dict(((current or {}).get("metadata") or {}).get("labels") or {})
        if current is not None and all(before.get(k) == v for k, v in labels.items()):
            return False, before, before
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels)}}
        result = self.apply(obj, dry_run=dry_run)
        after = dict((result.get("metadata") or {}).get("labels") or {})
        return True, (before if current is not None else None), after


def _api_message(exc, causes=False):
    """The Status message of an API error (with its causes' messages if asked), else its summary."""
    body = getattr(exc, "body", None)
    if body:
        try:
            status = json.loads(body)
            message = status.get("message", body)
        except (ValueError, AttributeError):
            return str(body)
        extra = [c.get("message") for c in ((status.get("details") or {}).get("causes") or []) if c.get("message")]
        return " ".join([message] + extra) if causes and extra else message
    return getattr(exc, "summary", lambda: str(exc))()
