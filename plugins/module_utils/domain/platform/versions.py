# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Version compatibility matrix: GPU Operator x Network Operator x Kubernetes x driver x features.

Private to the collection: not a public API. Pure: standard library only, no I/O.

The matrix is data (RULES, NOTES): every fact carries the source it was read from. Only facts
that could be confirmed are here; a combination no fact speaks to is "unknown", never guessed.
Preflight calls assert_supported(): a known-broken combination is refused with its source(s),
an unknown one comes back as warnings, a known-good one is silent. docs/versions.md is the
human-readable copy of this table. Versions and ranges are read by ``domain.core.version_parse``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core.version_parse import VERSION_KEYS, in_range, parse_version
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

KNOWN_GOOD = "known-good"
KNOWN_BROKEN = "known-broken"
UNKNOWN = "unknown"

COMBO_KEYS = VERSION_KEYS + ("features",)
FEATURES = ("rdma", "dra", "mig", "time-slicing")
FEATURE_ALIASES = {"gpudirect": "rdma", "gpudirect-rdma": "rdma", "gdr": "rdma", "timeslicing": "time-slicing",
                   "time_slicing": "time-slicing"}
LABELS = dict(version_parse.LABELS, rdma="GPUDirect RDMA", dra="DRA")

# Who validated a fact, strongest first: every rule and note says which (its "validated_by": level, who), and
# check() gives the level of the combination in use (the weakest of its pairs' strongest facts).
NVIDIA_MATRIX = "nvidia-support-matrix"
NVIDIA_RECIPE = "nvidia-recipe"
CLOUD_GUIDE = "cloud-provider-guide"
COMMUNITY = "community-project"
UNVERIFIED = "unverified"
VALIDATION_LEVELS = {NVIDIA_MATRIX: "NVIDIA's support matrix", NVIDIA_RECIPE: "an NVIDIA recipe",
                     CLOUD_GUIDE: "a cloud provider's guide", COMMUNITY: "a community project",
                     UNVERIFIED: "unverified"}
LEVEL_ORDER = (NVIDIA_MATRIX, NVIDIA_RECIPE, CLOUD_GUIDE, COMMUNITY, UNVERIFIED)
NVIDIA = (NVIDIA_MATRIX, "NVIDIA")
PROJECT_RULE = (UNVERIFIED, "this project's own rule (MODULES.md), no outside validation")

# Sources used more than once.
MODULES_MD = "shared/design/MODULES.md:122 (dra_driver: refuses Kubernetes < 1.34 or driver < 580)"
DRA_DOCS = ("https://deploy-preview-1127--dra-driver-nvidia-gpu.netlify.app/docs/ (DRA Driver for NVIDIA GPUs: "
            "Kubernetes 1.32+, DRA on by default from 1.34, feature gate needed on 1.32/1.33)")
K8S_134 = ("https://kubernetes.io/blog/2025/07/28/kubernetes-v1-34-sneak-peek/ (core DRA, resource.k8s.io/v1, "
           "graduates to stable in v1.34)")
NETOP_2640 = "https://docs.nvidia.com/networking/display/kubernetes2640/platform-support.html"
NETOP_2670 = "https://docs.nvidia.com/networking/display/kubernetes2670/platform-support.html"
NETOP_2610 = ("https://github.com/Mellanox/network-operator-docs/blob/v26.1.1/docs/platform-support.rst (the Network "
              "Operator 26.1 docs, tags v26.1.0 and v26.1.1: Prerequisites)")
NETOP_PATCHES = ("https://docs.nvidia.com/networking/display/kubernetes2670/life-cycle-management.html (YY.MM.PP: a "
                 "patch release carries critical bug and CVE fixes of its major version); "
                 "https://docs.nvidia.com/networking/display/kubernetes2611/release-notes.html (26.1.1: CVE fixes)")
