"""Every object the nic_cluster_policy domain renders is valid against the real Network Operator v26.4.1 CRDs, and
against the CRDs of the release its component images are for (each row of COMPONENT_IMAGES: 26.1.2, 26.4.0, 26.4.1).

The CRDs (NicClusterPolicy, IPoIBNetwork, HostDeviceNetwork, MacvlanNetwork, NV-IPAM IPPool) are the
upstream files in ../shared/upstream/network-operator; a missing directory fails, never skips. Each release's own
CRDs and release data (hack/release.yaml) come out of its source archive in ../shared/upstream/src
(tests/schema/pinned_charts.py); a missing archive skips, naming it.
"""
from __future__ import annotations

import itertools
import json
import os

import pytest
import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy, nic_cluster_policy_render, nic_cluster_policy_validate as
    nic_policy_validate)
from tests.schema import crdschema, pinned_charts


def combos():
    for version, mode, ofed, ipam, link, gateway in itertools.product(
            sorted(nic_cluster_policy.COMPONENT_IMAGES), nic_cluster_policy.MODES, (True, False), nic_cluster_policy.IPAMS,
            nic_cluster_policy.LINK_TYPES, ("", "192.168.100.1")):
        if mode == "ipoib" and link == "ether":
            continue
        p = {"mode": mode, "network_operator_version": version, "ofed_driver": ofed, "ipam": ipam,
             "ip_range": "192.168.100.0/24", "ip_gateway": gateway,
             "selectors": {"vendors": ["15b3"], "device_ids": ["101b"], "link_type": link}}
        if mode == "ipoib":
            p["ipoib_master"] = "ibs1f0"
        if mode == "rdma_shared":
            p["selectors"]["interfaces"] = ["ibs1f0"] if link == "infiniband" else ["ens1f0np0"]
        if mode == "sriov":
            p["node_type"] = "nd-h100-v5"
        yield p


COMBOS = list(combos())


def _id(p):
    return "%s-%s-ofed%s-%s-%s-%s" % (p["network_operator_version"], p["mode"], p["ofed_driver"], p["ipam"],
                                      p["selectors"]["link_type"], "gw" if p["ip_gateway"] else "nogw")


@pytest.mark.parametrize("p", COMBOS, ids=[_id(p) for p in COMBOS])
def test_rendered_objects_validate_against_upstream_crds(p):
    request = nic_policy_validate.build_request(p)
    objects = nic_cluster_policy_render.render(request)
    for obj in objects:
        crdschema.validate(obj)  # raises with every failing path
    for obj in objects[1:]:
        if obj["kind"] != "IPPool":
            json.loads(obj["spec"]["ipam"])
    for part in ("rdmaSharedDevicePlugin", "sriovDevicePlugin"):
        if part in objects[0]["spec"]:
            json.loads(objects[0]["spec"][part]["config"])


@pytest.mark.parametrize("p", COMBOS, ids=[_id(p) for p in COMBOS])
def test_rendered_objects_validate_against_their_releases_crds(p):
    """The fields a release's policy is written with exist in that release's CRDs: v26.1.2's NicClusterPolicy lacks
    spec.global (v26.4.1 has it), so a field only a newer release knows would fail here for the 26.1.2 row."""
    crds = pinned_charts.network_operator_crds(p["network_operator_version"])
    for obj in nic_cluster_policy_render.render(nic_policy_validate.build_request(p)):
        crdschema.validate(obj, upstream_dir=crds)


def test_a_field_only_a_newer_release_has_is_caught():
    request = nic_policy_validate.build_request(dict(COMBOS[0], network_operator_version="26.1.2"))
    policy = nic_cluster_policy_render.render(request)[0]
    policy["spec"]["global"] = {"repository": "nvcr.io/nvidia/mellanox"}
    crdschema.validate(policy, upstream_dir=pinned_charts.network_operator_crds("26.4.1"))
    with pytest.raises(crdschema.SchemaValidationError, match="global"):
        crdschema.validate(policy, upstream_dir=pinned_charts.network_operator_crds("26.1.2"))


def test_every_kind_is_covered():
    kinds = set()
    for p in COMBOS:
        kinds.update(o["kind"] for o in nic_cluster_policy_render.render(nic_policy_validate.build_request(p)))
    assert kinds == {"NicClusterPolicy", "IPPool", "IPoIBNetwork", "HostDeviceNetwork", "MacvlanNetwork"}


