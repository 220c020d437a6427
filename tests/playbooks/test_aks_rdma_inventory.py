"""inventories/aks, the AKS RDMA/InfiniBand guide's setup, run in direct mode against the fake GPU cluster:
without an NCCL image nothing is written; with one, the NCCL proof is part of the run and its node type's
bus-bandwidth threshold decides it, so the run cannot finish green on a slow or TCP-only fabric."""
from __future__ import annotations

import os

import pytest
import yaml

from tests.playbooks.conftest import ROOT

pytestmark = pytest.mark.slow

IMAGE = "registry.example.com/hpc/nccl-tests@sha256:" + "b" * 64


def aks_choices():
    with open(os.path.join(ROOT, "inventories", "aks", "group_vars", "all", "platform.yml"), encoding="utf-8") as handle:
        # Where the cluster is (kubeconfig, context) is not a choice: the fake cluster is.
        return {k: v for k, v in yaml.safe_load(handle).items() if k not in ("gpu_platform_kubeconfig", "gpu_platform_context")}


def test_without_an_nccl_image_nothing_is_written(direct_site):
    runner, api, repo = direct_site()
    result = runner.run(**aks_choices())
    assert result.failed == 1
    msg = " ".join(result.failure_messages()[-1].split())
    assert "smoke_tests_nccl_image" in msg, msg
    assert api.writes() == []


def test_the_nccl_proof_decides_the_run_against_the_node_types_threshold(direct_site):
    # The fake launcher prints a GPUDirect RDMA run over IB at 175.888 GB/s (local_gpu_cluster/nccl_logs.py).
    runner, api, repo = direct_site()
    # The fixture's own threshold is dropped: the inventory's node type sets it.
    result = runner.run(**dict(aks_choices(), smoke_tests_nccl_image=IMAGE, smoke_tests_nccl_min_busbw_gbps=""))
    assert result.failed == 1
    msg = " ".join(result.failure_messages()[-1].split())
    assert msg.startswith("network_operator: FAIL"), msg
    # ND H100 v5: 8 x 400 Gb/s NDR, threshold 0.7 x 400 GB/s; the log's 175.888 GB/s is below it.
    assert "below the threshold 280 GB/s" in msg, msg
