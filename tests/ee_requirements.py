"""``make ee-requirements``: this collection's Python requirements and kubernetes.core's, installed together.

    python -m tests.ee_requirements ARTIFACT [--work DIR]

What an image build of execution-environment.yml does with them, without a container engine:

1. ``ansible-builder create`` writes the build context (execution-environment.yml lists the artifact ``make package``
   builds and kubernetes.core). ``create`` resolves nothing: its context holds the galaxy requirements
   (``_build/requirements.yml``), the artifact and the scripts the image's stages run.
2. The galaxy stage's work: the artifact installed from the context's ``_build`` (``--no-deps``), kubernetes.core beside
   it from the test lock's ansible package (offline; its version must be in the range requirements.yml gives).
3. The builder stage's work: the context's own ``_build/scripts/introspect.py``, with the arguments the generated
   Containerfile gives it, writes the combined Python requirements; both collections' entries must be there.
4. The builder stage's ``assemble``: ``pip install -r`` that file, here in a fresh virtualenv (a real install from
   PyPI), then ``pip check`` and an import of every library either collection names.

Prints, last, ``ee-requirements: N requirements from gpu_platform.cluster and kubernetes.core installed together in
S s (kubernetes X, ...)``. The unit tests (tests/unit/test_packaging.py) run steps 1 to 3.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time

import yaml
from packaging.specifiers import SpecifierSet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
OWN = "gpu_platform.cluster"
CORE = "kubernetes.core"
# what the libraries either collection names are imported as (kubernetes.core: kubernetes, requests-oauthlib, jsonpatch)
IMPORTS = {"pyyaml": "yaml", "requests-oauthlib": "requests_oauthlib"}


class Failed(Exception):
    """One line saying which step failed and why."""


def run(argv, cwd=None, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise Failed("%s failed (rc %d): %s" % (" ".join(argv[:3]), proc.returncode,
                                                (proc.stderr or proc.stdout).strip().splitlines()[-1:]))
    return proc


def tool(name):
    path = os.path.join(BIN, name)
    return path if os.path.exists(path) else (shutil.which(name) or name)


def create_context(artifact, work):
    """`ansible-builder create` on a copy of execution-environment.yml with the artifact where it expects it."""
    os.makedirs(os.path.join(work, "build", "dist"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "execution-environment.yml"), os.path.join(work, "execution-environment.yml"))
    shutil.copy(artifact, os.path.join(work, "build", "dist", os.path.basename(artifact)))
    ctx = os.path.join(work, "context")
    shutil.rmtree(ctx, ignore_errors=True)
    run([tool("ansible-builder"), "create", "-f", "execution-environment.yml", "-c", ctx,
         "--output-filename", "Containerfile"], cwd=work)
    return ctx


def lock_core_collection():
    """kubernetes.core as the test lock's ansible package installed it (an installed collection, MANIFEST.json)."""
    path = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections", "kubernetes", "core")
    if not os.path.isfile(os.path.join(path, "MANIFEST.json")):
        raise Failed("kubernetes.core is not installed beside %s (make venv installs the ansible package)" % sys.executable)
    return path


def install_collections(ctx, dest):
    """The galaxy stage: every collection of the context's requirements.yml, into dest/ansible_collections."""
    with open(os.path.join(ctx, "_build", "requirements.yml"), encoding="utf-8") as handle:
        wanted = yaml.safe_load(handle)["collections"]
    shutil.rmtree(dest, ignore_errors=True)
    installed = {}
    for entry in wanted:
        if entry.get("type") == "file":
            run([tool("ansible-galaxy"), "collection", "install", "--no-deps", "-p", dest, entry["name"]],
                cwd=os.path.join(ctx, "_build"), env={"ANSIBLE_COLLECTIONS_PATH": dest})
            installed[OWN] = entry["name"]
        elif entry["name"] == CORE:
            source = lock_core_collection()
            with open(os.path.join(source, "MANIFEST.json"), encoding="utf-8") as handle:
                version = json.load(handle)["collection_info"]["version"]
            if version not in SpecifierSet(entry["version"].replace(" ", "")):
                raise Failed("the lock's kubernetes.core is %s, outside the %s execution-environment.yml asks for"
                             % (version, entry["version"]))
            shutil.copytree(source, os.path.join(dest, "ansible_collections", "kubernetes", "core"))
            installed[CORE] = version
        else:
            raise Failed("execution-environment.yml lists %s: this check installs only %s and %s"
                         % (entry["name"], OWN, CORE))
    return installed


