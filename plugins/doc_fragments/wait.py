# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """Wait options shared by the collection's modules (module_utils/args.py WAIT)."""

    DOCUMENTATION = r"""
options:
  wait:
    description:
      - Wait until what the module changed is ready, as the module defines "ready".
    type: bool
    default: false
  wait_timeout:
    description:
      - How long to wait, as seconds (V(300)) or a duration (V(5m), V(1m30s)).
      - Also the time-out of each Helm operation.
    type: str
    default: 5m
"""
