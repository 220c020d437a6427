"""host_driver's container runtime backup (install time) and restore (uninstall.yml), run for real on localhost
with every path pointed at a temporary folder."""
from __future__ import annotations

import hashlib
import json
import os
import stat

from tests.playbooks.localhost import run_on_localhost

ORIGINAL = b"version = 2\n# the node's own containerd config, before the platform\n"
USER_DROPIN = b"# an operator's own drop-in\n"


def run_tasks(tmp_path, tasks_from, role_vars, *args):
    play = [{"name": tasks_from, "hosts": "localhost", "gather_facts": False, "connection": "local",
             "tasks": [{"name": "host_driver " + tasks_from, "ansible.builtin.include_role": {
                 "name": "gpu_platform.cluster.host_driver", "tasks_from": tasks_from}, "vars": role_vars}]}]
    data = run_on_localhost(tmp_path, play, *args)
    results = {task["task"]["name"].split(" : ")[-1]: task["hosts"]["localhost"] for p in data["plays"] for task in p["tasks"]}
    return data["stats"]["localhost"], results


def host(tmp_path):
    etc = tmp_path / "etc"
    (etc / "containerd" / "conf.d").mkdir(parents=True)
    config = etc / "containerd" / "config.toml"
    config.write_bytes(ORIGINAL)
    config.chmod(0o640)
    (etc / "containerd" / "conf.d" / "10-user.toml").write_bytes(USER_DROPIN)
    backup = tmp_path / "var" / "lib" / "gpu-platform" / "runtime-backup"
    role_vars = {"host_driver_runtime_backup_dir": str(backup),
                 "host_driver_runtime_config_files": [str(config), str(etc / "crio" / "crio.conf")],
                 "host_driver_runtime_dropin_dirs": [str(etc / "containerd" / "conf.d"), str(etc / "crio" / "crio.conf.d")],
                 "host_driver_runtime_restart": False}
    return etc, config, backup, role_vars


def what_the_toolkit_does(etc, config):
    config.write_bytes(ORIGINAL + b'imports = ["/etc/containerd/conf.d/*.toml"]\n')
    (etc / "containerd" / "conf.d" / "99-nvidia.toml").write_text("# nvidia runtime\n")
    (etc / "containerd" / "conf.d" / "10-user.toml").write_text("# changed\n")
    (etc / "crio" / "crio.conf.d").mkdir(parents=True)
    (etc / "crio" / "crio.conf.d" / "99-nvidia.conf").write_text("# nvidia runtime\n")


def test_backup_once_then_restore_brings_the_original_bytes_back(tmp_path):
    etc, config, backup, role_vars = host(tmp_path)

    check_stats, _results = run_tasks(tmp_path, "runtime_backup", role_vars, "--check")
    assert check_stats["failures"] == 0 and check_stats["changed"] > 0
    assert not backup.exists(), "check mode wrote nothing"

    stats, _results = run_tasks(tmp_path, "runtime_backup", role_vars)
    assert stats["failures"] == 0 and stats["changed"] == 3  # folder, two files (manifest written last)
    manifest = json.loads((backup / "manifest.json").read_text())
    files = {f["path"]: f for f in manifest["files"]}
    assert files[str(config)]["sha256"] == hashlib.sha256(ORIGINAL).hexdigest()
    assert files[str(config)]["mode"] == "0640"
    assert files[str(etc / "crio" / "crio.conf")] == {"path": str(etc / "crio" / "crio.conf"), "present": False}
    assert manifest["dropin_dirs"] == {str(etc / "containerd" / "conf.d"): [str(etc / "containerd" / "conf.d" / "10-user.toml")],
                                       str(etc / "crio" / "crio.conf.d"): None}
    assert manifest["taken"].endswith("Z") and manifest["runtime_service"] == "containerd"
    assert (backup / "files" / files[str(config)]["backup"]).read_bytes() == ORIGINAL
    assert stat.S_IMODE(backup.joinpath("files").stat().st_mode) == 0o700

    # The GPU Operator's toolkit changes the config; a second install keeps the pre-platform backup.
    what_the_toolkit_does(etc, config)
    again, results = run_tasks(tmp_path, "runtime_backup", role_vars)
    assert again["failures"] == 0 and again["changed"] == 0
    assert "never overwritten" in results["Say which backup is kept"]["msg"]
    assert (backup / "files" / files[str(config)]["backup"]).read_bytes() == ORIGINAL
    assert json.loads((backup / "manifest.json").read_text()) == manifest

    dry, _results = run_tasks(tmp_path, "runtime_restore", role_vars, "--check", "--diff")
    assert dry["failures"] == 0 and dry["changed"] > 0
    assert config.read_bytes() != ORIGINAL and (etc / "crio" / "crio.conf.d").exists(), "check mode wrote nothing"

    restored, results = run_tasks(tmp_path, "runtime_restore", role_vars)
    assert restored["failures"] == 0, results
    assert config.read_bytes() == ORIGINAL
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert (etc / "containerd" / "conf.d" / "10-user.toml").read_bytes() == USER_DROPIN
    assert sorted(os.listdir(etc / "containerd" / "conf.d")) == ["10-user.toml"], "the toolkit's drop-in is gone"
    assert not (etc / "crio" / "crio.conf.d").exists(), "a folder that was missing before is removed whole"
    assert results["Restart the container runtime"]["skipped"], "notified, restart off in this test"
    line = results["Record what the restore did (read by the uninstall summary)"]["ansible_facts"]["host_driver_runtime_restore"]
    assert line.startswith("restored ") and str(config) in line and str(etc / "containerd" / "conf.d" / "10-user.toml") in line
    assert "removed %s" % (etc / "containerd" / "conf.d" / "99-nvidia.toml") in line
    assert "removed %s" % (etc / "crio" / "crio.conf.d") in line
    assert line.endswith("restart containerd yourself")
    assert backup.exists(), "the backup stays"

    second, results = run_tasks(tmp_path, "runtime_restore", role_vars)
    assert second["failures"] == 0 and second["changed"] == 0
    assert "Restart the container runtime" not in results, "no restart when nothing changed"


def test_restore_without_a_backup_warns_and_changes_nothing(tmp_path):
    etc, config, backup, role_vars = host(tmp_path)
    config.write_bytes(b"changed by someone\n")
    stats, results = run_tasks(tmp_path, "runtime_restore", role_vars)
    assert stats["failures"] == 0 and stats["changed"] == 0
    msg = results["Warn that there is no backup to restore"]["msg"]
    assert msg.startswith("WARNING: no container runtime backup on localhost") and str(backup) in msg
    assert config.read_bytes() == b"changed by someone\n"
