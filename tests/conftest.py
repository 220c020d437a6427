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


# The local control planes (tests/local_cluster.py) live in fixed folders under build/ and are started once per
# session: under pytest-xdist (make test runs two workers) every test that uses one goes to the same worker, so one
# worker starts each cluster and no two tests share one at the same time.
CLUSTER_FIXTURES = {"local_cluster", "local_cluster_gitops"}


def pytest_collection_modifyitems(items):
    for item in items:
        if CLUSTER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("local-control-plane"))
