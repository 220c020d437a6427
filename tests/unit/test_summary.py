"""The platform summary as sentences: delivery, what happened to each layer, what is pinned, what the smoke tests
proved; no repeated words or reasons."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import gpu_driver_mode
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import summary
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

RENDER_SKIP = "render mode: written to /srv/platform/smoke, not run"


def test_a_render_reads_as_sentences_without_repeats():
    layers = [{"layer": "network_operator", "action": "render"}, {"layer": "gpu_operator", "action": "render"},
              {"layer": "scheduling", "action": "render, render"}, {"layer": "monitoring", "action": "render"}]
    smoke = [{"layer": "gpu_operator", "skipped_reason": RENDER_SKIP},
             {"layer": "gpu_sharing", "skipped_reason": "render mode: no cluster to read"},
             {"layer": "gpu_sharing", "skipped_reason": RENDER_SKIP},
             {"layer": "gpu_sharing", "skipped_reason": RENDER_SKIP},
             {"layer": "scheduling", "skipped_reason": RENDER_SKIP}]
    lines = summary.sentences("/srv/platform", "flux", ["network-operator", "gpu-operator", "smoke"],
                              {"gpu-operator chart": "gpu-operator v26.3.3", "kueue chart": "0.19.2"}, layers, smoke)
    assert lines == [
        "The platform was written as a GitOps bundle to /srv/platform for Flux, in 3 units applied in this order: "
        "network-operator, gpu-operator and smoke.",
        "Rendered: the network_operator, gpu_operator, scheduling and monitoring layers.",
        "Pinned: gpu-operator chart gpu-operator v26.3.3; kueue chart 0.19.2.",
        "Smoke tests not run for gpu_operator, gpu_sharing and scheduling: %s." % RENDER_SKIP,
        "Smoke tests not run for gpu_sharing: render mode: no cluster to read.",
    ]


def test_a_direct_run_groups_outcomes_and_keeps_a_failures_evidence():
    layers = [{"layer": "gpu_operator", "action": "none"}, {"layer": "scheduling", "action": ["upgrade", "none"]},
              {"layer": "monitoring", "action": "skipped"}]
    smoke = [{"layer": "gpu_operator", "check": "cuda", "passed": True},
             {"layer": "scheduling", "check": "gang", "object": "job/gang", "passed": False,
              "reason": "1 of 2 pods Running", "evidence": {"pods": "gang-0"}}]
    lines = summary.sentences("", "flux", [], {}, layers, smoke)
    assert lines[0] == "The platform was installed directly on the cluster."
    assert lines[1] == ("Upgraded: the scheduling layer. Already as pinned: the gpu_operator and scheduling layers. "
                        "Skipped: the monitoring layer.")
    assert lines[2] == "Nothing is pinned."
    assert lines[3] == "Smoke tests passed for gpu_operator."
    assert lines[4].startswith("Smoke test failed for scheduling: job/gang - 1 of 2 pods Running - ")
    assert "gang-0" in lines[4]


def test_argo_cd_and_nothing_run():
    lines = summary.sentences("/srv/p", "argocd", [], {}, [], [])
    assert lines == ["The platform was written as a GitOps bundle to /srv/p for Argo CD.", "No layer was enabled.",
                     "Nothing is pinned.", "No smoke test ran."]


@pytest.mark.parametrize("layers, smoke, field", [
    ([{"action": "render"}], [], "layers[0]"),
    ([], [{"passed": True}], "results"),
])
def test_a_record_without_its_layer_is_named(layers, smoke, field):
    with pytest.raises(ParamError) as err:
        summary.sentences("", "flux", [], {}, layers, smoke)
    assert err.value.field == field


def test_words():
    assert [summary.words(x) for x in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]


def gpudirect_decision(**kwargs):
    """gpu_driver_mode's decision for two Hopper hosts with the open modules on kernel 6.8."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.family": "hopper"}
    nodes = [{"name": name, "labels": dict(labels), "driver_pods": [],
              "host": {"node_name": name, "driver_loaded": True, "driver_version": "595.91.07",
                       "kernel_module_type": kwargs.pop("module_type", "open"), "os": {"kernel": "6.8.0-60-generic"}}}
             for name in ("gpu-a", "gpu-b")]
    return gpu_driver_mode.decide("host", nodes, rdma=kwargs.pop("rdma", True), **kwargs)


def test_the_gpudirect_path_is_a_line_before_the_smoke_tests():
    smoke = [{"layer": "gpu_operator", "check": "cuda", "passed": True}]
    lines = summary.sentences("", "flux", [], {}, [], smoke, gpudirect_decision())
    assert lines[3] == "GPUDirect RDMA: dmabuf (open kernel modules 595, kernel 6.8, Hopper)."
    assert lines[4] == "Smoke tests passed for gpu_operator."


def test_the_peermem_line_says_what_loads_it_and_why():
    line = summary.gpudirect_sentence(gpudirect_decision(module_type="proprietary"))
    assert line.startswith("GPUDirect RDMA: peermem, nvidia-peermem loaded by the peermem role on the hosts "
                           "(modules-load.d) (auto: DMA-BUF needs the open kernel modules")
    assert "node gpu-a: the proprietary kernel module (/proc/driver/nvidia/version)" in line
    explicit = summary.gpudirect_sentence(gpudirect_decision(gpudirect_path="peermem"))
    assert explicit == ("GPUDirect RDMA: peermem, nvidia-peermem loaded by the peermem role on the hosts "
                        "(modules-load.d) (requested: peermem).")


def test_no_gpudirect_line_without_rdma_or_a_decision():
    assert summary.gpudirect_sentence(gpudirect_decision(rdma=False)) == ""
    assert summary.gpudirect_sentence(None) == "" and summary.gpudirect_sentence({}) == ""
    assert len(summary.sentences("", "flux", [], {}, [], [], gpudirect_decision(rdma=False))) == 4
