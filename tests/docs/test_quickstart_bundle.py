"""docs/quickstart.md's table of the demo bundle: the comparison make demo-fresh-clone runs on a real demo."""
from __future__ import annotations

from tests.docs import quickstart_bundle as qb


def _bundle(tmp_path, names):
    for name in names:
        if name.endswith("/"):
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text("")
    return tmp_path


def test_the_table_lists_the_root_kustomization_and_the_unit_folders():
    with open(qb.QUICKSTART, encoding="utf-8") as handle:
        entries = qb.table_entries(handle.read())
    assert {"kustomization.yaml", qb.UNIT_FILE, "gpu-operator/", "smoke/"} <= entries


def test_a_bundle_like_the_table_agrees(tmp_path):
    bundle = _bundle(tmp_path, ["kustomization.yaml", "gpu-platform-gpu-operator.yaml", "gpu-platform-smoke.yaml",
                                "gpu-operator/", "smoke/"])
    documented = {"kustomization.yaml", qb.UNIT_FILE, "gpu-operator/", "smoke/"}
    assert qb.differences(documented, qb.bundle_entries(bundle)) == []


def test_a_unit_missing_from_the_table_and_a_stale_row_are_named(tmp_path):
    bundle = _bundle(tmp_path, ["kustomization.yaml", "gpu-operator/", "network-ipam/"])
    documented = {"kustomization.yaml", "gpu-operator/", "helmrelease-gpu-operator-gpu-operator.yaml"}
    assert qb.differences(documented, qb.bundle_entries(bundle)) == [
        "docs/quickstart.md lists helmrelease-gpu-operator-gpu-operator.yaml, which make demo does not write",
        "make demo writes network-ipam/, which docs/quickstart.md's table does not list"]
    assert qb.main([str(bundle)]) == 1
