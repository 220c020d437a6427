"""Packaging for Galaxy and AWX: what `ansible-galaxy collection build` puts in the artifact, what
ansible-builder reads from an installed copy of it, and the execution environment definition
(execution-environment.yml), checked by ansible-builder's own schema and by `ansible-builder create`,
which writes a build context without running a container engine."""
from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile

import pytest
import yaml
from ansible_builder.ee_schema import validate_schema
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests import ee_requirements

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
EXCLUDED_DIRS = ("tests", "molecule", "build", ".venv", "tools", ".ci", "scripts", "bench", ".pytest_cache", "context")
COLLECTION_PATH = "ansible_collections/gpu_platform/cluster"
# introspect drops these itself: every execution environment already has them
INTROSPECT_DROPS = {"pyyaml"}
IMPORT_TO_DIST = {"yaml": "pyyaml"}


def tool(name):
    path = os.path.join(BIN, name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if not found:
        pytest.fail("%s is not installed (make venv installs it)" % name)
    return found


def run(argv, cwd=ROOT, env=None, check=True):
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        pytest.fail("%s failed (rc %d):\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr))
    return proc


def load_yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def requirement_names(path):
    names = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(re.split(r"[\s\[=<>!~;]", line, maxsplit=1)[0].lower())
    return names


GALAXY = load_yaml("galaxy.yml")
ARTIFACT_NAME = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
EE = load_yaml("execution-environment.yml")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run([tool("ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out)])
    path = out / ARTIFACT_NAME
    assert path.is_file(), "ansible-galaxy built %s, not %s" % (os.listdir(out), ARTIFACT_NAME)
    return path


@pytest.fixture(scope="module")
def members(artifact):
    with tarfile.open(artifact) as tar:
        return {m.name.rstrip("/"): m for m in tar.getmembers()}


@pytest.fixture(scope="module")
def installed(artifact, tmp_path_factory):
    """The artifact installed on its own, as the galaxy stage of an image build installs it."""
    dest = tmp_path_factory.mktemp("ee-collections")
    run([tool("ansible-galaxy"), "collection", "install", "--no-deps", "--force", "-p", str(dest), str(artifact)],
        env={"ANSIBLE_COLLECTIONS_PATH": str(dest)})
    assert (dest / COLLECTION_PATH / "MANIFEST.json").is_file()
    return dest


# ---------------------------------------------------------------- the artifact


def test_artifact_leaves_development_files_out(members):
    for name in members:
        top = name.split("/", 1)[0]
        assert top not in EXCLUDED_DIRS, "%s is in the artifact" % name
        assert "__pycache__" not in name and not name.endswith(".pyc"), name
    for dev_file in ("Makefile", "requirements-dev.txt", "ansible.cfg", "pytest.ini", "execution-environment.yml"):
        assert dev_file not in members


def test_artifact_carries_the_collection(members):
    for name in ("MANIFEST.json", "FILES.json", "README.md", "site.yml", "playbooks/site.yml", "playbooks/smoke.yml",
                 "meta/runtime.yml", "meta/execution-environment.yml", "requirements.txt", "bindep.txt",
                 "changelogs/changelog.yaml", "docs/awx.md"):
        assert name in members, name
    modules = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
    assert modules and all(m in members for m in modules), [m for m in modules if m not in members]
    roles = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(p))
    for role in roles:
        assert "roles/%s/meta/argument_specs.yml" % role in members, role
        assert "roles/%s/tasks/main.yml" % role in members, role
    docs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    assert docs and all(d in members for d in docs)
    assert any(name.startswith("inventories/") for name in members)
    # What AWX is set up from (docs/awx.md): job templates, surveys, credential types, workflows and the project.
    pattern = os.path.join(ROOT, "meta", "awx", "**", "*.*")
    awx = sorted(os.path.relpath(p, ROOT) for p in glob.glob(pattern, recursive=True))
    assert "meta/awx/project/collections/requirements.yml" in awx and all(a in members for a in awx), \
        [a for a in awx if a not in members]


def test_manifest_matches_galaxy_yml(artifact, members):
    with tarfile.open(artifact) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        files = json.load(tar.extractfile("FILES.json"))
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
    assert info["dependencies"] == GALAXY["dependencies"]
    listed = {entry["name"] for entry in files["files"] if entry["name"] != "."}
    assert listed == set(members) - {"MANIFEST.json", "FILES.json"}


def test_left_out_folders_are_not_used_by_shipped_content():
    """scripts/, bench/ and molecule/ stay out of the artifact because nothing shipped refers to them."""
    pattern = re.compile(r"(?<![\w/])(scripts|bench|molecule|tools)/")
    ignored = [os.path.join(ROOT, entry) for entry in GALAXY["build_ignore"]]
    for folder in ("roles", "playbooks", "plugins", "inventories"):
        for path in glob.glob(os.path.join(ROOT, folder, "**", "*"), recursive=True):
            if any(path.startswith(entry + os.sep) for entry in ignored):
                continue  # not shipped (inventories/cluster drives the checkout's local control plane)
            if os.path.isfile(path) and path.endswith((".yml", ".yaml", ".j2", ".py")):
                with open(path, encoding="utf-8") as handle:
                    assert not pattern.search(handle.read()), "%s refers to a folder left out of the artifact" % path


# ---------------------------------------------------------------- what ansible-builder reads


def test_requirements_txt_is_what_the_plugins_import():
    """Runtime Python requirements only: exactly the third-party packages plugins/ imports, each a range."""
    imported = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {IMPORT_TO_DIST.get(n, n) for n in imported
                   if n not in sys.stdlib_module_names and n not in ("ansible", "ansible_collections")}
    assert set(requirement_names(os.path.join(ROOT, "requirements.txt"))) == third_party
    assert set(requirement_ranges()) == set(requirement_names(os.path.join(ROOT, "requirements.txt")))


def requirement_ranges():
    """{name: (floor, below)} from requirements.txt, every line `name>=FLOOR,<BELOW`."""
    ranges = {}
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*),<([0-9][0-9.]*)", line)
                assert match, "%r is not a range name>=LOWEST_TESTED,<NEXT_MAJOR" % line
                ranges[match.group(1).lower()] = (Version(match.group(2)), Version(match.group(3)))
    return ranges


def lock_pins():
    pins = {}
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as handle:
        for line in handle:
            if "==" in line and not line.startswith("#"):
                name, version = line.strip().split("==")
                pins[re.sub(r"[-_.]+", "-", name).lower()] = Version(version)
    return pins


def test_requirement_ranges_run_from_the_floor_to_below_the_next_major_of_the_lock():
    """Ranges, not pins (an execution environment with another collection naming another version must resolve):
    from the floor make requirement-floors tests to below the next major release after the lock's pin, which
    the rest of the tests run with."""
    lock = lock_pins()
    for name, (floor, below) in requirement_ranges().items():
        assert floor < lock[name] < below, (name, floor, lock[name], below)
        assert below == Version("%d" % (lock[name].major + 1)), (name, below, lock[name])
        assert floor.major < below.major


def test_requirement_ranges_meet_kubernetes_cores():
    """kubernetes.core (the same execution environment) names kubernetes>=24.2.0: every version of ours is one of its."""
    core = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections", "kubernetes", "core", "requirements.txt")
    with open(core, encoding="utf-8") as handle:
        theirs = {requirement_names_from_lines([line])[0]: SpecifierSet(re.sub(r"^[A-Za-z0-9_.-]+", "", line.strip()))
                  for line in handle if line.strip() and not line.startswith("#")}
    ours = requirement_ranges()
    assert "kubernetes" in theirs and "kubernetes" in ours
    for name in set(theirs) & set(ours):
        floor = ours[name][0]
        assert floor in theirs[name], "%s: our floor %s is outside kubernetes.core's %s" % (name, floor, theirs[name])


def test_collection_ee_metadata_names_the_requirement_files():
    meta = load_yaml("meta", "execution-environment.yml")
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}


def test_introspect_lists_the_installed_collections_requirements(installed):
    proc = run([tool("ansible-builder"), "introspect", str(installed)])
    data = yaml.safe_load(proc.stdout)
    origin = "  # from collection gpu_platform.cluster"
    python = [line[:-len(origin)] for line in data["python"] if line.endswith(origin)]
    system = [line[:-len(origin)] for line in data["system"] if line.endswith(origin)]
    assert any(line.startswith("kubernetes>=") for line in python), data["python"]
    expected = [n for n in requirement_names(os.path.join(ROOT, "requirements.txt")) if n not in INTROSPECT_DROPS]
    assert sorted(requirement_names_from_lines(python)) == sorted(expected)
    assert {line.split()[0] for line in system} == {"ca-certificates", "tar", "gzip"}


def requirement_names_from_lines(lines):
    return [re.split(r"[\s\[=<>!~;]", line, maxsplit=1)[0].lower() for line in lines]


# ---------------------------------------------------------------- execution-environment.yml


def append_final():
    steps = EE["additional_build_steps"]["append_final"]
    return steps if isinstance(steps, list) else steps.strip().splitlines()


def build_args():
    args = {}
    for step in append_final():
        match = re.fullmatch(r"ARG (\w+)=(\S+)", step.strip())
        if match:
            args[match.group(1)] = match.group(2)
    return args


def test_ee_passes_ansible_builders_schema():
    validate_schema(load_yaml("execution-environment.yml"))
    assert EE["version"] == 3


def test_ee_base_image_is_pinned():
    image = EE["images"]["base_image"]["name"]
    match = re.fullmatch(r"(?P<repository>[a-z0-9._/-]+)(?::(?P<tag>[\w.-]+))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?", image)
    assert match, "%s is not a registry/repository:tag or @sha256 reference" % image
    tag, digest = match.group("tag") or "", match.group("digest")
    assert tag or digest, "%s names no tag or digest" % image
    assert "latest" not in tag, image
    # a release number or a digest; moving tags such as stable, devel or stream9 are not pins
    assert digest or re.fullmatch(r"v?[0-9]+(\.[0-9]+)+", tag), image


def test_ee_pins_ansible_and_runner():
    deps = EE["dependencies"]
    assert re.fullmatch(r"ansible-core==[0-9.]+", deps["ansible_core"]["package_pip"])
    assert re.fullmatch(r"ansible-runner==[0-9.]+", deps["ansible_runner"]["package_pip"])


def test_ee_installs_this_collection_from_its_artifact():
    collections = EE["dependencies"]["galaxy"]["collections"]
    files = [c for c in collections if c.get("type") == "file"]
    assert [c["name"] for c in files] == ["collections/" + ARTIFACT_NAME]
    assert EE["additional_build_files"] == [{"src": "build/dist/" + ARTIFACT_NAME, "dest": "collections"}]
    core = [c for c in collections if c["name"] == "kubernetes.core"]
    assert core == [{"name": "kubernetes.core", "version": ">=6.0.0,<7.0.0"}]


def test_the_collection_depends_on_no_other_collection():
    """One way to the API: no task uses kubernetes.core (tests/unit/test_one_api_path.py), so nothing is required."""
    assert not GALAXY.get("dependencies")


def test_ee_helm_build_args():
    args = build_args()
    assert re.fullmatch(r"v3\.[0-9]+\.[0-9]+", args["HELM_VERSION"])
    assert re.fullmatch(r"[0-9a-f]{64}", args["HELM_SHA256"])
    url = args["HELM_URL"].replace("${HELM_VERSION}", args["HELM_VERSION"])
    assert url == "https://get.helm.sh/helm-%s-linux-amd64.tar.gz" % args["HELM_VERSION"]
    script = [s for s in append_final() if s.startswith("RUN ") and "helm" in s]
    assert len(script) == 1
    body = script[0]
    assert '"${HELM_URL}"' in body and "${HELM_SHA256}" in body
    assert body.index("sha256sum -c") < body.index("tar -x") < body.index("install -m 0755")


@pytest.fixture(scope="module")
def context(artifact, tmp_path_factory):
    """`ansible-builder create` on a copy of the definition with the artifact where `make package` puts it."""
    work = tmp_path_factory.mktemp("ee")
    shutil.copy(os.path.join(ROOT, "execution-environment.yml"), work / "execution-environment.yml")
    (work / "build" / "dist").mkdir(parents=True)
    shutil.copy(artifact, work / "build" / "dist" / ARTIFACT_NAME)
    ctx = work / "context"
    # The file named, not detected: with podman missing and a docker client present ansible-builder would
    # write a Dockerfile instead of the Containerfile AWX's image build (podman) uses.
    run([tool("ansible-builder"), "create", "-f", str(work / "execution-environment.yml"), "-c", str(ctx),
         "--output-filename", "Containerfile"], cwd=str(work))
    return ctx


def test_ansible_builder_create_writes_the_build_context(context):
    containerfile = (context / "Containerfile").read_text(encoding="utf-8")
    assert 'ARG EE_BASE_IMAGE="%s"' % EE["images"]["base_image"]["name"] in containerfile
    assert "ARG HELM_SHA256=%s" % build_args()["HELM_SHA256"] in containerfile
    assert (context / "_build" / "collections" / ARTIFACT_NAME).is_file()
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text(encoding="utf-8"))
    assert requirements == EE["dependencies"]["galaxy"]
    # helm comes last, after the bindep packages it needs and before the image drops to its user
    final = containerfile[containerfile.index("FROM base AS final"):]
    assert final.index("install-from-bindep") < final.index("sha256sum -c") < final.index("USER ")


def test_the_image_build_combines_both_collections_python_requirements(artifact, tmp_path):
    """ansible-builder create resolves nothing; the image's builder stage runs the context's introspect.py on the
    collections the galaxy stage installed. Run here as the Containerfile says, its pip requirements hold every
    requirement of ours beside kubernetes.core's (make ee-requirements then pip-installs them together)."""
    lines, installed = ee_requirements.prepare(str(artifact), str(tmp_path))[1:]
    assert set(installed) == {"gpu_platform.cluster", "kubernetes.core"}
    by_collection = ee_requirements.entries_by_collection(lines)
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        ours = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    assert sorted(by_collection["gpu_platform.cluster"]) == sorted(r for r in ours if not r.lower().startswith("pyyaml"))
    assert "kubernetes>=24.2.0" in by_collection["kubernetes.core"]


def test_galaxy_stage_finds_the_artifact(context, tmp_path):
    """The galaxy stage runs ansible-galaxy in _build (WORKDIR /build); the file entry resolves there."""
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text(encoding="utf-8"))
    local = {"collections": [c for c in requirements["collections"] if c.get("type") == "file"]}
    (tmp_path / "local.yml").write_text(yaml.safe_dump(local), encoding="utf-8")
    dest = tmp_path / "collections"
    run([tool("ansible-galaxy"), "collection", "install", "--no-deps", "-r", str(tmp_path / "local.yml"), "-p", str(dest)],
        cwd=str(context / "_build"), env={"ANSIBLE_COLLECTIONS_PATH": str(dest)})
    assert (dest / COLLECTION_PATH / "meta" / "execution-environment.yml").is_file()