def test_pool_and_policy_have_the_upstream_scope():
    request = nic_policy_validate.build_request(COMBOS[0])
    for obj in nic_cluster_policy_render.render(request):
        (version,) = crdschema.catalog().lookup(obj["apiVersion"], obj["kind"])
        assert ("namespace" in obj["metadata"]) is version.namespaced, obj["kind"]


def test_whereabouts_is_no_policy_part_in_the_crd(shared_dir):
    """The reason the table carries no ipamPlugin: the v26.4.1 CRD dropped secondaryNetwork.ipamPlugin."""
    path = os.path.join(shared_dir, "upstream", "network-operator", "nicclusterpolicies.mellanox.com.yaml")
    with open(path) as handle:
        crd = yaml.safe_load(handle)
    secondary = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "secondaryNetwork"]["properties"]
    assert "ipamPlugin" not in secondary
    assert set(secondary) == {"multus", "cniPlugins", "ipoib"}


def _table_matches(values, version):
    table = nic_cluster_policy.COMPONENT_IMAGES[version]
    init = values["operator"]["ofedDriver"]["initContainer"]
    assert init["repository"] == table["multus"]["repository"]
    assert init["version"] == table["multus"]["version"] == "network-operator-v" + version
    device_plugin = values["sriov-network-operator"]["images"]["sriovDevicePlugin"]
    sriov = table["sriovDevicePlugin"]
    assert device_plugin == "%s/%s:%s" % (sriov["repository"], sriov["image"], sriov["version"])


# COMPONENT_IMAGES keys -> the release's own names for them in hack/release.yaml (the data its chart and operator take
# their default images from).
RELEASE_NAMES = {"ofedDriver": "Mofed", "rdmaSharedDevicePlugin": "RdmaSharedDevicePlugin",
                 "sriovDevicePlugin": "SriovDevicePlugin", "multus": "Multus", "cniPlugins": "CniPlugins",
                 "ipoib": "Ipoib", "nvIpam": "nvIpam"}


@pytest.mark.parametrize("version", sorted(nic_cluster_policy.COMPONENT_IMAGES))
def test_each_row_is_its_releases_own_data(version):
    """Each row equals its release's hack/release.yaml (from its source archive), image for image."""
    folder = pinned_charts.extracted("network-operator", version, "hack/release.yaml")
    with open(os.path.join(folder, "hack", "release.yaml"), encoding="utf-8") as handle:
        release = yaml.safe_load(handle)
    assert release["NetworkOperator"]["version"] == "v" + version
    table = nic_cluster_policy.COMPONENT_IMAGES[version]
    assert set(table) == set(RELEASE_NAMES)
    for part, name in RELEASE_NAMES.items():
        assert table[part] == {k: release[name][k] for k in ("repository", "image", "version")}, part


@pytest.mark.parametrize("version", sorted(nic_cluster_policy.COMPONENT_IMAGES))
def test_each_row_matches_its_releases_chart(version):
    """The chart of each release (its values.yaml, from its source archive) pins the same component tag."""
    values = pinned_charts.values("network-operator", version)
    _table_matches(values, version)
    assert "nicClusterPolicy" not in values


def test_every_release_pair_has_its_row():
    """A release pair's Network Operator without a row would be refused by the module (unknown version)."""
    assert set(pinned_charts.pair_versions("network-operator")) <= set(nic_cluster_policy.COMPONENT_IMAGES)


def test_table_matches_the_pinned_chart_release():
    """The chart the network_operator role pins (the default release pair's, its values.yaml from shared/upstream/src)
    pins the same component tag as that version's table row."""
    version = pinned_charts.pinned_version("network-operator")
    values = pinned_charts.values("network-operator")
    _table_matches(values, version)
    assert "nicClusterPolicy" not in values


def test_table_matches_the_chart_release(shared_dir):
    """The chart values of v26.4.1 pin the same component tag the 26.4.1 table row uses."""
    path = os.path.join(shared_dir, "upstream", "network-operator", "values.default.yaml")
    with open(path) as handle:
        values = yaml.safe_load(handle)
    _table_matches(values, "26.4.1")
    # none of the rendered parts is a Helm value: the chart stopped creating the policy in 24.10
    assert "nicClusterPolicy" not in values
