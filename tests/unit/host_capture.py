"""The real H100 host of ../shared/real-hosts (one command's output per file), as text and as a file-system tree.

``capture(name)`` is what the command printed (its ``$ command`` and ``rc=`` lines left out); ``capture_root`` lays
the files the host preflight reads out under a folder, as the host showed them, so that gpu_host_facts reads them
through its own code path.
"""
from __future__ import annotations

import os
from pathlib import Path

# ../shared beside the repository root (tests/conftest.py's SHARED)
CAPTURE = Path(__file__).resolve().parents[3] / "shared" / "real-hosts" / "h100-80gb-hbm3"


def capture(name):
    lines = (CAPTURE / name).read_text().splitlines()
    body = [line for line in lines[1:] if not line.startswith("rc=")]
    return "\n".join(body) + "\n"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def capture_root(root):
    """The capture's files under ``root``; returns ``root``."""
    for line in capture("pci.txt").splitlines():
        address, vendor, device, klass = line.split()[:4]
        for attr, value in (("vendor", vendor), ("device", device), ("class", klass)):
            _write(root / "sys/bus/pci/devices" / address / attr, value + "\n")
    _write(root / "proc/modules", capture("proc-modules.txt"))
    _write(root / "proc/driver/nvidia/version", capture("proc-driver-version.txt"))
    _write(root / "proc/cmdline", capture("proc-cmdline.txt"))
    _write(root / "etc/os-release", capture("os-release.txt"))
    _write(root / "proc/sys/kernel/osrelease", capture("uname.txt").split()[2] + "\n")
    route = capture("ip-route.txt").splitlines()
    _write(root / "proc/net/route", "\n".join(line for line in route if not line.startswith("bash:")) + "\n")
    for line in capture("net-devices.txt").splitlines():
        name, driver = line.split()[0], line.split()[1].split("=", 1)[1]
        (root / "sys/class/net" / name).mkdir(parents=True, exist_ok=True)
        if driver:
            target = root / "sys/bus/virtio/drivers" / driver
            target.mkdir(parents=True, exist_ok=True)
            (root / "sys/class/net" / name / "device").mkdir()
            os.symlink(target, root / "sys/class/net" / name / "device" / "driver")
    return root
