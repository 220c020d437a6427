"""The operators' cache entries: one per operator, keyed by its source archive (or module version), checked like the
control plane's, a missing archive named with the fix; and the real pins, archives and layouts agree."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from local_gpu_cluster import ClusterError
from local_gpu_cluster import build, operators
from local_gpu_cluster.paths import PROJECT


def _fake_go(tmp_path):
    go = tmp_path / "go"
    go.write_text('#!/bin/sh\nif [ "$2" = GOVERSION ]; then echo go1.26.8; exit 0; fi\nexit 0\n')
    go.chmod(0o755)
    return str(go)


def _archive(path, top, files, commit="0123456789abcdef0123456789abcdef01234567"):
    """A git-archive-like .tar.xz: one top folder, the commit in the pax global header."""
    with tarfile.open(path, "w:xz", format=tarfile.PAX_FORMAT, pax_headers={"comment": commit}) as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            member = tarfile.TarInfo("%s/%s" % (top, name))
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


CHART = "apiVersion: v2\nname: demo-operator\nversion: 0.0.0\nappVersion: 0.0.0\n"
SUBCHART = "apiVersion: v2\nname: nfd\nversion: 1.2.3\n"


@pytest.fixture(name="sources")
def _sources(tmp_path, monkeypatch):
    """A checkout (its roles' pins) and ../shared/upstream/src of two demo operators, in tmp_path."""
    root = tmp_path / "checkout"
    (root / "roles" / "demo" / "defaults").mkdir(parents=True)
    (root / "roles" / "demo" / "defaults" / "main.yml").write_text(
        "---\ndemo_chart_version: 1.0.0\nother_chart_version: v2.0.0\n")
    src = tmp_path / "shared" / "upstream" / "src"
    src.mkdir(parents=True)
    for name, tag in (("demo", "v1.0.0"), ("other", "v2.0.0")):
        _archive(src / ("%s-%s.tar.xz" % (name, tag)), "%s-%s" % (name, tag), {
            "go.mod": "module example.com/%s\n" % name, "cmd/manager/main.go": "package main\n",
            "assets/state-a/0100_daemonset.yaml": "kind: DaemonSet\n",
            "chart/Chart.yaml": CHART, "chart/values.yaml": "registry: registry/local\n",
            "chart/charts/nfd/Chart.yaml": SUBCHART})
    monkeypatch.setattr(operators, "ROOT", root)
    monkeypatch.setattr(operators, "UPSTREAM_SRC", src)
    monkeypatch.setenv("GPU_PLATFORM_CACHE", str(tmp_path / "cache"))
    built = []

    def go_build(command, cwd, _log, what):
        assert (cwd / "go.mod").is_file() and "-X example.com/demo/version.Version=v1.0.0" in command[4]
        built.append((what, cwd))
        (Path(command[command.index("-o") + 1])).write_bytes(b"binary")
    monkeypatch.setattr(operators, "run_build", go_build)

    def entry(name):
        return operators.entry(operators.Operator(
            name, name.title(), "roles/demo/defaults/main.yml", name + "_chart_version",
            (("manager", "./cmd/manager"),), ("chart",), archive=name,
            version_flags=("example.com/demo/version.Version=%(tag)s",),
            image=(("assets", "opt/%s" % name),), chart_version="%(tag)s",
            values_edits=(("values.yaml", r"registry/local", "registry.example.com/%(bare)s"),)))
    return {"src": src, "root": root, "entry": entry, "built": built}


def test_each_operator_is_keyed_by_its_own_archive(sources, tmp_path):
    """A changed archive, pin or Go is a new key for that operator only."""
    go = _fake_go(tmp_path)
    demo, other = sources["entry"]("demo"), sources["entry"]("other")
    keys = (build.cache_key(go, demo), build.cache_key(go, other))
    assert keys[0].startswith("demo-") and keys[1].startswith("other-")
    assert build.cache_key(go, demo) == keys[0], "the same archive, the same key"
    _archive(sources["src"] / "demo-v1.0.0.tar.xz", "demo-v1.0.0", {"go.mod": "module example.com/demo // 2\n"})
    assert build.cache_key(go, demo) != keys[0], "a changed archive is a new key"
    assert build.cache_key(go, other) == keys[1], "and does not rebuild another operator"
    demo_key = build.cache_key(go, demo)
    defaults = sources["root"] / "roles" / "demo" / "defaults" / "main.yml"
    defaults.write_text(defaults.read_text().replace("other_chart_version: v2.0.0", "other_chart_version: 2.0.1"))
    _archive(sources["src"] / "other-v2.0.1.tar.xz", "other-v2.0.1", {"go.mod": "module example.com/other\n"})
    assert build.cache_key(go, other) != keys[1], "a new pin is a new key"
    assert build.cache_key(go, demo) == demo_key
    (tmp_path / "go").write_text('#!/bin/sh\necho go1.27.0\n')
    assert build.cache_key(go, demo) != demo_key, "a new Go is a new key"


def test_a_module_source_is_keyed_by_its_version(monkeypatch, tmp_path):
    """Kueue's key names the module version its role pins."""
    go = _fake_go(tmp_path)
    root = tmp_path / "checkout"
    (root / "roles" / "scheduling" / "defaults").mkdir(parents=True)
    defaults = root / "roles" / "scheduling" / "defaults" / "main.yml"
    defaults.write_text("scheduling_kueue_chart_version: \"0.19.2\"\n")
    monkeypatch.setattr(operators, "ROOT", root)
    kueue = operators.entry_for("kueue")
    assert kueue.inputs() == ["module sigs.k8s.io/kueue@v0.19.2"]
    key = build.cache_key(go, kueue)
    defaults.write_text("scheduling_kueue_chart_version: \"0.19.3\"\n")
    assert build.cache_key(go, kueue) != key


def test_a_build_holds_the_binaries_image_and_chart_and_a_tampered_one_is_rebuilt(sources, tmp_path):
    """The entry's files and manifest.json; reused when whole, rebuilt when a file changed."""
    go = _fake_go(tmp_path)
    entry = sources["entry"]("demo")
    said = []
    bindir = build.ensure_built(go, log=said.append, entry=entry)
    assert bindir.name == build.cache_key(go, entry) and bindir.name.startswith("demo-")
    assert [what for what, _directory in sources["built"]] == ["manager (./cmd/manager in the archive of the Demo v1.0.0)"]
    assert sources["built"][0][1].name == "demo-v1.0.0", "built in the archive's tree"
    assert (bindir / "image" / "opt" / "demo" / "state-a" / "0100_daemonset.yaml").read_text() == "kind: DaemonSet\n"
    manifest = json.loads((bindir / "manifest.json").read_text())
    assert manifest["charts"] == {"demo-operator": {
        "name": "demo-operator", "file": "charts/demo-operator-v1.0.0.tgz", "version": "v1.0.0", "appVersion": "v1.0.0", "dependencies": {},
        "subcharts": {"nfd": "1.2.3"}}}
    assert manifest["source"] == {"archive": "demo-v1.0.0.tar.xz", "commit": "0123456789abcdef0123456789abcdef01234567",
                                  "sha256": entry.inputs()[1].split()[1]}
    assert manifest["pins"] == {"version": "v1.0.0", "source": "demo-v1.0.0.tar.xz"}
    assert sorted(manifest["sha256"]) == ["charts/demo-operator-v1.0.0.tgz",
                                          "image/opt/demo/state-a/0100_daemonset.yaml", "manager"]
    with tarfile.open(bindir / "charts" / "demo-operator-v1.0.0.tgz") as chart:
        values = chart.extractfile("demo-operator/values.yaml").read().decode()
    assert values == "registry: registry.example.com/1.0.0\n", "the release's edit of values"
    assert not list((tmp_path / "cache" / "src").iterdir()), "the unpacked source is removed"

    assert build.ensure_built(go, log=said.append, entry=entry) == bindir and len(sources["built"]) == 1, "reused"
    (bindir / "manager").write_bytes(b"tampered")
    build.ensure_built(go, log=said.append, entry=entry)
    assert said[-3] == "stale cache: %s does not match the sha256 recorded when it was built; rebuilding it" % (
        bindir / "manager")
    assert len(sources["built"]) == 2 and build.check_cache(bindir, entry) == ""


def test_a_missing_archive_is_one_line_naming_the_file_and_the_fix(sources, tmp_path):
    """No archive for the pin: one line, the file, the pin and the two ways out."""
    (sources["src"] / "demo-v1.0.0.tar.xz").unlink()
    with pytest.raises(ClusterError) as failed:
        build.ensure_built(_fake_go(tmp_path), log=lambda line: None, entry=sources["entry"]("demo"))
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith("%s is missing: the Demo v1.0.0 is built from it (roles/demo/defaults/main.yml pins "
                              "demo_chart_version)" % (sources["src"] / "demo-v1.0.0.tar.xz"))
    assert "git archive --prefix=demo-v1.0.0/ v1.0.0" in message
    assert "or pin a version whose archive is there (none)" in message
    assert not (tmp_path / "cache" / "bin").exists() or not list((tmp_path / "cache" / "bin").iterdir())


def test_a_chart_helm_cannot_package_is_named(sources, tmp_path):
    """A subchart that is not beside the chart: helm's error, the chart, the log; no entry."""
    _archive(sources["src"] / "demo-v1.0.0.tar.xz", "demo-v1.0.0", {
        "go.mod": "module example.com/demo\n", "assets/a": "", "chart/values.yaml": "registry: registry/local\n",
        "chart/Chart.yaml": CHART + "dependencies:\n- name: absent\n  version: 1.0.0\n"
                                    "  repository: oci://example.invalid\n"})
    with pytest.raises(ClusterError) as failed:
        build.ensure_built(_fake_go(tmp_path), log=lambda line: None, entry=sources["entry"]("demo"))
    message = str(failed.value)
    assert message.startswith("packaging the Demo chart (chart of demo) failed (helm package exit 1)")
    assert "absent" in message and "Full log:" in message
    assert not list((tmp_path / "cache" / "bin").glob("*/manifest.json")), "no half-written cache entry"


def test_an_unknown_operator_is_refused_before_anything_is_built(tmp_path):
    """A misspelt name is refused with the names there are."""
    env = dict(os.environ, GO=str(tmp_path / "no-such-go"), GPU_PLATFORM_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "local_gpu_cluster", "build", "--operators", "gpu-operatr"],
                          cwd=str(PROJECT), env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "cluster-build: no operator named gpu-operatr: choose from " + ", ".join(
        operators.NAMES)


def _archived():
    """Each operator's record at every release whose source archive is in ../shared/upstream/src (the pins', the
    previous release's and the others there): the record that version picks, if it builds from that archive."""
    found = []
    for path in sorted(operators.UPSTREAM_SRC.glob("*.tar.xz")) if operators.UPSTREAM_SRC.is_dir() else ():
        project, _sep, version = path.name[:-len(".tar.xz")].rpartition("-v")
        for name in operators.NAMES:
            operator = operators.at(name, version)
            if operator.archive == project:
                found.append(operator)
    return found


ARCHIVED = _archived()


def test_every_pin_has_an_archive_and_a_record_that_builds_from_it():
    """The roles' pins each pick a record whose archive is there (what the parametrized test below reads)."""
    if not operators.UPSTREAM_SRC.is_dir():
        pytest.skip("../shared/upstream/src is not beside the checkout")
    for name in operators.NAMES:
        operator = operators.record(name)
        if operator.archive:
            assert (operator.name, operator.version()) in {(o.name, o.version()) for o in ARCHIVED}, name


@pytest.mark.skipif(not operators.UPSTREAM_SRC.is_dir(), reason="../shared/upstream/src is not beside the checkout")
@pytest.mark.parametrize("operator", ARCHIVED, ids=["%s-%s" % (o.name, o.version()) for o in ARCHIVED])
def test_the_archive_holds_what_the_build_takes(operator):
    """Each release's archive (the pins', release 0.2.0's and the others there) has the packages, image files, charts
    and release edits its record's build uses (read from the archive's member list; nothing is built)."""
    path = operator.archive_path()
    with tarfile.open(path, "r:xz") as archive:
        names = {member.name for member in archive.getmembers()}
        top = "%s-%s/" % (operator.archive, operator.version())
        for _binary, package in operator.binaries:
            assert any(n.startswith(top + package.lstrip("./")) and n.endswith(".go") for n in names), package
        for inside in (entry[0] for entry in operator.image):
            assert top + inside in names or any(n.startswith(top + inside + "/") for n in names), inside
        for folder in operator.charts:
            chart = yaml.safe_load(archive.extractfile(top + folder + "/Chart.yaml").read())
            for dependency in chart.get("dependencies") or []:
                assert top + "%s/charts/%s/Chart.yaml" % (folder, dependency["name"]) in names, (
                    "the subchart %s is not beside the chart: helm package would need to fetch it" % dependency["name"])
            for relative, pattern, _replacement in operator.values_edits:
                text = archive.extractfile(top + folder + "/" + relative).read().decode()
                assert re.search(pattern, text), (relative, pattern)
