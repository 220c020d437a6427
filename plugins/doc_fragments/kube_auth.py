# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """Kubernetes connection options shared by the collection's modules (module_utils/args.py KUBE_AUTH)."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig itself as a dictionary.
      - Defaults to C(~/.kube/config) (or the E(KUBECONFIG) environment variable) when neither this nor O(host) is set.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
    aliases: [kubeconfig_path]
  context:
    description:
      - The kubeconfig context to use. Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
    aliases: [kube_context]
  host:
    description:
      - URL of the Kubernetes API server, instead of (or overriding) the kubeconfig's. Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API server. Never logged or returned. Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  ca_cert:
    description:
      - CA certificate file to verify the API server. Can also be set with E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Can also be set with E(K8S_AUTH_VERIFY_SSL).
      - When unset, the kubeconfig's setting applies.
    type: bool
    aliases: [verify_ssl]
  api_connect_timeout:
    description:
      - Seconds to wait for a connection to the API server, per attempt (1 to 3600).
      - Failed attempts are retried (see O(api_read_timeout)).
    type: int
    default: 10
  api_read_timeout:
    description:
      - Seconds to wait for the API server's answer, per attempt (1 to 3600).
      - Transient failures are retried up to 4 times with exponential back-off and jitter (0.5 s doubling, at most
        8 s between attempts) on C(429 Too Many Requests) (its C(Retry-After) honoured up to 30 s), C(500), C(502),
        C(503), C(504), connection resets and time-outs, for idempotent requests (reads, server-side apply, merge
        patches, deletes); a connection refused is retried for any request. A call that still fails is an error
        naming the API server and the request.
    type: int
    default: 60
"""
