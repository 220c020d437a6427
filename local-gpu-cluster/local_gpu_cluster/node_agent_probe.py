"""The host preflight's probe pods on the local cluster: what their script prints, from the node's declared host.

``ProbeLogs`` (a ``SmokeLogs`` for the pods labelled ``gpu-platform.io/host-probe``) writes each probe pod's log
once it runs on a node; KWOK completes the pod only then (``fleet.STAGES``). The log is not canned: the agent reads
the pod's real command (``sh -c <script>``), runs each request line of the script (``q <kind> "<host path or
glob>"``, ``echo "$M ..."``) against the node's host as ``host_tree`` builds it from the declared hardware
(``fake.gpu-platform.io/hardware``: kernel, OS, runtime, GPUs, NICs, driver, and its ``host`` entry: ``files``,
``modules``, ``absent``), and prints what the script would: a request the node's host does not answer prints as
absent. A script that asks for a file the node does not declare gets ``absent``, as a host without it would.
"""

import re
import shlex

from .node_agent_smoke import SmokeLogs

PROBE = "gpu-platform.io/host-probe"
CONTAINER = "host-probe"
CONTAINERD_VERSION = re.compile(r"containerd://(\d+)\.")
ROUTE_HEADER = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def _driver_files(driver):
    version = driver["version"]
    if driver.get("open", True):
        text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U22)\n" % version
    else:
        text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Release Build  (dvs-builder@U22)\n" % version
    modules = ("nvidia_uvm 4956160 0 - Live 0x0 (O)\n"
               "nvidia 54308864 1 nvidia_uvm, Live 0x0 (O)\n")
    return text, modules


def host_tree(hardware):
    """{host path: (kind, value)}: text files (str), ``hex`` (bytes), ``link`` and ``real`` targets, ``dir``."""
    kernel = hardware.get("kernel") or "6.8.0-60-generic"
    os_info = hardware.get("os") or {}
    host = hardware.get("host") or {}
    tree = {
        "/proc/sys/kernel/osrelease": ("text", kernel + "\n"),
        "/etc/os-release": ("text", 'PRETTY_NAME="%s"\nID=%s\nVERSION_ID="%s"\n' % (
            os_info.get("image", ""), os_info.get("id", "ubuntu"), os_info.get("version_id", ""))),
        "/proc/cpuinfo": ("text", "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae\n"),
        "/proc/cmdline": ("text", "BOOT_IMAGE=/boot/vmlinuz-%s root=/dev/sda1 ro\n" % kernel),
        "/proc/net/route": ("text", ROUTE_HEADER + "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"),
        "/sys/class/net/eth0/device/driver": ("link", "../../../../bus/pci/drivers/ixgbe"),
        "/sys/firmware/efi": ("dir", None),
        SECURE_BOOT: ("hex", b"\x06\x00\x00\x00\x00"),
        "/lib/modules/%s" % kernel: ("dir", None),
        "/lib/modules/%s/build" % kernel: ("dir", None),
    }
    modules = "".join(line.rstrip("\n") + "\n" for line in host.get("modules") or [])
    if hardware.get("driver"):
        version_text, driver_modules = _driver_files(hardware["driver"])
        tree["/proc/driver/nvidia/version"] = ("text", version_text)
        modules += driver_modules
    tree["/proc/modules"] = ("text", modules)
    match = CONTAINERD_VERSION.match(hardware.get("runtime") or "")
    if match:
        tree["/etc/containerd/config.toml"] = ("text", "version = %d\n" % (3 if int(match.group(1)) >= 2 else 2))
    devices = []
    gpus = hardware.get("gpus") or {}
    for index in range(gpus.get("count") or 0):
        devices.append(("0000:%02x:00.0" % (0x10 + index), "0x10de", "0x030200", "0x" + gpus["pci_device"]))
    nics = hardware.get("nics") or {}
    for index in range(nics.get("count") or 0):
        klass = "0x020700" if nics.get("link_type") == "infiniband" else "0x020000"
        devices.append(("0000:%02x:00.0" % (0x80 + index), "0x" + nics["vendor"], klass, "0x" + nics["device"]))
    for address, vendor, klass, device in devices:
        base = "/sys/bus/pci/devices/" + address
        tree[base] = ("real", "/sys/devices/pci0000:00/" + address)
        for attr, value in (("vendor", vendor), ("class", klass), ("device", device)):
            tree["%s/%s" % (base, attr)] = ("text", value + "\n")
    for path, text in (host.get("files") or {}).items():
        tree[path] = ("text", text)
    for gone in host.get("absent") or []:
        tree = {path: entry for path, entry in tree.items() if path != gone and not path.startswith(gone + "/")}
    return tree


