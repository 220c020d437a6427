# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""params -> plan -> apply -> result for helm_pinned_release.

Private to the collection: not a public API. Ties the pure domain (domain/helm/helm_pinned_release.py, records.py,
domain/gitops/flux_argocd.py) to the adapters (helm, kube, render). No Ansible imports: the module passes
in factories for the adapters, so tests can drive this with real helm against the fake API.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile

from ansible_collections.gpu_platform.cluster.plugins.module_utils.adapters import render as render_adapter
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import flux_argocd as gitops
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import helm_pinned_release as domain
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import records
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError, ToolError

try:
    import yaml
except ImportError:
    yaml = None


def _local_kind(chart_ref):
    if not chart_ref or chart_ref.startswith("oci://"):
        return None
    path = os.path.expanduser(chart_ref)
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "Chart.yaml")):
        return "dir"
    if os.path.isfile(path) and (path.endswith(".tgz") or path.endswith(".tar.gz")):
        return "tgz"
    return None


def _load_yaml(text, field, where):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ParamError(field, "%s is not valid YAML (%s)" % (where, exc), "fix the YAML syntax")


def _read_values_files(paths):
    docs = []
    for path in paths or []:
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as handle:
                docs.append(_load_yaml(handle.read(), "values_files", path))
        except OSError as exc:
            raise ParamError("values_files", "cannot read %s (%s)" % (path, exc.strerror),
                             "give the path of an existing values file")
    return docs


