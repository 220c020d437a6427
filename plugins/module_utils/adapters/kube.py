# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The door to the Kubernetes API: a narrow client over the official ``kubernetes`` library.

Private to the collection: not a public API. get / list (label and field selectors) /
server-side apply / label patch / delete / wait, each write with server-side dry-run for
check mode. The ``kubernetes`` library is imported lazily; its absence is a clear error.
Retries are in kube_retry.py, waits (with an injectable clock) in kube_wait.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters.kube_retry import (
    CONNECT_TIMEOUT, READ_TIMEOUT, RETRIES, retry_policy)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects as domain_objects
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.names import FIELD_MANAGER
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError, ToolError


class EvictionRefused(ToolError):
    """The API answered an eviction with 429 TooManyRequests (a PodDisruptionBudget); retry later."""


def _import_kubernetes():
    try:
        from kubernetes import client, config, dynamic  # pylint: disable=import-outside-toplevel
        from kubernetes.dynamic import exceptions  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise ToolError("the Python library 'kubernetes' is required (%s). Fix: pip install kubernetes "
                        "on the host that runs this task (the controller for connection: local)" % exc)
    return client, config, dynamic, exceptions


def preload():
    """Import the ``kubernetes`` library now if it is installed (the controller's action plugins do, so that the
    worker processes Ansible forks for each task inherit it); a missing library is reported when a client is made."""
    try:
        _import_kubernetes()
    except ToolError:
        pass


