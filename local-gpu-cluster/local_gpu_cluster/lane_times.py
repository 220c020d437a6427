"""pytest plugin: where a session's time goes, by test module and by kind of work.

``pytest -p local_gpu_cluster.lane_times`` (``make pytest-cluster`` loads it) times every command the tests run through
``subprocess.run`` and files it under one kind: a cluster started or stopped (``python -m local_gpu_cluster up|down``),
a playbook (``ansible-playbook``, ``ansible-runner``), helm, kubectl, or another command. What a test spends outside
any command is its own Python: waits and polls on the cluster, and the test's checks. At the end it prints a table
per module and per kind, and writes the same as JSON to ``$LANE_TIMES_JSON`` (default ``build/lane-times.json``
under the project), so a change to the lane can be measured rather than guessed.

It measures wall time on the machine as it is: beside ``make test``'s other steps, the figures include waiting for a
core.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from collections import defaultdict

import pytest

from .paths import BUILD

KINDS = ("cluster up", "cluster down", "playbook", "helm", "kubectl", "other command", "python (waits, checks)")


def kind_of(argv) -> str:
    """The kind of work a command line is (one of KINDS but the last)."""
    if isinstance(argv, (str, bytes)):
        words = str(argv).split()
    else:
        words = [str(word) for word in argv]
    if not words:
        return "other command"
    name = os.path.basename(words[0])
    if "local_gpu_cluster" in words[:3]:
        return "cluster down" if "down" in words else "cluster up" if "up" in words else "other command"
    if name.startswith("ansible-playbook") or name.startswith("ansible-runner") or name == "molecule":
        return "playbook"
    if name.startswith("helm"):
        return "helm"
    if name.startswith("kubectl"):
        return "kubectl"
    return "other command"


class LaneTimes:
    """The session's record: seconds per (module, kind), the tests of each module, the session's wall time."""

    def __init__(self):
        self.seconds = defaultdict(lambda: defaultdict(float))
        self.tests = defaultdict(int)
        self.wall = defaultdict(float)
        self.module = None
        self.started = time.monotonic()
        self._run = None

    def install(self):
        self._run = subprocess.run

        def timed_run(*args, **kwargs):
            argv = args[0] if args else kwargs.get("args", ())
            began = time.monotonic()
            try:
                return self._run(*args, **kwargs)  # pylint: disable=subprocess-run-check  # the caller's own
            finally:
                self.seconds[self.module or "(session)"][kind_of(argv)] += time.monotonic() - began

        subprocess.run = timed_run

    def uninstall(self):
        if self._run is not None:
            subprocess.run = self._run

    def report(self) -> dict:
        modules = {}
        for module, wall in self.wall.items():
            parts = dict(self.seconds.get(module, {}))
            parts["python (waits, checks)"] = max(0.0, wall - sum(parts.values()))
            modules[module] = {"tests": self.tests[module], "wall": round(wall, 1),
                               "kinds": {k: round(v, 1) for k, v in parts.items() if v >= 0.05}}
        totals = defaultdict(float)
        for entry in modules.values():
            for name, value in entry["kinds"].items():
                totals[name] += value
        return {"session_wall": round(time.monotonic() - self.started, 1), "tests": sum(self.tests.values()),
                "kinds": {k: round(totals[k], 1) for k in KINDS if totals.get(k)}, "modules": modules}


_RECORD = LaneTimes()


def pytest_configure(config):  # pylint: disable=unused-argument
    _RECORD.install()


def pytest_unconfigure(config):  # pylint: disable=unused-argument
    _RECORD.uninstall()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    module = item.nodeid.split("::", 1)[0]
    _RECORD.module = module
    began = time.monotonic()
    yield
    _RECORD.wall[module] += time.monotonic() - began
    _RECORD.tests[module] += 1


def pytest_terminal_summary(terminalreporter):
    report = _RECORD.report()
    if not report["modules"]:
        return
    path = os.environ.get("LANE_TIMES_JSON") or str(BUILD / "lane-times.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, sort_keys=True)
    write = terminalreporter.write_line
    write("where the time went (s, wall; %d tests in %.0f s; %s):" % (report["tests"], report["session_wall"], path))
    write("  %-62s %5s %7s  %s" % ("module", "tests", "wall", "by kind"))
    for module, entry in sorted(report["modules"].items(), key=lambda kv: -kv[1]["wall"]):
        kinds = ", ".join("%s %.0f" % (k, entry["kinds"][k]) for k in KINDS if k in entry["kinds"])
        write("  %-62s %5d %7.0f  %s" % (module[-62:], entry["tests"], entry["wall"], kinds))
    write("  %-62s %5d %7.0f  %s" % ("all", report["tests"], sum(e["wall"] for e in report["modules"].values()),
                                     ", ".join("%s %.0f" % kv for kv in report["kinds"].items())))
