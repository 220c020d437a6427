"""One version everywhere: galaxy.yml's, the changelog's newest release (changelogs/changelog.yaml, written by
``antsibull-changelog release``, and CHANGELOG.rst from it), README's "This is release X", the execution environment's
artifact and AWX's requirement; no plugin or role claims to be added in a later release. make package checks that
the artifact it builds carries the same version."""
from __future__ import annotations

import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _key(version):
    return tuple(int(part) for part in version.split("."))


VERSION = str(yaml.safe_load(_read("galaxy.yml"))["version"])


def test_galaxy_version_is_plain_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_the_changelogs_newest_release_is_galaxys_version():
    releases = yaml.safe_load(_read("changelogs", "changelog.yaml")).get("releases") or {}
    assert releases, ("changelogs/changelog.yaml has no release: run `antsibull-changelog release` "
                      "(docs/testing.md, Releasing)")
    assert max(releases, key=_key) == VERSION
    assert releases[VERSION].get("changes") or releases[VERSION].get("fragments")
    assert re.search(r"^v%s\n=+$" % re.escape(VERSION), _read("CHANGELOG.rst"), re.M), \
        "CHANGELOG.rst has no v%s section: run antsibull-changelog generate" % VERSION


def test_readme_names_the_release_and_nothing_later():
    readme = _read("README.md")
    assert re.findall(r"This is release (\d+\.\d+\.\d+)", readme) == [VERSION]
    later = [v for v in re.findall(r"\bin (\d+\.\d+\.\d+)\b", readme) if _key(v) > _key(VERSION)]
    assert later == []


def test_the_ee_and_awx_install_this_version():
    ee = _read("execution-environment.yml")
    assert set(re.findall(r"gpu_platform-cluster-([\d.]+)\.tar\.gz", ee)) == {VERSION}
    requirements = yaml.safe_load(_read("meta", "awx", "project", "collections", "requirements.yml"))
    assert [c["version"] for c in requirements["collections"] if c["name"] == "gpu_platform.cluster"] == [VERSION]
    awx = _read("docs", "awx.md")
    named = re.findall(r"gpu_platform-cluster-(\d+\.\d+\.\d+)\.tar\.gz|gpu-platform/ee:(\d+\.\d+\.\d+)", awx)
    assert named and {a or b for a, b in named} == {VERSION}


def test_nothing_is_added_in_a_later_release():
    paths = [path for pattern in ("plugins/*/*.py", "plugins/*/*.yml", "roles/*/meta/argument_specs.yml")
             for path in glob.glob(os.path.join(ROOT, pattern))]
    later = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                match = re.search(r"version_added: *[\"']?(\d+\.\d+\.\d+)", line)
                if match and _key(match.group(1)) > _key(VERSION):
                    later.append("%s:%d: version_added %s" % (os.path.relpath(path, ROOT), number, match.group(1)))
    assert later == []
