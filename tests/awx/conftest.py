"""The Galaxy artifact, built and installed once per session (per worker) into a clean collections path."""
import pytest

from tests.awx.runner import installed_collection


@pytest.fixture(scope="session")
def awx_collections(tmp_path_factory):
    return installed_collection(tmp_path_factory.mktemp("awx-artifact"))
