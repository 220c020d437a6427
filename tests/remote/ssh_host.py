"""An SSH host for the tests: a Debian bookworm container, reached from the controller over real SSH.

The container is molecule/hosts' image (scripts/build_host_image.sh: debootstrap, no registry) plus what a host
needs to run the collection's cluster-facing modules: sshd, and a venv (``PYTHON``) with the collection's pinned
``kubernetes``, ``PyYAML`` and ``urllib3`` from PyPI. That image is built once (``podman commit``) and tagged with a
hash of what goes into it, so later runs start in a second. The container shares this machine's network
(``--network host``), so it reaches the local control plane's API server at the kubeconfig's 127.0.0.1 address, and
sshd listens on a free loopback port with a key made for the run. Files given to ``ssh_host`` are mounted at paths
of the container's that do not exist on the controller.

Needs root and podman (``make test`` in CI has both: ``make system-deps``) and the ssh client; ``missing()`` names
what is absent, for the test to skip with. A build that fails (no network to deb.debian.org or PyPI) fails the test
with its output: a proof that could not run is not a pass.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / "molecule" / "hosts" / "containers.conf"
BASE_IMAGE_SCRIPT = ROOT / "scripts" / "build_host_image.sh"
BASE_IMAGE_LOCK = ROOT / "build" / "host-image.lock"
IMAGE_REPO = "localhost/gpu-platform-ssh-host"
APT_CACHE = ROOT / "build" / "apt-cache" / "ssh-host"
PYTHON = "/opt/kube/bin/python"
PINNED = ("kubernetes", "PyYAML", "urllib3")
# pip settings of this machine passed on by name (podman --env NAME: the value never reaches a command line)
PIP_SETTINGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT")
# the certificate authorities this machine trusts (a proxy's own among them, where there is one) for pip's HTTPS
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"

SETUP = """set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends openssh-server python3-venv >/dev/null
python3 -m venv /opt/kube
/opt/kube/bin/pip install -q --disable-pip-version-check --no-cache-dir {requirements}
ssh-keygen -A
mkdir -p /root/.ssh
chmod 700 /root/.ssh
rm -rf /var/lib/apt/lists/*
"""


def pins():
    """The ``name==version`` lines of the test lock (requirements-dev.txt) for ``PINNED``: requirements.txt gives the
    collection's ranges, the lock the versions the tests run with."""
    wanted = {name.lower() for name in PINNED}
    lines = [line.strip() for line in (ROOT / "requirements-dev.txt").read_text().splitlines()]
    found = [line for line in lines if "==" in line and line.split("==")[0].strip().lower() in wanted]
    assert len(found) == len(PINNED), "requirements-dev.txt pins %s; found %s" % (", ".join(PINNED), found)
    return found


def missing():
    """Why the SSH host cannot be made on this machine, or None."""
    for tool, why in (("podman", "podman is not installed (make system-deps installs it)"),
                      ("ssh", "the ssh client is not installed (openssh-client)"),
                      ("ssh-keygen", "ssh-keygen is not installed (openssh-client)")):
        if shutil.which(tool) is None:
            return why
    if os.geteuid() != 0:
        return "the SSH host container needs root (rootful podman, as make test runs in CI)"
    return None


def podman(*args, timeout=120, check=True):
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    proc = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        pytest.fail("podman %s failed:\n%s%s" % (args[0], proc.stdout[-3000:], proc.stderr[-3000:]), pytrace=False)
    return proc


def base_image():
    """molecule/hosts' image, built by its script when this machine has none yet (make molecule-hosts needs it too).
    Built under the lock ``make host-image`` takes: make test's lanes may each start with no image."""
    name = subprocess.run([str(BASE_IMAGE_SCRIPT), "--image-name"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if podman("image", "exists", name, check=False).returncode == 0:
        return name
    BASE_IMAGE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(BASE_IMAGE_LOCK, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_base_image(name)


def _build_base_image(name):
    if podman("image", "exists", name, check=False).returncode != 0:
        if shutil.which("debootstrap") is None:
            pytest.skip("the host image %s is not built and debootstrap is not installed to build it "
                        "(make system-deps installs it; make host-image builds it)" % name)
        proc = subprocess.run([str(BASE_IMAGE_SCRIPT)], capture_output=True, text=True, timeout=1800, check=False,
                              env=dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF)))
        if proc.returncode != 0:
            pytest.fail("scripts/build_host_image.sh failed:\n%s%s" % (proc.stdout[-3000:], proc.stderr[-3000:]),
                        pytrace=False)
    return name


def image():
    """The SSH host's image, built on the base image unless one with the same inputs exists."""
    base = base_image()
    setup = SETUP.format(requirements=" ".join(pins()))
    name = "%s:%s" % (IMAGE_REPO, hashlib.sha256((base + "\n" + setup).encode()).hexdigest()[:12])
    if podman("image", "exists", name, check=False).returncode == 0:
        return name
    APT_CACHE.mkdir(parents=True, exist_ok=True)
    builder = "gpu-platform-ssh-host-build-%s" % uuid.uuid4().hex[:8]
    try:
        env_args = [arg for setting in PIP_SETTINGS if os.environ.get(setting) for arg in ("--env", setting)]
        ca = os.environ.get("PIP_CERT") or HOST_CA
        if os.path.isfile(ca):
            env_args += ["-v", "%s:/run/host-ca.pem:ro" % ca, "--env", "PIP_CERT=/run/host-ca.pem"]
        podman("run", "--name", builder, "--network", "host", *env_args,
               "-v", "%s:/var/cache/apt/archives:rw" % APT_CACHE, base, "sh", "-c", setup, timeout=900)
        podman("commit", "-q", builder, name, timeout=300)
    finally:
        podman("rm", "-f", builder, check=False)
    return name


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_ssh(port, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                if sock.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("sshd did not answer on 127.0.0.1:%d within %ds" % (port, timeout))


@contextlib.contextmanager
def ssh_host(folder, files, hostname="bastion"):
    """A running SSH host with ``files`` ({path on the controller: path in the container}, mounted read-only);
    yields its inventory variables (root, a key made here, a loopback port)."""
    name = image()
    key = Path(folder) / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=60)
    port = free_port()
    container = "gpu-platform-ssh-host-%s" % uuid.uuid4().hex[:8]
    mounts = ["-v", "%s.pub:/root/.ssh/authorized_keys:ro" % key]
    for source, target in files.items():
        mounts += ["-v", "%s:%s:ro" % (source, target)]
    sshd = "mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -p %d -o ListenAddress=127.0.0.1" % port
    podman("run", "-d", "--name", container, "--hostname", hostname, "--network", "host", *mounts, name,
           "sh", "-c", sshd)
    try:
        wait_for_ssh(port)
        yield {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": port,
               "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
               "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
               "ansible_python_interpreter": PYTHON}
    finally:
        podman("rm", "-f", container, check=False)