def helm_step(context, bindir):
    line = next(s for s in (context / "Containerfile").read_text(encoding="utf-8").splitlines()
                if s.startswith("RUN ") and "HELM_SHA256" in s)
    return line[len("RUN "):].replace("/usr/local/bin/helm", str(bindir / "helm"))


@pytest.mark.parametrize("good_sum", [True, False])
def test_helm_step_installs_only_a_matching_archive(context, tmp_path, good_sum):
    """The image's helm step, run here on a stand-in archive served from a file:// URL."""
    if not shutil.which("curl"):
        pytest.skip("curl is not installed on this machine")
    stage = tmp_path / "linux-amd64"
    stage.mkdir()
    (stage / "helm").write_text("#!/bin/sh\necho v3.18.0+gstandin\n", encoding="utf-8")
    archive = tmp_path / "helm.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(stage, arcname="linux-amd64")
    digest = run(["sha256sum", str(archive)]).stdout.split()[0] if good_sum else "0" * 64
    bindir = tmp_path / "bin"
    bindir.mkdir()
    proc = run(["sh", "-c", helm_step(context, bindir)], cwd=str(tmp_path), check=False,
               env={"HELM_URL": archive.as_uri(), "HELM_SHA256": digest,
                    "PATH": str(bindir) + os.pathsep + os.environ.get("PATH", "")})
    if good_sum:
        assert proc.returncode == 0, proc.stderr
        assert "v3.18.0" in proc.stdout
        assert os.access(bindir / "helm", os.X_OK)
    else:
        assert proc.returncode != 0
        assert "FAILED" in proc.stdout + proc.stderr
        assert not (bindir / "helm").exists()
