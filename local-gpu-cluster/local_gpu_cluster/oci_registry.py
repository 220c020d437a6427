"""A minimal OCI distribution registry over plain HTTP on loopback, for Helm OCI charts.

:class:`OciRegistryServer` implements the part of the OCI distribution spec
that ``helm pull/show/template/install oci://127.0.0.1:PORT/<repo>/<chart>
--version X --plain-http`` and ``helm push --plain-http`` use:

* ``GET/HEAD /v2/`` (API version check),
* ``GET/HEAD /v2/<name>/manifests/<tag|digest>`` with ``Content-Type``,
  ``Docker-Content-Digest`` and ``Content-Length``; ``PUT`` to push one,
* ``GET/HEAD /v2/<name>/blobs/<digest>``; blob uploads (``POST``
  ``/blobs/uploads/``, ``PATCH`` chunks, ``PUT ?digest=``, monolithic
  ``POST ?digest=``), with digest verification,
* ``GET /v2/<name>/tags/list`` (with ``n`` / ``last`` pagination),
* ``GET /v2/<name>/referrers/<digest>`` (an image index of the referrers).

:meth:`OciRegistryServer.push_chart` stores a chart archive from Python the way
``helm push`` lays it out: an OCI image manifest whose config blob
(``application/vnd.cncf.helm.config.v1+json``) is the chart metadata as JSON and
whose single layer (``application/vnd.cncf.helm.chart.content.v1.tar+gzip``) is
the archive itself, so the layer digest is the archive's sha256.  Tags are the
chart version with ``+`` replaced by ``_`` (Helm's convention).

No authentication, no TLS, no garbage collection.  ``requests``, ``count`` and
``clear`` behave as in :class:`local_gpu_cluster.chart_repo.ChartRepoServer`.

``fail_all = True`` answers every request with ``fail_status``, which defaults
to **403** (an OCI ``DENIED`` error) here, not 503: helm's OCI client (oras-go)
retries 5xx answers five times with back-off (~7 s per helm command), while a
4xx fails at once after one request.  Set ``fail_status = 503`` to exercise the
retries.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .chart_repo import LoopbackServer, Request, Response
from .charts import chart_metadata

__all__ = [
    "HELM_CHART_LAYER_MEDIA_TYPE",
    "HELM_CONFIG_MEDIA_TYPE",
    "OCI_INDEX_MEDIA_TYPE",
    "OCI_MANIFEST_MEDIA_TYPE",
    "OciRegistryServer",
    "PushedChart",
]

OCI_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
HELM_CONFIG_MEDIA_TYPE = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART_LAYER_MEDIA_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

_NAME = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*"
_DIGEST = r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+"
_TAG = r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}"
_ROUTES = [
    ("base", re.compile(r"/v2/?")),
    ("manifest", re.compile(rf"/v2/(?P<name>{_NAME})/manifests/(?P<ref>{_TAG}|{_DIGEST})")),
    ("upload", re.compile(rf"/v2/(?P<name>{_NAME})/blobs/uploads/(?P<session>[^/]*)")),
    ("blob", re.compile(rf"/v2/(?P<name>{_NAME})/blobs/(?P<digest>{_DIGEST})")),
    ("tags", re.compile(rf"/v2/(?P<name>{_NAME})/tags/list")),
    ("referrers", re.compile(rf"/v2/(?P<name>{_NAME})/referrers/(?P<digest>{_DIGEST})")),
]


def _sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _error(status: int, code: str, message: str, **headers) -> Response:
    body = json.dumps({"errors": [{"code": code, "message": message}]}).encode()
    return Response(status, body, {"Content-Type": "application/json", **headers})


@dataclass
class _Repository:
    tags: dict = field(default_factory=dict)  # tag -> manifest digest
    manifests: dict = field(default_factory=dict)  # digest -> (media type, bytes)
    blobs: dict = field(default_factory=dict)  # digest -> bytes


@dataclass(frozen=True)
class PushedChart:
    """Where :meth:`OciRegistryServer.push_chart` stored a chart."""

    repository: str  # e.g. "charts/demo-operator"
    tag: str  # e.g. "1.0.0"
    manifest_digest: str  # "sha256:..." (what helm prints as "Digest:")
    config_digest: str
    layer_digest: str  # "sha256:" + sha256 of the chart archive


class OciRegistryServer(LoopbackServer):
    """A plain-HTTP OCI registry on 127.0.0.1 holding Helm charts."""

    fail_status = 403

    def __init__(self):
        super().__init__()
        self._repos: dict[str, _Repository] = {}
        self._uploads: dict[str, tuple[str, bytearray]] = {}

    @property
    def url(self) -> str:
        """``127.0.0.1:<port>`` (registry host, as in ``oci://<url>/charts/<name>``)."""
        return self.host

    def oci_ref(self, name: str, repository: str = "charts") -> str:
        """``oci://127.0.0.1:<port>/<repository>/<name>``: the chart reference helm takes."""
        return f"oci://{self.url}/{repository}/{name}"

    # -- content from Python -------------------------------------------------------------
    def push_chart(self, tgz, repository: str = "charts", tag: str | None = None) -> PushedChart:
        """Store a chart archive (a path or bytes) as ``<repository>/<chart name>:<tag>``.

        *tag* defaults to the chart version with ``+`` replaced by ``_``.  Pushing
        again to the same tag moves the tag (as a registry does).
        """
        data = tgz if isinstance(tgz, bytes) else Path(tgz).read_bytes()
        meta = chart_metadata(data)
        name = f"{repository.strip('/')}/{meta['name']}"
        tag = tag or str(meta["version"]).replace("+", "_")
        config = json.dumps(meta, separators=(",", ":"), sort_keys=True).encode()
        annotations = {"org.opencontainers.image.title": meta["name"],
                       "org.opencontainers.image.version": str(meta["version"])}
        if meta.get("description"):
            annotations["org.opencontainers.image.description"] = meta["description"]
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": HELM_CONFIG_MEDIA_TYPE, "digest": _sha256_digest(config), "size": len(config)},
            "layers": [{"mediaType": HELM_CHART_LAYER_MEDIA_TYPE, "digest": _sha256_digest(data),
                        "size": len(data)}],
            "annotations": annotations,
        }
        body = json.dumps(manifest, separators=(",", ":")).encode()
        with self._lock:
            repo = self._repos.setdefault(name, _Repository())
            repo.blobs[_sha256_digest(config)] = config
            repo.blobs[_sha256_digest(data)] = data
            digest = self._store_manifest(repo, tag, OCI_MANIFEST_MEDIA_TYPE, body)
        return PushedChart(name, tag, digest, _sha256_digest(config), _sha256_digest(data))

    def tags(self, repository: str) -> list[str]:
        """Tags of a repository (e.g. ``charts/demo-operator``), sorted."""
        with self._lock:
            return sorted(self._repos.get(repository, _Repository()).tags)

    def manifest_digest(self, repository: str, tag: str) -> str:
        """The digest a tag points at (what ``helm pull`` prints as ``Digest:``)."""
        with self._lock:
            return self._repos[repository].tags[tag]

    def manifest(self, repository: str, reference: str) -> dict:
        """The parsed manifest for a tag or digest (``KeyError`` if unknown)."""
        with self._lock:
            repo = self._repos[repository]
            return json.loads(repo.manifests[repo.tags.get(reference, reference)][1])

    # -- HTTP ----------------------------------------------------------------------------
    def fail_response(self) -> Response:
        return _error(self.fail_status, "DENIED" if self.fail_status < 500 else "UNAVAILABLE",
                      "fail_all is set on this fake registry")

    def route(self, request: Request) -> Response:
        for kind, pattern in _ROUTES:
            match = pattern.fullmatch(request.path)
            if match:
                with self._lock:
                    return getattr(self, f"_route_{kind}")(request, **match.groupdict())
        return _error(404, "NAME_UNKNOWN", f"no route for {request.path}")

    def _route_base(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "method not allowed")
        return Response(200, b"{}", {"Content-Type": "application/json",
                                     "Docker-Distribution-API-Version": "registry/2.0"})

    def _route_manifest(self, request: Request, name: str, ref: str) -> Response:
        if request.method == "PUT":
            media_type = request.headers.get("content-type", "").split(";")[0].strip()
            try:
                parsed = json.loads(request.body)
            except ValueError:
                return _error(400, "MANIFEST_INVALID", "manifest is not JSON")
            media_type = media_type or parsed.get("mediaType", "")
            repo = self._repos.setdefault(name, _Repository())
            if ":" in ref and ref != _sha256_digest(request.body):
                return _error(400, "DIGEST_INVALID", "manifest digest does not match the reference")
            missing = [d["digest"] for d in [parsed.get("config")] + parsed.get("layers", [])
                       if d and d.get("digest") not in repo.blobs]
            if missing and media_type == OCI_MANIFEST_MEDIA_TYPE:
                return _error(400, "MANIFEST_BLOB_UNKNOWN", f"blobs not pushed: {missing}")
            digest = self._store_manifest(repo, None if ":" in ref else ref, media_type, request.body)
            return Response(201, b"", {"Location": f"/v2/{name}/manifests/{digest}",
                                       "Docker-Content-Digest": digest})
        if request.method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "method not allowed")
        repo = self._repos.get(name)
        if repo is None:
            return _error(404, "NAME_UNKNOWN", f"repository {name} not known")
        digest = repo.tags.get(ref, ref)
        if digest not in repo.manifests:
            return _error(404, "MANIFEST_UNKNOWN", f"manifest {ref} not known in {name}")
        media_type, body = repo.manifests[digest]
        return Response(200, body, {"Content-Type": media_type, "Docker-Content-Digest": digest})

    def _route_blob(self, request: Request, name: str, digest: str) -> Response:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "method not allowed")
        repo = self._repos.get(name)
        if repo is None or digest not in repo.blobs:
            return _error(404, "BLOB_UNKNOWN", f"blob {digest} not known in {name}")
        return Response(200, repo.blobs[digest], {"Content-Type": "application/octet-stream",
                                                  "Docker-Content-Digest": digest})

    def _route_upload(self, request: Request, name: str, session: str) -> Response:
        if request.method == "POST" and not session:
            if "digest" in request.query:  # monolithic upload in one POST
                return self._finish_upload(name, bytearray(request.body), request.query["digest"])
            session = uuid.uuid4().hex
            self._uploads[session] = (name, bytearray())
            return self._upload_status(name, session, 202)
        if session not in self._uploads or self._uploads[session][0] != name:
            return _error(404, "BLOB_UPLOAD_UNKNOWN", "upload session not known")
        data = self._uploads[session][1]
        if request.method == "PATCH":
            data.extend(request.body)
            return self._upload_status(name, session, 202)
        if request.method == "PUT":
            data.extend(request.body)
            del self._uploads[session]
            return self._finish_upload(name, data, request.query.get("digest", ""))
        if request.method == "GET":
            return self._upload_status(name, session, 204)
        if request.method == "DELETE":
            del self._uploads[session]
            return Response(204)
        return _error(405, "UNSUPPORTED", "method not allowed")

    def _route_tags(self, request: Request, name: str) -> Response:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "method not allowed")
        repo = self._repos.get(name)
        if repo is None:
            return _error(404, "NAME_UNKNOWN", f"repository {name} not known")
        tags = sorted(repo.tags)
        if request.query.get("last"):
            tags = [t for t in tags if t > request.query["last"]]
        headers = {"Content-Type": "application/json"}
        limit = request.query.get("n", "")
        if limit.isdigit() and int(limit) < len(tags):
            tags = tags[: int(limit)]
            headers["Link"] = f'</v2/{name}/tags/list?n={limit}&last={tags[-1] if tags else ""}>; rel="next"'
        return Response(200, json.dumps({"name": name, "tags": tags}).encode(), headers)

    def _route_referrers(self, request: Request, name: str, digest: str) -> Response:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "UNSUPPORTED", "method not allowed")
        found = []
        for child_digest, (media_type, body) in self._repos.get(name, _Repository()).manifests.items():
            parsed = json.loads(body)
            if (parsed.get("subject") or {}).get("digest") == digest:
                found.append({"mediaType": media_type, "digest": child_digest, "size": len(body),
                              "artifactType": parsed.get("artifactType") or parsed["config"]["mediaType"],
                              "annotations": parsed.get("annotations", {})})
        index = {"schemaVersion": 2, "mediaType": OCI_INDEX_MEDIA_TYPE, "manifests": found}
        return Response(200, json.dumps(index).encode(), {"Content-Type": OCI_INDEX_MEDIA_TYPE})

    # -- internals -----------------------------------------------------------------------
    @staticmethod
    def _store_manifest(repo: _Repository, tag: str | None, media_type: str, body: bytes) -> str:
        digest = _sha256_digest(body)
        repo.manifests[digest] = (media_type, body)
        if tag:
            repo.tags[tag] = digest
        return digest

    def _upload_status(self, name: str, session: str, status: int) -> Response:
        size = len(self._uploads[session][1])
        return Response(status, b"", {"Location": f"/v2/{name}/blobs/uploads/{session}",
                                      "Docker-Upload-UUID": session,
                                      "Range": f"0-{max(size - 1, 0)}"})

    def _finish_upload(self, name: str, data: bytearray, digest: str) -> Response:
        if digest != _sha256_digest(bytes(data)):
            return _error(400, "DIGEST_INVALID", f"uploaded content does not match digest {digest!r}")
        self._repos.setdefault(name, _Repository()).blobs[digest] = bytes(data)
        return Response(201, b"", {"Location": f"/v2/{name}/blobs/{digest}", "Docker-Content-Digest": digest})
