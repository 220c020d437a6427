"""bundle_files: plain files into a folder of the bundle, written only when their text changes; check and diff mode;
names outside the folder and non-text refused before any write; run in the controller process."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.modules.harness import run_module
from tests.modules.test_controller_execution import play

DASHBOARD = json.dumps({"title": "GPU platform", "panels": [{"title": "GPU utilisation"}]}, indent=2)


def run(dest, files, check_mode=False, diff=False):
    return run_module("bundle_files", {"dest": str(dest), "files": files}, check_mode=check_mode, diff=diff)


def test_writes_the_files_then_nothing_and_leaves_other_files_alone(tmp_path):
    dest = tmp_path / "platform" / "dashboards"
    failed, first = run(dest, {"gpu-platform.json": DASHBOARD, "notes.txt": "import by hand\n"})
    assert not failed, first.get("msg")
    assert first["changed"] is True and first["changed_files"] == ["gpu-platform.json", "notes.txt"]
    assert (dest / "gpu-platform.json").read_text() == DASHBOARD
    (dest / "mine.json").write_text("{}")
    failed, again = run(dest, {"gpu-platform.json": DASHBOARD, "notes.txt": "import by hand\n"})
    assert not failed and again["changed"] is False and again["changed_files"] == []
    assert again["files"] == ["gpu-platform.json", "notes.txt"] and (dest / "mine.json").read_text() == "{}"
    failed, edited = run(dest, {"gpu-platform.json": DASHBOARD.replace("utilisation", "memory")})
    assert not failed and edited["changed_files"] == ["gpu-platform.json"]


def test_check_mode_writes_nothing_and_diff_shows_the_text(tmp_path):
    dest = tmp_path / "dashboards"
    failed, result = run(dest, {"gpu-platform.json": DASHBOARD}, check_mode=True, diff=True)
    assert not failed and result["changed"] is True and result["changed_files"] == ["gpu-platform.json"]
    assert not dest.exists()
    assert result["diff"][0]["before"] == "" and result["diff"][0]["after"] == DASHBOARD


@pytest.mark.parametrize("files, field, words", [
    ({"../escape.json": "{}"}, "dest", "not a plain name"),
    ({"sub/x.json": "{}"}, "dest", "not a plain name"),
    ({"ok.json": "{}", "data.json": {"a": 1}}, "files", "data.json is dict, not text"),
])
def test_bad_files_are_refused_before_any_write(tmp_path, files, field, words):
    dest = tmp_path / "dashboards"
    failed, result = run(dest, files)
    assert failed and result["msg"].startswith(field + ": ") and words in result["msg"], result["msg"]
    assert "Fix:" in result["msg"] and "Traceback" not in result["msg"]
    assert not dest.exists() and not (tmp_path / "escape.json").exists()


def test_the_example_runs_in_the_controller_process(tmp_path):
    from ansible_collections.gpu_platform.cluster.plugins.modules import bundle_files
    tasks = yaml.safe_load(bundle_files.EXAMPLES.replace("{{ playbook_dir }}", str(tmp_path)))
    results, stdout = play(tmp_path, tasks, "-vvv")
    assert results[0]["changed"] is True and results[0]["changed_files"] == ["gpu-platform.json"]
    assert json.loads((tmp_path / "build" / "platform" / "dashboards" / "gpu-platform.json").read_text()) == {
        "title": "GPU platform", "panels": []}
    assert "AnsiballZ_bundle_files" not in stdout
