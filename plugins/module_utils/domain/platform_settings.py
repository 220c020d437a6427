# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The platform's own settings (those site.yml shares across layers) checked in one pass (playbooks/checks.yml).

Private to the collection: not a public API. Pure: standard library only, no I/O.
Every check runs; one ParamError names every wrong setting (validate.every), so one run reports them all.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    bundle, contract, driver_upgrade, helm_release, images, validate)


def check(settings):
    """What each check returned, by name, for ``settings``: ``gitops`` ({format, root, path, source} or None; the path defaults from the root),
    ``mirrors``, ``charts``, ``pins`` with ``allow_image_overrides``, ``driver_upgrade_policy`` (None when
    unset) and ``defined`` (the variable names the inventory defines: a name renamed into the platform contract is
    refused, see contract.py); each may be left out."""
    checks = {
        "mirrors": lambda: images.check_all(settings.get("mirrors") or {}),
        "charts": lambda: helm_release.check_chart_settings(settings.get("charts") or {}),
        "pins": lambda: images.check_pins({k: tuple(v) for k, v in (settings.get("pins") or {}).items()},
                                          settings.get("allow_image_overrides", False)),
    }
    gitops = settings.get("gitops")
    if gitops:
        path = bundle.flux_path(gitops.get("root"), gitops.get("path"))
        checks["gitops"] = lambda: bundle.layout([], gitops.get("format") or "flux", path, gitops.get("source") or None)
    if settings.get("driver_upgrade_policy") is not None:
        checks["driver_upgrade_policy"] = lambda: driver_upgrade.check_policy(settings["driver_upgrade_policy"])
    if settings.get("defined") is not None:
        checks["defined"] = lambda: contract.check_renamed(settings["defined"])
    names = sorted(checks)
    return dict(zip(names, validate.every([checks[n] for n in names], "platform settings")))