def _glob(pattern):
    return re.compile("^%s$" % "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in pattern))


def _paths(tree):
    """Every path of the tree and the folders above them."""
    out = set(tree)
    for path in tree:
        parts = path.split("/")
        out.update("/".join(parts[:end]) for end in range(2, len(parts)))
    return out


def _kind_of(tree, path):
    if path in tree:
        return tree[path][0]
    return "dir"  # a folder above a declared path


def _top(text):
    out = []
    for line in text.splitlines(True):
        if re.match(r"^\s*\[", line):
            break
        out.append(line)
    return "".join(out)


def _answer(kind, path, tree, marker, mellanox):
    """What the script's ``q`` prints for one match (None: the match does not count, as the script's continue)."""
    have = _kind_of(tree, path)
    value = tree.get(path, (None, None))[1]
    if kind in ("text", "top", "tables", "flags", "hex") and have not in ("text", "hex"):
        return None
    if kind == "text":
        return "%s text %s\n%s\n" % (marker, path, value)
    if kind == "top":
        return "%s top %s\n%s\n" % (marker, path, _top(value))
    if kind == "tables":
        return "%s tables %s\n%s\n" % (marker, path, "".join(
            line for line in value.splitlines(True) if re.match(r"^\s*\[", line)))
    if kind == "flags":
        flags = next((line for line in value.splitlines(True) if line.startswith("flags")), "")
        return "%s flags %s\n%s\n" % (marker, path, flags)
    if kind == "hex":
        data = value if isinstance(value, bytes) else value.encode()
        return "%s hex %s\n %s\n\n" % (marker, path, " ".join("%02x" % b for b in data[:4096]))
    if kind == "real":
        return "%s real %s\n%s\n" % (marker, path, value if have == "real" else path)
    if kind == "link":
        return "%s link %s\n%s\n" % (marker, path, value) if have == "link" else None
    if kind == "dir":
        return "%s dir %s\n" % (marker, path) if have in ("dir", "real") else None
    if kind == "any":
        return "%s any %s\n" % (marker, path)
    if kind == "bridge":
        klass = (tree.get(path + "/class", (None, ""))[1] or "")
        config = tree.get(path + "/config")
        if not mellanox or not klass.startswith("0x0604") or config is None:
            return None
        return _answer("hex", path + "/config", tree, marker, mellanox)
    return None


def run_script(script, hardware):
    """What ``script`` (the probe pod's ``sh -c`` argument) prints on a node of ``hardware``."""
    tree = host_tree(hardware)
    paths = sorted(_paths(tree))
    marker = re.search(r"^M='([^']*)'$", script, re.M).group(1)
    release = tree.get("/proc/sys/kernel/osrelease", (None, ""))[1].strip()
    mellanox = any(v[1] == "0x15b3\n" for p, v in tree.items() if p.endswith("/vendor"))
    out = []
    for line in script.splitlines():
        words = shlex.split(line) if line.startswith(("q ", "echo \"$M ")) else []
        if words[:1] == ["q"] and len(words) == 3:
            kind, pattern = words[1], words[2].replace("$R", release)
            regex = _glob(pattern)
            answers = [_answer(kind, path, tree, marker, mellanox) for path in paths if regex.match(path)]
            answers = [a for a in answers if a is not None]
            out.extend(answers or ["%s absent %s\n" % (marker, pattern)])
        elif words[:1] == ["echo"]:
            out.append(words[1].replace("$M", marker) + "\n")
    return "".join(out)


class ProbeLogs(SmokeLogs):
    """The probe pods' logs (see the module docstring), written and removed as SmokeLogs writes a smoke pod's."""

    LABEL = PROBE

    def _log(self, pod, container):
        if container != CONTAINER:
            return ""
        dummy, hardware = self._node(pod["spec"]["nodeName"])
        command = next(c for c in pod["spec"]["containers"] if c["name"] == container).get("command") or []
        if command[:2] != ["sh", "-c"] or len(command) < 3:
            return "sh: unexpected command %r\n" % (command,)
        return run_script(command[2], hardware)
