"""Fixture chart packaging for tests that need real Helm chart archives.

Charts are packaged with the real ``helm package`` binary (so the archives are
exactly what Helm itself produces), with an optional version / appVersion
override.  ``helm package`` stamps the current time into the archive, so two
packagings of the same chart differ byte for byte: tests that compare digests
must package once and reuse the archive.  :class:`ChartCache` does that, and the
``fixture_charts`` fixture in :mod:`local_gpu_cluster.repo_fixtures` holds one cache
per test session.

Also here, because the fake chart repository, the fake OCI registry and their
tests all need them: :func:`chart_sha256`, :func:`chart_metadata` (the
``Chart.yaml`` inside an archive), :func:`tampered_archive_bytes` (a valid chart
with different bytes), :func:`helm_env` (an isolated environment for running
helm) and :func:`run_helm`.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path

import yaml

from .paths import FIXTURE_CHARTS_DIR, PROJECT as REPO_ROOT, TOOLS_BIN

HELM3 = TOOLS_BIN / "helm3"
HELM4 = TOOLS_BIN / "helm4"
DEMO_CHART_DIR = FIXTURE_CHARTS_DIR / "demo-operator"


def pinned_charts(project=None):
    """(chart name, version) of every chart the roles pin, read from their defaults (``<x>_chart_version`` and
    the chart's name at the end of ``<x>_chart_ref``; the release pair's, for the two operators that read it,
    ``local_gpu_cluster.pins``), in this checkout or ``project``'s: the fixture charts are served at exactly these
    versions."""
    from .pins import role_defaults
    out = []
    for path in sorted((Path(project or REPO_ROOT) / "roles").glob("*/defaults/main.yml")):
        defaults = role_defaults(path, project)
        for key, version in sorted(defaults.items()):
            if key.endswith("_chart_version"):
                ref = str(defaults[key[:-len("_version")] + "_ref"])
                out.append((ref.rstrip("/").rsplit("/", 1)[-1], str(version)))
    return tuple(out)


__all__ = [
    "DEMO_CHART_DIR",
    "FIXTURE_CHARTS_DIR",
    "HELM3",
    "HELM4",
    "ChartCache",
    "chart_metadata",
    "chart_metadata_from_dir",
    "chart_sha256",
    "helm_env",
    "package_chart",
    "run_helm",
    "tampered_archive_bytes",
]


# helm's own settings variables (from `helm --help`, v3 and v4).  helm_env() drops any
# that the caller's environment sets, so a developer's helm set-up cannot leak into tests.
_HELM_SETTINGS_VARS = (
    "HELM_BURST_LIMIT", "HELM_CACHE_HOME", "HELM_COLOR", "HELM_CONFIG_HOME", "HELM_DATA_HOME", "HELM_DEBUG",
    "HELM_DRIVER", "HELM_DRIVER_SQL_CONNECTION_STRING", "HELM_KUBEAPISERVER", "HELM_KUBEASGROUPS",
    "HELM_KUBEASUSER", "HELM_KUBECAFILE", "HELM_KUBECONTEXT", "HELM_KUBEINSECURE_SKIP_TLS_VERIFY",
    "HELM_KUBETLS_SERVER_NAME", "HELM_KUBETOKEN", "HELM_MAX_HISTORY", "HELM_NAMESPACE", "HELM_NO_PLUGINS",
    "HELM_PLUGINS", "HELM_QPS", "HELM_REGISTRY_CONFIG", "HELM_REPOSITORY_CACHE", "HELM_REPOSITORY_CONFIG",
)


def helm_env(base_dir: str | os.PathLike, base_env: dict | None = None) -> dict:
    """Return an environment for running helm that touches nothing outside *base_dir*.

    helm keeps repository indexes, downloaded charts, ``repositories.yaml``, the
    OCI registry credentials file and plugins under ``$HOME`` / XDG directories;
    tests must not read or pollute the real ones (and must not see each other's
    cached ``index.yaml``).  ``HOME``, the XDG directories and helm's own
    ``HELM_CACHE_HOME`` / ``HELM_CONFIG_HOME`` / ``HELM_DATA_HOME`` all point below
    *base_dir* (created here).  Every other ``HELM_*`` setting helm knows, and
    ``KUBECONFIG`` and ``DOCKER_CONFIG``, are removed: a test that talks to a
    (fake) cluster sets ``KUBECONFIG`` itself, and nothing reaches a real cluster
    by accident.  The rest (``PATH``...) is inherited from *base_env*
    (default: ``os.environ``).
    """
    base = Path(base_dir)
    env = {k: v for k, v in (os.environ if base_env is None else base_env).items()
           if k not in _HELM_SETTINGS_VARS and k not in ("KUBECONFIG", "DOCKER_CONFIG")}
    for name, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "xdg-cache"), ("XDG_CONFIG_HOME", "xdg-config"),
                      ("XDG_DATA_HOME", "xdg-data"), ("HELM_CACHE_HOME", "helm-cache"),
                      ("HELM_CONFIG_HOME", "helm-config"), ("HELM_DATA_HOME", "helm-data")):
        path = base / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    return env


def run_helm(helm: str | os.PathLike, args, env: dict, check: bool = True,
             timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``helm <args>`` with *env* (see :func:`helm_env`), text output captured.

    With *check* a non-zero exit raises ``AssertionError`` carrying helm's output.
    """
    cmd = [str(helm), *map(str, args)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc


def package_chart(
    src_dir: str | os.PathLike,
    dest_dir: str | os.PathLike,
    version: str | None = None,
    app_version: str | None = None,
    helm: str | os.PathLike = HELM3,
) -> Path:
    """Package the chart in *src_dir* into *dest_dir* with real ``helm package``.

    *version* / *app_version* override ``Chart.yaml``.  Returns the path of the
    ``<name>-<version>.tgz`` archive helm wrote.  Raises ``RuntimeError`` with
    helm's output when packaging fails.
    """
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    args = ["package", src_dir, "--destination", dest]
    if version is not None:
        args += ["--version", version]
    if app_version is not None:
        args += ["--app-version", app_version]
    with tempfile.TemporaryDirectory(prefix="helm-package-") as home:
        proc = run_helm(helm, args, env=helm_env(home), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"helm package {src_dir} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    meta = chart_metadata_from_dir(src_dir)
    archive = dest / f"{meta['name']}-{version or meta['version']}.tgz"
    if not archive.is_file():
        raise RuntimeError(f"helm package reported success but {archive} is missing:\n{proc.stdout}")
    return archive


def chart_metadata_from_dir(src_dir: str | os.PathLike) -> dict:
    """Return the parsed ``Chart.yaml`` of an unpacked chart directory."""
    with open(Path(src_dir) / "Chart.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _open_archive(archive: bytes | str | os.PathLike) -> tarfile.TarFile:
    """Open a chart archive given as bytes or as a path."""
    if isinstance(archive, bytes):
        return tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz")
    return tarfile.open(archive, mode="r:gz")


def chart_metadata(archive: bytes | str | os.PathLike) -> dict:
    """Return the parsed ``Chart.yaml`` in a chart archive (bytes or a path)."""
    with _open_archive(archive) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 2 and parts[1] == "Chart.yaml":
                return yaml.safe_load(tar.extractfile(member).read())
    raise ValueError("no <chart>/Chart.yaml inside the chart archive")


def tampered_archive_bytes(archive: bytes | str | os.PathLike, marker: str = "tampered: true") -> bytes:
    """Return a *valid* chart archive whose content differs from *archive* (bytes or a path).

    Every member is copied unchanged except ``<chart>/values.yaml``, which gets
    the line *marker* appended (so a chart installed from the tampered bytes is
    observably different, e.g. in ``helm show values``).  Helm itself happily
    installs it; only a sha256 pin catches the swap.
    """
    out = io.BytesIO()
    with _open_archive(archive) as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else None
            if data is not None and member.name.count("/") == 1 and member.name.endswith("/values.yaml"):
                data = data.rstrip(b"\n") + b"\n" + marker.encode() + b"\n"
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def chart_sha256(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file (the value of ``chart_sha256`` / index ``digest``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


class ChartCache:
    """Package each (chart dir, version, appVersion, helm) once and hand out the same archive.

    Archives go to ``<dest_dir>/<n>/`` (one sub-directory per entry, so two
    entries with the same file name never overwrite each other).  Thread-safe.
    """

    def __init__(self, dest_dir: str | os.PathLike):
        self._dest = Path(dest_dir)
        self._archives: dict[tuple, Path] = {}
        self._lock = threading.Lock()

    def get(self, src_dir: str | os.PathLike = DEMO_CHART_DIR, version: str | None = None,
            app_version: str | None = None, helm: str | os.PathLike = HELM3) -> Path:
        """Return the archive for these arguments, packaging it on first use."""
        key = (str(Path(src_dir).resolve()), version, app_version, str(helm))
        with self._lock:
            if key not in self._archives:
                slot = self._dest / str(len(self._archives))
                self._archives[key] = package_chart(src_dir, slot, version, app_version, helm)
            return self._archives[key]

    def __len__(self) -> int:
        return len(self._archives)
