# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform-wide filters; the logic is in module_utils/domain (platform/versions.py, platform/support.py,
platform/settings.py, gitops/gitops_bundle.py, core/images.py, nodes/node_labels.py, operators/placement.py)."""

from __future__ import annotations

import glob
import os

import yaml

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.gitops import gitops_bundle as bundle
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import images
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.nodes import node_labels
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import placement
from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import (
    settings as platform_settings, support as platform_support, versions)
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors(fields=lambda combo, fields=None: fields)
def version_matrix_check(combo, fields=None):
    """Warnings for an unknown combination, [] for a known-good one; a known-broken one fails with its sources.

    ``fields`` maps combo keys to the variable names the user set, so a bad value is reported under its name.
    """
    return versions.assert_supported(platform_support.judged_combo(combo))


@user_errors(fields=lambda settings: settings.get("fields"))
def platform_support_check(settings):
    """Preflight's verdict on the versions and the platform (Kubernetes, OS, runtime): the lines to print.

    ``settings``: ``combo`` and ``fields`` (as version_matrix_check), ``nodes`` (Node objects, direct mode) or
    ``inventory`` ({kubernetes, os, runtime}, render mode), ``cluster_version``, ``accept`` and ``release``
    ({pair, pairs}: the release pair chosen and the pairs).
    """
    return platform_support.evaluate(settings.get("combo") or {}, settings.get("nodes"), settings.get("inventory"),
                                     settings.get("cluster_version") or "", settings.get("accept", False),
                                     settings.get("release"))


@user_errors
def kubernetes_floor(version, component="gpu_operator"):
    """The oldest Kubernetes minor the ``component`` release ``version`` is validated on ('' when unknown)."""
    return platform_support.kubernetes_floor(component, version)


@user_errors
def bundle_unit(root, unit):
    """The folder of a unit of the GitOps bundle ('' when nothing is rendered)."""
    return bundle.unit_dir(root, unit)


@user_errors
def gitops_layout(unit_files, fmt="flux", path="./platform", source=None, interval="10m", objects=None):
    """{relative path: object} for the bundle's kustomizations (and Flux Kustomizations) over its units."""
    return bundle.layout(unit_files, fmt, path, source or None, interval, objects)


@user_errors
def image_mirror(reference, mirrors, field=images.FIELD):
    """``reference`` (an image or a repository) pulled from its registry's mirror; unchanged without one."""
    return images.mirror(reference, images.check_mirrors(mirrors, field))


@user_errors
def chart_image_mirrors(chart, mirrors, field=images.FIELD):
    """The chart values that move ``chart``'s images to the mirrors ({} without a mirror for them)."""
    return images.chart_values(chart, images.check_mirrors(mirrors, field))


@user_errors
def platform_check(settings):
    """The platform-level settings checked in one pass, every error reported at once (playbooks/checks.yml);
    see ``domain.platform.settings.check``."""
    return platform_settings.check(settings)


def _read_patch_files(bundle_dir):
    """[(``<unit>/<file>``, its YAML documents)] for the ``*/*-node-labels.yaml`` files of a bundle's folder."""
    files = []
    try:
        for path in sorted(glob.glob(os.path.join(glob.escape(bundle_dir), "*", "*-node-labels.yaml"))):
            with open(path, encoding="utf-8") as handle:
                name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
                files.append((name, list(yaml.safe_load_all(handle))))
    except (OSError, yaml.YAMLError) as exc:
        raise GpuPlatformError("node label patches: %s cannot be read (%s). Fix: point gpu_platform_bundle at the "
                               "folder site.yml rendered" % (getattr(exc, "filename", None) or "a file", exc))
    return files


@user_errors
def node_label_patches(bundle_dir):
    """The node_labels module's ``nodes`` entries from the ``*/*-node-labels.yaml`` files of a bundle's folder."""
    return node_labels.from_patch_lists(_read_patch_files(bundle_dir))


@user_errors
def placement_values(settings, chart):
    """The values of ``chart`` that place its pods as ``settings`` (gpu_platform_placement) asks; {} for nothing."""
    return placement.chart_values(chart, settings)


@user_errors
def taint_check(nodes, settings):
    """Preflight's lines on the nodes' taints against ``settings`` (gpu_platform_placement); [] when nothing stops."""
    return placement.taint_verdict(nodes, settings)


class FilterModule:
    """Platform filters."""

    def filters(self):
        return {"version_matrix_check": version_matrix_check, "bundle_unit": bundle_unit,
                "gitops_layout": gitops_layout, "image_mirror": image_mirror,
                "chart_image_mirrors": chart_image_mirrors, "node_label_patches": node_label_patches,
                "platform_check": platform_check, "platform_support_check": platform_support_check,
                "kubernetes_floor": kubernetes_floor, "placement_values": placement_values,
                "taint_check": taint_check}
