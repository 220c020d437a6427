# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Shared argument specs, paired one-to-one with plugins/doc_fragments.

Private to the collection: not a public API.
kube_auth <-> doc fragment gpu_platform.cluster.kube_auth, wait <-> .wait, render <-> .render.
"""

from __future__ import annotations

from ansible.module_utils.basic import env_fallback

KUBE_AUTH = {
    # no_log: a kubeconfig may be given as a dictionary, with its tokens and keys.
    "kubeconfig": {"type": "raw", "no_log": True, "aliases": ["kubeconfig_path"],
                   "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    "context": {"type": "str", "aliases": ["kube_context"], "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"], "fallback": (env_fallback, ["K8S_AUTH_SSL_CA_CERT"])},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "fallback": (env_fallback, ["K8S_AUTH_VERIFY_SSL"])},
    "api_connect_timeout": {"type": "int", "default": 10},
    "api_read_timeout": {"type": "int", "default": 60},
}

WAIT = {
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "str", "default": "5m"},
}

RENDER = {
    "render_to": {"type": "path"},
    "render_format": {"type": "str", "default": "flux", "choices": ["flux", "argocd"]},
}


def combine(*specs, **own):
    """One argument spec from shared pieces plus the module's own options."""
    out = {}
    for spec in specs + (own,):
        for key, value in spec.items():
            out[key] = dict(value)
    return out


def kube_auth_params(params):
    """The kube auth options of a module's params, as keyword arguments for the adapters."""
    return {key: params.get(key) for key in KUBE_AUTH}
