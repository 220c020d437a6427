# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GitOps writer: objects to YAML files in a directory instead of to a cluster.

Private to the collection: not a public API. One file per object, with stable names and
stable content, written only when the content changes (atomically), so a second run reports
no change and a GitOps repository sees no churn. Check mode computes the same diff and writes
nothing.
"""

from __future__ import annotations

import os
import tempfile

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, ToolError

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the message is for unusual hosts.
    yaml = None

HEADER = "# Rendered by gpu_platform.cluster%s. Edit the inventory, not this file.\n"


class _Dumper(getattr(yaml, "SafeDumper", object)):
    """Block-style YAML that keeps key order and indents lists under their key."""

    def increase_indent(self, flow=False, indentless=False):  # pylint: disable=unused-argument
        return super().increase_indent(flow, False)


def to_yaml(obj, source=""):
    if yaml is None:
        raise ToolError("PyYAML is required to render manifests. Fix: pip install PyYAML")
    body = yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=120,
                     allow_unicode=True)
    return HEADER % ((" " + source) if source else "") + "---\n" + body


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _check_directory(directory):
    if not directory:
        raise ParamError("render_to", "is empty", "give a directory path such as build/platform")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ParamError("render_to", "%s exists and is not a directory" % directory,
                         "give a directory path, or move the file away")


def inside(directory, name):
    """The path of file ``name`` in ``directory``; a name that is not one plain file name (a separator, ``..``,
    a NUL) or that resolves outside the directory (a symbolic link) is refused: nothing is written outside
    render_to."""
    if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise ParamError("render_to", "the file name %r is not a plain name inside the folder" % (name,),
                         "give objects a kind and metadata.name without '/' or '..'")
    root = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(root, name))
    if os.path.dirname(path) != root:
        raise ParamError("render_to", "%s resolves outside %s" % (name, directory),
                         "remove the symbolic link %s, or render into another folder" % os.path.join(directory, name))
    return os.path.join(directory, name)


def write_files(directory, files, check_mode=False):
    """Write ``{file name: text}``; returns (changed names, diffs) with before/after per file."""
    _check_directory(directory)
    changed, diffs = [], []
    paths = {name: inside(directory, name) for name in files}  # every name checked before the first write
    for name in sorted(files):
        path = paths[name]
        before = _read(path)
        after = files[name]
        if before == after:
            continue
        changed.append(name)
        diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": after})
        if check_mode:
            continue
        tmp = None
        try:
            os.makedirs(directory, exist_ok=True)
            # A short temporary name: the final name may already be as long as the file system allows.
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpu-platform-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(after)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as exc:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
            raise ToolError("could not write %s: %s. Fix: check that the folder is writable" % (path, exc))
    return changed, diffs


def unit_manifests(directory):
    """The manifests in the bundle's unit folders, as ``<unit>/<file>.yaml`` paths relative to ``directory``: the
    folders' kustomization.yaml and node label patch lists (``*-node-labels.yaml``, instructions for kubectl label)
    left out. Sorted; a missing directory has none."""
    out = []
    try:
        units = sorted(entry for entry in os.listdir(directory) if os.path.isdir(os.path.join(directory, entry)))
        for unit in units:
            for name in sorted(os.listdir(os.path.join(directory, unit))):
                if name.endswith(".yaml") and name != "kustomization.yaml" and not name.endswith("-node-labels.yaml"):
                    out.append("%s/%s" % (unit, name))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ToolError("could not read the bundle %s: %s. Fix: check that the folder is readable" % (directory, exc))
    return out


def manifest_objects(directory, paths):
    """{path: [its documents as {apiVersion, kind, name, namespace}]} for the YAML files at ``paths`` (relative to
    ``directory``): who each object of the bundle's units is, for the units' health checks. Empty documents are left
    out; a document that is not an object with an apiVersion, a kind and a name is refused, naming the file."""
    if yaml is None:
        raise ToolError("PyYAML is required to read manifests. Fix: pip install PyYAML")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = {}
    for name in paths:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                docs = [doc for doc in yaml.load_all(handle, Loader=loader) if doc is not None]
        except (OSError, yaml.YAMLError) as exc:
            raise ToolError("could not read %s: %s. Fix: render the bundle again, or repair the file" % (path, exc))
        out[name] = []
        for doc in docs:
            meta = doc.get("metadata") if isinstance(doc, dict) else None
            if not isinstance(meta, dict) or not all(isinstance(v, str) and v for v in (
                    doc.get("apiVersion"), doc.get("kind"), meta.get("name"))):
                raise ToolError("%s holds a document that is not a Kubernetes object (apiVersion, kind and "
                                "metadata.name). Fix: render the bundle again, or repair the file" % path)
            out[name].append({"apiVersion": doc["apiVersion"], "kind": doc["kind"], "name": meta["name"],
                              "namespace": meta.get("namespace") or ""})
    return out


def remove_files(directory, names, check_mode=False):
    """Remove the named files that exist; returns (removed names, diffs)."""
    removed, diffs = [], []
    paths = {name: inside(directory, name) for name in names}
    for name in sorted(names):
        path = paths[name]
        before = _read(path)
        if before is None:
            continue
        removed.append(name)
        diffs.append({"before_header": path, "after_header": "(removed)", "before": before, "after": ""})
        if not check_mode:
            os.unlink(path)
    return removed, diffs


def write_objects(directory, objects, name_of, source="", check_mode=False):
    """Render each object to ``name_of(obj)``; returns (changed names, diffs, every file name)."""
    files = {name_of(obj): to_yaml(obj, source) for obj in objects}
    changed, diffs = write_files(directory, files, check_mode)
    return changed, diffs, sorted(files)