AICR = ("https://github.com/NVIDIA/aicr/blob/005da13a1b0419a7cc81684c0527b72a53bbd11e/recipes/registry.yaml (the "
        "component registry's default chart versions: gpu-operator v26.7.0, network-operator 26.4.1); NVIDIA/aicr#2566 "
        "(its bare-metal GB300 InfiniBand recipe: GPUDirect RDMA over DMA-BUF, no nvidia-peermem)")
GPUOP_LIFECYCLE = "https://nvidia.github.io/cloud-native-docs/review/pr-512/gpu-operator/latest/platform-support.html"
UPSTREAM_README = "shared/upstream/README.md"
GPUOP_2630 = ("NVIDIA/cloud-native-docs#353 (commit adfe9224, gpu-operator/platform-support.rst, the 26.3.0 "
              "release docs)")
GPUOP_RDMA_PAGES = GPUOP_2630 + "; NVIDIA/cloud-native-docs commit 187a4a5b (Support for GPUDirect RDMA)"
DEEPOPS = "https://github.com/NVIDIA/deepops (release 26.07: its default GPU Operator and Network Operator versions)"
CNS = ("https://github.com/NVIDIA/cloud-native-stack (its notes: GPU Operator 26.3.2 does not support GPUDirect RDMA "
       "with Network Operator 26.4.0)")

