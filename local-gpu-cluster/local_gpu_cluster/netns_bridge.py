"""The network of a pod whose process runs in a network namespace of its own (``operator_processes``, ``netns``).

A pod has its own network: its container binds the ports the chart gives it (``:9443`` for two KAI Scheduler
components at once, with no flag to move them) and reaches the API server at the address its ServiceAccount
environment names. A process started with ``unshare --net`` has only a loopback device; this program, run inside
that namespace before the process, joins it to the machine's network through Unix sockets, which belong to the file
system and so cross namespaces:

* ``--api HOST:PORT``: it listens on that address inside the namespace, and each connection goes through the pod
  network's proxy (``--proxy``, the HTTP CONNECT proxy of ``pod_network.py``) to the same address on the machine:
  the API server, with the certificate it already has for 127.0.0.1;
* ``--serve PORT=PATH``: it listens on the Unix socket PATH, and each connection goes to PORT inside the namespace:
  the pod network routes ``<pod IP>:PORT`` there (webhooks), and the readiness probe uses it.

It binds everything first and then forks: the parent's exit tells the shell that started it that the namespace is
joined, so the process that follows finds its API server at once. The child lasts as long as that shell's process
(which ``exec``s the container's process) and ends with it.

Usage: ``python -P netns_bridge.py --proxy <socket> [--api 127.0.0.1:6443] [--serve 9443=<socket>]...``
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import sys
import threading

# run as a script with ``python -P`` (its folder is not on the path: local_gpu_cluster/selectors.py would hide the
# standard library's); the folder holding the package is, after the standard library
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the folder holding local_gpu_cluster
from local_gpu_cluster.pod_network import connect, pump, read_head, unix_listener  # noqa: E402  # pylint: disable=wrong-import-position  # see above


def through_proxy(proxy, address):
    """A socket to ``address`` (``host:port``) on the machine, opened by the pod network's CONNECT proxy."""
    upstream = connect(proxy)
    upstream.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (address, address)).encode())
    head = read_head(upstream)[0] or b""  # nothing comes before the 200's blank line: the tunnel is then ours
    if not head.startswith(b"HTTP/1.1 200"):
        upstream.close()
        raise OSError("the pod network refused %s: %s" % (address, head.split(b"\r\n", 1)[0].decode("latin-1")))
    upstream.settimeout(None)
    return upstream


def _relay(client, opener):
    with client:
        try:
            upstream = opener()
        except OSError as exc:
            print("netns_bridge: %s" % exc, file=sys.stderr)
            return
        with upstream:
            pump(client, upstream)


def _accept(listener, opener):
    while True:
        try:
            client = listener.accept()[0]
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, opener), daemon=True).start()


def listeners(args):
    """[(listening socket, how to open its upstream)] for every ``--api`` and ``--serve``."""
    out = []
    for address in args.api:
        host, port = address.rsplit(":", 1)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind((host, int(port)))
        tcp.listen(64)
        out.append((tcp, lambda address=address: through_proxy(args.proxy, address)))
    for item in args.serve:
        port, path = item.split("=", 1)
        unix = unix_listener(path)
        out.append((unix, lambda port=int(port): connect(("127.0.0.1", port))))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--proxy", required=True, help="the pod network's CONNECT proxy (a Unix socket)")
    parser.add_argument("--api", action="append", default=[], help="HOST:PORT reached through the proxy")
    parser.add_argument("--serve", action="append", default=[], help="PORT=SOCKET: the namespace's port on a socket")
    args = parser.parse_args(argv)
    watched = os.getppid()  # the shell that runs the process next (it execs it: the same pid)
    try:
        bound = listeners(args)
        watch = os.pidfd_open(watched)
    except OSError as exc:
        print("netns_bridge: cannot join the pod's network: %s" % exc, file=sys.stderr)
        return 1
    if os.fork():
        return 0  # joined: the shell goes on
    os.setsid()
    for listener, opener in bound:
        threading.Thread(target=_accept, args=(listener, opener), daemon=True).start()
    select.select([watch], [], [])  # readable when the process ends
    for listener in (entry[0] for entry in bound):
        if listener.family == socket.AF_UNIX:
            try:
                os.unlink(listener.getsockname())
            except OSError:
                pass
    os._exit(0)  # pylint: disable=protected-access  # the forked child leaves without the parent's exit handlers


if __name__ == "__main__":
    sys.exit(main())
