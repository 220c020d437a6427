# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The platform's own settings (those site.yml shares across layers) checked in one pass (playbooks/checks.yml).

Private to the collection: not a public API. Pure: standard library only, no I/O.
Every check runs; one ParamError names every wrong setting (validate.every), so one run reports them all.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import contract, release_pairs
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.drivers import (
    gpu_driver_upgrade)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.helm import (
    helm_pinned_release)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images, validate
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

NFD_PREFIX = "feature.node.kubernetes.io/"


def _affinity_needs_nfd(affinity):
    """Whether a NicClusterPolicy nodeAffinity places its components on NFD's labels (the default one does)."""
    if not affinity:
        return True
    terms = ((affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    return any(str(e.get("key", "")).startswith(NFD_PREFIX) for term in terms if isinstance(term, dict)
               for e in term.get("matchExpressions") or [] if isinstance(e, dict))


def check_nfd_placement(nfd):
    """NFD must run before the NicClusterPolicy's components need its labels. The network layer is installed before
    the GPU Operator, so an NFD that comes with the GPU Operator labels the nodes too late when the policy's node
    affinity names NFD's labels (the default: the Mellanox NICs' PCI label) or the DOCA driver is deployed (the
    Network Operator places it by NFD's OS release labels). ``nfd``: the variables, by name. Returns what was found."""
    mode = nfd.get("gpu_platform_network_mode") or "none"
    in_gpu = validate.boolean("gpu_platform_nfd_in_gpu_operator", nfd.get("gpu_platform_nfd_in_gpu_operator"))
    network_nfd = nfd.get("network_operator_nfd_enabled")
    network_nfd = (not in_gpu) if network_nfd is None else validate.boolean("network_operator_nfd_enabled",
                                                                            network_nfd)
    found = {(True, True): "both", (True, False): "gpu_operator", (False, True): "network_operator",
             (False, False): "none"}[(in_gpu, network_nfd)]
    if mode == "none" or network_nfd or not in_gpu:
        return {"nfd": found}
    needs = []
    if not validate.boolean("network_operator_all_nodes", nfd.get("network_operator_all_nodes", False)) and \
            _affinity_needs_nfd(nfd.get("network_operator_node_affinity")):
        needs.append("its node affinity (NFD's feature.node.kubernetes.io/pci-15b3.present by default)")
    if not validate.boolean("gpu_platform_host_mofed", nfd.get("gpu_platform_host_mofed", False)):
        needs.append("the DOCA driver (placed by NFD's OS release labels)")
    if needs:
        raise ParamError("gpu_platform_nfd_in_gpu_operator",
                         "is true while the network layer is on (gpu_platform_network_mode: %s): NFD would come with "
                         "the GPU Operator, installed after the Network Operator, and the NicClusterPolicy's components "
                         "need NFD's labels for %s, so they would wait for ever" % (mode, " and ".join(needs)),
                         "set gpu_platform_nfd_in_gpu_operator: false (the Network Operator runs NFD, as Azure's AKS "
                         "RDMA guide does), or leave it unset")
    return {"nfd": "gpu_operator"}


def check(settings):
    """What each check returned, by name, for ``settings``: ``gitops`` ({format, root, path, source} or None; the path defaults from the root),
    ``mirrors``, ``charts``, ``pins`` with ``allow_image_overrides``, ``driver_upgrade_policy`` (None when
    unset), ``nfd`` (check_nfd_placement's variables), ``defined`` (the variable names the inventory defines: a name renamed into the platform contract is
    refused, see contract.py) and ``release_pair`` ({name, pairs}: gpu_platform_release_pair must name one of
    gpu_platform_release_pairs, see release_pairs.py); each may be left out."""
    checks = {
        "mirrors": lambda: images.check_all(settings.get("mirrors") or {}),
        "charts": lambda: helm_pinned_release.check_chart_settings(settings.get("charts") or {}),
        "pins": lambda: images.check_pins({k: tuple(v) for k, v in (settings.get("pins") or {}).items()},
                                          settings.get("allow_image_overrides", False)),
    }
    gitops = settings.get("gitops")
    if gitops:
        path = bundle.flux_path(gitops.get("root"), gitops.get("path"))
        checks["gitops"] = lambda: bundle.layout([], gitops.get("format") or "flux", path, gitops.get("source") or None)
    if settings.get("driver_upgrade_policy") is not None:
        checks["driver_upgrade_policy"] = lambda: gpu_driver_upgrade.check_policy(settings["driver_upgrade_policy"])
    if settings.get("nfd") is not None:
        checks["nfd"] = lambda: check_nfd_placement(settings["nfd"])
    if settings.get("defined") is not None:
        checks["defined"] = lambda: contract.check_renamed(settings["defined"])
    if settings.get("release_pair") is not None:
        checks["release_pair"] = lambda: release_pairs.check_choice(settings["release_pair"].get("name"),
                                                                    settings["release_pair"].get("pairs"))
    names = sorted(checks)
    return dict(zip(names, validate.every([checks[n] for n in names], "platform settings")))
