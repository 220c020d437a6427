"""Shared pytest set-up: the collection import path, the shared/ data folder, and the fakes' fixtures."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

pytest_plugins = ["tests.fakes.fixtures", "tests.fakes.repo_fixtures", "tests.local_cluster"]


@pytest.fixture(scope="session")
def shared_dir():
    """../shared beside the repository; missing is a failure (CI always has it), never a skip."""
    if not os.path.isdir(os.path.join(SHARED, "upstream")):
        pytest.fail("../shared/upstream is missing beside the repository root (%s)" % SHARED)
    return SHARED


# The local control planes (tests/local_cluster.py) live in fixed folders under build/ and run for as long as the
# pytest session that started them. Every test that uses one is marked local_control_plane: make test runs those in
# a session of their own, so the control plane and its simulated operators (about a core between them) are up only
# while their tests run, and the other tests run beside each other on two workers (pytest-xdist). Under xdist they
# also share one group, so that one worker starts each cluster and no two tests share one at the same time.
CLUSTER_FIXTURES = {"local_cluster", "local_cluster_gitops", "aks_cluster", "aks_fault_cluster", "aks_driver_cluster",
                    "aks_nc_cluster", "baremetal_cluster", "drift_cluster"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        # real_cluster: the [real] variants, whose fixture asks for the local control plane only at run time
        if CLUSTER_FIXTURES.intersection(getattr(item, "fixturenames", ())) or item.get_closest_marker("real_cluster"):
            item.add_marker(pytest.mark.local_control_plane)
            item.add_marker(pytest.mark.xdist_group("local-control-plane"))