class KubeClient:
    """A small, typed-by-convention wrapper: objects in and out are plain dicts."""

    def __init__(self, kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None,
                 validate_certs=None, field_manager=FIELD_MANAGER, api_connect_timeout=None, api_read_timeout=None):
        client, config, dynamic, exceptions = _import_kubernetes()
        from urllib3 import exceptions as transport  # pylint: disable=import-outside-toplevel
        self._exceptions = exceptions
        self._transport_errors = (transport.HTTPError, OSError)
        self.timeouts = (_seconds("api_connect_timeout", api_connect_timeout, CONNECT_TIMEOUT),
                         _seconds("api_read_timeout", api_read_timeout, READ_TIMEOUT))
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
            reason = str(exc).rstrip(".")
            if isinstance(kubeconfig, str) and not os.path.exists(os.path.expanduser(kubeconfig)):
                # the library says "No configuration found"; the host matters since a task may run elsewhere
                reason = "no such file on %s, where the task runs" % socket.gethostname()
            raise ToolError("could not load the kubeconfig (%s): %s. Fix: set kubeconfig or K8S_AUTH_KUBECONFIG "
                            "to a readable kubeconfig, or give host and api_key" % (kubeconfig or "default", reason))
        if host:
            configuration.host = host
        if api_key:
            configuration.api_key = {"authorization": "Bearer " + api_key}
        if ca_cert:
            configuration.ssl_ca_cert = ca_cert
        if validate_certs is not None:
            configuration.verify_ssl = bool(validate_certs)
        configuration.retries = retry_policy()
        self.host = configuration.host
        # Where the URL came from, for an operator reading the error (AWX's bearer-token credential sets K8S_AUTH_HOST).
        self.host_source = "the host option or K8S_AUTH_HOST" if host else "the kubeconfig's server"
        try:
            api_client = client.ApiClient(configuration)
            _default_timeout(api_client.rest_client, self.timeouts)
            with self._transport("discovery"):
                self._dyn = dynamic.DynamicClient(api_client)
        except GpuPlatformError:
            raise
        except Exception as exc:
            raise ToolError("cannot reach the Kubernetes API at %s: %s" % (configuration.host, exc))
        # CoreV1Api is made on first use (pod logs only): importing it builds the client's typed models, about a
        # second of CPU in every module run that would otherwise pay for it without reading a log.
        self._client_module = client
        self._api_client = api_client
        self._core_api = None
        self._resources = {}
        self._confirmed = set()  # (api_version, kind) the server itself listed (serves)

    # -- plumbing -----------------------------------------------------------
    @contextlib.contextmanager
    def _transport(self, what):
        """A request that found no answer (refused, reset or timed out on every attempt) as a ToolError."""
        try:
            yield
        except self._transport_errors as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ToolError("%s: the Kubernetes API at %s (from %s) did not answer after %d attempts (%s). Fix: check "
                            "that the API server is up and reachable from this host; a slow server may need a longer "
                            "api_read_timeout (now %ss)" % (what, self.host, self.host_source, RETRIES + 1, reason,
                                                            self.timeouts[1]),
                            status=None)

    def _core(self):
        if self._core_api is None:
            self._core_api = self._client_module.CoreV1Api(self._api_client)
        return self._core_api

    def resource(self, api_version, kind):
        key = (api_version, kind)
        if key not in self._resources:
            try:
                with self._transport("discover %s %s" % (api_version, kind)):
                    self._resources[key] = self._dyn.resources.get(api_version=api_version, kind=kind)
            except self._exceptions.ResourceNotFoundError:
                raise ToolError("the cluster does not serve %s %s. Fix: install the operator or CRD that "
                                "provides it first" % (api_version, kind), api_version=api_version, kind=kind)
        return self._resources[key]

    def serves(self, api_version, kind):
        """Whether the cluster serves the kind now. The client keeps its discovery in a file that later runs read
        too, so a kind whose CRD was deleted since (an uninstall, then an install) is still in it: a kind found there
        is confirmed once by the server's own list of its group version."""
        try:
            self.resource(api_version, kind)
        except ToolError:
            return False
        if (api_version, kind) in self._confirmed:
            return True
        path = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        try:
            with self._transport("discover %s" % api_version):
                listed = self._dyn.request("get", path).to_dict()
        except self._exceptions.NotFoundError:
            listed = {}
        if any(r.get("kind") == kind for r in listed.get("resources") or []):
            self._confirmed.add((api_version, kind))
            return True
        self._resources.pop((api_version, kind), None)
        self._dyn.resources.invalidate_cache()  # the stale file too
        return False

    def _call(self, what, func, *args, **kwargs):
        try:
            with self._transport(what):
                return func(*args, **kwargs)
        except self._exceptions.DynamicApiError as exc:
            # A 409's causes name the conflicting field manager and field (server-side apply without force).
            raise ToolError("%s failed: %s %s" % (what, exc.status, _api_message(exc, causes=exc.status == 409)),
                            status=exc.status)

    # -- reads --------------------------------------------------------------
    def get(self, api_version, kind, name, namespace=None):
        res = self.resource(api_version, kind)
        try:
            with self._transport("get %s %s" % (kind, name)):
                return res.get(name=name, namespace=namespace).to_dict()
        except self._exceptions.NotFoundError:
            return None
        except self._exceptions.DynamicApiError as exc:
            raise ToolError("get %s %s failed: %s %s" % (kind, name, exc.status, _api_message(exc)), status=exc.status)

    def version(self):
        """The API server's /version document (gitVersion, major, minor, platform ...), read from the server.

        Not from the library's discovery cache: that file (in the temporary folder, keyed by the server's URL) keeps
        the version it first saw, so a cluster upgraded since, or another server on the same address, would be
        checked against a version it no longer runs."""
        with self._transport("read the server's version"):
            try:
                return dict(self._dyn.request("get", "/version", serializer=lambda dummy, data: data) or {})
            except self._exceptions.DynamicApiError as exc:
                raise ToolError("read the server's version failed: %s %s" % (exc.status, _api_message(exc)),
                                status=exc.status)

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
            with self._transport("read the log of pod %s/%s" % (namespace, name)):
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
            with self._transport("evict pod %s/%s" % (namespace, name)):
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
            with self._transport("delete %s %s" % (kind, name)):
                res.delete(name=name, namespace=namespace, **kwargs)
            return True
        except self._exceptions.NotFoundError:
            return False
        except self._exceptions.DynamicApiError as exc:
            raise ToolError("delete %s %s failed: %s %s" % (kind, name, exc.status, _api_message(exc)))

    def apply_objects(self, objs, check_mode=False, missing=None):
        """Server-side apply each object that would change; returns (changed identities, diffs).

        Every object is first applied with server-side dry-run and the answer compared with what the cluster
        holds, so an unchanged object causes no write and no new resourceVersion; and if the server refuses any
        of them, none is applied (the error names each refusal). An object in a Namespace the same list
        creates is tried once that Namespace exists. With a list as ``missing``, an object that does not exist
        yet is not created: its identity is appended there instead (a patch of someone else's object, such as
        an operator's DaemonSet).
        """
        new_namespaces = set()
        plans, later, refused = [], [], []
        for obj in objs:
            meta = obj.get("metadata") or {}
            current = self.get(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"))
            if current is None and missing is not None:
                missing.append(domain_objects.identity(obj))
                continue
            if obj["kind"] == "Namespace" and current is None:
                new_namespaces.add(meta.get("name"))
            try:
                plans.append((obj, current, self.apply(obj, dry_run=True)))
            except ToolError as exc:
                if exc.details.get("status") == 404 and meta.get("namespace") in new_namespaces:
                    later.append((obj, current))  # its Namespace is created first
                else:
                    refused.append("%s: %s" % (domain_objects.identity(obj), exc.msg))
        _refuse(refused, len(objs))
        changed, diffs = self._apply_planned(plans, check_mode)
        if later and not check_mode:
            plans = []
            for obj, current in later:
                try:
                    plans.append((obj, current, self.apply(obj, dry_run=True)))
                except ToolError as exc:
                    refused.append("%s: %s" % (domain_objects.identity(obj), exc.msg))
            _refuse(refused, len(objs), applied=changed)
            more, more_diffs = self._apply_planned(plans, check_mode)
            changed, diffs = changed + more, diffs + more_diffs
        elif later:  # check mode: the Namespace is not there to try them in; they would be created
            for obj, current in later:
                name = domain_objects.identity(obj)
                changed.append(name)
                diffs.append({"before_header": name, "after_header": name, "before": {},
                              "after": domain_objects.comparable(obj)})
        return changed, diffs

    def _apply_planned(self, plans, check_mode):
        changed, diffs = [], []
        for obj, current, proposed in plans:
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


def _refuse(refused, total, applied=()):
    if refused:
        raise ToolError("the API server refused %d of %d objects in a server-side dry-run, so %s: %s. Fix: correct "
                        "them and run again" % (len(refused), total, "only their Namespaces (%s) were applied"
                                                % ", ".join(applied) if applied else "none was applied",
                                                "; ".join(refused)), refused=refused)


def _seconds(field, value, default):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise ParamError(field, "%r is not a number of seconds between 1 and 3600" % (value,),
                         "give a time-out in seconds, e.g. %s" % default)
    return value


def _default_timeout(rest_client, timeouts):
    """Every request of ``rest_client`` gets (connect, read) time-outs unless it names its own: the library's
    default is none, so a server that accepts the connection and never answers would hang the task."""
    request = rest_client.request

    def timed(method, url, *args, **kwargs):
        if not kwargs.get("_request_timeout"):
            kwargs["_request_timeout"] = timeouts
        return request(method, url, *args, **kwargs)

    rest_client.request = timed


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
