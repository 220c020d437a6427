# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What Helm recorded about releases: its release Secrets, ``helm list`` entries and release objects, read
into plain dicts (pure).

Private to the collection: not a public API. Pure: standard library only, no I/O.
The workflow (workflows/helm_pinned_release.py) feeds it what the adapters read; ``domain.helm.helm_pinned_release`` plans from it.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re

CHART_FIELD = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$")

# What ``helm list --deployed --failed --pending --uninstalling`` shows (superseded revisions never are).
LISTED_STATES = ("deployed", "failed", "pending-install", "pending-upgrade", "pending-rollback", "uninstalling")
RELEASE_SECRET_TYPE = "helm.sh/release.v1"
GZIP_MAGIC = b"\x1f\x8b\x08"


class BadReleaseRecord(ValueError):
    """A release Secret whose record cannot be read (not helm's encoding)."""


def decode_release_record(data):
    """The release JSON in a release Secret's ``data.release`` (API base64 of helm's base64 of gzip'd JSON)."""
    try:
        raw = base64.b64decode(base64.b64decode(data, validate=True), validate=True)
        if raw[:3] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
        record = json.loads(raw.decode("utf-8"))
    except (TypeError, ValueError, OSError, EOFError, binascii.Error) as exc:
        raise BadReleaseRecord("not a helm release record (%s)" % exc)
    if not isinstance(record, dict) or not record.get("name"):
        raise BadReleaseRecord("a helm release record without a name")
    return record


def releases_from_secrets(secrets):
    """``helm list -A`` (latest revision per release, listed states only) and each release's user values.

    Read from the release Secrets (``owner=helm``) that helm itself reads for ``list`` and ``get values``,
    so a converged release needs no helm process. Returns (list entries shaped as ``helm list -o json``
    prints them, {(namespace, name): values}). Raises BadReleaseRecord for a record helm did not write.
    """
    latest = {}
    for secret in secrets:
        if secret.get("type") != RELEASE_SECRET_TYPE:
            continue
        record = decode_release_record(((secret.get("data") or {}).get("release")) or "")
        key = (record.get("namespace") or (secret.get("metadata") or {}).get("namespace"), record["name"])
        if key not in latest or int(record.get("version") or 0) > int(latest[key].get("version") or 0):
            latest[key] = record
    entries, values = [], {}
    for (namespace, name), record in sorted(latest.items()):
        info = record.get("info") or {}
        if info.get("status") not in LISTED_STATES:
            continue
        meta = (record.get("chart") or {}).get("metadata") or {}
        entries.append({"name": name, "namespace": namespace, "revision": str(record.get("version") or 0),
                        "updated": info.get("last_deployed", ""), "status": info.get("status"),
                        "chart": "%s-%s" % (meta.get("name", ""), meta.get("version", "")),
                        "app_version": meta.get("appVersion", "")})
        values[(namespace, name)] = record.get("config") or {}
    return entries, values


def split_chart_field(chart_field):
    """``helm list`` reports chart as NAME-VERSION; split it (names may contain dashes)."""
    match = CHART_FIELD.match(chart_field or "")
    if not match:
        return chart_field or "", ""
    return match.group("name"), match.group("version")


def find_release(releases, name, namespace):
    for rel in releases:
        if rel.get("name") == name and rel.get("namespace") == namespace:
            return rel
    return None


def release_summary(request, info, chart_name=None):
    """The release part of the module result from helm's JSON (list entry or release object)."""
    if info is None:
        return {"name": request.name, "namespace": request.namespace, "status": "absent"}
    if "info" in info:  # a full release object (helm upgrade/status -o json)
        meta = (info.get("chart") or {}).get("metadata") or {}
        return {
            "name": info.get("name"), "namespace": info.get("namespace"),
            "chart": meta.get("name"), "version": meta.get("version"), "app_version": meta.get("appVersion"),
            "revision": int(info.get("version") or 0), "status": (info.get("info") or {}).get("status"),
        }
    name, version = split_chart_field(info.get("chart"))
    return {
        "name": info.get("name"), "namespace": info.get("namespace"),
        "chart": chart_name or name, "version": version, "app_version": info.get("app_version"),
        "revision": int(info.get("revision") or 0), "status": info.get("status"),
    }
