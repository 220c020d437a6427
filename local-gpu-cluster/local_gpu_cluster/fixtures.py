"""pytest plugin for the fake API server (registered by tests/conftest.py).

Fixtures:

* ``fake_api_factory(**options)``: start a FakeApiServer with ``options`` (``git_version``,
  ``clock``, ``controllers``, ``crd_dirs``, ``require_namespaces``); writes its kubeconfig
  to ``tmp_path`` (``server.kubeconfig``) and points ``KUBECONFIG`` at it (the last server
  made wins). Servers stop at teardown, and the test fails if a controller raised or the
  server answered 500.
* ``fake_api``: one server with the default controllers and a ``FakeClock``.
* ``fake_k8s_client``: a ``kubernetes.dynamic.DynamicClient`` for ``fake_api``.
* ``fake``: a server with no simulated controller of its own, for the live controllers (local_gpu_cluster/live.py) to play
  them; ``live``: ``start(controllers)`` -> a started LiveRunner over HTTP to ``fake`` (stopped at teardown; the test
  fails if a controller raised).

``HOME``, the XDG directories and ``TMPDIR`` are set to fresh directories under
``tmp_path`` so the discovery and OpenAPI caches of kubectl, helm and the Python client
never leak between tests; ``HELM_*`` variables other than ``HELM_BIN`` are removed.
"""

import itertools
import os
import tempfile

import pytest

from .apiserver import FakeApiServer
from .clock import FakeClock


def isolate_client_caches(base, monkeypatch):
    """Point HOME, XDG_* and TMPDIR at fresh directories under ``base``."""
    home = base / "home"
    for name, path in (("HOME", home), ("XDG_CACHE_HOME", home / ".cache"),
                       ("XDG_CONFIG_HOME", home / ".config"),
                       ("XDG_DATA_HOME", home / ".local" / "share"), ("TMPDIR", base / "tmp")):
        path.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(path))
    # The kubernetes client keeps its discovery cache in tempfile.gettempdir(), which Python computes once per
    # process: TMPDIR alone would leave every test on the first test's folder, where a server that reused a port
    # finds another server's cache (an API it does not serve, listed as served).
    monkeypatch.setattr(tempfile, "tempdir", str(base / "tmp"))
    monkeypatch.delenv("KUBECACHEDIR", raising=False)
    for name in list(os.environ):
        if name.startswith("HELM_") and name != "HELM_BIN":  # HELM_NAMESPACE, HELM_DRIVER...
            monkeypatch.delenv(name)
    return home


def dynamic_client(server, cache_dir):
    """A DynamicClient for ``server`` with its discovery cache in ``cache_dir``."""
    from kubernetes import config, dynamic  # noqa: PLC0415 - only tests that use it pay

    cache_dir.mkdir(parents=True, exist_ok=True)
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    return dynamic.DynamicClient(api_client, cache_file=str(cache_dir / "discovery.json"))


@pytest.fixture
def fake_api_factory(tmp_path, monkeypatch):
    isolate_client_caches(tmp_path, monkeypatch)
    servers = []
    numbers = itertools.count()

    def make(**options):
        server = FakeApiServer(**options).start()
        servers.append(server)
        path = tmp_path / f"kubeconfig-{next(numbers)}"
        server.kubeconfig = str(server.write_kubeconfig(path))
        monkeypatch.setenv("KUBECONFIG", server.kubeconfig)
        return server

    yield make
    for server in servers:
        server.stop()
    problems = [p for s in servers for p in s.controller_errors + s.server_errors]
    if problems:
        pytest.fail("the fake API server had internal errors:\n" + "\n".join(problems))


@pytest.fixture
def fake_api(fake_api_factory):
    return fake_api_factory(clock=FakeClock())


@pytest.fixture
def fake_k8s_client(fake_api, tmp_path):
    return dynamic_client(fake_api, tmp_path)


@pytest.fixture
def fake(fake_api_factory):
    """The fake API server with no simulated controller of its own (the live ones play them)."""
    return fake_api_factory(controllers=[])


@pytest.fixture
def live(fake):
    """``start(controllers)`` -> a started LiveRunner over HTTP to ``fake``; stopped at teardown, and the test
    fails if a controller raised."""
    from .helpers import wait_until
    from .live import LiveRunner
    from .live_store import LiveStore
    runners, lines = [], []

    def start(controllers, **options):
        store = LiveStore(fake.kubeconfig, log=lines.append)
        runner = LiveRunner(store, controllers, log=lambda text, stream=None: lines.append(text), **options)
        runners.append(runner.start())
        wait_until(lambda: runner.synced, what="the initial lists")
        return runner

    start.lines = lines
    yield start
    for runner in runners:
        runner.stop()
    assert [e for r in runners for e in r.errors] == []