# Each rule: id, when (conditions on the dimensions; "features" lists features that must all be
# requested), verdict "works" | "breaks", reason, source. A "works" rule speaks for the pair(s)
# of dimensions named in its "when"; a "breaks" rule refuses the combination outright.
RULES = (
    # GPU Operator x Kubernetes
    {"id": "gpu-operator-26.7-kubernetes-1.33-1.37",
     "when": {"gpu_operator": ">=26.7.0,<26.8.0", "kubernetes": ">=1.33,<1.38"},
     "verdict": "works",
     "reason": "GPU Operator 26.7.x is validated on Kubernetes 1.33 to 1.37 (1.37 added after release; "
               "the Ubuntu 24.04 floor was raised from 1.32 to 1.33)",
     "source": "NVIDIA/cloud-native-docs#488, NVIDIA/cloud-native-docs#490",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3.2-kubernetes-1.36",
     "when": {"gpu_operator": ">=26.3.2,<26.4.0", "kubernetes": ">=1.36,<1.37"},
     "verdict": "works",
     "reason": "GPU Operator 26.3.2 added support for Kubernetes 1.36 (release notes, 26.3.2 New Features)",
     "source": "https://nvidia.github.io/cloud-native-docs/review/pr-428/gpu-operator/latest/release-notes.html",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-kubernetes-1.32-1.35",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "kubernetes": ">=1.32,<1.36"},
     "verdict": "works",
     "reason": "GPU Operator 26.3.x is validated on Kubernetes 1.32 to 1.35 (Ubuntu 20.04, 22.04 and 24.04)",
     "source": GPUOP_2630,
     "validated_by": NVIDIA},
    # Network Operator x Kubernetes
    {"id": "network-operator-26.4-kubernetes-1.31-1.35",
     "when": {"network_operator": ">=26.4.0,<26.5.0", "kubernetes": ">=1.31,<1.36"},
     "verdict": "works",
     "reason": "Network Operator 26.4.x prerequisites: Kubernetes >=1.31 and <=1.35",
     "source": NETOP_2640,
     "validated_by": NVIDIA},
    {"id": "network-operator-26.1-kubernetes-1.31-1.35",
     "when": {"network_operator": ">=26.1.0,<26.2.0", "kubernetes": ">=1.31,<1.36"},
     "verdict": "works",
     "reason": "Network Operator 26.1.x prerequisites: Kubernetes >=1.31 and <=1.35 (the 26.1 docs; 26.1.2 is a patch "
               "release of that line)",
     "source": NETOP_2610,
     "validated_by": NVIDIA},
    # GPU Operator x driver branch
    {"id": "gpu-operator-26.7-driver-595",
     "when": {"gpu_operator": ">=26.7.0,<26.8.0", "driver": ">=595,<596"},
     "verdict": "works",
     "reason": "GPU Operator v26.7.0 ships driver 595.91.07 as its chart default (driver.version)",
     "source": UPSTREAM_README + ":50-52; shared/upstream/gpu-operator/values.default.yaml:154",
     "validated_by": (NVIDIA_MATRIX, "NVIDIA (the v26.7.0 chart's default driver)")},
    {"id": "gpu-operator-26.3-driver-580",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "driver": ">=580,<581"},
     "verdict": "works",
     "reason": "GPU Operator 26.3.x lists driver 580.126.20 as default and recommended; v26.3.3's chart "
               "default driver.version is 580.126.20",
     "source": "NVIDIA/cloud-native-docs#353; " + UPSTREAM_README + ":50-52",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-driver-575",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "driver": ">=575,<576"},
     "verdict": "works",
     "reason": "the GPU Operator 26.3.0 component matrix lists driver 575.57.08",
     "source": "NVIDIA/cloud-native-docs#353",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-driver-535",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "driver": ">=535,<536"},
     "verdict": "works",
     "reason": "the GPU Operator 26.3.0 component matrix lists driver 535.288.01",
     "source": "NVIDIA/cloud-native-docs#353",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-25.10-driver-580",
     "when": {"gpu_operator": ">=25.10.0,<25.11.0", "driver": ">=580,<581"},
     "verdict": "works",
     "reason": "the GPU Operator 25.10.x component matrix lists the 580 branch (580.82.07, 580.95.05, "
               "580.105.08 default and recommended for 25.10.1, 580.159.04 added later)",
     "source": "NVIDIA/cloud-native-docs#326, NVIDIA/cloud-native-docs#414",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-25.10.1-driver-575",
     "when": {"gpu_operator": ">=25.10.1,<25.11.0", "driver": ">=575,<576"},
     "verdict": "works",
     "reason": "the GPU Operator 25.10.1 component matrix lists driver 575.57.08",
     "source": "NVIDIA/cloud-native-docs#326",
     "validated_by": NVIDIA},
    # GPU Operator x Network Operator, GPUDirect RDMA
    {"id": "aks-gpu-operator-26.3.3-network-operator-26.4.0-rdma",
     "when": {"gpu_operator": "==26.3.3", "network_operator": "==26.4.0", "features": ("rdma",)},
     "verdict": "works",
     "reason": "the AKS RDMA/InfiniBand guide (Azure/aks-rdma-infiniband: website/docs/configurations/"
               "02-gpu-drivers.md, 01-network-operator.md and tests/setup-infra/deploy-aks.sh, since its commit "
               "51c3c34a of 2026-07-14) pins GPU Operator "
               "v26.3.3 with Network Operator v26.4.0 for GPUDirect RDMA, and NVIDIA DeepOps 26.07 defaults to the "
               "same pair; NVIDIA's support matrix does not list it (its GPUDirect RDMA rows name Network Operator "
               "26.1.x and 25.x)",
     "source": UPSTREAM_README + ":45-46,58; " + DEEPOPS,
     "validated_by": (CLOUD_GUIDE, "Azure AKS's RDMA/InfiniBand guide; NVIDIA DeepOps 26.07 defaults to it")},
    {"id": "cns-gpu-operator-26.3.2-network-operator-26.4.0-rdma",
     "when": {"gpu_operator": "==26.3.2", "network_operator": "==26.4.0", "features": ("rdma",)},
     "verdict": "breaks",
     "reason": "NVIDIA Cloud Native Stack notes that GPU Operator 26.3.2 does not support GPUDirect RDMA with "
               "Network Operator 26.4.0 (26.3.3 is the release the AKS guide pins with it)",
     "source": CNS,
     "validated_by": (COMMUNITY, "NVIDIA Cloud Native Stack")},
    {"id": "gpu-operator-26.3-26.7-network-operator-26.1.0-rdma",
     "when": {"gpu_operator": ">=26.3.0,<26.8.0", "network_operator": "==26.1.0", "features": ("rdma",)},
     "verdict": "works",
     "reason": "the GPU Operator 26.3.0 and 26.7.0 platform pages list GPUDirect RDMA on Ubuntu 24.04 and 22.04 "
               "and RHEL 10.0 and 8.10 with Network Operator 26.1.0",
     "source": GPUOP_RDMA_PAGES,
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-network-operator-26.1-patches-rdma",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "network_operator": ">=26.1.1,<26.2.0", "features": ("rdma",)},
     "verdict": "works",
     "reason": "the GPU Operator 26.3.0 platform page lists GPUDirect RDMA with Network Operator 26.1.0, and 26.1.1 and "
               "26.1.2 (the newest) are patch releases of that line, which carry critical bug and CVE fixes only; "
               "the Network Operator 26.7 docs put 26.1.x at End of Support",
     "source": GPUOP_RDMA_PAGES + "; " + NETOP_PATCHES,
     "validated_by": NVIDIA},
    {"id": "aicr-gpu-operator-26.7.0-network-operator-26.4.1-rdma",
     "when": {"gpu_operator": "==26.7.0", "network_operator": "==26.4.1", "features": ("rdma",)},
     "verdict": "works",
     "reason": "NVIDIA's AI Cluster Runtime (AICR) recipes pin GPU Operator v26.7.0 with Network Operator 26.4.1, and "
               "its bare-metal InfiniBand recipe runs GPUDirect RDMA over DMA-BUF, without nvidia-peermem; NVIDIA's "
               "support matrix does not list the pair (its GPUDirect RDMA rows name Network Operator 26.1.x and 25.x)",
     "source": AICR,
     "validated_by": (NVIDIA_RECIPE, "NVIDIA's AI Cluster Runtime recipes")},
    {"id": "network-operator-26.4-needs-gpu-operator-25.3",
     "when": {"network_operator": ">=26.4.0,<26.5.0", "gpu_operator": "<25.3.0", "features": ("rdma",)},
     "verdict": "breaks",
     "reason": "Network Operator 26.4 requires GPU Operator v25.3.x or newer for workloads that use "
               "GPUDirect RDMA",
     "source": NETOP_2640 + " (System Requirements; Support for GPUDirect RDMA)",
     "validated_by": NVIDIA},
    # DRA (project rule, from the DRA driver's requirements)
    {"id": "dra-kubernetes-below-1.34",
     "when": {"features": ("dra",), "kubernetes": "<1.34"},
     "verdict": "breaks",
     "reason": "the dra_driver layer needs Kubernetes 1.34 or newer: DRA (resource.k8s.io/v1) is GA and on by "
               "default from 1.34; on 1.32/1.33 it needs feature gates",
     "source": MODULES_MD + "; " + DRA_DOCS + "; " + K8S_134,
     "validated_by": (NVIDIA_MATRIX, "NVIDIA (the DRA driver's documented requirements)")},
    {"id": "dra-kubernetes-1.34-plus",
     "when": {"features": ("dra",), "kubernetes": ">=1.34"},
     "verdict": "works",
     "reason": "Kubernetes 1.34 or newer meets the dra_driver floor (DRA GA, resource.k8s.io/v1)",
     "source": MODULES_MD + "; " + DRA_DOCS + "; " + K8S_134,
     "validated_by": (NVIDIA_MATRIX, "NVIDIA (the DRA driver's documented requirements)")},
    {"id": "dra-driver-below-580",
     "when": {"features": ("dra",), "driver": "<580"},
     "verdict": "breaks",
     "reason": "the dra_driver layer needs NVIDIA driver branch 580 or newer",
     "source": MODULES_MD,
     "validated_by": PROJECT_RULE},
    {"id": "dra-driver-580-plus",
     "when": {"features": ("dra",), "driver": ">=580"},
     "verdict": "works",
     "reason": "driver branch 580 or newer meets the dra_driver floor",
     "source": MODULES_MD,
     "validated_by": PROJECT_RULE},
)

