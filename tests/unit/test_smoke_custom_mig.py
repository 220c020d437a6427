# -*- coding: utf-8 -*-
"""The gpu_sharing smoke test on a pool whose MIG layout is a config of the custom mig-parted config."""

from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.smoke import plan as smoke
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError
from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import (
    smoke_test_allocatable as smoke_allocatable)

CONFIG = {"version": "v1", "mig-configs": {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "training-mix": [
        {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"devices": [4, 5, 6, 7], "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}]}}
POOL = {"name": "training", "node_selector": {"nodepool": "training"}, "sharing": "mig", "replicas": None,
        "resource_name": "nvidia.com/gpu", "mig_profile": "training-mix", "mig_strategy": "mixed"}


def node(name, product="NVIDIA-A100-SXM4-80GB", count="8"):
    return {"metadata": {"name": name, "labels": {smoke_allocatable.GPU_PRODUCT_LABEL: product, smoke_allocatable.GPU_COUNT_LABEL: count}}}


def test_the_plan_checks_the_custom_layout_and_runs_a_pod_on_one_of_its_profiles():
    items = smoke._sharing_items([POOL], {"namespace": "gpu-platform-smoke", "timeout": 300},
                                 "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04", CONFIG)
    allocatable, cuda = items
    assert allocatable["params"]["mig_layout"] == "training-mix" and allocatable["params"]["mig_config"] == CONFIG
    assert cuda["params"]["resources"] == {"nvidia.com/mig-3g.40gb": 1}


def test_the_custom_layout_gives_the_expected_allocatable_per_node():
    expected, per_gpu, layout = smoke_allocatable.allocatable_inputs({"mig_layout": "training-mix", "mig_strategy": "mixed",
                                                                      "mig_config": CONFIG})
    assert expected is None and per_gpu is None
    wanted = smoke_allocatable.expected_from_mig_layout([node("gpu-1")], *layout)
    assert wanted == {"gpu-1": {"nvidia.com/mig-3g.40gb": 12, "nvidia.com/mig-1g.10gb": 8,
                                "nvidia.com/mig-2g.20gb": 4}}


def test_a_layout_missing_from_the_custom_config_is_refused_before_any_read():
    with pytest.raises(ParamError, match="^mig_layout: 'all-1g.10gb' is not a config of mig_config"):
        smoke_allocatable.allocatable_inputs({"mig_layout": "all-1g.10gb", "mig_config": CONFIG})
    with pytest.raises(ParamError, match="^mig_layout: 'training-mix' is not a standard layout name"):
        smoke_allocatable.allocatable_inputs({"mig_layout": "training-mix"})


def test_gfd_labels_after_a_single_strategy_layout_count_mig_devices_not_boards():
    """GPU Feature Discovery under the single strategy names the product ``<board>-MIG-<profile>`` and counts the MIG
    devices once the layout is applied: 8 A100s in all-1g.10gb are labelled count 56, and advertise 56, not 392."""
    layout = ("all-1g.10gb", "single")
    before = smoke_allocatable.expected_from_mig_layout([node("gpu-1")], *layout)
    after = smoke_allocatable.expected_from_mig_layout([node("gpu-1", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "56")], *layout)
    assert before == after == {"gpu-1": {"nvidia.com/gpu": 56}}
    odd = smoke_allocatable.expected_from_mig_layout([node("gpu-1", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "50")], *layout)
    assert odd == {"gpu-1": None}


def test_mig_profile_expects_the_boards_behind_gfds_mig_device_count():
    """A node already in all-1g.10gb (GFD: product -MIG-1g.10gb, count 56) moved to all-3g.40gb: 8 boards, 16
    instances; the same layout again: 56, not 392."""
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.mig import layouts as mig
    from ansible_collections.gpu_platform.cluster.plugins.module_utils.workflows import mig_profile
    applied = {"metadata": {"name": "gpu-1", "labels": {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "nvidia.com/gpu.count": "56",
        "nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "success"}}}
    same = mig_profile._expected(applied, "A100-80GB", mig.named_layout("all-1g.10gb", "A100-80GB"), "single",
                                 "all-1g.10gb")
    other = mig_profile._expected(applied, "A100-80GB", mig.named_layout("all-3g.40gb", "A100-80GB"), "single",
                                  "all-3g.40gb")
    assert same == {"nvidia.com/gpu": 56} and other == {"nvidia.com/gpu": 16}
    assert mig.boards_from_labels("NVIDIA-A100-SXM4-80GB", 8, dict) == 8  # whole GPUs: the count is the boards
