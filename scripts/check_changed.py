"""The lint half of ``make check``: only the files that differ from HEAD (staged, unstaged and new), fast.

Python: pyflakes (unused and undefined names) and pycodestyle with ansible-test's pep8 settings (160 columns, its
ignore list). YAML: yamllint with the repository's .yamllint. Roles, playbooks and site.yml: ansible-lint
with the production profile, on the changed files only. ``make sanity`` and ``make lint`` stay the full checks;
this is the inner loop's first minute. Exit status: non-zero when any tool found something.

    python scripts/check_changed.py            # what differs from HEAD
    python scripts/check_changed.py --base main~3
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
EXCLUDED = ("tools/", "build/", ".venv/", "local-gpu-cluster/local_gpu_cluster/fixture_charts/")
ANSIBLE_PATHS = ("roles/", "playbooks/", "site.yml")
# ansible-test sanity's pep8 settings (ansible_test/_util/controller/sanity/pep8/current-ignore.txt)
PEP8_IGNORE = ("E203", "E402", "E701", "E704", "E741", "W503", "W504")


def changed_files(base):
    """Tracked files that differ from ``base`` plus untracked ones git does not ignore, that still exist."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    names = set(git("diff", "--name-only", base)) | set(git("ls-files", "--others", "--exclude-standard"))
    return sorted(n for n in names if os.path.isfile(os.path.join(ROOT, n)) and not n.startswith(EXCLUDED))


def plan(files):
    """The commands to run: (label, argv, number of files), one per tool that has files to look at."""
    python = [f for f in files if f.endswith(".py")]
    yaml = [f for f in files if f.endswith((".yml", ".yaml"))]
    ansible = [f for f in yaml if f.startswith(ANSIBLE_PATHS)]
    commands = []
    if python:
        commands.append(("pyflakes", [sys.executable, "-m", "pyflakes", *python], len(python)))
        commands.append(("pycodestyle", [sys.executable, "-m", "pycodestyle", "--max-line-length=160", "--config=/dev/null",
                                         "--ignore=" + ",".join(PEP8_IGNORE), *python], len(python)))
    if yaml:
        commands.append(("yamllint", [os.path.join(BIN, "yamllint"), "--strict", *yaml], len(yaml)))
    if ansible:
        commands.append(("ansible-lint", [os.path.join(BIN, "ansible-lint"), "--profile", "production", "-q", *ansible],
                         len(ansible)))
    return commands


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="what 'changed' is measured against (default HEAD)")
    args = parser.parse_args()
    files = changed_files(args.base)
    commands = plan(files)
    if not commands:
        print("check: nothing changed against %s to lint" % args.base)
        return 0
    failed = []
    for label, argv, count in commands:
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, check=False)
        print("check: %s on %d file(s): %s in %.1f s" % (label, count, "ok" if proc.returncode == 0 else "FAILED",
                                                         time.monotonic() - started))
        if proc.returncode:
            failed.append(label)
    if failed:
        print("check: %s found problems (above)" % ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