# Notes: sourced facts that are neither "works" nor "breaks" (known issues, open validation work,
# support status). They never change the status; they are added to the messages when they apply.
NOTES = (
    {"id": "network-operator-26.4-rdma-not-in-nvidia-matrix",
     "when": {"network_operator": ">=26.4.0,<26.5.0", "features": ("rdma",)},
     "note": "NVIDIA's platform-support pages list GPUDirect RDMA with Network Operator 26.1.x (and 25.x), not "
             "26.4.x: a GPUDirect RDMA pair with Network Operator 26.4.x is not in NVIDIA's support matrix",
     "source": GPUOP_RDMA_PAGES,
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.7-rdma-not-yet-validated",
     "when": {"gpu_operator": ">=26.7.0,<26.8.0", "network_operator": "*", "features": ("rdma",)},
     "note": "NVIDIA tracks enabling and validating GPUDirect RDMA, and support for Network Operator 26.x, "
             "with GPU Operator 26.7.0 as open work",
     "source": "NVIDIA/gpu-operator#2301, NVIDIA/gpu-operator#2302",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-peermem-restart",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0", "features": ("rdma",)},
     "note": "known issue: with GPUDirect RDMA the nvidia-peermem container may fail to restart when the "
             "driver pod restarts without a node reboot; workaround: FORCE_REINSTALL=true in the ClusterPolicy "
             "driver env",
     "source": "NVIDIA/cloud-native-docs#372, NVIDIA/gpu-operator#2844",
     "validated_by": NVIDIA},
    {"id": "gpu-operator-26.3-deprecated",
     "when": {"gpu_operator": ">=26.3.0,<26.4.0"},
     "note": "GPU Operator 26.3.x is Deprecated (critical patch releases only) now that 26.7.x is Supported",
     "source": GPUOP_LIFECYCLE,
     "validated_by": NVIDIA},
    {"id": "gpu-operator-end-of-support",
     "when": {"gpu_operator": "<26.3.0"},
     "note": "GPU Operator 25.10.x and lower are End of Support",
     "source": GPUOP_LIFECYCLE,
     "validated_by": NVIDIA},
    {"id": "network-operator-26.4-deprecated",
     "when": {"network_operator": ">=26.4.0,<26.5.0"},
     "note": "Network Operator 26.4.x is Deprecated (critical bug and CVE fixes only) now that 26.7.x is Supported",
     "source": NETOP_2670,
     "validated_by": NVIDIA},
    {"id": "network-operator-end-of-support",
     "when": {"network_operator": "<26.2.0"},
     "note": "Network Operator 26.1.x and lower are End of Support (no more fixes, CVE fixes included), 26.1.x being "
             "the newest Network Operator line NVIDIA's GPU Operator pages list for GPUDirect RDMA",
     "source": NETOP_2670,
     "validated_by": NVIDIA},
)

