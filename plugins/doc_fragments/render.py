# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """GitOps rendering options shared by the collection's modules (module_utils/args.py RENDER)."""

    DOCUMENTATION = r"""
options:
  render_to:
    description:
      - A directory. When set, the module does not contact any cluster or chart repository; it writes the
        objects it would apply into this directory, one YAML file per object with a stable name, and changes
        a file only when its content changes. This is the GitOps delivery path.
      - In check mode nothing is written; with diff mode each file's before and after is shown.
    type: path
  render_format:
    description:
      - What to render with O(render_to). V(flux) writes Flux objects, V(argocd) an Argo CD C(Application).
    type: str
    choices: [flux, argocd]
    default: flux
"""
