# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The host preflight without SSH: a read-only probe Job per GPU node, its script, its objects and its log.

Private to the collection: not a public API. Pure: standard library only, no I/O.

In direct mode without hosts in ``gpu_hosts`` (docs/preflight.md), workflows/host_probe.py runs one Job per GPU node
whose pod mounts the host paths the preflight reads (read-only hostPath volumes under ``/host``) and prints them with
``script()``. ``LoggedFiles`` answers, from that log, the same questions adapters/host_reader.py's ``LocalFiles``
answers from a file system, so ``host_reader.collect`` and ``readings.summarize`` turn a node's log into the same
``gpu_host_checks`` fact a host read over SSH gives, and ``findings.evaluate`` judges it the same way.

The script prints only what the parsers use: of containerd's and CRI-O's TOML files only the top-level lines
(``version``, ``imports``) and the table headers (a registry's credentials in them never reach the log); of
/proc/cpuinfo only its first ``flags`` line. A request that matches nothing prints an ``absent`` line.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ToolError

MARKER = "@@gpu-platform-probe@@"
FORMAT = "1"
HOST_ROOT = "/host"
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
NAMESPACE = "gpu-platform-host-probe"
LABEL = "gpu-platform.io/host-probe"
CONTAINER = "host-probe"
# The host folders the pod mounts read-only under /host. Each exists on every Linux node (a hostPath of type Directory
# is checked, never created: /lib/modules is missing on some VMs, so /lib is mounted, a link to usr/lib where /usr is
# merged). /usr holds /usr/src (kernel headers) and /usr/lib/os-release (/etc/os-release links to it); /proc is the
# host's (its net/ follows the reader's network namespace: hostNetwork makes it the node's).
HOST_PATHS = ("/etc", "/proc", "/sys", "/usr", "/lib")
# What the script prints: (kind, host path or glob). ``$R`` is the kernel release. Kinds: text (the file), top (a
# TOML file's lines before its first table), tables (its table headers), flags (cpuinfo's first flags line), hex (the
# first 4096 bytes, as hex), real (the resolved path), link (a symlink's target), dir (a folder is there), any (the
# path is there), bridge (the config space of each PCI bridge, only where a Mellanox device is: ACS).
REQUESTS = (
    ("top", "/etc/containerd/*.toml"), ("top", "/etc/containerd/*/*.toml"),
    ("tables", "/etc/crio/crio.conf"), ("tables", "/etc/crio/crio.conf.d/*"),
    ("text", "/etc/os-release"), ("flags", "/proc/cpuinfo"), ("text", "/proc/sys/kernel/osrelease"),
    ("text", "/proc/modules"), ("text", "/proc/driver/nvidia/version"), ("text", "/proc/cmdline"),
    ("text", "/proc/net/route"), ("text", "/proc/net/ipv6_route"),
    ("hex", SECURE_BOOT), ("dir", "/sys/firmware/efi"),
    ("text", "/sys/bus/pci/devices/*/vendor"), ("text", "/sys/bus/pci/devices/*/class"),
    ("text", "/sys/bus/pci/devices/*/device"), ("real", "/sys/bus/pci/devices/*"),
    ("text", "/sys/bus/pci/devices/*/iommu_group/type"), ("bridge", "/sys/bus/pci/devices/*"),
    ("text", "/sys/module/nvidia/taint"),
    ("dir", "/lib/modules/$R"), ("any", "/lib/modules/$R/build"), ("any", "/usr/src/linux-headers-$R"),
    ("any", "/usr/src/kernels/$R"),
    ("link", "/sys/class/net/*/device/driver"), ("any", "/sys/class/net/*/lower_*"),
    ("any", "/sys/kernel/iommu_groups/*"),
)
FILE_KINDS = ("text", "top", "tables", "flags", "hex")
_HEADER = re.compile(r"^%s (begin|end|absent|%s) ?(.*)$" % (re.escape(MARKER), "|".join(
    FILE_KINDS + ("real", "link", "dir", "any"))))
# Each kind's shell: "$f" is the match, "$p" its host path. Every file's text ends with one echo (the parser takes it
# off again), so a file without a final newline reads back as it is.
_SHELL = {
    "text": '[ -f "$f" ] || continue; echo "$M text $p"; cat "$f"; echo',
    "top": '[ -f "$f" ] || continue; echo "$M top $p"; sed "/^[[:space:]]*\\[/,\\$d" "$f"; echo',
    "tables": '[ -f "$f" ] || continue; echo "$M tables $p"; grep "^[[:space:]]*\\[" "$f"; echo',
    "flags": '[ -f "$f" ] || continue; echo "$M flags $p"; grep -m1 "^flags" "$f"; echo',
    "hex": '[ -f "$f" ] || continue; echo "$M hex $p"; head -c 4096 "$f" | od -An -v -tx1; echo',
    "real": 'r=$(readlink -f "$f"); echo "$M real $p"; echo "${r#"$H"}"',
    "link": '[ -L "$f" ] || continue; echo "$M link $p"; readlink "$f"',
    "dir": '[ -d "$f" ] || continue; echo "$M dir $p"',
    "any": '[ -e "$f" ] || [ -L "$f" ] || continue; echo "$M any $p"',
    "bridge": '[ -n "$MLX" ] || continue; case "$(cat "$f/class" 2>/dev/null)" in 0x0604*) ;; *) continue;; esac; '
              'echo "$M hex $p/config"; head -c 4096 "$f/config" 2>/dev/null | od -An -v -tx1; echo',
}


def _call(kind, pattern):
    """One request as a line of the script: ``q <kind> "<pattern>"`` (double quotes: ``$R`` expands, the glob does
    not until ``q`` expands it under the root)."""
    return 'q %s "%s"' % (kind, pattern)


def script():
    """The probe pod's shell script (POSIX sh; coreutils, sed and grep): every request of REQUESTS, under
    ``$GPU_PLATFORM_PROBE_ROOT`` (default /host)."""
    lines = [
        'H="${GPU_PLATFORM_PROBE_ROOT:-%s}"' % HOST_ROOT,
        "M='%s'" % MARKER,
        'R="$(cat "$H/proc/sys/kernel/osrelease" 2>/dev/null)"',
        'MLX="$(grep -l 0x15b3 "$H"/sys/bus/pci/devices/*/vendor 2>/dev/null)"',
        "q() {",
        '  kind="$1"; found=""',
        '  for f in $H$2; do',
        '    [ -e "$f" ] || [ -L "$f" ] || continue',
        '    p="${f#"$H"}"; found=1',
        '    case "$kind" in',
    ]
    lines += ["      %s) %s;;" % (kind, shell) for kind, shell in sorted(_SHELL.items())]
    lines += [
        "    esac",
        "  done",
        '  [ -n "$found" ] || echo "$M absent $2"',
        "}",
        'echo "$M begin %s"' % FORMAT,
    ]
    lines += [_call(kind, pattern) for kind, pattern in REQUESTS]
    lines += ['echo "$M end"', "exit 0"]
    return "\n".join(lines) + "\n"


def _glob_regex(pattern):
    """A shell glob as a regular expression over whole paths: ``*`` and ``?`` do not cross a ``/``."""
    out = []
    for char in pattern:
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
    return re.compile("^%s$" % "".join(out))


def parse(log):
    """The probe's log -> {host path: (kind, value)}: text for the file kinds (hex as bytes), the target for real
    and link, None for dir and any. A log without its begin and end lines (the pod cut short) is refused."""
    entries, current, lines = {}, None, []
    begun = ended = False

    def close():
        if current is None:
            return
        kind, path = current
        text = "".join(lines)
        if kind == "hex":
            try:
                entries[path] = (kind, bytes.fromhex(" ".join(text.split())))
            except ValueError:
                entries[path] = (kind, None)
        elif kind in FILE_KINDS:
            entries[path] = (kind, text[:-1] if text.endswith("\n") else text)
        elif kind in ("real", "link"):
            entries[path] = (kind, text.strip())
        else:
            entries[path] = (kind, None)

    for line in (log or "").splitlines(True):
        match = _HEADER.match(line.rstrip("\n"))
        if not match:
            lines.append(line)
            continue
        close()
        current, lines = None, []
        word, rest = match.groups()
        if word == "begin":
            begun = True
        elif word == "end":
            ended = True
        elif word != "absent":
            current = (word, rest)
    close()
    if not (begun and ended):
        raise ToolError("the host probe's log is incomplete (no %s line): the pod stopped before it printed "
                        "everything" % ("begin" if not begun else "end"))
    return entries


class LoggedFiles:
    """The files a probe's log printed, answering what adapters/host_reader.py's ``LocalFiles`` answers. A path's
    folders are there when anything under it was printed, as on a file system."""

    def __init__(self, entries):
        self.entries = dict(entries)
        self.dirs = set()
        for path, (kind, dummy) in self.entries.items():
            parts = path.split("/")
            for end in range(2, len(parts)):
                self.dirs.add("/".join(parts[:end]))
            if kind == "dir":
                self.dirs.add(path)

    def text(self, path):
        kind, value = self.entries.get(path, (None, None))
        return value if kind in ("text", "top", "tables", "flags") else None

    def data(self, path, size=4096):
        kind, value = self.entries.get(path, (None, None))
        return value[:size] if kind == "hex" and value is not None else None

    def glob(self, pattern):
        regex = _glob_regex(pattern)
        return sorted(path for path in set(self.entries) | self.dirs if regex.match(path))

    def real(self, path):
        kind, value = self.entries.get(path, (None, None))
        return value if kind == "real" else path

    def link_name(self, path):
        kind, value = self.entries.get(path, (None, None))
        return value.rstrip("/").rsplit("/", 1)[-1] if kind == "link" and value else ""

    def isdir(self, path):
        return path in self.dirs

    def isfile(self, path):
        return self.entries.get(path, (None, None))[0] in FILE_KINDS

    def exists(self, path):
        return path in self.entries or path in self.dirs


def pci(files):
    """{address: {vendor, class, device}} as gpu_host_facts reads sysfs (an attribute not printed is '')."""
    out = {}
    for device in files.glob("/sys/bus/pci/devices/*"):
        out[device.rsplit("/", 1)[-1]] = {attr: files.text("%s/%s" % (device, attr)) or ""
                                          for attr in ("vendor", "class", "device")}
    return out


# -- the objects ------------------------------------------------------------------------------------------------

# baseline refuses hostPath volumes and hostNetwork (https://kubernetes.io/docs/concepts/security/pod-security-standards/):
# the probe needs both, so its own namespace enforces privileged; its container is not privileged.
NAMESPACE_LABELS = {LABEL: "true", "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged", "pod-security.kubernetes.io/audit": "privileged"}
_NAME = re.compile(r"[^a-z0-9-]+")


def job_name(node):
    """``host-probe-<node, shortened>-<hash>``: a valid, unique name for any node name."""
    digest = hashlib.sha256(node.encode("utf-8")).hexdigest()[:8]
    stem = _NAME.sub("-", node.lower()).strip("-")[:40].strip("-")
    return "host-probe-%s-%s" % (stem, digest) if stem else "host-probe-%s" % digest


def namespace_object(namespace=NAMESPACE):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(NAMESPACE_LABELS)}}


def _volume_name(path):
    return "host" + path.replace("/", "-")


def job(node, image, namespace=NAMESPACE, timeout=300):
    """The probe Job for ``node``: one pod pinned to it (``nodeName``, every taint tolerated), on the node's network,
    with HOST_PATHS mounted read-only under /host, running ``script()`` once."""
    labels = {LABEL: "true", "app.kubernetes.io/managed-by": "gpu_platform.cluster"}
    pod_spec = {
        "nodeName": node,
        "hostNetwork": True,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "tolerations": [{"operator": "Exists"}],
        "containers": [{
            "name": CONTAINER, "image": image, "command": ["sh", "-c", script()],
            "securityContext": {"runAsUser": 0, "privileged": False, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            "volumeMounts": [{"name": _volume_name(path), "mountPath": HOST_ROOT + path, "readOnly": True}
                             for path in HOST_PATHS],
        }],
        "volumes": [{"name": _volume_name(path), "hostPath": {"path": path, "type": "Directory"}}
                    for path in HOST_PATHS],
    }
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name(node), "namespace": namespace, "labels": dict(labels)},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": timeout,
                     "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}}}
