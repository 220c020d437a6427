"""Table-driven tests of the version compatibility matrix (pure): every rule and note is matched and
not matched, known-broken refuses with its source, unknown warns, known-good is silent."""
import os
import re

import pytest

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "versions.md")
# URLs, owner/repo#number, and files of ../shared (path:lines).
REFERENCE = re.compile(r"https?://[^\s)]+|[\w.-]+/[\w.-]+#\d+|shared/[\w./-]+\.(?:md|yaml)(?::[\d,-]+)?")

RDMA = ["rdma"]
DRA = ["dra"]

# rule id -> (a combo the rule matches, a combo it does not match)
RULE_CASES = {
    "gpu-operator-26.7-kubernetes-1.33-1.37": (
        {"gpu_operator": "v26.7.0", "kubernetes": "v1.37.2"},
        {"gpu_operator": "v26.7.0", "kubernetes": "v1.32.9"}),
    "gpu-operator-26.3.2-kubernetes-1.36": (
        {"gpu_operator": "v26.3.2", "kubernetes": "1.36"},
        {"gpu_operator": "v26.3.1", "kubernetes": "1.36"}),
    "gpu-operator-26.3-kubernetes-1.32-1.35": (
        {"gpu_operator": "v26.3.3", "kubernetes": "v1.32.0"},
        {"gpu_operator": "v26.3.3", "kubernetes": "v1.31.9"}),
    "gpu-operator-26.3-26.7-network-operator-26.1.0-rdma": (
        {"gpu_operator": "v26.7.0", "network_operator": "26.1.0", "features": RDMA},
        {"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "features": RDMA}),
    "network-operator-26.4-kubernetes-1.31-1.35": (
        {"network_operator": "26.4.1", "kubernetes": "v1.35.3"},
        {"network_operator": "26.4.1", "kubernetes": "v1.36.0"}),
    "network-operator-26.1-kubernetes-1.31-1.35": (
        {"network_operator": "26.1.2", "kubernetes": "v1.31.0"},
        {"network_operator": "26.1.2", "kubernetes": "v1.30.9"}),
    "gpu-operator-26.7-driver-595": (
        {"gpu_operator": "v26.7.0", "driver": "595.91.07"},
        {"gpu_operator": "v26.7.0", "driver": "580.95.05"}),
    "gpu-operator-26.3-driver-580": (
        {"gpu_operator": "v26.3.3", "driver": "580.126.20"},
        {"gpu_operator": "v26.7.0", "driver": "580.126.20"}),
    "gpu-operator-26.3-driver-575": (
        {"gpu_operator": "v26.3.0", "driver": "575.57.08"},
        {"gpu_operator": "v26.3.0", "driver": "570.195.03"}),
    "gpu-operator-26.3-driver-535": (
        {"gpu_operator": "v26.3.1", "driver": "535"},
        {"gpu_operator": "v25.10.1", "driver": "535.288.01"}),
    "gpu-operator-25.10-driver-580": (
        {"gpu_operator": "v25.10.0", "driver": "580.82.07"},
        {"gpu_operator": "v25.10.0", "driver": "575.57.08"}),
    "gpu-operator-25.10.1-driver-575": (
        {"gpu_operator": "v25.10.1", "driver": "575.57.08"},
        {"gpu_operator": "v25.10.0", "driver": "575.57.08"}),
    "aks-gpu-operator-26.3.3-network-operator-26.4.0-rdma": (
        {"gpu_operator": "v26.3.3", "network_operator": "26.4.0", "features": RDMA},
        {"gpu_operator": "v26.3.3", "network_operator": "26.4.1", "features": RDMA}),
    "gpu-operator-26.3-network-operator-26.1-patches-rdma": (
        {"gpu_operator": "v26.3.3", "network_operator": "26.1.2", "features": RDMA},
        # GPU Operator 26.7 with a 26.1 patch: the 26.7.0 page names 26.1.0 only
        {"gpu_operator": "v26.7.0", "network_operator": "26.1.2", "features": RDMA}),
    "aicr-gpu-operator-26.7.0-network-operator-26.4.1-rdma": (
        {"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "features": RDMA},
        # AICR pins these two exactly: another 26.4 patch, or another 26.7 patch, is not its pair
        {"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "features": RDMA}),
    "cns-gpu-operator-26.3.2-network-operator-26.4.0-rdma": (
        {"gpu_operator": "v26.3.2", "network_operator": "26.4.0", "features": RDMA},
        {"gpu_operator": "v26.3.3", "network_operator": "26.4.0", "features": RDMA}),
    "network-operator-26.4-needs-gpu-operator-25.3": (
        {"gpu_operator": "v24.9.2", "network_operator": "26.4.0", "features": RDMA},
        {"gpu_operator": "v25.3.0", "network_operator": "26.4.0", "features": RDMA}),
    "dra-kubernetes-below-1.34": (
        {"kubernetes": "v1.33.5", "features": DRA},
        {"kubernetes": "v1.34.0", "features": DRA}),
    "dra-kubernetes-1.34-plus": (
        {"kubernetes": "v1.34.1-eks-123", "features": DRA},
        {"kubernetes": "1.33", "features": DRA}),
    "dra-driver-below-580": (
        {"driver": "570.195.03", "features": DRA},
        {"driver": "580.95.05", "features": DRA}),
    "dra-driver-580-plus": (
        {"driver": "580", "features": DRA},
        {"driver": "575", "features": DRA}),
}

NOTE_CASES = {
    "network-operator-26.4-rdma-not-in-nvidia-matrix": (
        {"network_operator": "26.4.0", "features": RDMA},
        {"network_operator": "26.1.0", "features": RDMA}),
    "gpu-operator-26.7-rdma-not-yet-validated": (
        {"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "features": RDMA},
        {"gpu_operator": "v26.7.0", "network_operator": "26.4.1"}),
    "gpu-operator-26.3-peermem-restart": (
        {"gpu_operator": "v26.3.3", "features": RDMA},
        {"gpu_operator": "v26.7.0", "features": RDMA}),
    "gpu-operator-26.3-deprecated": (
        {"gpu_operator": "v26.3.0"},
        {"gpu_operator": "v26.7.0"}),
    "gpu-operator-end-of-support": (
        {"gpu_operator": "v25.10.1"},
        {"gpu_operator": "v26.3.0"}),
    "network-operator-26.4-deprecated": (
        {"network_operator": "26.4.1"},
        {"network_operator": "26.1.2"}),
    "network-operator-end-of-support": (
        {"network_operator": "26.1.2"},
        {"network_operator": "26.4.0"}),
}

BROKEN_IDS = [r["id"] for r in versions.RULES if r["verdict"] == "breaks"]


def matched_ids(combo):
    return [m["id"] for m in versions.check(combo).matched]


def test_every_rule_and_note_has_a_case():
    assert set(RULE_CASES) == {r["id"] for r in versions.RULES}
    assert set(NOTE_CASES) == {n["id"] for n in versions.NOTES}


@pytest.mark.parametrize("rule_id", sorted(RULE_CASES))
def test_rule_matched(rule_id):
    assert rule_id in matched_ids(RULE_CASES[rule_id][0])


@pytest.mark.parametrize("rule_id", sorted(RULE_CASES))
def test_rule_not_matched(rule_id):
    assert rule_id not in matched_ids(RULE_CASES[rule_id][1])


@pytest.mark.parametrize("note_id", sorted(NOTE_CASES))
def test_note_applies(note_id):
    verdict = versions.check(NOTE_CASES[note_id][0])
    assert note_id in [m["id"] for m in verdict.matched]
    note = [n for n in versions.NOTES if n["id"] == note_id][0]
    assert any(note["source"] in line for line in verdict.messages)


@pytest.mark.parametrize("note_id", sorted(NOTE_CASES))
def test_note_does_not_apply(note_id):
    assert note_id not in matched_ids(NOTE_CASES[note_id][1])


# --- the data itself -------------------------------------------------------------------------


def test_rule_data_is_well_formed():
    ids = [r["id"] for r in versions.RULES] + [n["id"] for n in versions.NOTES]
    assert len(ids) == len(set(ids))
    for rule in versions.RULES:
        assert set(rule) == {"id", "when", "verdict", "reason", "source", "validated_by"}
        assert rule["verdict"] in ("works", "breaks")
        assert rule["reason"].strip() and rule["source"].strip()
    for note in versions.NOTES:
        assert set(note) == {"id", "when", "note", "source", "validated_by"}
        assert note["note"].strip() and note["source"].strip()
    for item in versions.RULES + versions.NOTES:
        level, who = item["validated_by"]
        assert level in versions.VALIDATION_LEVELS and who.strip(), item["id"]
        for key, spec in item["when"].items():
            if key == "features":
                assert set(spec) <= set(versions.FEATURES)
            else:
                version_parse.parse_range(key, spec)  # raises on a malformed range


def test_every_works_rule_speaks_for_a_pair():
    pairs = [set(pair[0]) for pair in versions.PAIRS]
    for rule in versions.RULES:
        dims = set(k for k in rule["when"] if k != "features") | set(rule["when"].get("features", ()))
        assert any(p <= dims for p in pairs), rule["id"]


def test_docs_table_lists_every_rule_and_source():
    with open(DOCS) as handle:
        text = handle.read()
    for item in versions.RULES + versions.NOTES:
        assert "`%s`" % item["id"] in text, item["id"]
        refs = REFERENCE.findall(item["source"])
        assert refs, item["id"]
        for ref in refs:
            assert ref in text, (item["id"], ref)


# --- verdicts ------------------------------------------------------------------------------


@pytest.mark.parametrize("rule_id", BROKEN_IDS)
def test_known_broken_refuses_citing_the_source(rule_id):
    combo = RULE_CASES[rule_id][0]
    assert versions.check(combo).status == versions.KNOWN_BROKEN
    rule = [r for r in versions.RULES if r["id"] == rule_id][0]
    with pytest.raises(Refusal) as err:
        versions.assert_supported(combo)
    assert rule["source"] in err.value.msg
    assert rule_id in err.value.msg
    assert versions.check(combo).combination in err.value.msg
    assert "Fix:" in err.value.msg
    assert rule_id in err.value.details["rules"]
    assert rule["source"] in err.value.details["sources"]
    assert "validated by: " + versions.VALIDATION_LEVELS[rule["validated_by"][0]] in err.value.msg


def test_both_dra_floors_are_cited():
    with pytest.raises(Refusal) as err:
        versions.assert_supported({"kubernetes": "1.33", "driver": "570.195.03", "features": ["dra"]})
    assert err.value.details["rules"] == ["dra-kubernetes-below-1.34", "dra-driver-below-580"]
    assert "MODULES.md" in err.value.msg


@pytest.mark.parametrize("combo", [
    {"gpu_operator": "v26.7.0", "kubernetes": "v1.34.1", "driver": "595.91.07"},
    {"gpu_operator": "v26.7.0", "kubernetes": "1.33"},
    {"gpu_operator": "v26.3.3", "network_operator": "26.4.0", "driver": "580.126.20", "features": ["rdma"]},
    {"network_operator": "26.4.0", "kubernetes": "1.31"},
    {"kubernetes": "v1.34.1", "driver": "580.95.05", "features": ["dra"]},
    {"gpu_operator": "v26.7.0", "kubernetes": "1.35", "driver": "595.91.07", "features": ["dra", "mig"]},
])
def test_known_good_is_silent(combo):
    assert versions.check(combo).status == versions.KNOWN_GOOD
    assert versions.assert_supported(combo) == []


@pytest.mark.parametrize("combo, status", [
    ({"kubernetes": "1.33.99", "features": DRA}, versions.KNOWN_BROKEN),
    ({"kubernetes": "1.34.0", "features": DRA}, versions.KNOWN_GOOD),
    ({"driver": "575.57.08", "features": DRA}, versions.KNOWN_BROKEN),
    ({"driver": "579", "features": DRA}, versions.KNOWN_BROKEN),
    ({"driver": "580.65.06", "features": DRA}, versions.KNOWN_GOOD),
    ({"gpu_operator": "v26.7.0", "kubernetes": "1.32.9"}, versions.UNKNOWN),
    ({"gpu_operator": "v26.7.0", "kubernetes": "1.33.0"}, versions.KNOWN_GOOD),
    ({"gpu_operator": "v26.7.5", "kubernetes": "1.37.9"}, versions.KNOWN_GOOD),
    ({"gpu_operator": "v26.7.0", "kubernetes": "1.38.0"}, versions.UNKNOWN),
    ({"gpu_operator": "v26.8.0", "kubernetes": "1.34"}, versions.UNKNOWN),
    ({"network_operator": "26.4.0", "kubernetes": "1.30"}, versions.UNKNOWN),
    ({"network_operator": "26.4.0", "kubernetes": "1.31"}, versions.KNOWN_GOOD),
    ({"network_operator": "26.4.9", "kubernetes": "1.35.9"}, versions.KNOWN_GOOD),
    ({"network_operator": "26.4.0", "kubernetes": "1.36"}, versions.UNKNOWN),
    ({"network_operator": "26.4.0", "gpu_operator": "v25.2.9", "features": RDMA}, versions.KNOWN_BROKEN),
    ({"network_operator": "26.4.0", "gpu_operator": "v25.3.0", "features": RDMA}, versions.UNKNOWN),
    ({"network_operator": "26.4.0", "gpu_operator": "v24.9.2"}, versions.UNKNOWN),  # no RDMA asked for
    ({"network_operator": "26.5.0", "gpu_operator": "v24.9.2", "features": RDMA}, versions.UNKNOWN),
])
def test_range_boundaries(combo, status):
    assert versions.check(combo).status == status


def test_notes_do_not_change_a_known_good_verdict():
    combo = {"gpu_operator": "v26.3.3", "driver": "580.126.20"}
    verdict = versions.check(combo)
    assert verdict.status == versions.KNOWN_GOOD
    assert any("gpu-operator-26.3-deprecated" in line for line in verdict.messages)
    assert versions.assert_supported(combo) == []


@pytest.mark.parametrize("combo, words", [
    # GPU Operator 26.7 patches after AICR's v26.7.0: no fact for the pair.
    ({"gpu_operator": "v26.7.1", "network_operator": "26.4.1", "features": ["rdma"]},
     ["GPU Operator x Network Operator x GPUDirect RDMA", "NVIDIA/gpu-operator#2301"]),
    # The 26.3 line is validated from 1.32: 1.31 has no fact.
    ({"gpu_operator": "v26.3.3", "kubernetes": "1.31"}, ["GPU Operator x Kubernetes", "Kubernetes 1.31"]),
    # Outside a validated range is unknown, not broken.
    ({"gpu_operator": "v26.7.0", "kubernetes": "1.38"}, ["GPU Operator x Kubernetes"]),
    ({"network_operator": "26.1.2", "kubernetes": "1.36"}, ["Network Operator x Kubernetes", "End of Support"]),
    # GPU Operator 26.7 with a Network Operator other than AICR's 26.4.1 (and the 26.1.0 of NVIDIA's page): no fact
    ({"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "features": ["rdma"]},
     ["GPU Operator x Network Operator x GPUDirect RDMA", "NVIDIA/gpu-operator#2302"]),
    ({"gpu_operator": "v26.7.0", "network_operator": "26.1.2", "features": ["rdma"]},
     ["GPU Operator x Network Operator x GPUDirect RDMA", "End of Support"]),
    ({"gpu_operator": "v26.7.0", "driver": "580.95.05"}, ["GPU Operator x driver", "driver 580.95.05"]),
    ({"kubernetes": "1.34"}, ["nothing to compare"]),
])
def test_unknown_warns(combo, words):
    assert versions.check(combo).status == versions.UNKNOWN
    warnings = versions.assert_supported(combo)
    assert warnings
    assert all(w.startswith("Unverified combination (") for w in warnings)
    joined = "\n".join(warnings)
    for word in words:
        assert word in joined


def test_one_known_good_pair_does_not_vouch_for_the_rest():
    combo = {"gpu_operator": "v26.7.0", "kubernetes": "1.34", "driver": "570.195.03"}
    verdict = versions.check(combo)
    assert verdict.status == versions.UNKNOWN
    assert "gpu-operator-26.7-kubernetes-1.33-1.37" in [m["id"] for m in verdict.matched]
    assert any("GPU Operator x driver" in line for line in verdict.messages)


def test_imprecise_versions_are_not_guessed():
    verdict = versions.check({"gpu_operator": "26.3", "kubernetes": "1.36"})
    assert verdict.status == versions.UNKNOWN
    assert any("too imprecise to decide gpu-operator-26.3.2-kubernetes-1.36" in m for m in verdict.messages)


def test_imprecise_version_cannot_rule_out_a_breaking_rule(monkeypatch):
    rule = {"id": "test-breaks", "when": {"features": ("dra",), "driver": "<580.95.05"}, "verdict": "breaks",
            "reason": "test", "source": "test#1"}
    monkeypatch.setattr(versions, "RULES", versions.RULES + (rule,))
    verdict = versions.check({"driver": "580", "features": ["dra"]})
    assert verdict.status == versions.UNKNOWN
    assert any("too imprecise to rule out test-breaks (source: test#1)" in m for m in verdict.messages)
    assert versions.check({"driver": "580.95.05", "features": ["dra"]}).status == versions.KNOWN_GOOD
    assert versions.check({"driver": "580.82.07", "features": ["dra"]}).status == versions.KNOWN_BROKEN


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize("key, text, parts, pre", [
    ("gpu_operator", "v26.7.0", (26, 7, 0), None),
    ("gpu_operator", "26.7.0", (26, 7, 0), None),
    ("gpu_operator", "v26.7.0-rc.1", (26, 7, 0), "rc.1"),
    ("gpu_operator", "26.3", (26, 3), None),
    ("network_operator", "v26.4.1", (26, 4, 1), None),
    ("kubernetes", "1.34", (1, 34), None),
    ("kubernetes", "v1.34.1", (1, 34, 1), None),
    ("kubernetes", "v1.34.1-eks-123", (1, 34, 1), None),
    ("kubernetes", "v1.34.1+k3s1", (1, 34, 1), None),
    ("kubernetes", "1.34.1-gke.1234000", (1, 34, 1), None),
    ("driver", "580.95.05", (580, 95, 5), None),
    ("driver", "580", (580,), None),
    ("driver", "R580", (580,), None),
    ("driver", 580, (580,), None),
])
def test_parse_version(key, text, parts, pre):
    version = version_parse.parse_version(key, text)
    assert version.parts == parts
    assert version.pre == pre


@pytest.mark.parametrize("key, text, spec, expected", [
    ("gpu_operator", "v26.7.0", ">=26.7.0,<26.8.0", True),
    ("gpu_operator", "26.7.0", "26.7.x", True),
    ("gpu_operator", "v26.8.0", "26.7.x", False),
    ("gpu_operator", "v26.3", "26.3.x", True),
    ("gpu_operator", "v26.3", ">=26.3.2", None),
    ("gpu_operator", "v26.7.0-rc.1", ">=26.7.0", False),
    ("gpu_operator", "v26.7.0-rc.1", "<26.7.0", True),
    ("gpu_operator", "v26.7.0-rc.2", ">=26.7.0-rc.10", False),
    ("gpu_operator", "v25.10.0", ">=25.3.0", True),  # numeric, not string, comparison
    ("gpu_operator", "v25.10.0", "<25.3.0", False),
    ("gpu_operator", "v26.3.3", "==26.3.3", True),
    ("gpu_operator", "v26.3.4", "==26.3.3", False),
    ("network_operator", "26.4.0", "*", True),
    ("kubernetes", "1.34", ">=1.34", True),
    ("kubernetes", "1.34", "<1.34", False),
    ("kubernetes", "v1.34.1-eks-123", ">=1.34", True),
    ("kubernetes", "v1.34.1-eks-123", "<1.34", False),
    ("kubernetes", "v1.9.0", "<1.10", True),
    ("kubernetes", "1.37.9", ">=1.33,<1.38", True),
    ("kubernetes", "1.38.0", ">=1.33,<1.38", False),
    ("driver", "580.95.05", ">=580", True),
    ("driver", "580.95.05", "<580", False),
    ("driver", "580", ">=580", True),
    ("driver", "580", "<580", False),
    ("driver", "580", ">=580,<581", True),
    ("driver", "580", ">=580.95.05", None),
    ("driver", "580.95.05", ">=580.95.05", True),
    ("driver", "580.82.07", ">=580.95.05", False),
    ("driver", "575.57.08", "<580", True),
    ("driver", "580", "580.x", True),
])
def test_in_range(key, text, spec, expected):
    assert version_parse.in_range(key, version_parse.parse_version(key, text), spec) is expected


def test_features_forms():
    for value in ("rdma", ["rdma"], ("gpudirect",), {"GPUDirect-RDMA"}, frozenset(["rdma", "mig"])):
        _versions, features = versions.normalize({"features": value})
        assert "rdma" in features
    assert versions.normalize({"features": ["time_slicing"]})[1] == frozenset(["time-slicing"])
    assert versions.normalize({"gpu_operator": None, "features": []}) == ({}, frozenset())


def test_describe_names_the_combination():
    verdict = versions.check({"gpu_operator": "v26.3.3", "network_operator": "26.4.0",
                              "kubernetes": "v1.34.1-eks-123", "driver": "580.126.20", "features": ["rdma"]})
    assert verdict.combination == ("GPU Operator v26.3.3 + Network Operator 26.4.0 + Kubernetes 1.34.1"
                                   " + driver 580.126.20 + features rdma")


@pytest.mark.parametrize("key, value", [
    ("gpu_operator", "latest"),
    ("gpu_operator", "26"),
    ("gpu_operator", "v26.x"),
    ("gpu_operator", ">=26.3.0"),
    ("network_operator", "network-operator"),
    ("network_operator", True),
    ("kubernetes", "1"),
    ("kubernetes", "one.thirty"),
    ("kubernetes", 1.3),
    ("kubernetes", "v1.34.1 extra"),
    ("driver", "580.95.05.1"),
    ("driver", "latest"),
    ("driver", "580-open"),
    ("features", ["sriov"]),
    ("features", 5),
    ("gpu_operater", "v26.7.0"),
])
def test_bad_input_names_the_key(key, value):
    with pytest.raises(ParamError) as err:
        versions.check({key: value})
    assert err.value.field == key
    assert "Fix:" in err.value.msg


def test_combo_must_be_a_dict():
    with pytest.raises(ParamError) as err:
        versions.assert_supported(["v26.7.0"])
    assert err.value.field == "combo"


def test_yaml_float_gets_a_quoting_hint():
    with pytest.raises(ParamError) as err:
        versions.check({"kubernetes": 1.3})
    assert "quote it" in err.value.msg


# --- who validated it ----------------------------------------------------------------------

def test_docs_table_names_who_validated_each_fact():
    """Each rule's and note's row in docs/versions.md has its validation level."""
    with open(DOCS) as handle:
        rows = {line.split("|")[1].strip().strip("`"): line for line in handle if line.startswith("| `")}
    for item in versions.RULES + versions.NOTES:
        assert versions.VALIDATION_LEVELS[item["validated_by"][0]] in rows[item["id"]], item["id"]


def test_the_recipe_level_sits_between_nvidias_matrix_and_a_cloud_guide():
    order = versions.LEVEL_ORDER
    assert order.index(versions.NVIDIA_MATRIX) < order.index(versions.NVIDIA_RECIPE) < order.index(versions.CLOUD_GUIDE)
    assert versions.VALIDATION_LEVELS[versions.NVIDIA_RECIPE] == "an NVIDIA recipe"


def test_the_aicr_pair_is_an_nvidia_recipe_not_nvidias_matrix():
    """GPU Operator v26.7.0 + Network Operator 26.4.1 with RDMA: known-good at the recipe level, the line says it is
    not NVIDIA's support matrix, and the open validation work (#2301, #2302) is still a note."""
    verdict = versions.check({"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "kubernetes": "1.35",
                              "features": RDMA})
    assert verdict.status == versions.KNOWN_GOOD and verdict.level == versions.NVIDIA_RECIPE
    line = versions.validation_line(verdict)
    assert line.startswith("validation of GPU Operator v26.7.0 + Network Operator 26.4.1 + Kubernetes 1.35 + "
                           "features rdma: validated by an NVIDIA recipe (")
    assert ("GPU Operator x Network Operator x GPUDirect RDMA: an NVIDIA recipe (NVIDIA's AI Cluster Runtime "
            "recipes), not listed in NVIDIA's support matrix [aicr-gpu-operator-26.7.0-network-operator-26.4.1-rdma]"
            ) in line
    ids = [m["id"] for m in verdict.matched]
    assert {"gpu-operator-26.7-rdma-not-yet-validated", "network-operator-26.4-rdma-not-in-nvidia-matrix"} <= set(ids)
    assert versions.assert_supported({"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "kubernetes": "1.35",
                                      "features": RDMA}) == []


def test_the_nvidia_matrix_pair_is_in_nvidias_matrix_with_its_end_of_support():
    verdict = versions.check({"gpu_operator": "v26.3.3", "network_operator": "26.1.2", "kubernetes": "1.35",
                              "features": RDMA})
    assert verdict.status == versions.KNOWN_GOOD and verdict.level == versions.NVIDIA_MATRIX
    line = versions.validation_line(verdict)
    assert "validated by NVIDIA's support matrix (" in line and "not listed in NVIDIA's support matrix" not in line
    assert "network-operator-end-of-support" in [m["id"] for m in verdict.matched]


def test_the_aks_guides_pair_is_validated_by_a_cloud_providers_guide_not_nvidias_matrix():
    verdict = versions.check({"gpu_operator": "v26.3.3", "network_operator": "26.4.0", "kubernetes": "1.35",
                              "features": RDMA})
    assert verdict.status == versions.KNOWN_GOOD and verdict.level == versions.CLOUD_GUIDE
    line = versions.validation_line(verdict)
    assert line.startswith("validation of GPU Operator v26.3.3 + Network Operator 26.4.0 + Kubernetes 1.35 + "
                           "features rdma: validated by a cloud provider's guide (")
    assert ("GPU Operator x Network Operator x GPUDirect RDMA: a cloud provider's guide (Azure AKS's RDMA/InfiniBand "
            "guide; NVIDIA DeepOps 26.07 defaults to it), not listed in NVIDIA's support matrix "
            "[aks-gpu-operator-26.3.3-network-operator-26.4.0-rdma]") in line
    assert "GPU Operator x Kubernetes: NVIDIA's support matrix [gpu-operator-26.3-kubernetes-1.32-1.35]" in line
    assert "network-operator-26.4-rdma-not-in-nvidia-matrix" in [m["id"] for m in verdict.matched]


@pytest.mark.parametrize("combo,level", [
    ({"gpu_operator": "v26.7.0", "network_operator": "26.1.0", "features": RDMA},
     versions.NVIDIA_MATRIX),
    ({"gpu_operator": "v26.7.0", "kubernetes": "1.35"}, versions.NVIDIA_MATRIX),
    ({"gpu_operator": "v26.3.3", "network_operator": "26.4.0", "features": RDMA}, versions.CLOUD_GUIDE),
    # the DRA driver floor is this project's rule: known-good, but nobody outside validated it
    ({"kubernetes": "1.35", "driver": "580.95.05", "features": ["dra"]}, versions.UNVERIFIED),
    # NVIDIA's AI Cluster Runtime recipe: between the support matrix and a cloud guide
    ({"gpu_operator": "v26.7.0", "network_operator": "26.4.1", "features": RDMA}, versions.NVIDIA_RECIPE),
    ({"gpu_operator": "v26.3.3", "network_operator": "26.1.2", "kubernetes": "1.35", "features": RDMA},
     versions.NVIDIA_MATRIX),
    # no fact for the pair: unverified
    ({"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "features": RDMA}, versions.UNVERIFIED),
    # known-broken: no level vouches for it
    ({"gpu_operator": "v26.3.2", "network_operator": "26.4.0", "features": RDMA}, versions.UNVERIFIED),
])
def test_the_level_is_the_weakest_pairs(combo, level):
    assert versions.check(combo).level == level


def test_an_uncovered_pair_is_named_unverified():
    verdict = versions.check({"gpu_operator": "v26.7.0", "network_operator": "26.4.0", "kubernetes": "1.35",
                              "features": RDMA})
    line = versions.validation_line(verdict)
    assert ": unverified (" in line
    assert "GPU Operator x Network Operator x GPUDirect RDMA: unverified (no fact covers it)" in line


def test_a_project_rule_is_not_called_validated():
    line = versions.validation_line(versions.check({"kubernetes": "1.35", "driver": "580", "features": ["dra"]}))
    assert "unverified outside this project" in line
    assert "DRA x driver: unverified (this project's own rule (MODULES.md), no outside validation)" in line