# The pairs a combination must have a "works" fact for before it counts as known-good.
PAIRS = (
    (("gpu_operator", "kubernetes"), None),
    (("gpu_operator", "driver"), None),
    (("network_operator", "kubernetes"), None),
    (("gpu_operator", "network_operator", "rdma"), "rdma"),
    (("dra", "kubernetes"), "dra"),
    (("dra", "driver"), "dra"),
)


@dataclass(frozen=True)
class Verdict:
    """What the matrix says about one combination.

    status: "known-good" | "known-broken" | "unknown".
    matched: the rules whose conditions all hold ({id, verdict, reason, source}), then the notes that apply.
    messages: one line each, for the user: broken rules with sources, pairs no fact covers,
    rules the given precision cannot decide, and notes.
    unverified: the messages that need the user's acknowledgement (pairs no fact covers, rules the
    precision cannot decide); notes and "nothing to compare" are only warnings.
    level: who validated the combination (VALIDATION_LEVELS): the weakest of its pairs' strongest "works" facts;
    UNVERIFIED unless known-good.
    validation: one entry per pair checked, ("<pair>", level, who, rule id), rule id "" where no fact covers it.
    """

    status: str
    combination: str
    matched: tuple = ()
    messages: tuple = ()
    unverified: tuple = ()
    level: str = UNVERIFIED
    validation: tuple = ()


