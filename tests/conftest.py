"""Shared pytest set-up: the collection import path, the shared/ data folder, and the fakes' fixtures."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

pytest_plugins = ["local_gpu_cluster.fixtures", "local_gpu_cluster.repo_fixtures", "local_gpu_cluster.testing"]


def pytest_configure(config):  # pylint: disable=unused-argument
    """The collection's own clusters (tests/cluster/test_bare_fleet.py, test_host_probe.py, the
    hostile-input corpus's rows on a cluster), each a module-scoped
    cluster of a fleet profile: their tests run in the control-plane session too (local_gpu_cluster.testing)."""
    from local_gpu_cluster.testing import CLUSTER_FIXTURES  # noqa: PLC0415 - after pytest_plugins imported it

    CLUSTER_FIXTURES.update({"aks_cluster", "aks_fault_cluster", "aks_driver_cluster", "aks_nc_cluster",
                             "baremetal_cluster", "drift_cluster", "corpus_cluster", "upgrade_cluster"})


@pytest.fixture(scope="session")
def shared_dir():
    """../shared beside the repository; missing is a failure (CI always has it), never a skip."""
    if not os.path.isdir(os.path.join(SHARED, "upstream")):
        pytest.fail("../shared/upstream is missing beside the repository root (%s)" % SHARED)
    return SHARED
