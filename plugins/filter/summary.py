# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform summary filter; the wording is in module_utils/domain/platform/summary.py."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.platform import summary
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def platform_summary(layers, render_to="", render_format="flux", units=None, pinned=None, smoke=None,
                     driver_decision=None):
    return summary.sentences(render_to or "", render_format or "flux", list(units or []), dict(pinned or {}),
                             list(layers or []), list(smoke or []), driver_decision or None)


class FilterModule:
    """The platform summary."""

    def filters(self):
        return {"platform_summary": platform_summary}
