"""Fixtures for the molecule/hosts testinfra checks.

molecule.yml runs these tests on testinfra's podman backend (one `podman exec` per command)
rather than its ansible backend (one ansible run per command, seconds each), so
`host.ansible(...)` is not available here. Host variables still come from molecule's
inventory: `host_vars` reads it once per session.
"""

import functools
import os

import pytest
from testinfra.utils.ansible_runner import AnsibleRunner


@functools.cache
def _inventory():
    return AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])


@pytest.fixture
def host_vars(host):
    """The inventory variables of the host under test (e.g. gpu_platform_test_profile)."""
    return _inventory().get_variables(host.backend.name)
