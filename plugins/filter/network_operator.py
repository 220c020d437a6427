# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the network_operator role; the logic is in module_utils/domain/operators/network_operator.py."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.operators import network_operator
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.filter_errors import user_errors


@user_errors
def network_operator_values(settings):
    """The Network Operator chart's values from the role's settings."""
    return network_operator.build_values(settings)


class FilterModule:
    """Network Operator filters."""

    def filters(self):
        return {"network_operator_values": network_operator_values}
