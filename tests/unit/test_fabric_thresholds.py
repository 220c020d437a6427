"""The fabric floors (domain/fabric/thresholds.py, from the node-type table) with their sources, the user's
overrides and their refusals, and one test's verdict (domain/fabric/verdict.py)."""
import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.fabric import thresholds, verdict
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError


@pytest.mark.parametrize("node_type, link, ib, busbw, source", [
    ("nd-h100-v5", "NDR", 380.0, 360.0, "nd96isr_h100_v5.conf"),
    ("Standard_ND96isr_H100_v5", "NDR", 380.0, 360.0, "nd96isr_h100_v5.conf"),
    ("nd-h200-v5", "NDR", 380.0, 360.0, "nd96isr_h100_v5.conf"),
    ("nd-a100-v4", "HDR", 180.0, 180.0, "nd96asr_v4.conf"),
    ("ndm-a100-v4", "HDR", 180.0, 180.0, "nd96asr_v4.conf"),
])
def test_floors_per_node_type_and_link_type_with_their_sources(node_type, link, ib, busbw, source):
    floors = thresholds.floors(node_type)
    assert (floors["link"], floors["ib_write_bw_gbps"], floors["busbw_gbps"], floors["nics"]) == (link, ib, busbw, 8)
    assert source in floors["ib_write_bw_source"] and "azurehpc-health-checks" in floors["ib_write_bw_source"]
    assert "nccl-tests/issues/196" in floors["busbw_source"] and "learn.microsoft.com" in floors["busbw_source"]


def test_overrides_replace_a_floor_and_name_themselves_as_its_source():
    table = thresholds.table({"nd-h100-v5": {"busbw_gbps": 300}, "ndr": {"ib_write_bw_gbps": 370.5},
                              "Standard_ND96asr_v4": {"ib_write_bw_gbps": 0}})
    h100 = table["nd-h100-v5"]
    assert (h100["busbw_gbps"], h100["ib_write_bw_gbps"]) == (300.0, 370.5)
    assert h100["busbw_source"] == "override: fabric_thresholds.nd-h100-v5.busbw_gbps"
    assert h100["ib_write_bw_source"] == "override: fabric_thresholds.NDR.ib_write_bw_gbps"
    assert table["nd-h200-v5"]["ib_write_bw_gbps"] == 370.5 and table["nd-h200-v5"]["busbw_gbps"] == 360.0
    assert table["nd-a100-v4"]["ib_write_bw_gbps"] == 0.0 and table["ndm-a100-v4"]["ib_write_bw_gbps"] == 180.0


@pytest.mark.parametrize("overrides, match", [
    ({"dgx-h900": {"busbw_gbps": 1}}, r"fabric_thresholds.dgx-h900: 'dgx-h900' is neither a known node type nor a "
                                      r"link type. Fix: use one of nd-a100-v4, nd-h100-v5"),
    ({"nd-h100-v5": {"busbw_gbps": -1}}, r"fabric_thresholds.nd-h100-v5.busbw_gbps: -1 is not a bandwidth. Fix: give "
                                         r"a number of 0 or more"),
    ({"nd-h100-v5": {"busbw_gbps": "fast"}}, r"busbw_gbps: 'fast' is not a bandwidth"),
    ({"nd-h100-v5": {"busbw_gbps": True}}, r"busbw_gbps: True is not a bandwidth"),
    ({"nd-h100-v5": {"busbw_gbps": float("nan")}}, r"busbw_gbps: nan is not a bandwidth"),
    ({"nd-h100-v5": {"busbw": 300}}, r"fabric_thresholds.nd-h100-v5.busbw: is not a floor of a node. Fix: use "
                                     r"ib_write_bw_gbps or busbw_gbps"),
    ({"HDR": {"busbw_gbps": 300}}, r"fabric_thresholds.HDR.busbw_gbps: is not a floor of a link. Fix: use "
                                   r"ib_write_bw_gbps"),
    ({"nd-h100-v5": 300}, r"fabric_thresholds.nd-h100-v5: 300 is not a dict"),
    ([1], r"fabric_thresholds: \[1\] is not a dict"),
])
def test_bad_overrides_are_refused_naming_the_key(overrides, match):
    with pytest.raises(ParamError, match=match):
        thresholds.table(overrides)


def test_an_unknown_node_type_is_refused_naming_the_field():
    with pytest.raises(ParamError, match=r"node_type: 'dgx-b200' is not a known RDMA node type"):
        thresholds.floors("dgx-b200")


H100 = thresholds.floors("nd-h100-v5")
A100 = thresholds.floors("nd-a100-v4")


def measured(a=391.0, b=392.0, busbw=370.0, nics=8):
    return {"ib_write_bw": {"a": {"mlx5_%d" % i: a for i in range(nics)},
                            "b": {"mlx5_%d" % i: b for i in range(nics)}}, "busbw_gbps": busbw}


@pytest.mark.parametrize("given, floors, result, reason", [
    (measured(), {"a": H100, "b": H100}, "pass", None),
    (measured(b=379.9), {"a": H100, "b": H100}, "fail", "b mlx5_0: ib_write_bw 379.9 Gb/s under the NDR floor 380 Gb/s"),
    (measured(busbw=359), {"a": H100, "b": H100}, "fail", "NCCL all_reduce (Ring) busbw 359 GB/s under the floor 360 GB/s"),
    (measured(nics=7), {"a": H100, "b": H100}, "fail", "a: 7 NIC(s) measured, a nd-h100-v5 has 8"),
    # a mixed pair: each side's NICs against its own link, the busbw against the lower floor
    (measured(a=391, b=185, busbw=181), {"a": H100, "b": A100}, "pass", None),
    ({"error": "the perftest pod was not scheduled"}, {"a": H100, "b": H100}, "error",
     "the test could not run: the perftest pod was not scheduled"),
    ({"ib_write_bw": {"a": {"mlx5_0": 390}}}, {"a": H100, "b": H100}, "error",
     "no measurement of ib_write_bw on b, the NCCL busbw: the test did not finish"),
])
def test_one_tests_verdict(given, floors, result, reason):
    judged = verdict.judge(["a", "b"], given, floors)
    assert judged["result"] == result
    assert (reason in judged["reasons"]) if reason else judged["reasons"] == []


def test_the_verdict_names_each_nic():
    judged = verdict.judge(["a", "b"], measured(b=200.0), {"a": H100, "b": H100})
    assert judged["nics"]["b"]["mlx5_3"] == {"gbps": 200.0, "floor": 380.0, "ok": False}
    assert judged["nics"]["a"]["mlx5_3"]["ok"] and judged["busbw"] == {"gbps": 370.0, "floor": 360.0, "ok": True}
    assert len(judged["reasons"]) == 8


@pytest.mark.parametrize("pair, given, floors, match", [
    (["a", "a"], measured(), {"a": H100}, r"pair: \['a', 'a'\] is not two different nodes"),
    (["a", "b"], measured(), {"a": H100}, "floors_by_node: has no floors for b"),
    (["a", "b"], {"ib_write_bw": {"a": {"m": "x"}, "b": {"m": 1}}, "busbw_gbps": 1}, {"a": H100, "b": H100},
     r"ib_write_bw.a.m: 'x' is not a bandwidth"),
])
def test_bad_measurements_are_refused(pair, given, floors, match):
    with pytest.raises(ParamError, match=match):
        verdict.judge(pair, given, floors)
