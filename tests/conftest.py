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
