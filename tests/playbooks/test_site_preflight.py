"""The five inputs of issue 32 on a cluster (direct mode, the fake cluster of conftest.py): checks.yml refuses each
before site.yml sends any write, in one line naming the variable. Render mode, and the rest of the corpus:
tests/corpus/test_site_inputs.py."""
from __future__ import annotations

import pytest

from tests.corpus.test_site_inputs import EXACT, FIVE

pytestmark = pytest.mark.slow
# The network layer on (the fake cluster's inventory has it off), so that its inputs are the cluster's.
NETWORK = {"gpu_platform_network_mode": "rdma_shared",
           "network_operator_selectors": {"vendors": ["15b3"], "link_type": "infiniband", "interfaces": ["ibs1f0"]}}


@pytest.mark.parametrize("case", sorted(FIVE))
def test_the_five_on_a_cluster_send_no_write(direct_site, case):
    runner, api, repo = direct_site()
    result = runner.run(**dict(dict(NETWORK, gpu_platform_dra_enabled=True, dra_driver_nodes="nodepool=training"),
                               **FIVE[case]))
    assert result.failed == 1
    assert result.failure_messages() == [EXACT[case]]
    assert api.writes() == [], [w["path"] for w in api.writes()]
