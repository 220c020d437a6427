"""Benchmark: the host roles (host_driver, peermem) in the podman host of molecule/hosts.

For each run, a fresh Debian bookworm container (the molecule/hosts image, systemd as PID 1, its
apt archive cache kept under build/ so packages are downloaded once) is started and readied, then:

* converge: molecule/hosts/converge.yml on it, from nothing to Debian's 535 driver, pinned, with
  nouveau blacklisted, nvidia-persistenced enabled and nvidia-peermem persisted;
* re-run: the same playbook again, which must report changed=0;
* floor: a play with one ping task against the same container (Ansible's own cost per run).

It prints the medians and the re-run's ratio to the floor. A benchmark, not a test: it asserts
nothing about time; it checks only that every re-run changed nothing.

    make bench-hosts                        # 3 runs
    python bench/host_noop.py --runs 5
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTAINERS_CONF = ROOT / "molecule" / "hosts" / "containers.conf"
CONVERGE = ROOT / "molecule" / "hosts" / "converge.yml"
NAME = "gpu-host"  # the inventory name molecule/hosts/converge.yml targets
CONTAINER = "bench-gpu-host"  # not molecule's container, so the two can run side by side
RECAP = re.compile(r"^%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)" % NAME, re.M)


def env():
    out = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    out.pop("ANSIBLE_STDOUT_CALLBACK", None)
    return out


def sh(*command, **kwargs):
    return subprocess.run(list(command), env=env(), capture_output=True, text=True, check=True, **kwargs).stdout


def start_host(image):
    subprocess.run(["podman", "rm", "-f", CONTAINER], env=env(), capture_output=True, check=False)
    cache = ROOT / "build" / "apt-cache" / CONTAINER
    cache.mkdir(parents=True, exist_ok=True)
    sh("podman", "run", "-d", "--name", CONTAINER, "--hostname", NAME, "--systemd", "always",
       "-v", "%s:/var/cache/apt/archives:rw" % cache, image, "/sbin/init")


def inventory(directory):
    path = Path(directory) / "hosts.yml"
    path.write_text(json.dumps({"all": {"children": {"gpu_hosts": {"hosts": {NAME: {
        "ansible_connection": "containers.podman.podman", "ansible_host": CONTAINER,
        "ansible_python_interpreter": "/usr/bin/python3"}}}}}}))
    return str(path)


def play(directory, name, tasks):
    path = Path(directory) / name
    path.write_text(json.dumps([{"name": name, "hosts": "gpu_hosts", "gather_facts": False, "tasks": tasks}]))
    return str(path)


def timed(inv, playbook):
    started = time.perf_counter()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, playbook],
                          env=env(), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    recap = RECAP.search(proc.stdout)
    if proc.returncode != 0 or recap is None:
        raise SystemExit("%s failed:\n%s\n%s" % (playbook, proc.stdout[-3000:], proc.stderr[-3000:]))
    return elapsed, int(recap.group(2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    image = sh(str(ROOT / "scripts" / "build_host_image.sh"), "--image-name").strip()
    rows = {"converge": [], "re-run": [], "floor": []}
    with tempfile.TemporaryDirectory() as tmp:
        inv = inventory(tmp)
        ready = play(tmp, "ready.yml", [
            {"name": "Wait for boot", "ansible.builtin.systemd_service": {"name": "multi-user.target", "state": "started"},
             "register": "boot", "until": "boot is succeeded", "retries": 60, "delay": 1},
            {"name": "Package lists", "ansible.builtin.apt": {"update_cache": True}}])
        floor = play(tmp, "floor.yml", [{"name": "Ping", "ansible.builtin.ping": {}}])
        try:
            for run in range(args.runs):
                start_host(image)
                timed(inv, ready)
                converge, changed = timed(inv, str(CONVERGE))
                rerun, rerun_changed = timed(inv, str(CONVERGE))
                if rerun_changed:
                    raise SystemExit("run %d: the re-run changed %d task(s); not idempotent" % (run + 1, rerun_changed))
                rows["converge"].append(converge)
                rows["re-run"].append(rerun)
                rows["floor"].append(timed(inv, floor)[0])
                print("run %d: converge %.1f s (%d changed), re-run %.1f s (0 changed), floor %.1f s"
                      % (run + 1, converge, changed, rerun, rows["floor"][-1]), flush=True)
        finally:
            subprocess.run(["podman", "rm", "-f", CONTAINER], env=env(), capture_output=True, check=False)
    medians = {k: statistics.median(v) for k, v in rows.items()}
    print()
    print("| what (median of %d) | seconds | vs floor |" % args.runs)
    print("|---|---|---|")
    for key in ("converge", "re-run", "floor"):
        print("| %s | %.1f | %.1fx |" % (key, medians[key], medians[key] / medians["floor"]))


if __name__ == "__main__":
    main()