def introspect_args(ctx):
    """The arguments the Containerfile's builder stage gives the context's introspect.py."""
    with open(os.path.join(ctx, "Containerfile"), encoding="utf-8") as handle:
        line = next(text for text in handle if "/output/scripts/introspect.py introspect" in text)
    argv = shlex.split(line.split("introspect.py", 1)[1])
    return argv


def introspect(ctx, collections, out):
    """Runs the context's introspect.py as the builder stage does; returns the requirement lines it wrote."""
    args = [arg.replace("/tmp/src/", out + os.sep) for arg in introspect_args(ctx)]
    if not any(arg.startswith("--write-pip=") for arg in args):
        raise Failed("the Containerfile's introspect step writes no pip requirements: %s" % args)
    run([sys.executable, os.path.join(ctx, "_build", "scripts", "introspect.py")] + args + [collections])
    with open(os.path.join(out, "requirements.txt"), encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def entries_by_collection(lines):
    """{collection: [requirement, ...]} from introspect's `requirement  # from collection a,b` lines."""
    found = {}
    for line in lines:
        requirement, origin = (line.split("# from collection", 1) + [""])[:2]
        for name in origin.split(","):
            found.setdefault(name.strip() or "user", []).append(requirement.strip())
    return found


def name_of(requirement):
    return re.split(r"[\s\[=<>!~;]", requirement, maxsplit=1)[0].lower()


def prepare(artifact, work):
    """Steps 1 to 3; returns (the combined requirements file, its lines, {collection: version or file})."""
    work = os.path.abspath(work)
    ctx = create_context(artifact, work)
    installed = install_collections(ctx, os.path.join(work, "collections"))
    out = os.path.join(work, "src")
    os.makedirs(out, exist_ok=True)
    lines = introspect(ctx, os.path.join(work, "collections"), out)
    by_collection = entries_by_collection(lines)
    for name in (OWN, CORE):
        if not any(name_of(r) == "kubernetes" for r in by_collection.get(name, [])):
            raise Failed("the combined requirements name no kubernetes requirement from %s: %s" % (name, lines))
    return os.path.join(out, "requirements.txt"), lines, installed


def install(requirements, venv):
    """Step 4: a fresh virtualenv, pip install -r, pip check; returns (seconds, {distribution: version})."""
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", venv])
    python = os.path.join(venv, "bin", "python")
    start = time.monotonic()
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements])
    seconds = time.monotonic() - start
    run([python, "-m", "pip", "check"])
    with open(requirements, encoding="utf-8") as handle:
        names = sorted({name_of(line) for line in handle if line.strip() and not line.startswith("#")})
    modules = [IMPORTS.get(name, name.replace("-", "_")) for name in names]
    run([python, "-c", "import %s" % ", ".join(modules)])
    code = "import json, sys; from importlib import metadata; print(json.dumps({n: metadata.version(n) for n in sys.argv[1:]}))"
    versions = json.loads(run([python, "-c", code] + names).stdout)
    return seconds, versions


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact")
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "ee-requirements"))
    args = parser.parse_args(argv)
    work = os.path.abspath(args.work)
    try:
        requirements, lines, installed = prepare(os.path.abspath(args.artifact), work)
        print("ee-requirements: %s (%s) and %s %s; the builder stage's introspect writes:\n  %s"
              % (OWN, os.path.basename(installed[OWN]), CORE, installed[CORE], "\n  ".join(lines)))
        seconds, versions = install(requirements, os.path.join(work, "venv"))
    except Failed as exc:
        sys.exit("ee-requirements: %s" % exc)
    print("ee-requirements: %d requirements from %s and %s installed together in %.0f s (%s)"
          % (len(lines), OWN, CORE, seconds, ", ".join("%s %s" % item for item in sorted(versions.items()))))


if __name__ == "__main__":
    main()
