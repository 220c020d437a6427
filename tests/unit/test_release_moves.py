"""domain.helm.moves: what the pins do to the releases on the cluster, decided before any write."""
from __future__ import annotations

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import moves
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

FIELDS = {"gpu-operator": "gpu_operator_chart_version", "dra-driver-nvidia-gpu": "dra_driver_chart_version",
          "kai-scheduler": "scheduling_kai_chart_version"}


def deployed(name, namespace, chart):
    return {"name": name, "namespace": namespace, "chart": chart, "status": "deployed", "revision": "1"}


def wanted(name, namespace, chart_ref, version):
    return {"release_name": name, "release_namespace": namespace, "chart_ref": chart_ref, "chart_version": version}


GPU = wanted("gpu-operator", "gpu-operator", "gpu-operator", "v26.7.0")
DRA = wanted("dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu",
             "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.4.1")
KAI = wanted("kai-scheduler", "kai-scheduler", "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", "v0.16.8")
RELEASE_020 = [deployed("gpu-operator", "gpu-operator", "gpu-operator-v26.3.3"),
               deployed("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-25.12.0"),
               deployed("kai-scheduler", "kai-scheduler", "kai-scheduler-v0.13.0")]


def claim(name, driver, allocated=True):
    status = {"allocation": {"devices": {"results": [{"driver": driver, "device": "gpu-0", "pool": "n"}]}}}
    return {"metadata": {"name": name, "namespace": "team"}, "status": status if allocated else {}}


def test_release_020s_stack_moves_up_and_the_renamed_dra_chart_is_replaced():
    plan = moves.plan(RELEASE_020, [GPU, DRA, KAI], FIELDS)
    assert plan["removals"] == [{"release": "nvidia-dra-driver-gpu", "namespace": "nvidia-dra-driver-gpu",
                                 "chart": "nvidia-dra-driver-gpu", "version": "25.12.0",
                                 "replaced_by": "dra-driver-nvidia-gpu"}]
    assert "gpu-operator/gpu-operator: gpu-operator v26.3.3 -> v26.7.0" in plan["lines"]
    assert "kai-scheduler/kai-scheduler: kai-scheduler v0.13.0 -> v0.16.8" in plan["lines"]


def test_at_the_pins_nothing_moves():
    now = [deployed("gpu-operator", "gpu-operator", "gpu-operator-v26.7.0"),
           deployed("dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu-0.4.1")]
    assert moves.plan(now, [GPU, DRA], FIELDS) == {"removals": [], "lines": []}
    assert moves.plan([], [GPU, DRA], FIELDS) == {"removals": [], "lines": []}


def test_a_downgrade_is_refused_naming_the_release_both_versions_and_the_variable():
    now = [deployed("gpu-operator", "gpu-operator", "gpu-operator-v26.7.0"),
           deployed("kai-scheduler", "kai-scheduler", "kai-scheduler-v0.16.8")]
    older = [wanted("gpu-operator", "gpu-operator", "gpu-operator", "v26.3.3"),
             wanted("kai-scheduler", "kai-scheduler", "kai-scheduler", "v0.16.8-rc.1")]
    with pytest.raises(Refusal) as err:
        moves.plan(now, older, FIELDS)
    text = str(err.value)
    assert text.startswith("2 release(s) cannot move to the pins: gpu-operator/gpu-operator runs gpu-operator v26.7.0, "
                           "and gpu_operator_chart_version pins the older v26.3.3: a downgrade is not supported")
    assert "scheduling_kai_chart_version pins the older v0.16.8-rc.1" in text
    assert "Fix: pin v26.7.0 or newer in gpu_operator_chart_version" in text and text.endswith("Nothing was changed.")


def test_a_release_of_another_chart_under_that_name_is_not_a_downgrade():
    """Only the same chart's versions are compared (a renamed or replaced chart is not older)."""
    other = [deployed("gpu-operator", "gpu-operator", "my-fork-v99.0.0")]
    assert moves.plan(other, [GPU], FIELDS)["removals"] == []


def test_the_rename_is_refused_while_claims_hold_the_old_drivers_devices():
    claims = [claim("train-0", "gpu.nvidia.com"), claim("idle", "gpu.nvidia.com", allocated=False),
              claim("other", "example.com/fpga"), claim("domain", "compute-domain.nvidia.com")]
    with pytest.raises(Refusal) as err:
        moves.plan(RELEASE_020, [GPU, DRA], FIELDS, claims)
    text = str(err.value)
    assert "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu (nvidia-dra-driver-gpu 25.12.0) is replaced by the renamed " \
           "chart dra-driver-nvidia-gpu" in text
    assert "2 ResourceClaim(s) hold its devices: team/domain, team/train-0" in text
    # claims of another driver or unallocated ones do not stop it
    assert moves.plan(RELEASE_020, [GPU, DRA], FIELDS, claims[1:3])["removals"]


def test_without_the_new_dra_chart_the_old_release_is_left_alone():
    """The DRA layer off: nothing installs the successor, so nothing removes its predecessor."""
    assert moves.plan(RELEASE_020, [GPU, KAI], FIELDS)["removals"] == []


def test_bad_wanted_is_one_line():
    with pytest.raises(ParamError, match="wanted: .* lacks a release name"):
        moves.plan([], [{"release_name": "x"}], FIELDS)
    with pytest.raises(ParamError, match="is not a list"):
        moves.plan([], "gpu-operator", FIELDS)
