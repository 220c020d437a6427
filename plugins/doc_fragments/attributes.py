# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """Attributes every module of the collection shares; each module declares its own check_mode and diff_mode
    support beside them (what check mode does differs from module to module)."""

    DOCUMENTATION = r"""
attributes:
  async:
    support: none
    description: The module follows its own work to the end (its waits know what ready means); it does not run as an async task.
"""

    # The cluster-facing modules: an action plugin of the same name runs them in the controller process.
    CONTROLLER = r"""
attributes:
  action:
    support: full
    description:
      - Runs in the controller process through the action plugin of the same name, whatever host the task targets.
        No module is copied or started, and the C(kubernetes) library is loaded once per run.
      - So paths (C(kubeconfig), C(ca_cert), C(render_to), C(binary_path)) are the controller's, and the
        C(K8S_AUTH_*) fallbacks are read from the controller's environment and the task's C(environment).
  platform:
    support: full
    platforms: posix
    description: >-
      The Ansible controller; the modules that talk to a cluster need the C(kubernetes) Python library there (and
      helm, for M(gpu_platform.cluster.helm_pinned_release)).
"""

    # The modules that write files of a GitOps bundle on the controller (gitops_bundle, bundle_files).
    FILES = r"""
attributes:
  check_mode:
    support: full
    description: Nothing is written; RV(changed_files) says what would be.
  diff_mode:
    support: full
    description: Each changed file's text before and after.
"""

    # The host-facing modules: they run on the GPU host like any module.
    HOST = r"""
attributes:
  platform:
    support: full
    platforms: posix
    description: A Linux GPU host (Debian, Ubuntu, RHEL and their kin); it reads the host's C(/proc), C(/sys) and package database.
"""
