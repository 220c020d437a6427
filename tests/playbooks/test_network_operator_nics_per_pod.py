"""The network_operator role's NICs per pod and IPoIB wiring, through playbooks/network_operator.yml in render mode."""
from __future__ import annotations

import yaml

from tests.playbooks.conftest import ROOT

NETWORK_PLAYBOOK = str(ROOT / "playbooks" / "network_operator.yml")
SHOWN = "What pods must request for RDMA, and an example pod"


def rendered(out, kind):
    for path in sorted(out.rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if isinstance(obj, dict) and obj.get("kind") == kind:
                return obj
    raise AssertionError("no %s rendered under %s" % (kind, out))


def test_sriov_without_node_type_or_count_names_both_variables(render_site):
    runner, out = render_site
    result = runner.run(playbook=NETWORK_PLAYBOOK, gpu_platform_network_mode="sriov")
    assert result.failed == 1
    msg = result.failure_messages()[-1]
    assert "gpu_platform_rdma_nics_per_pod" in msg and "gpu_platform_rdma_node_type" in msg, msg
    assert "gpu_platform_rdma_node_type" in msg and "Fix:" in msg
    assert not out.exists(), "nothing is written before the refusal"


def test_sriov_pods_claim_every_nic_of_the_platform_node_type(render_site):
    runner, out = render_site
    result = runner.run(playbook=NETWORK_PLAYBOOK, gpu_platform_network_mode="sriov",
                        gpu_platform_rdma_node_type="Standard_ND96isr_H100_v5")
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    shown = result.result(SHOWN)["msg"]
    assert '{"rdma/ib": 8}' in shown[0] and "rdma/ib: 8" in shown[1]
    assert rendered(out, "HostDeviceNetwork")["spec"]["resourceName"] == "rdma/ib"
    # a count of the role's own wins over the node type's NICs (given as text, as an inventory may)
    result = runner.run(playbook=NETWORK_PLAYBOOK, gpu_platform_rdma_nics_per_pod="4")
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    assert '{"rdma/ib": 4}' in result.result(SHOWN)["msg"][0]


def test_ipoib_keeps_the_shared_device_plugin_and_its_rdma_hca_max(render_site):
    runner, out = render_site
    result = runner.run(playbook=NETWORK_PLAYBOOK, gpu_platform_network_mode="ipoib", network_operator_ipoib_master="ibs1f0",
                        network_operator_rdma_hca_max=16)
    assert result.failed == 0, result.failure_messages() or result.debug_text()
    spec = rendered(out, "NicClusterPolicy")["spec"]
    assert '"rdmaHcaMax": 16' in spec["rdmaSharedDevicePlugin"]["config"]
    assert spec["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    shown = result.result(SHOWN)["msg"]
    assert '{"rdma/shared_ib": 1}' in shown[0]
    assert "k8s.v1.cni.cncf.io/networks: rdma-net" in shown[1] and "rdma/shared_ib: 1" in shown[1]
