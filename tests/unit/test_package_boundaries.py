"""The boundaries between the collection, its tests and the local GPU cluster package (issue 41): nothing outside tests/
imports from tests/, and local-gpu-cluster/ imports nothing of the collection's (it reads the roles' chart pins as
files, as a user of the collection would)."""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKIP = {".venv", "build", "tools", ".git", "node_modules"}


def _python_files(top):
    for path in sorted(top.rglob("*.py")):
        if not SKIP.intersection(path.relative_to(ROOT).parts):
            yield path


def imported(path) -> set:
    """The top-level names of every module ``path`` imports (absolute imports only; relative ones stay inside)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _offenders(files, forbidden):
    return sorted("%s imports %s" % (path.relative_to(ROOT), name) for path in files for name in imported(path)
                  if any(name == f or name.startswith(f + ".") for f in forbidden))


def test_nothing_outside_tests_imports_from_tests():
    outside = [p for p in _python_files(ROOT) if p.relative_to(ROOT).parts[0] not in ("tests",)
               and p.relative_to(ROOT).parts[:2] != ("local-gpu-cluster", "tests")]
    assert outside, "the scan found no file: its paths are wrong"
    assert _offenders(outside, ("tests",)) == []


def test_the_local_gpu_cluster_package_imports_nothing_of_the_collection():
    package = list(_python_files(ROOT / "local-gpu-cluster"))
    assert any(p.name == "__main__.py" for p in package)
    assert _offenders(package, ("tests", "ansible_collections", "plugins", "scripts", "ansible")) == []


def test_the_scan_catches_an_import_from_tests(tmp_path):
    """The guard can fail: a file importing tests.x (plainly, or from within a function) is named."""
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\ndef f():\n    from tests.local_cluster import kubectl\n    return kubectl\n")
    assert imported(sample) == {"os", "tests.local_cluster"}
    global ROOT  # pylint: disable=global-statement
    saved, ROOT = ROOT, tmp_path
    try:
        assert _offenders([sample], ("tests",)) == ["sample.py imports tests.local_cluster"]
    finally:
        ROOT = saved


@pytest.mark.parametrize("gone", ["scripts/local_cluster", "tests/fakes", "tools/cluster", "tools/kwok", "tools/flux"])
def test_the_local_cluster_left_its_old_homes(gone):
    assert not (ROOT / gone).exists(), "%s is the package's now (local-gpu-cluster/)" % gone
