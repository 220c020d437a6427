# -*- coding: utf-8 -*-
"""Image pull Secrets for every image the collection runs itself: the smoke pods and the peermem loader
(the charts' and the NicClusterPolicy's are tested with their layers); one name check for all of them."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import (
    dra_driver as dra, gpu_operator)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.network import (
    nic_cluster_policy_validate)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import peermem
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import objects, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import smoke_test as flow
from tests.unit.test_dra import settings as dra_settings
from tests.unit.test_driver_upgrade import settings as upgrade_settings

IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"
NCCL_IMAGE = "registry.example.com/hpc/nccl-tests@sha256:" + "c" * 64


def pod_specs(objs):
    return [spec for obj in objs for spec in objects._pod_specs(obj)]


@pytest.mark.parametrize("params", [
    {"check": "cuda", "namespace": "smoke", "image": IMAGE},
    {"check": "dra", "namespace": "smoke", "image": IMAGE},
    {"check": "gang", "namespace": "smoke", "image": IMAGE, "scheduler": "volcano", "replicas": 2,
     "window_seconds": 30},
    {"check": "gang", "namespace": "smoke", "image": IMAGE, "scheduler": "kai", "replicas": 2, "window_seconds": 30,
     "queue": "team-a"},
    {"check": "nccl", "namespace": "smoke", "image": NCCL_IMAGE, "scheduler": "volcano", "nodes": 2,
     "gpus_per_node": 8, "min_busbw_gbps": 100},
    {"check": "nccl", "namespace": "smoke", "image": NCCL_IMAGE, "scheduler": "none", "nodes": 2,
     "gpus_per_node": 8, "min_busbw_gbps": 100},
])
def test_every_smoke_pod_pulls_with_the_secrets(params):
    plain = pod_specs(flow.build(params))
    assert plain and all("imagePullSecrets" not in spec for spec in plain)
    specs = pod_specs(flow.build(dict(params, image_pull_secrets=["harbor-pull", "ngc.pull"])))
    assert len(specs) == len(plain)
    assert all(spec["imagePullSecrets"] == [{"name": "harbor-pull"}, {"name": "ngc.pull"}] for spec in specs)


def test_the_peermem_loader_pulls_with_the_secrets():
    ds = peermem.daemonset("nvidia-peermem", "docker.io/library/busybox:1.37.0", image_pull_secrets=["harbor-pull"])[1]
    assert ds["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "harbor-pull"}]
    assert "imagePullSecrets" not in peermem.daemonset("nvidia-peermem", "docker.io/library/busybox:1.37.0")[1][
        "spec"]["template"]["spec"]
    with pytest.raises(ParamError, match=r"^peermem_image_pull_secrets\[1\]: 'Harbor_Pull' is not a Secret name"):
        peermem.daemonset("nvidia-peermem", "docker.io/library/busybox:1.37.0",
                          image_pull_secrets=["ok", "Harbor_Pull"])


@pytest.mark.parametrize("value, field", [
    ("harbor-pull", "f"), ({"name": "x"}, "f"), (["ok", ""], r"f\[1\]"), ([7], r"f\[0\]"), (["a" * 254], r"f\[0\]"),
])
def test_secret_names_refuse_what_kubernetes_would(value, field):
    with pytest.raises(ParamError, match="^%s: " % field):
        validate.secret_names("f", value)


def test_the_layers_share_one_name_check():
    assert validate.secret_names("f", ["ngc.pull", "harbor-pull"]) == ("ngc.pull", "harbor-pull")
    with pytest.raises(ParamError, match=r"^image_pull_secrets\[0\]"):
        nic_cluster_policy_validate.build_request({"mode": "rdma_shared", "network_operator_version": "26.4.0",
                                                   "ip_range": "192.168.100.0/24", "image_pull_secrets": ["Bad_Name"],
                                                   "selectors": {"vendors": ["15b3"], "interfaces": ["ibs1f0"]}})
    with pytest.raises(ParamError, match=r"^gpu_operator_image_pull_secrets\[0\]"):
        gpu_operator.build_values(dict(upgrade_settings("operator", None), image_pull_secrets=["Bad_Name"]))
    with pytest.raises(ParamError, match=r"^dra_driver_image_pull_secrets\[0\]"):
        dra.values(dra_settings(image_pull_secrets=["Bad_Name"]))
