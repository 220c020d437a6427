# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What each operator release is validated on: Kubernetes, operating system and container runtime.

Private to the collection: not a public API. Pure: standard library only, no I/O.

PLATFORMS is data, one entry per operator release line, each with the source it was read from.
Preflight compares it with what the cluster reports (every GPU node's ``status.nodeInfo``) or, in
render mode, with what the inventory says (``gpu_platform_kubernetes_version``,
``gpu_platform_node_os``, ``gpu_platform_container_runtime``). A value outside the validated
set is *unverified*: together with the version matrix's unverified combinations (versions.py)
it stops the run unless ``gpu_platform_accept_unverified`` is true, and the reasons are printed
either way. A value that was not given is only a warning: nothing can be compared.

No general kernel floor is published for these releases (the GPU Operator's kernel table covers
its precompiled driver containers only), so the kernel is reported, not judged.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import release_pairs, versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError, Refusal

ACCEPT_FIELD = "gpu_platform_accept_unverified"
INVENTORY_FIELDS = {"kubernetes": "gpu_platform_kubernetes_version", "os": "gpu_platform_node_os",
                    "runtime": "gpu_platform_container_runtime"}

GPUOP_2630 = versions.GPUOP_2630 + ": Supported Operating Systems and Kubernetes Platforms; Supported Container Runtimes"
GPUOP_2632 = "https://nvidia.github.io/cloud-native-docs/review/pr-428/gpu-operator/latest/release-notes.html"
GPUOP_2670 = ("NVIDIA/cloud-native-docs commit 187a4a5b (Release docs 26.7.0, gpu-operator/platform-support.rst); "
              "NVIDIA/cloud-native-docs#488, #490 (Kubernetes 1.37 added, Ubuntu 24.04 floor raised to 1.33)")
NETOP_2640 = versions.NETOP_2640
NETOP_2610 = versions.NETOP_2610

# Each entry: the release line (a versions.py range), the Kubernetes range, the operating systems
# ({distribution: (versions...)}; a version matches on its leading parts, "9" matches 9.4), and
# the container runtimes ({runtime: range}); a key left out is not judged for that release.
# The 26.3 line's operating systems and runtimes (26.3.2 only widened its Kubernetes range).
GPUOP_263_NODES = {"os": {"ubuntu": ("20.04", "22.04", "24.04"), "rhel": ("8", "9"), "rhcos": ()},
                   "runtimes": {"containerd": ">=1.7,<2.3", "cri-o": "*"}}

PLATFORMS = (
    dict(GPUOP_263_NODES, id="gpu-operator-26.3.0-26.3.1", component="gpu_operator", versions=">=26.3.0,<26.3.2",
         kubernetes=">=1.32,<1.36", source=GPUOP_2630, validated_by=versions.NVIDIA),
    dict(GPUOP_263_NODES, id="gpu-operator-26.3.2-plus", component="gpu_operator", versions=">=26.3.2,<26.4.0",
         kubernetes=">=1.32,<1.37", source=GPUOP_2630 + "; " + GPUOP_2632 + " (26.3.2 adds Kubernetes 1.36)",
         validated_by=versions.NVIDIA),
    {"id": "gpu-operator-26.7", "component": "gpu_operator", "versions": ">=26.7.0,<26.8.0",
     "kubernetes": ">=1.33,<1.38",
     "os": {"ubuntu": ("22.04", "24.04", "26.04"), "rhel": ("8", "9"), "rhcos": ()},
     # The page's column header reads "Containerd 1.8 - 2.3".
     "runtimes": {"containerd": ">=1.8,<2.4", "cri-o": "*"},
     "source": GPUOP_2670, "validated_by": versions.NVIDIA},
    {"id": "network-operator-26.4", "component": "network_operator", "versions": ">=26.4.0,<26.5.0",
     "kubernetes": ">=1.31,<1.36",
     "source": NETOP_2640, "validated_by": versions.NVIDIA},
    {"id": "network-operator-26.1", "component": "network_operator", "versions": ">=26.1.0,<26.2.0",
     "kubernetes": ">=1.31,<1.36",
     "source": NETOP_2610, "validated_by": versions.NVIDIA},
)

LABELS = {"gpu_operator": "GPU Operator", "network_operator": "Network Operator"}
OS_NAMES = (("rhcos", re.compile(r"Red Hat Enterprise Linux CoreOS|RHCOS", re.I)),
            ("rhel", re.compile(r"Red Hat Enterprise Linux|^RHEL", re.I)),
            ("ubuntu", re.compile(r"^Ubuntu", re.I)),
            ("rocky", re.compile(r"^Rocky", re.I)),
            ("azurelinux", re.compile(r"Azure Linux|CBL-Mariner", re.I)))
_OS_VERSION = re.compile(r"(\d+(?:\.\d+)*)")
_RUNTIME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)(?:://|\s+)v?(\d+(?:\.\d+){0,2})")
GPU_NODE_LABELS = ("nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present")


def entry(component, version):
    """The PLATFORMS entry for ``component`` at ``version`` (None when no entry covers it)."""
    parsed = version_parse.parse_version(component, version)
    for item in PLATFORMS:
        if item["component"] == component and version_parse.in_range(component, parsed, item["versions"]) is True:
            return item
    return None


def kubernetes_floor(component, version):
    """The oldest Kubernetes minor ``component`` ``version`` is validated on, as text ("1.32"); "" if unknown."""
    item = entry(component, version)
    if item is None:
        return ""
    for op, bound in version_parse.parse_range("kubernetes", item["kubernetes"]):
        if op == ">=":
            return "%d.%d" % bound.parts[:2]
    return ""


def parse_os(text):
    """``status.nodeInfo.osImage`` (or the inventory's value) as (distribution, version); ("", "") if unknown."""
    text = str(text or "").strip()
    for name, pattern in OS_NAMES:
        if pattern.search(text):
            found = _OS_VERSION.search(text)
            return name, found.group(1) if found else ""
    return "", ""


def parse_runtime(text):
    """``containerd://1.7.27-1`` or ``containerd 2.0.5`` as (runtime, version); ("", "") if unreadable."""
    found = _RUNTIME.match(str(text or ""))
    if not found:
        return "", ""
    name = found.group(1).lower()
    return ("cri-o" if name in ("crio", "cri-o") else name), found.group(2)


def _os_ok(supported, name, version):
    if name not in supported:
        return False
    allowed = supported[name]
    return not allowed or any(version == v or version.startswith(v + ".") for v in allowed)


def _describe_os(supported):
    return ", ".join("%s %s" % (n, "/".join(v)) if v else n for n, v in sorted(supported.items()))


def _platform_lines(item, label, where, facts):
    """Unverified lines for one node's (or the inventory's) facts against one PLATFORMS entry."""
    lines = []
    kube = facts.get("kubernetes")
    if kube and "kubernetes" in item:
        kube = version_parse.parse_version("kubernetes", kube)
        if version_parse.in_range("kubernetes", kube, item["kubernetes"]) is not True:
            lines.append("%s: Kubernetes %s is outside %s's validated range %s [%s, source: %s]"
                         % (where, kube, label, item["kubernetes"], item["id"], item["source"]))
    os_text = facts.get("os")
    if os_text and "os" in item:
        name, version = parse_os(os_text)
        if not _os_ok(item["os"], name, version):
            lines.append("%s: the operating system %r is not one %s is validated on (%s) [%s, source: %s]"
                         % (where, os_text, label, _describe_os(item["os"]), item["id"], item["source"]))
    runtime = facts.get("runtime")
    if runtime and "runtimes" in item:
        name, version = parse_runtime(runtime)
        spec = item["runtimes"].get(name)
        ok = spec is not None and (spec == "*" or version_parse.in_range(
            "kubernetes", version_parse.parse_version("kubernetes", version), spec) is True)
        if not ok:
            lines.append("%s: the container runtime %r is not one %s is validated with (%s) [%s, source: %s]"
                         % (where, runtime, label, ", ".join("%s %s" % kv for kv in sorted(item["runtimes"].items())),
                            item["id"], item["source"]))
    return lines


def gpu_nodes(nodes):
    """The Node objects that carry a GPU label or allocatable ``nvidia.com/gpu``."""
    out = []
    for node in nodes or []:
        labels = (node.get("metadata") or {}).get("labels") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        if any(str(labels.get(k, "")).lower() == "true" for k in GPU_NODE_LABELS) or "nvidia.com/gpu" in allocatable:
            out.append(node)
    return out


def node_facts(node):
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return {"kubernetes": info.get("kubeletVersion", ""), "os": info.get("osImage", ""),
            "runtime": info.get("containerRuntimeVersion", ""), "kernel": info.get("kernelVersion", "")}


def check(components, nodes=None, inventory=None, cluster_version=""):
    """(unverified lines, warning lines) for the chosen releases on this platform.

    ``components``: {gpu_operator: version, network_operator: version} (empty values are skipped).
    ``nodes``: Node objects (direct mode; only GPU nodes are judged, one line per distinct finding);
    ``inventory``: {kubernetes, os, runtime} (render mode). ``cluster_version``: the API server's.
    """
    inventory = inventory or {}
    for key, value in inventory.items():
        if key not in INVENTORY_FIELDS:
            raise ParamError(str(key), "is not a platform fact", "use %s" % ", ".join(INVENTORY_FIELDS.values()))
        if value not in (None, "") and not isinstance(value, str):
            raise ParamError(INVENTORY_FIELDS[key], "%r is not text" % (value,),
                             "quote it, e.g. \"1.35\", \"Ubuntu 24.04\" or \"containerd 2.0.5\"")
    if inventory.get("kubernetes"):
        version_parse.parse_version("kubernetes", inventory["kubernetes"])
    unverified, warnings = [], []
    for component, version in sorted((components or {}).items()):
        if version in (None, ""):
            continue
        item = entry(component, version)
        label = "%s %s" % (LABELS[component], version)
        if item is None:
            warnings.append("no platform data for %s: its Kubernetes, OS and runtime are not checked" % label)
            continue
        if nodes is not None:
            if cluster_version:
                unverified += _platform_lines(item, label, "the API server", {"kubernetes": cluster_version})
            chosen = gpu_nodes(nodes)
            seen = {}
            for node in chosen:
                facts = node_facts(node)
                if cluster_version:  # the API server's version is judged once, not each kubelet's
                    facts.pop("kubernetes")
                for line in _platform_lines(item, label, "node %s" % node["metadata"]["name"], facts):
                    key = line.split(": ", 1)[1]
                    seen.setdefault(key, []).append(node["metadata"]["name"])
            for key, names in seen.items():
                shown = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
                unverified.append("%s %s: %s" % ("node" if len(names) == 1 else "nodes", shown, key))
        else:
            given = {k: v for k, v in inventory.items() if v}
            unverified += _platform_lines(item, label, "the inventory", given)
            missing = [INVENTORY_FIELDS[k] for k in ("kubernetes", "os", "runtime")
                       if not given.get(k) and (k != "os" or "os" in item) and (k != "runtime" or "runtimes" in item)]
            if missing:
                warnings.append("%s: %s not set, so the platform %s validated on cannot be checked in render mode"
                                % (label, ", ".join(missing), "it is"))
    return unverified, warnings


def gate(unverified, warnings, accept, combination=""):
    """Warnings to print when the run may go on; a Refusal listing every unverified line otherwise."""
    if not isinstance(accept, bool):
        raise ParamError(ACCEPT_FIELD, "%r is not true or false" % (accept,), "set it to true or false")
    if unverified and not accept:
        raise Refusal("Unverified platform%s: %s. Fix: choose versions and nodes the data knows to work "
                      "(docs/versions.md), or set %s: true to go on anyway"
                      % (" (%s)" % combination if combination else "", "; ".join(unverified), ACCEPT_FIELD),
                      unverified=list(unverified))
    lines = list(warnings)
    if unverified:
        lines = ["going on although unverified (%s is true): %s" % (ACCEPT_FIELD, line) for line in unverified] + lines
    return lines


def judged_combo(combo):
    """The combination without the keys left empty (None, "" or []): those are not judged. Not a dict: as is,
    for versions.check to refuse."""
    if not isinstance(combo, dict):
        return combo
    return {k: v for k, v in combo.items() if v not in (None, "", [])}


def evaluate(combo, nodes=None, inventory=None, cluster_version="", accept=False, release=None):
    """The preflight verdict on versions and platform together: the lines to print, or an error.

    The first line says who validated the combination in use (versions.validation_line); with ``release``
    ({pair, pairs}: gpu_platform_release_pair and gpu_platform_release_pairs) a line before it names the release
    pair the combination's chart versions are, or the variables that were set directly instead, and the pair's level
    (release_pairs.line), and a refusal names it too. A known-broken version combination is refused
    (versions.assert_supported). Unverified version pairs and unverified platform facts are refused together unless
    ``accept`` (ACCEPT_FIELD) is true; notes and facts that were not given come back as warnings. A bad version raises
    ParamError naming the combination's key (``gpu_operator``); ParamError.renamed gives it the user's variable. A
    pair name that is not one of the pairs raises ParamError naming gpu_platform_release_pair.
    """
    combo = judged_combo(combo or {})
    versions.assert_supported(combo)
    verdict = versions.check(combo)
    notes = [m for m in verdict.messages if m not in verdict.unverified]
    components = {k: combo.get(k) for k in ("gpu_operator", "network_operator")}
    first = [versions.validation_line(verdict)]
    label = verdict.combination
    if release is not None:
        pair, pairs = release.get("pair"), release.get("pairs")
        first.insert(0, release_pairs.line(pair, pairs, components, verdict))
        label = "%s: %s" % (release_pairs.summary(pair, pairs, components), label)
    more, warnings = check(components, nodes, inventory, cluster_version)
    lines = gate(list(verdict.unverified) + more, notes + warnings, accept, label)
    return first + lines
