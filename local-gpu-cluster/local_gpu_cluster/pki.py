"""The local cluster's PKI: a CA, serving and client certificates, service-account keys, kubeconfigs.

Everything is written once into ``<state>/pki`` (mode 0600 for keys) and reused by later starts,
so a kubeconfig handed out stays valid across ``cluster-down``/``cluster-up``.
"""

import datetime
import ipaddress
import os
import re
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 3650
SERVICE_IP = "10.96.0.1"  # the first address of the service range: the `kubernetes` Service
# name -> (common name, organisation, usage): the identities the components use.
CLIENTS = {
    "admin": ("gpu-platform-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", None),
    "scheduler": ("system:kube-scheduler", None),
    "kwok": ("system:kwok-controller", "system:masters"),
    "apiserver-kubelet-client": ("kube-apiserver-kubelet-client", "system:masters"),
    "front-proxy": ("front-proxy-client", None),
}
# A user of its own (``user_kubeconfig``): a name that is a DNS label, so that it is a file name too and cannot pass for
# one of Kubernetes' own identities (``system:...``).
USER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
SERVING = {
    "apiserver": ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                  "kubernetes.default.svc.cluster.local", "127.0.0.1", SERVICE_IP],
    "kwok": ["localhost", "127.0.0.1"],
}


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path, key):
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _write_cert(path, cert):
    Path(path).write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common, org=None):
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


def _builder(subject, issuer, public_key):
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS)))


def _sans(names):
    entries = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


class Pki:
    """Paths of the cluster's key material under ``directory`` (created by ``ensure``)."""

    def __init__(self, directory):
        self.dir = Path(directory)

    def cert(self, name):
        return self.dir / ("%s.crt" % name)

    def key(self, name):
        return self.dir / ("%s.key" % name)

    @property
    def ca(self):
        return self.cert("ca")

    @property
    def sa_key(self):
        return self.key("service-account")

    @property
    def sa_pub(self):
        return self.dir / "service-account.pub"

    def ensure(self):
        """Create whatever is missing (a complete PKI is left as it is)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not (self.ca.exists() and self.key("ca").exists()):
            ca_key = _key()
            subject = _name("gpu-platform-local-ca")
            ca_cert = (_builder(subject, subject, ca_key.public_key())
                       .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                       .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                      critical=True)
                       .sign(ca_key, hashes.SHA256()))
            _write_key(self.key("ca"), ca_key)
            _write_cert(self.ca, ca_cert)
        ca_key = serialization.load_pem_private_key(self.key("ca").read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.ca.read_bytes())
        for name, (common, org) in CLIENTS.items():
            self._issue("client-" + name, _name(common, org), ca_key, ca_cert, ExtendedKeyUsageOID.CLIENT_AUTH)
        for name, sans in SERVING.items():
            self._issue("serving-" + name, _name(name), ca_key, ca_cert, ExtendedKeyUsageOID.SERVER_AUTH, sans)
        if not (self.sa_key.exists() and self.sa_pub.exists()):
            key = _key()
            _write_key(self.sa_key, key)
            self.sa_pub.write_bytes(key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        return self

    def _issue(self, name, subject, ca_key, ca_cert, usage, sans=None):
        if self.cert(name).exists() and self.key(name).exists():
            return
        key = _key()
        builder = (_builder(subject, ca_cert.subject, key.public_key())
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if sans:
            builder = builder.add_extension(_sans(sans), critical=False)
        _write_key(self.key(name), key)
        _write_cert(self.cert(name), builder.sign(ca_key, hashes.SHA256()))

    def user_kubeconfig(self, path, server, user):
        """A kubeconfig (0600, embedded) for ``user``: a client certificate of the cluster's CA with CN=<user> and
        O=system:masters, the admin's rights under a name of its own. A run given it is told apart from every other
        client in the audit log (its ``user.username``), while the tests' own reads keep the admin's name. The
        certificate is issued once and kept with the others (``client-user-<user>``)."""
        if not USER_NAME.match(user or ""):
            raise ValueError("%r is not a user name for the local cluster: lower-case letters, digits and '-', "
                             "at most 63, e.g. gpu-platform-run" % (user,))
        ca_key = serialization.load_pem_private_key(self.key("ca").read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.ca.read_bytes())
        self._issue("client-user-" + user, _name(user, "system:masters"), ca_key, ca_cert,
                    ExtendedKeyUsageOID.CLIENT_AUTH)
        return self.kubeconfig(path, server, client="user-" + user)

    def kubeconfig(self, path, server, client="admin", context="gpu-platform-local", embed=True):
        """Write a kubeconfig for ``client`` (mode 0600); embedded data keeps it usable when copied."""
        def data(p):
            import base64
            return base64.b64encode(Path(p).read_bytes()).decode()
        cluster = {"server": server}
        user = {}
        if embed:
            cluster["certificate-authority-data"] = data(self.ca)
            user = {"client-certificate-data": data(self.cert("client-" + client)),
                    "client-key-data": data(self.key("client-" + client))}
        else:
            cluster["certificate-authority"] = str(self.ca)
            user = {"client-certificate": str(self.cert("client-" + client)),
                    "client-key": str(self.key("client-" + client))}
        config = {"apiVersion": "v1", "kind": "Config", "current-context": context, "preferences": {},
                  "clusters": [{"name": context, "cluster": cluster}],
                  "users": [{"name": client, "user": user}],
                  "contexts": [{"name": context, "context": {"cluster": context, "user": client}}]}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(config, handle, sort_keys=False)
        return Path(path)
