# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform-wide filters; the logic is in module_utils/domain (versions.py, bundle.py)."""

from __future__ import annotations

import functools
import glob
import os

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain import (
    bundle, helm_release, images, node_labels, versions)
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


def _user_errors(func):
    """A filter whose ParamError (field, problem, fix) reaches the user as the task's message."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ParamError as exc:
            raise AnsibleFilterError(exc.msg)
    return wrapper


@_user_errors
def bundle_unit(root, unit):
    """The folder of a unit of the GitOps bundle ('' when nothing is rendered)."""
    return bundle.unit_dir(root, unit)


@_user_errors
def gitops_layout(unit_files, fmt="flux", path="./platform", source=None, interval="10m"):
    """{relative path: object} for the bundle's kustomizations (and Flux Kustomizations) over its units."""
    return bundle.layout(unit_files, fmt, path, source or None, interval)


@_user_errors
def image_mirror(reference, mirrors, field=images.FIELD):
    """``reference`` (an image or a repository) pulled from its registry's mirror; unchanged without one."""
    return images.mirror(reference, images.check_mirrors(mirrors, field))


@_user_errors
def image_mirrors_check(named):
    """{variable name: mirrors} checked all at once; fails listing every bad entry."""
    return images.check_all(named)


@_user_errors
def chart_image_mirrors(chart, mirrors, field=images.FIELD):
    """The chart values that move ``chart``'s images to the mirrors ({} without a mirror for them)."""
    return images.chart_values(chart, images.check_mirrors(mirrors, field))


@_user_errors
def chart_settings_check(named):
    """The inventory's chart overrides ({variable: value}) checked all at once; fails listing every bad one."""
    return helm_release.check_chart_settings(named)


@_user_errors
def image_pins_check(named, allow=False):
    """{extra-values variable: [chart, extra values]} checked for overrides of pinned images, all at once."""
    return images.check_pins({k: tuple(v) for k, v in named.items()}, allow)


@_user_errors
def node_label_patches(bundle_dir):
    """The node_labels module's ``nodes`` entries from the ``*/*-node-labels.yaml`` files of a bundle's folder."""
    files = []
    try:
        for path in sorted(glob.glob(os.path.join(glob.escape(bundle_dir), "*", "*-node-labels.yaml"))):
            with open(path, encoding="utf-8") as handle:
                name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
                files.append((name, list(yaml.safe_load_all(handle))))
    except (OSError, yaml.YAMLError) as exc:
        raise AnsibleFilterError("node label patches: %s cannot be read (%s). Fix: point gpu_platform_bundle at the "
                                 "folder site.yml rendered" % (getattr(exc, "filename", None) or "a file", exc))
    return node_labels.from_patch_lists(files)


class FilterModule:
    """Platform filters."""

    def filters(self):
        return {"version_matrix_check": version_matrix_check, "bundle_unit": bundle_unit,
                "gitops_layout": gitops_layout, "image_mirror": image_mirror,
                "chart_image_mirrors": chart_image_mirrors, "image_mirrors_check": image_mirrors_check,
                "node_label_patches": node_label_patches, "chart_settings_check": chart_settings_check,
                "image_pins_check": image_pins_check}
