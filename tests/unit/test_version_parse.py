"""The one version parser (domain/core/version_parse.py) and the callers that had their own before: the Network
Operator release of the NicClusterPolicy, the GPU Operator's Kubernetes check, the full driver version checks,
exact chart versions and chart version equality. Each case pins what the caller did before the merge; the few
inputs whose answer changed are marked as such."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade, gpu_driver_upgrade_state as driver_upgrade_state)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import gpu_operator
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, nic_cluster_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import validate, version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from tests.schema.test_gpu_operator_values import BASE as GPU_OPERATOR

NIC = {"mode": "rdma_shared", "ofed_driver": True, "ipam": "nv-ipam", "ip_range": "192.168.100.0/24",
       "selectors": {"interfaces": ["ibs1f0"]}}


# -- the Network Operator release (was nic_cluster_policy._version, a regex of its own) -----------------------------------

@pytest.mark.parametrize("given, expected", [
    ("26.4.1", "26.4.1"), ("v26.4.1", "26.4.1"), (" 26.4.0 ", "26.4.0"), ("v26.4.0", "26.4.0"),
])
def test_a_known_network_operator_release_is_read_without_its_v(given, expected):
    request = nic_cluster_policy_validate.build_request(dict(NIC, network_operator_version=given))
    assert request.network_operator_version == expected


@pytest.mark.parametrize("given", [
    "26.4", "26.4.1-rc.1", "26.4.1+build.1", "26.04.1", "vv26.4.1", "26.4.9", "25.10.0", "latest", 26.4, True, 26,
    "26.4.1\n26.4.0",
])
def test_anything_but_a_release_of_the_image_table_is_refused_as_before(given):
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(dict(NIC, network_operator_version=given))
    assert err.value.field == "network_operator_version"
    assert "is not a Network Operator release with pinned component images (known: 26.1.2, 26.4.0, 26.4.1)" in err.value.msg


@pytest.mark.parametrize("given", [None, "", "  "])
def test_an_empty_network_operator_release_is_required(given):
    with pytest.raises(ParamError, match="network_operator_version: is required"):
        nic_cluster_policy_validate.build_request(dict(NIC, network_operator_version=given))


def test_known_releases_sort_by_their_parsed_parts():
    assert nic_cluster_policy.known_versions() == sorted(
        nic_cluster_policy.COMPONENT_IMAGES, key=lambda v: tuple(int(p) for p in v.split(".")))


# -- the cluster's Kubernetes version (was gpu_operator.KUBE_VERSION, a prefix match) -------------------------------

@pytest.mark.parametrize("given, expected", [
    ("v1.34.1", (1, 34)), ("1.34", (1, 34)), ("v1.31.0-eks-abc", (1, 31)), ("v1.34.1+k3s1", (1, 34)),
    ("v1.30.4-gke.1348000", (1, 30)), (" v1.33.2 ", (1, 33)), (1.3, (1, 3)), ("v2.0.0", (2, 0)),
])
def test_kubernetes_versions_as_clusters_report_them(given, expected):
    assert gpu_operator.parse_kube_version(given) == expected


@pytest.mark.parametrize("given", ["unknown", "", None, "1", "v1.x"])
def test_what_is_no_kubernetes_version_is_refused_as_before(given):
    with pytest.raises(ParamError) as err:
        gpu_operator.parse_kube_version(given)
    assert err.value.field == "kubernetes version" and "is not a Kubernetes version" in err.value.msg
    assert "check the cluster's /version answer" in err.value.msg


@pytest.mark.parametrize("given", ["1.34.1.5", "1.34abc", "v1.34.1 trailing"])
def test_changed_by_the_merge_trailing_text_that_is_no_build_suffix_is_refused(given):
    """The old prefix match read only the leading major.minor; the shared parser reads the whole string, as the
    version matrix always did, so these are refused now (no cluster reports such a version)."""
    with pytest.raises(ParamError, match="is not a Kubernetes version"):
        gpu_operator.version_at_least(given, "1.30")


def test_the_kubernetes_check_and_the_matrix_read_a_version_alike():
    for text in ("v1.34.1", "1.34", "v1.31.0-eks-abc", "v1.34.1+k3s1"):
        assert gpu_operator.parse_kube_version(text) == version_parse.parse_version("kubernetes", text).parts[:2]


# -- full driver versions (was DRIVER_VERSION twice: gpu_operator and driver_upgrade) ------------------------------

@pytest.mark.parametrize("text, ok", [
    ("595.91.07", True), ("580.95", True), ("580.126.20", True), ("580", False), ("R580.95", False),
    ("5800.95", False), ("580.1234", False), ("580.95.05.1", False), (" 580.95.05", False), ("580.95.05 ", False),
    ("580.95.05-ubuntu24.04", False), ("", False),
])
def test_a_full_driver_version(text, ok):
    assert version_parse.is_full_driver_version(text) is ok
    if text.strip() == text and text:
        assert (gpu_driver_upgrade.check_version("driver_version", text) == text) if ok else True


@pytest.mark.parametrize("text", ["580", "R580", "latest", "580.95.05-1"])
def test_the_upgrade_module_refuses_what_is_no_full_driver_version(text):
    with pytest.raises(ParamError, match="is not a full driver version"):
        gpu_driver_upgrade.check_version("driver_version", text)


@pytest.mark.parametrize("image, version", [
    ("nvcr.io/nvidia/driver:595.91.07-ubuntu24.04", "595.91.07"), ("nvcr.io/nvidia/driver:580.95-rhel9", "580.95"),
    ("nvcr.io/nvidia/driver:latest", ""), ("nvcr.io/nvidia/driver@sha256:" + "a" * 64, ""), ("registry:5000/driver", ""),
])
def test_the_driver_version_in_an_image_tag(image, version):
    assert driver_upgrade_state.image_version(image) == version


@pytest.mark.parametrize("text", ["580", "R580.95", "580.95.05 ", "latest"])
def test_the_gpu_operator_driver_version_is_a_full_version(text):
    with pytest.raises(ParamError, match="gpu_platform_driver_version: .* is not a driver version"):
        gpu_operator.build_values(dict(GPU_OPERATOR, driver_version=text))
    assert gpu_operator.build_values(dict(GPU_OPERATOR, driver_version="580.95.05"))["driver"]["version"] == "580.95.05"


# -- exact chart versions (was validate.EXACT_VERSION) and chart version equality (was helm_release) ----------------

@pytest.mark.parametrize("text, ok", [
    ("1.2.3", True), ("v26.7.0", True), ("1.0.0-rc.1", True), ("1.0.0+build.5", True), ("1.2", False),
    ("01.2.3", False), ("~1.2.3", False), (">=1.2.3", False), ("1.2.x", False),
])
def test_an_exact_chart_version(text, ok):
    assert version_parse.is_exact_version(text) is ok
    if ok:
        assert validate.exact_version("chart_version", text) == text


@pytest.mark.parametrize("a, b, same", [
    ("v26.7.0", "26.7.0", True), ("26.7.0", "26.7.0", True), ("", None, True), ("26.7.0", "26.7.1", False),
    ("vv1.0.0", "1.0.0", True),
])
def test_chart_versions_compare_without_their_v(a, b, same):
    assert version_parse.same_chart_version(a, b) is same
