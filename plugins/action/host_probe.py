# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_platform.cluster.host_probe runs in the controller process (plugins/plugin_utils/controller_module.py)."""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.modules import host_probe
from ansible_collections.gpu_platform.cluster.plugins.plugin_utils.controller_module import ControllerModule


class ActionModule(ControllerModule):
    MODULE = host_probe
