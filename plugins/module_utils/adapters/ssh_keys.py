# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A fresh SSH key pair for one smoke-test run (the nccl-tests pods under KAI Scheduler or no gang scheduler).

Private to the collection: not a public API. An adapter: it draws randomness. ``cryptography`` ships with
ansible-core; it is imported lazily so that a missing library is a clear error. The private key lives only in
memory and in the run's Secret on the cluster; callers must never log, return or render it.
"""

from __future__ import annotations

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ToolError


def generate(comment="gpu-platform-smoke"):
    """``(private_key, public_key)``: an Ed25519 pair, the private key in OpenSSH format, the public key as one
    ``authorized_keys`` line."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise ToolError("the nccl-tests smoke test needs the Python package cryptography (it ships with ansible-core) "
                        "to make its SSH key pair. Fix: pip install cryptography on the controller") from None
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode("ascii")
    return private, "%s %s\n" % (public, comment)
