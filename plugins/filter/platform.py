# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform-wide filters; the logic is in module_utils/domain (versions.py, bundle.py)."""

from __future__ import annotations

import glob
import os

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import bundle, images, node_labels, versions
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError


def version_matrix_check(combo, fields=None):
    """Warnings for an unknown combination, [] for a known-good one; a known-broken one fails with its sources.

    ``fields`` maps combo keys to the variable names the user set, so a bad value is reported under its name.
    """
    try:
        return versions.assert_supported({k: v for k, v in combo.items() if v not in (None, "", [])})
    except ParamError as exc:
        name = (fields or {}).get(exc.field, exc.field)
        raise AnsibleFilterError(name + exc.msg[len(exc.field):])
    except GpuPlatformError as exc:
        raise AnsibleFilterError(exc.msg)


def bundle_unit(root, unit):
    """The folder of a unit of the GitOps bundle ('' when nothing is rendered)."""
    try:
        return bundle.unit_dir(root, unit)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def gitops_layout(unit_files, fmt="flux", path="./platform", source=None, interval="10m"):
    """{relative path: object} for the bundle's kustomizations (and Flux Kustomizations) over its units."""
    try:
        return bundle.layout(unit_files, fmt, path, source or None, interval)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def image_mirror(reference, mirrors, field=images.FIELD):
    """``reference`` (an image or a repository) pulled from its registry's mirror; unchanged without one."""
    try:
        return images.mirror(reference, images.check_mirrors(mirrors, field))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def image_mirrors_check(named):
    """{variable name: mirrors} checked all at once; fails listing every bad entry."""
    try:
        return images.check_all(named)
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def chart_image_mirrors(chart, mirrors, field=images.FIELD):
    """The chart values that move ``chart``'s images to the mirrors ({} without a mirror for them)."""
    try:
        return images.chart_values(chart, images.check_mirrors(mirrors, field))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


def node_label_patches(bundle_dir):
    """The node_labels module's ``nodes`` entries from the ``*/*-node-labels.yaml`` files of a bundle's folder."""
    files = []
    try:
        for path in sorted(glob.glob(os.path.join(glob.escape(bundle_dir), "*", "*-node-labels.yaml"))):
            with open(path, encoding="utf-8") as handle:
                name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
                files.append((name, list(yaml.safe_load_all(handle))))
        return node_labels.from_patch_lists(files)
    except (OSError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("node label patches: %s cannot be read (%s). Fix: point gpu_platform_bundle at the "
                                 "folder site.yml rendered" % (getattr(exc, "filename", None) or "a file", exc))
    except ParamError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule:
    """Platform filters."""

    def filters(self):
        return {"version_matrix_check": version_matrix_check, "bundle_unit": bundle_unit,
                "gitops_layout": gitops_layout, "image_mirror": image_mirror,
                "chart_image_mirrors": chart_image_mirrors, "image_mirrors_check": image_mirrors_check,
                "node_label_patches": node_label_patches}
