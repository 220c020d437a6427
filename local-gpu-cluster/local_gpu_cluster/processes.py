"""Start the components in order, wait until each is ready, record their pids; stop exactly those.

``build/cluster/state.json`` records each started process (pid, start time as the kernel
knows it, command, log), so ``down`` never signals a process it did not start: a recorded pid
whose start time differs belongs to someone else now and is left alone.
"""

import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import ClusterError

LOG_TAIL = 15


class State:
    """The cluster's state directory (``build/cluster`` by default)."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.file = self.dir / "state.json"
        self.kubeconfig = self.dir / "kubeconfig"
        self.logs = self.dir / "logs"

    def load(self):
        if not self.file.exists():
            return {"components": {}, "ports": {}}
        try:
            return json.loads(self.file.read_text())
        except ValueError:
            raise ClusterError("%s is not valid JSON: run `make cluster-down` (it stops what it can find) "
                               "and start again" % self.file) from None

    def save(self, data):
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))  # insertion order = start order (stop reverses it)
        os.replace(tmp, self.file)


def start_time(pid):
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(record):
    """True when the recorded process still runs (same pid and same start time, not a zombie)."""
    pid = record.get("pid")
    if not pid or start_time(pid) != record.get("start_time"):
        return False
    try:
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def tail(path, lines=LOG_TAIL):
    try:
        return "\n".join("    " + line for line in Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "    (no log at %s)" % path


def port_free(port, host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_ports(names, fixed=None):
    """A free loopback port for each name; ``fixed`` ports (from the environment) are checked, not picked."""
    fixed = fixed or {}
    ports, holders = {}, []
    for name in names:
        if name in fixed:
            if not port_free(fixed[name]):
                raise ClusterError("port %d on 127.0.0.1 is already in use, so %s cannot listen there: stop what "
                                   "holds it (`ss -ltnp 'sport = :%d'` shows it) or unset %s to let cluster-up "
                                   "pick a free port" % (fixed[name], name, fixed[name], env_name(name)))
            ports[name] = fixed[name]
            continue
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        holders.append(sock)  # held until all are picked, so no two names get the same port
        ports[name] = sock.getsockname()[1]
    for sock in holders:
        sock.close()
    return ports


def env_name(component):
    return "CLUSTER_PORT_" + component.upper().replace("-", "_")


def _get(url, context, timeout=2):
    request = urllib.request.Request(url)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (OSError, ssl.SSLError) as exc:
        return None, str(exc)


def tls_context(pki, client_cert, verify=True):
    if not verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context = ssl.create_default_context(cafile=str(pki.ca))
    if client_cert:
        context.load_cert_chain(str(pki.cert("client-admin")), str(pki.key("client-admin")))
    return context


def start(component, state, pki, timeout):
    """Start one component and wait for its health URL; on failure the message names it and shows its log."""
    state.logs.mkdir(parents=True, exist_ok=True)
    log = state.logs / ("%s.log" % component.name)
    env = dict(os.environ, **component.env)
    with open(log, "ab") as out:
        out.write(("--- started %s: %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), " ".join(component.argv))).encode())
        out.flush()
        try:
            proc = subprocess.Popen(component.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=env, cwd=str(state.dir))
        except OSError as exc:
            raise ClusterError("%s could not be started: %s (run `make cluster-build`)" % (component.name, exc)) from None
    record = {"pid": proc.pid, "start_time": start_time(proc.pid), "log": str(log), "argv": component.argv}
    context = tls_context(pki, component.client_cert, component.verify) if component.health.startswith("https") else None
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise ClusterError("%s exited with status %d while starting. Last lines of its log:\n%s\nFull log: %s"
                               % (component.name, code, tail(log), log))
        status, body = _get(component.health, context)
        if status == 200:
            return record
        last = "%s %s" % (status or "no answer:", body.strip()[:300])
        time.sleep(0.25)
    _signal(record, signal.SIGKILL)
    raise ClusterError("%s did not become ready within %d s (%s answered: %s). Last lines of its log:\n%s\n"
                       "Full log: %s" % (component.name, timeout, component.health, last, tail(log), log))


def _signal(record, signum):
    if alive(record):
        try:
            os.killpg(record["pid"], signum)
        except ProcessLookupError:
            pass
        except PermissionError:
            os.kill(record["pid"], signum)


def stop(records, grace=10):
    """Stop the recorded processes in reverse start order: SIGTERM, then SIGKILL after ``grace`` s."""
    stopped = []
    for name, record in reversed(list(records.items())):
        if not alive(record):
            continue
        _signal(record, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive(record) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(record):
            _signal(record, signal.SIGKILL)
            while alive(record):
                time.sleep(0.05)
        stopped.append(name)
    return stopped


def dead(records):
    """The recorded components that no longer run, each with the end of its log."""
    return [(name, record) for name, record in records.items() if not alive(record)]
