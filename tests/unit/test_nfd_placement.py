"""NFD before the NicClusterPolicy needs its labels (domain/platform_settings.check_nfd_placement)."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import settings as platform_settings
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

BASE = {"gpu_platform_network_mode": "sriov", "gpu_platform_nfd_in_gpu_operator": False,
        "gpu_platform_host_mofed": False, "network_operator_nfd_enabled": None, "network_operator_all_nodes": False,
        "network_operator_node_affinity": {}}
CUSTOM = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "agentpool", "operator": "In", "values": ["ndh100"]}]}]}}


def test_the_network_operators_nfd_with_the_network_layer_passes():
    assert platform_settings.check_nfd_placement(BASE) == {"nfd": "network_operator"}
    assert platform_settings.check_nfd_placement(dict(BASE, gpu_platform_network_mode="none",
                                                      gpu_platform_nfd_in_gpu_operator=True)) == {"nfd": "gpu_operator"}


def test_the_gpu_operators_nfd_with_the_network_layer_is_refused_naming_the_variable_and_the_fix():
    with pytest.raises(ParamError) as caught:
        platform_settings.check_nfd_placement(dict(BASE, gpu_platform_nfd_in_gpu_operator=True))
    text = str(caught.value)
    assert text.startswith("gpu_platform_nfd_in_gpu_operator: is true while the network layer is on")
    assert "node affinity" in text and "the DOCA driver" in text
    assert "set gpu_platform_nfd_in_gpu_operator: false" in text


@pytest.mark.parametrize("extra, needs", [
    ({"gpu_platform_host_mofed": True}, "node affinity"),  # no DOCA driver, the default affinity still needs NFD
    ({"network_operator_all_nodes": True}, "the DOCA driver"),
    ({"network_operator_node_affinity": CUSTOM}, "the DOCA driver"),
])
def test_each_need_is_named(extra, needs):
    with pytest.raises(ParamError, match=needs):
        platform_settings.check_nfd_placement(dict(BASE, gpu_platform_nfd_in_gpu_operator=True, **extra))


def test_nothing_needs_nfd_early_when_the_policy_places_by_other_labels_and_the_hosts_run_mofed():
    settings = dict(BASE, gpu_platform_nfd_in_gpu_operator=True, gpu_platform_host_mofed=True,
                    network_operator_node_affinity=CUSTOM)
    assert platform_settings.check_nfd_placement(settings) == {"nfd": "gpu_operator"}
    explicit = dict(BASE, gpu_platform_nfd_in_gpu_operator=True, network_operator_nfd_enabled=True)
    assert platform_settings.check_nfd_placement(explicit) == {"nfd": "both"}


def test_a_non_boolean_is_refused():
    with pytest.raises(ParamError, match="gpu_platform_nfd_in_gpu_operator: 'yes' is not true or false"):
        platform_settings.check_nfd_placement(dict(BASE, gpu_platform_nfd_in_gpu_operator="yes"))


def test_the_settings_check_runs_it():
    with pytest.raises(ParamError, match="gpu_platform_nfd_in_gpu_operator"):
        platform_settings.check({"nfd": dict(BASE, gpu_platform_nfd_in_gpu_operator=True)})
