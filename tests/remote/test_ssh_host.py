"""tests/remote/ssh_host.py: what it needs is named when missing (the SSH test skips with it), and its image pins
the collection's own requirements."""
from __future__ import annotations

import pytest

from tests.remote import ssh_host


@pytest.mark.parametrize("absent, reason", [
    ("podman", "podman is not installed (make system-deps installs it)"),
    ("ssh", "the ssh client is not installed (openssh-client)"),
    ("ssh-keygen", "ssh-keygen is not installed (openssh-client)"),
])
def test_a_missing_tool_is_named(monkeypatch, absent, reason):
    monkeypatch.setattr(ssh_host.shutil, "which", lambda tool: None if tool == absent else "/usr/bin/" + tool)
    assert ssh_host.missing() == reason


def test_without_root_it_says_so(monkeypatch):
    monkeypatch.setattr(ssh_host.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(ssh_host.os, "geteuid", lambda: 1000)
    assert ssh_host.missing() == "the SSH host container needs root (rootful podman, as make test runs in CI)"


def test_the_image_holds_the_collections_libraries_at_the_test_locks_versions():
    lock = (ssh_host.ROOT / "requirements-dev.txt").read_text().splitlines()
    assert sorted(ssh_host.pins()) == sorted(line for line in lock if line.split("==")[0] in ssh_host.PINNED)
    assert all("==" in pin for pin in ssh_host.pins())
    ranges = {line.split(">=")[0] for line in (ssh_host.ROOT / "requirements.txt").read_text().splitlines() if ">=" in line}
    assert set(ssh_host.PINNED) <= ranges, "the image's libraries are the collection's own requirements"
