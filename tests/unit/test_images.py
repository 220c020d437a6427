"""Image registry mirrors (module_utils/domain/core/images.py): the map's rules and the rewrite that keeps the pins."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_render, nic_cluster_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

MIRRORS = {"nvcr.io": "harbor.example.com/nvcr", "docker.io": "harbor.example.com:8443/hub"}


@pytest.mark.parametrize("reference, expected", [
    ("nvcr.io/nvidia/driver:595.91.07", "harbor.example.com/nvcr/nvidia/driver:595.91.07"),
    ("nvcr.io/nvidia", "harbor.example.com/nvcr/nvidia"),  # a chart's repository value
    ("nvcr.io/nvidia/cuda@sha256:" + "a" * 64, "harbor.example.com/nvcr/nvidia/cuda@sha256:" + "a" * 64),
    ("docker.io/library/busybox:1.37.0", "harbor.example.com:8443/hub/library/busybox:1.37.0"),
    ("busybox:1.37.0", "harbor.example.com:8443/hub/library/busybox:1.37.0"),  # Docker Hub's short forms
    ("bitnami/kubectl:1.35", "harbor.example.com:8443/hub/bitnami/kubectl:1.35"),
    ("ghcr.io/nvidia/kai:v0.10.0", "ghcr.io/nvidia/kai:v0.10.0"),  # no mirror for ghcr.io
    ("localhost:5000/x:1", "localhost:5000/x:1"),
    ("", ""),
])
def test_mirror_moves_the_registry_and_keeps_path_tag_and_digest(reference, expected):
    assert images.mirror(reference, images.check_mirrors(MIRRORS)) == expected


def test_no_mirrors_changes_nothing():
    assert images.mirror("nvcr.io/nvidia/driver:1", {}) == "nvcr.io/nvidia/driver:1"
    assert images.chart_values("gpu-operator", {}) == {}
    assert images.check_mirrors(None) == {} and images.check_mirrors("") == {}


def test_keys_are_normalised_and_a_trailing_slash_dropped():
    assert images.check_mirrors({" NVCR.IO ": "harbor.example.com/nvcr/"}) == {"nvcr.io": "harbor.example.com/nvcr"}


@pytest.mark.parametrize("mirrors, field, words", [
    (["nvcr.io"], "gpu_platform_image_mirrors", "not a map"),
    ({"https://nvcr.io": "h.example.com"}, "gpu_platform_image_mirrors.https://nvcr.io", "not a registry host"),
    ({"nvcr.io/nvidia": "h.example.com"}, "gpu_platform_image_mirrors.nvcr.io/nvidia", "not a registry host"),
    ({"nvcr.io": ""}, "gpu_platform_image_mirrors.nvcr.io", "empty"),
    ({"nvcr.io": 5}, "gpu_platform_image_mirrors.nvcr.io", "empty"),
    ({"nvcr.io": "https://h.example.com/nvcr"}, "gpu_platform_image_mirrors.nvcr.io", "has a scheme"),
    ({"nvcr.io": "harbor/nvcr"}, "gpu_platform_image_mirrors.nvcr.io", "does not start with a registry host"),
    ({"nvcr.io": "h.example.com/NVCR"}, "gpu_platform_image_mirrors.nvcr.io", "not a registry path"),
    ({"nvcr.io": "h.example.com/nvcr:v1"}, "gpu_platform_image_mirrors.nvcr.io", "not a registry path"),
])
def test_bad_maps_are_refused_naming_the_entry(mirrors, field, words):
    with pytest.raises(ParamError) as err:
        images.check_mirrors(mirrors)
    assert err.value.field == field and words in err.value.msg and "Fix:" in err.value.msg


def test_credentials_in_a_mirror_are_refused_and_never_echoed():
    with pytest.raises(ParamError) as err:
        images.check_mirrors({"nvcr.io": "https://robot:s3cr3t@harbor.example.com/nvcr"})
    assert "credentials" in err.value.msg and "s3cr3t" not in err.value.msg and "robot" not in err.value.msg


def test_every_bad_setting_is_reported_at_once():
    with pytest.raises(ParamError) as err:
        images.check_all({"gpu_platform_image_mirrors": {"nvcr.io": "x"}, "peermem_image_mirrors": {"a b": "h.io"},
                          "smoke_tests_image_mirrors": MIRRORS})
    assert err.value.field == "gpu_platform_image_mirrors.nvcr.io, peermem_image_mirrors.a b"
    assert "2 mirror settings are wrong" in err.value.msg
    assert images.check_all({"a": MIRRORS, "b": {}}) == {"a": images.check_mirrors(MIRRORS), "b": {}}
    with pytest.raises(ParamError) as one:
        images.check_all({"smoke_tests_image_mirrors": {"nvcr.io": "x"}})
    assert one.value.field == "smoke_tests_image_mirrors.nvcr.io"


def test_chart_values_set_each_repository_of_a_mirrored_registry():
    values = images.chart_values("gpu-operator", {"nvcr.io": "m.example.com/nv"})
    assert values["driver"] == {"repository": "m.example.com/nv/nvidia",
                                "manager": {"repository": "m.example.com/nv/nvidia/cloud-native"}}
    assert values["toolkit"] == {"repository": "m.example.com/nv/nvidia/k8s"}
    assert len(images.CHART_IMAGES["gpu-operator"]) == 20
    # v26.7.0's draDriver block is rendered only with its experimental GPUCluster: left alone (NOT_MIRRORED).
    assert "draDriver" not in values
    assert images.chart_values("gpu-operator", {"docker.io": "m.example.com/hub"}) == {}, "no Docker Hub image there"
    assert images.chart_values("no-such-chart", {"nvcr.io": "m.example.com/nv"}) == {}
    dra = images.chart_values("dra-driver-nvidia-gpu", {"registry.k8s.io": "m.example.com/k8s"})
    assert dra == {"image": {"repository": "m.example.com/k8s/dra-driver-nvidia/dra-driver-nvidia-gpu"}}
    assert images.chart_values("dra-driver-nvidia-gpu", {"nvcr.io": "m.example.com/nv"}) == {}


def test_mirror_image_checks_the_pin_first():
    assert images.mirror_image("f", "nvcr.io/nvidia/cuda:12.9.1",
                               MIRRORS) == "harbor.example.com/nvcr/nvidia/cuda:12.9.1"
    with pytest.raises(ParamError) as err:
        images.mirror_image("smoke_tests_image", "nvcr.io/nvidia/cuda", MIRRORS)
    assert err.value.field == "smoke_tests_image" and "not pinned" in err.value.msg


def test_the_nic_cluster_policy_pulls_every_component_from_the_mirror_with_the_same_versions():
    params = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
              "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}}
    plain = nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(params))
    mirrored = nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(dict(params, image_mirrors={
        "nvcr.io": "harbor.example.com/nvcr"})))
    components = [k for k, v in plain["spec"].items() if isinstance(v, dict) and "repository" in v]
    components += ["secondaryNetwork." + k for k in plain["spec"]["secondaryNetwork"]]
    assert len(components) >= 5
    for path in components:
        before, after = plain["spec"], mirrored["spec"]
        for key in path.split("."):
            before, after = before[key], after[key]
        assert before["repository"] == "nvcr.io/nvidia/mellanox"
        assert after["repository"] == "harbor.example.com/nvcr/nvidia/mellanox"
        assert dict(after, repository=before["repository"]) == before, "only the repository changes"
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(dict(params, image_mirrors={"nvcr.io": "http://h.example.com"}))
    assert err.value.field == "image_mirrors.nvcr.io"


def test_extra_values_that_change_a_pinned_image_are_found():
    extra = {"driver": {"version": "999.1.1", "rdma": {"enabled": True}}, "toolkit": {"repository": "r.io/x"},
             "dcgmExporter": {"serviceMonitor": {"enabled": True}}, "operator": {"defaultRuntime": "containerd"}}
    assert images.pinned_overrides("gpu-operator", extra, "gpu_operator_extra_values") == [
        "gpu_operator_extra_values.driver.version", "gpu_operator_extra_values.toolkit.repository"]
    sriov = {"sriov-network-operator": {"images": {"operator": "x.io/op:1"}}, "operator": {"tag": "v1"}}
    assert images.pinned_overrides("network-operator", sriov, "f") == [
        "f.operator.tag", "f.sriov-network-operator.images.operator"]
    assert images.pinned_overrides("gpu-operator", {"mig": {"strategy": "mixed"}}, "f") == []


def test_pin_overrides_are_refused_unless_allowed():
    named = {"gpu_operator_extra_values": ("gpu-operator", {"driver": {"version": "999.1.1"}}),
             "network_operator_extra_values": ("network-operator", {"operator": {"repository": "x.io/y"}})}
    with pytest.raises(ParamError) as err:
        images.check_pins(named)
    assert err.value.field == ("gpu_operator_extra_values.driver.version, "
                               "network_operator_extra_values.operator.repository")
    assert "gpu_platform_allow_image_overrides: true" in err.value.msg
    assert images.check_pins(named, allow=True) == []
    with pytest.raises(ParamError) as bad:
        images.check_pins(named, allow="yes")
    assert bad.value.field == "gpu_platform_allow_image_overrides"


def test_the_nic_cluster_policy_pulls_with_the_given_secrets():
    params = {"mode": "rdma_shared", "network_operator_version": "26.4.1", "ip_range": "192.168.100.0/24",
              "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}, "image_pull_secrets": ["harbor-pull"]}
    spec = nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(params))["spec"]
    parts = [spec["ofedDriver"], spec["rdmaSharedDevicePlugin"],
             spec["nvIpam"]] + list(spec["secondaryNetwork"].values())
    assert all(part["imagePullSecrets"] == ["harbor-pull"] for part in parts)
    assert "imagePullSecrets" not in nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(
        dict(params, image_pull_secrets=[])))["spec"]["ofedDriver"]
    with pytest.raises(ParamError) as err:
        nic_cluster_policy_validate.build_request(dict(params, image_pull_secrets=["Bad_Name"]))
    assert err.value.field == "image_pull_secrets[0]"


def test_a_mirrored_policy_with_pull_secrets_meets_the_crd(shared_dir):
    from tests.schema import crdschema
    params = {"mode": "sriov", "network_operator_version": "26.4.1", "ip_range": "10.20.0.0/16",
              "selectors": {"vendors": ["15b3"], "device_ids": ["101e"]}, "image_pull_secrets": ["harbor-pull"],
              "image_mirrors": {"nvcr.io": "harbor.example.com/nvcr"}, "node_type": "nd-h100-v5"}
    crdschema.validate(nic_cluster_policy_render.render_policy(nic_cluster_policy_validate.build_request(params)))