def normalize(combo):
    """Validate a combo dict into ({key: Version}, frozenset of features); ParamError names the key."""
    if not isinstance(combo, dict):
        raise ParamError("combo", "must be a dictionary", "give keys among %s" % ", ".join(COMBO_KEYS))
    versions = {}
    features = set()
    for key, value in combo.items():
        if key not in COMBO_KEYS:
            raise ParamError(str(key), "is not a key of the version matrix",
                             "use keys among %s" % ", ".join(COMBO_KEYS))
        if value is None or value == "":
            continue
        if key == "features":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple, set, frozenset)):
                raise ParamError("features", "%r is not a list of features" % (value,),
                                 "give a list among %s" % ", ".join(FEATURES))
            for item in items:
                name = FEATURE_ALIASES.get(str(item).strip().lower(), str(item).strip().lower())
                if name not in FEATURES:
                    raise ParamError("features", "%r is not a known feature" % (item,),
                                     "use one of %s" % ", ".join(FEATURES))
                features.add(name)
        else:
            versions[key] = parse_version(key, value)
    return versions, frozenset(features)


def describe(versions, features):
    """The combination in words: GPU Operator v26.3.3 + Network Operator 26.4.0 + Kubernetes 1.34 + ..."""
    words = []
    for key in VERSION_KEYS:
        if key in versions:
            words.append("%s %s" % (LABELS[key], versions[key]))
    if features:
        words.append("features " + ", ".join(sorted(features)))
    return " + ".join(words) or "(empty combination)"


def _evaluate(when, versions, features):
    """True/False/None for one rule; None also when a dimension it names was not given."""
    result = True
    for key, spec in when.items():
        if key == "features":
            if not set(spec) <= features:
                return False
            continue
        if key not in versions:
            return None
        outcome = in_range(key, versions[key], spec)
        if outcome is False:
            return False
        if outcome is None:
            result = None
    return result


def _dims(when):
    dims = set(k for k in when if k != "features")
    dims.update(when.get("features", ()))
    return dims


def _given(when, versions):
    return all(k in versions for k in when if k != "features")


def _cite(item):
    return "%s (source: %s)" % (item["id"], item["source"])


def check(combo):
    """The matrix's verdict on a combination; see Verdict. Raises ParamError for bad input."""
    versions, features = normalize(combo)
    text = describe(versions, features)
    broken, good, undecided, matched = [], [], [], []
    for rule in RULES:
        outcome = _evaluate(rule["when"], versions, features)
        if outcome is True:
            matched.append(dict(rule))
            (broken if rule["verdict"] == "breaks" else good).append(rule)
        elif outcome is None and _given(rule["when"], versions):
            undecided.append(rule)
    messages = ["%s: %s; %s" % (text, r["reason"], _cite(r)) for r in broken]
    undecided_breaks = [r for r in undecided if r["verdict"] == "breaks"]
    uncovered = []
    for pair, feature in PAIRS:
        if feature is not None and feature not in features:
            continue
        if not all(d in versions for d in pair if d in VERSION_KEYS):
            continue
        if not any(set(pair) <= _dims(r["when"]) for r in good):
            uncovered.append(pair)
    unverified = []
    if not broken:
        for rule in undecided_breaks:
            unverified.append("the versions given are too imprecise to rule out %s; give full versions" % _cite(rule))
        for pair in uncovered:
            maybe = [r["id"] for r in undecided if r["verdict"] == "works" and set(pair) <= _dims(r["when"])]
            unverified.append("no known-good fact for %s (%s)%s" % (
                " x ".join(LABELS[d] for d in pair),
                ", ".join("%s %s" % (LABELS[d], versions[d]) for d in pair if d in versions),
                "; too imprecise to decide %s, give full versions" % ", ".join(maybe) if maybe else ""))
        messages += unverified
    for note in NOTES:
        if _evaluate(note["when"], versions, features) is True:
            matched.append(dict(note))
            messages.append("note: %s; %s" % (note["note"], _cite(note)))
    if broken:
        status = KNOWN_BROKEN
    elif uncovered or undecided_breaks or not good:
        status = UNKNOWN
        if not good and not uncovered and not undecided_breaks:
            messages.insert(0, "nothing to compare: give at least two of %s (or a feature with a version)"
                            % ", ".join(VERSION_KEYS))
    else:
        status = KNOWN_GOOD
    validation = _validation(versions, features, good)
    level = UNVERIFIED
    if status == KNOWN_GOOD:
        level = max((v[1] for v in validation), key=LEVEL_ORDER.index, default=UNVERIFIED)
    return Verdict(status, text, tuple(matched), tuple(messages), tuple(unverified), level, validation)


