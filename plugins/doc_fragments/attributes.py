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

    # The cluster-facing modules: an action plugin of the same name runs them in the controller process when the
    # task's connection is local, and as a module on the task's host otherwise.
    CONTROLLER = r"""
attributes:
  action:
    support: full
    description:
      - Has an action plugin of the same name. Where the task's connection is local (the delegated host's with
        C(delegate_to); no C(become); C(ansible_python_interpreter) unset or the controller's own Python, which the
        collection's inventories set from C(ansible_playbook_python)), it runs in the controller process. No module
        is copied or started, and the C(kubernetes) library is loaded once per run. Paths (C(kubeconfig), C(ca_cert), C(render_to),
        C(binary_path)) are then the controller's, and the C(K8S_AUTH_*) fallbacks are read from the controller's
        environment and the task's C(environment).
      - Anywhere else (C(delegate_to) a bastion reached over SSH, a C(k8s_api) host that is not the controller) it
        runs as a module on that host, with the same options, check and diff mode, and results. Paths and
        C(K8S_AUTH_*) fallbacks are then that host's, and it needs the C(kubernetes) Python library there.
        C(ansible-playbook -vvv) says which way each task ran, and why.
  platform:
    support: full
    platforms: posix
    description: >-
      The host the task's connection reaches, most often the Ansible controller; the modules that talk to a cluster
      need the C(kubernetes) Python library there (and helm, for M(gpu_platform.cluster.helm_pinned_release)).
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