def _local_chart_meta(chart):
    """(name, version) from a local chart's Chart.yaml (directory or packaged)."""
    path = os.path.expanduser(chart.ref)
    if chart.kind == domain.LOCAL_DIR:
        with open(os.path.join(path, "Chart.yaml"), encoding="utf-8") as handle:
            meta = _load_yaml(handle.read(), "chart_ref", path)
    else:
        try:
            with tarfile.open(path) as archive:
                member = next((m for m in archive.getmembers()
                               if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")), None)
                if member is None:
                    raise ParamError("chart_ref", "%s holds no Chart.yaml" % path, "give a chart packaged by helm package")
                meta = _load_yaml(archive.extractfile(member).read().decode("utf-8"), "chart_ref", path)
        except tarfile.TarError as exc:
            raise ParamError("chart_ref", "%s is not a chart archive (%s)" % (path, exc), "give a .tgz made by helm package")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ParamError("chart_ref", "%s has no chart name in Chart.yaml" % path, "fix the chart's Chart.yaml")
    return str(meta["name"]), str(meta.get("version", ""))


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prepare_request(params):
    """Validate everything that can be validated without the cluster."""
    request = domain.build_request(params, _local_kind(params.get("chart_ref")))
    if request.state == "absent":
        return request
    request.values = domain.merge_values(_read_values_files(params.get("values_files")), params.get("release_values"))
    if request.chart.is_local:
        name, version = _local_chart_meta(request.chart)
        if not version_parse.same_chart_version(version, request.version):
            raise ParamError("chart_version", "is %s but the local chart %s is version %s"
                             % (request.version, request.chart.ref, version),
                             "pin the version the chart has, or point chart_ref at the chart of that version")
        request.chart = domain.ChartSource(request.chart.kind, os.path.expanduser(request.chart.ref), name)
    if params.get("flux_interval"):
        request.flux_interval = params["flux_interval"]
    return request


def _diff_text(state):
    if not state:
        return ""
    return yaml.safe_dump(state, default_flow_style=False, sort_keys=True)


def run_render(request, check_mode):
    """GitOps delivery: write the objects; never contact a cluster or a chart repository."""
    source = "helm_pinned_release %s/%s" % (request.namespace, request.name)
    if request.state == "absent":
        removed, diffs = render_adapter.remove_files(request.render_to, gitops.all_file_names(request), check_mode)
        return {"changed": bool(removed), "action": "uninstall" if removed else "none",
                "rendered": {"directory": request.render_to, "files": [], "changed_files": removed},
                "diff": diffs}
    objects = gitops.render(request)
    changed, diffs, files = render_adapter.write_objects(request.render_to, objects, gitops.file_name, source,
                                                         check_mode)
    stale = gitops.all_file_names(request) - set(files)
    removed, removed_diffs = render_adapter.remove_files(request.render_to, stale, check_mode)
    return {
        "changed": bool(changed or removed), "action": "render",
        "rendered": {"directory": request.render_to, "format": request.render_format, "files": files,
                     "changed_files": changed + removed},
        "objects": objects, "diff": diffs + removed_diffs,
    }


class SecretReleases:
    """Release reads from helm's release Secrets through the Kubernetes API, one LIST for every release.

    ``helm list -A`` and ``helm get values`` read the same Secrets; reading them here means a converged
    release costs no helm process at all. Helm's other storage drivers (HELM_DRIVER=configmap, sql) are
    read through helm itself (see ``release_reader``).
    """

    def __init__(self, kube):
        self.entries, self.values = records.releases_from_secrets(
            kube.list("v1", "Secret", label_selector="owner=helm"))

    def list_releases(self):
        return self.entries

    def get_values(self, name, namespace):
        return self.values.get((namespace, name), {})


def release_reader(helm, kube_factory, environ=None):
    """Where the run reads releases: the release Secrets (helm's default storage), else helm itself."""
    driver = (os.environ if environ is None else environ).get("HELM_DRIVER", "")
    if driver not in ("", "secret", "secrets"):
        return helm
    try:
        return SecretReleases(kube_factory())
    except records.BadReleaseRecord:
        return helm  # a record helm did not write (or a newer format): let helm read it


class ReleaseRunner:
    """Runs one request against a cluster through a Helm adapter (and a kube adapter if needed)."""

    def __init__(self, request, helm, kube_factory, check_mode=False, tmpdir=None, reader=None):
        self.request = request
        self.helm = helm
        self.kube_factory = kube_factory
        self.check_mode = check_mode
        self.tmpdir = tmpdir
        self.reader = reader or helm

    def run(self):
        releases = self.reader.list_releases()
        deployed = records.find_release(releases, self.request.name, self.request.namespace)
        if self.request.state == "absent":
            return self._absent(deployed)
        domain.check_other_namespaces(releases, self.request)
        namespace = self._namespace()
        values = self.reader.get_values(self.request.name, self.request.namespace) if deployed else {}
        history = []
        if deployed and deployed.get("status") != "deployed":
            history = self.helm.history(self.request.name, self.request.namespace)
        plan = domain.plan_present(self.request, deployed, values, history)
        result = {
            "changed": plan.changed or namespace["changed"], "action": plan.action, "reasons": plan.reasons,
            "namespace": namespace,
            "diff": {"before": _diff_text(plan.before), "after": _diff_text(plan.after),
                     "before_header": "release %s/%s (deployed)" % (self.request.namespace, self.request.name),
                     "after_header": "release %s/%s (desired)" % (self.request.namespace, self.request.name)},
        }
        if plan.repair:
            result["repair"] = plan.repair
        if not plan.changed or self.check_mode:
            result["release"] = records.release_summary(self.request, deployed, plan.before.get("chart"))
            return result
        result["release"] = self._apply(plan)
        return result

    def _absent(self, deployed):
        plan = domain.plan_absent(deployed)
        result = {"changed": plan.changed, "action": plan.action, "reasons": plan.reasons,
                  "release": records.release_summary(self.request, deployed),
                  "diff": {"before": _diff_text(plan.before), "after": ""}}
        if plan.changed and not self.check_mode:
            self.helm.uninstall(self.request.name, self.request.namespace, self.request.wait, self.request.wait_timeout)
            result["release"]["status"] = "uninstalled"
        return result

    def _namespace(self):
        if not self.request.create_namespace:
            return {"changed": False, "name": self.request.namespace}
        kube = self.kube_factory()
        changed, before, after = kube.ensure_namespace(self.request.namespace, self.request.namespace_labels,
                                                       dry_run=self.check_mode)
        return {"changed": changed, "name": self.request.namespace, "labels_before": before, "labels": after}

    def _chart_argument(self):
        """The chart argument for helm, fetched and verified first when a digest is pinned."""
        chart = self.request.chart
        if not self.request.chart_sha256:
            return chart.ref, chart.repo_url
        if chart.kind == domain.LOCAL_TGZ:
            archive = chart.ref
        else:
            dest = tempfile.mkdtemp(dir=self.tmpdir, prefix="chart-")
            self.helm.pull(chart.ref, self.request.version, dest, chart.repo_url, self.request.plain_http)
            pulled = [name for name in os.listdir(dest) if name.endswith(".tgz")]
            if len(pulled) != 1:
                raise ToolError("helm pull of %s %s left %d archives in %s"
                                % (chart.ref, self.request.version, len(pulled), dest))
            archive = os.path.join(dest, pulled[0])
        actual = file_sha256(archive)
        if actual != self.request.chart_sha256:
            raise ParamError("chart_sha256", "the archive of %s %s has sha256 %s, not the pinned %s"
                             % (chart.ref, self.request.version, actual, self.request.chart_sha256),
                             "check the chart's provenance; if the new archive is trusted, pin its digest")
        return archive, ""

    def _values_file(self):
        fd, path = tempfile.mkstemp(dir=self.tmpdir, prefix="values-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp files are 0600
            handle.write(json.dumps(self.request.values))
        return path

    def _apply(self, plan):
        request = self.request
        if plan.repair == "rollback":
            self.helm.rollback(request.name, request.namespace, plan.rollback_to, request.wait, request.wait_timeout)
            restored = records.find_release(self.helm.list_releases(), request.name, request.namespace)
            if domain.plan_present(request, restored, self.helm.get_values(request.name, request.namespace)).action == "none":
                return records.release_summary(request, restored)  # the good revision was already the desired one
        elif plan.repair == "uninstall":
            self.helm.uninstall(request.name, request.namespace, request.wait, request.wait_timeout)
        chart_arg, repo_url = self._chart_argument()
        values_file = self._values_file()
        try:
            released = self.helm.upgrade_install(
                request.name, request.namespace, chart_arg, request.version, values_file, repo_url,
                request.wait, request.wait_timeout, request.atomic, request.plain_http)
        except ToolError as exc:
            exc.details["release"] = records.release_summary(
                request, records.find_release(self.helm.list_releases(), request.name, request.namespace))
            if request.atomic:
                exc.msg += " (rollback on failure was on: the release is at %s)" % exc.details["release"].get("status")
            raise
        finally:
            os.unlink(values_file)
        return records.release_summary(request, released)


def _once(factory):
    """The factory's product, made on first use and then shared (one API client per run)."""
    made = []

    def get():
        if not made:
            made.append(factory())
        return made[0]
    return get


def run(params, helm_factory, kube_factory, check_mode=False):
    """The whole module run. Factories are called only when that door is needed."""
    request = prepare_request(params)
    if request.render_to:
        result = run_render(request, check_mode)
    else:
        tmpdir = tempfile.mkdtemp(prefix="gpu-platform-helm-")
        try:
            helm = helm_factory()
            kube = _once(kube_factory)
            runner = ReleaseRunner(request, helm, kube, check_mode, tmpdir, release_reader(helm, kube))
            try:
                result = runner.run()
            except GpuPlatformError as exc:
                exc.details.setdefault("commands", runner.helm.commands)
                raise
            result["commands"] = runner.helm.commands
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return result