def _validation(versions, features, good):
    """("<pair>", level, who, rule id) for each pair the combination has: its strongest covering fact."""
    out = []
    for pair, feature in PAIRS:
        if (feature is not None and feature not in features) or \
                not all(d in versions for d in pair if d in VERSION_KEYS):
            continue
        covering = sorted((r for r in good if set(pair) <= _dims(r["when"])),
                          key=lambda r: LEVEL_ORDER.index(r["validated_by"][0]))
        label = " x ".join(LABELS[d] for d in pair)
        if covering:
            out.append((label, covering[0]["validated_by"][0], covering[0]["validated_by"][1], covering[0]["id"]))
        else:
            out.append((label, UNVERIFIED, "no fact covers it", ""))
    return tuple(out)


def level_words(level, who):
    """A fact's level and who, as preflight prints them: "an NVIDIA recipe (NVIDIA's AI Cluster Runtime recipes), not
    listed in NVIDIA's support matrix"; "unverified (no fact covers it)"."""
    if level == UNVERIFIED:
        return "unverified (%s)" % who
    text = VALIDATION_LEVELS[level] + ("" if who == "NVIDIA" else " (%s)" % who)
    return text if level == NVIDIA_MATRIX else text + ", not listed in NVIDIA's support matrix"


def validation_line(verdict):
    """Who validated the combination, in one line: its level, then each pair's level, who and rule."""
    if verdict.level != UNVERIFIED:
        overall = "validated by " + VALIDATION_LEVELS[verdict.level]
    elif verdict.status == KNOWN_GOOD:
        overall = "unverified outside this project (only its own rules vouch for part of it)"
    else:
        overall = "unverified"
    pairs = "; ".join("%s: %s%s" % (pair, level_words(level, who), " [%s]" % rule if rule else "")
                      for pair, level, who, rule in verdict.validation)
    return "validation of %s: %s%s" % (verdict.combination, overall, " (%s)" % pairs if pairs else "")


def _by(validated_by):
    """A fact's level and who, in words: "a community project (NVIDIA Cloud Native Stack)"."""
    level, who = validated_by
    return VALIDATION_LEVELS[level] + ("" if who == "NVIDIA" else " (%s)" % who)


def assert_supported(combo):
    """Preflight gate.

    known-broken: raises Refusal naming the combination and citing each breaking rule's source.
    unknown: returns the warning lines for the caller to show. known-good: returns [].
    """
    verdict = check(combo)
    if verdict.status == KNOWN_BROKEN:
        rules = [m for m in verdict.matched if m.get("verdict") == "breaks"]
        raise Refusal(
            "Known-broken combination: %s. %s. Fix: choose versions the matrix knows to work together "
            "(docs/versions.md), or leave out the feature"
            % (verdict.combination,
               "; ".join("%s [%s, source: %s, validated by: %s]"
                         % (r["reason"], r["id"], r["source"], _by(r["validated_by"])) for r in rules)),
            combination=verdict.combination, rules=[r["id"] for r in rules], sources=[r["source"] for r in rules])
    if verdict.status == UNKNOWN:
        return ["Unverified combination (%s): %s" % (verdict.combination, line) for line in verdict.messages]
    return []
