"""One way to the API: every task of the roles and playbooks that reads or writes the cluster goes through this
collection's modules (one retry, time-out, auth and no-secret path), never kubernetes.core's."""
from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYS = ("tasks", "pre_tasks", "post_tasks", "handlers")


def tasks_of(items):
    for task in items or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always") + PLAYS:
                yield from tasks_of(task.get(key))


def task_files():
    yield from sorted((ROOT / "roles").glob("*/tasks/*.yml"))
    yield from sorted((ROOT / "roles").glob("*/handlers/*.yml"))
    yield from sorted((ROOT / "playbooks").rglob("*.yml"))
    yield ROOT / "site.yml"


def other_api_tasks():
    found = []
    for path in task_files():
        document = yaml.safe_load(path.read_text())
        for task in tasks_of(document if isinstance(document, list) else []):
            modules = [key for key in task if key.startswith(("kubernetes.core.", "k8s", "community.kubernetes."))]
            found += ["%s: %s (%s)" % (path.relative_to(ROOT), task.get("name"), module) for module in modules]
    return found


def test_no_role_or_playbook_task_reaches_the_api_through_kubernetes_core():
    assert list(task_files()), "no task files found"
    assert other_api_tasks() == []


def test_the_scan_sees_a_kubernetes_core_task_in_a_block(tmp_path, monkeypatch):
    play = [{"hosts": "k8s_api", "tasks": [{"block": [{"name": "x", "kubernetes.core.k8s": {"definition": {}}}]}]}]
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "p.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "site.yml").write_text("[]\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert other_api_tasks() == ["playbooks/p.yml: x (kubernetes.core.k8s)"]
