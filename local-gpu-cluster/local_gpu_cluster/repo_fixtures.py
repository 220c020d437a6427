"""pytest plugin: fixture charts, a fake Helm HTTP repository, a fake OCI registry, helm env.

Registered from ``tests/conftest.py`` (``pytest_plugins = [..., "local_gpu_cluster.repo_fixtures"]``).

Fixtures
--------
``chart_cache`` (session)
    :class:`local_gpu_cluster.charts.ChartCache`: ``chart_cache.get(src_dir, version=...)``
    packages a chart once per session and returns the ``.tgz`` path.
``fixture_charts`` (session)
    ``{"1.0.0": Path, "1.1.0": Path, "2.0.0": Path}``: the ``demo-operator`` fixture
    chart packaged by real ``helm package`` at those versions.  Use these paths
    (not a fresh packaging) whenever a digest must match: helm stamps the time
    into archives, so every packaging has a different sha256.
``chart_repo`` (function)
    A started :class:`local_gpu_cluster.chart_repo.ChartRepoServer` serving those three
    versions at ``chart_repo.url``; stopped after the test.
``oci_registry`` (function)
    A started :class:`local_gpu_cluster.oci_registry.OciRegistryServer` with the three
    versions pushed as ``charts/demo-operator`` (``oci_registry.oci_ref("demo-operator")``
    gives ``oci://127.0.0.1:PORT/charts/demo-operator``; helm needs ``--plain-http``).
``helm_env`` (function)
    An ``env`` dict for ``subprocess`` calls of helm (or of Ansible running helm):
    ``HOME``, ``XDG_{CACHE,CONFIG,DATA}_HOME`` and ``HELM_{CACHE,CONFIG,DATA}_HOME``
    point into this test's ``tmp_path``, so helm's repository index cache,
    ``repositories.yaml``, registry credentials and content cache are private to
    the test; other ``HELM_*`` settings, ``KUBECONFIG`` and ``DOCKER_CONFIG`` are
    removed.  Every test that runs helm must use it; a test that talks to a (fake)
    cluster adds ``KUBECONFIG`` itself: ``{**helm_env, "KUBECONFIG": path}``.
``helm_bin`` (function, parametrized)
    The path of ``tools/bin/helm3`` and then ``tools/bin/helm4``: a test taking it
    runs once per major helm version (test ids ``[helm3]`` / ``[helm4]``).
"""

from __future__ import annotations

import pytest

from .chart_repo import ChartRepoServer
from .charts import DEMO_CHART_DIR, HELM3, HELM4, ChartCache, helm_env as _helm_env
from .oci_registry import OciRegistryServer

FIXTURE_CHART_VERSIONS = ("1.0.0", "1.1.0", "2.0.0")


@pytest.fixture(scope="session")
def chart_cache(tmp_path_factory) -> ChartCache:
    """Session-wide cache of packaged charts (each chart/version packaged once)."""
    return ChartCache(tmp_path_factory.mktemp("packaged-charts"))


@pytest.fixture(scope="session")
def fixture_charts(chart_cache) -> dict:
    """demo-operator packaged at 1.0.0, 1.1.0 and 2.0.0: version -> .tgz path."""
    return {version: chart_cache.get(DEMO_CHART_DIR, version=version) for version in FIXTURE_CHART_VERSIONS}


@pytest.fixture
def chart_repo(fixture_charts):
    """A running HTTP chart repository holding the fixture charts."""
    with ChartRepoServer(list(fixture_charts.values())) as server:
        yield server


@pytest.fixture
def oci_registry(fixture_charts):
    """A running plain-HTTP OCI registry with the fixture charts under charts/demo-operator."""
    with OciRegistryServer() as server:
        for tgz in fixture_charts.values():
            server.push_chart(tgz, repository="charts")
        yield server


@pytest.fixture
def helm_env(tmp_path) -> dict:
    """Environment for running helm with private HOME/XDG/HELM_* directories under tmp_path."""
    return _helm_env(tmp_path / "helm-env")


@pytest.fixture(params=[HELM3, HELM4], ids=["helm3", "helm4"])
def helm_bin(request) -> str:
    """Path of the helm binary; the test runs once with helm 3 and once with helm 4."""
    return str(request.param)
