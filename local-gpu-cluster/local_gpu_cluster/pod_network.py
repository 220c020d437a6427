"""The pod network of the local cluster, as far as the API server needs it: an HTTP CONNECT proxy on a Unix socket.

On a real cluster the API server reaches an admission webhook, a CRD conversion webhook or an aggregated API (an
``APIService``) at the Service's endpoints: a pod IP and the container's port. On the local cluster KWOK gives each pod
an IP and nothing listens there; the operators whose real process runs for their pod
(``local_gpu_cluster/operator_processes.py``) listen on loopback ports of their own, since they share this machine's
network.

The API server is started with ``--enable-aggregator-routing=true`` (it dials an endpoint's pod IP and port, as it
does when no kube-proxy serves ClusterIPs) and an egress selector that sends its ``cluster`` traffic (webhooks,
aggregated APIs, kubelets) through this proxy (``HTTPConnect`` over a Unix socket, the protocol the Konnectivity
server speaks). The proxy connects ``<pod IP>:<container port>`` to the loopback port of the process that serves it,
and any other address directly, as the node's network would: a pod IP nothing serves is refused, so a webhook whose
process is not running fails the way it fails on a cluster.
"""

from __future__ import annotations

import ipaddress
import os
import select
import socket
import threading

CONNECT_TIMEOUT = 5.0
HEAD_LIMIT = 16384


class PodNetwork:
    """``(pod IP, port) -> loopback port``, and the proxy that uses it (``serve``)."""

    def __init__(self, pod_ranges=("10.0.0.0/8",)):
        self._routes = {}
        self._lock = threading.Lock()
        self.pod_ranges = [ipaddress.ip_network(r) for r in pod_ranges]
        self._server = None
        self.path = None

    def add(self, pod_ip, port, target):
        """``<pod IP>:<port>`` leads to ``target``: a loopback port (int), or the path of a Unix socket (a process in
        a network namespace of its own, reached through ``netns_bridge.py``)."""
        with self._lock:
            self._routes[(pod_ip, int(port))] = target if isinstance(target, str) else int(target)

    def remove(self, pod_ip, ports):
        with self._lock:
            for port in ports:
                self._routes.pop((pod_ip, int(port)), None)

    def route(self, host, port):
        """Where a connection to ``host:port`` goes: ``("127.0.0.1", port)`` or a Unix socket's path, or None when it
        is a pod address that nothing serves (refused), or the address itself (the machine's own network)."""
        with self._lock:
            local = self._routes.get((host, int(port)))
        if isinstance(local, str):
            return local
        if local is not None:
            return ("127.0.0.1", local)
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return (host, int(port))
        if any(address in network for network in self.pod_ranges):
            return None
        return (host, int(port))

    # ------------------------------------------------------------ the proxy

    def serve(self, path):
        """Listen on the Unix socket ``path`` (replacing a stale one) in a thread of its own."""
        listener = unix_listener(path)
        self._server, self.path = listener, path
        threading.Thread(target=self._accept, name="pod-network", daemon=True).start()
        return self

    def close(self):
        if self._server is not None:
            self._server.close()
            self._server = None
            if self.path and os.path.exists(self.path):
                os.unlink(self.path)

    def _accept(self):
        while self._server is not None:
            try:
                client = self._server.accept()[0]
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), name="pod-network-tunnel", daemon=True).start()

    def _tunnel(self, client):
        with client:
            head, early = read_head(client)
            if head is None:
                return
            answer, upstream = self._open(head.split(b"\r\n", 1)[0].decode("latin-1"))
            client.sendall(answer)
            if upstream is None:
                return
            with upstream:
                if early:
                    upstream.sendall(early)
                pump(client, upstream)

    def _open(self, request_line):
        """The reply to a ``CONNECT host:port HTTP/1.1`` line and the connection it opened (None when refused)."""
        parts = request_line.split()
        if len(parts) != 3 or parts[0] != "CONNECT":
            return b"HTTP/1.1 405 Method Not Allowed\r\n\r\n", None
        host, port = parts[1].rpartition(":")[::2]
        host = host.strip("[]")
        if not port.isdigit():
            return b"HTTP/1.1 400 Bad Request\r\n\r\n", None
        target = self.route(host, int(port))
        if target is None:
            return ("HTTP/1.1 503 Service Unavailable\r\n\r\nno process serves the pod address %s:%s\n"
                    % (host, port)).encode(), None
        try:
            upstream = connect(target)
        except OSError as exc:
            return ("HTTP/1.1 503 Service Unavailable\r\n\r\n%s:%s: %s\n" % (host, port, exc)).encode(), None
        upstream.settimeout(None)
        return b"HTTP/1.1 200 Connection established\r\n\r\n", upstream


def unix_listener(path):
    """A socket listening on the Unix socket ``path`` (a stale one replaced), for its owner only."""
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def read_head(sock):
    """(the HTTP head read from ``sock`` up to its blank line, the bytes read after it), or (None, b"") when the
    peer closes first or the head passes HEAD_LIMIT."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk or len(head) > HEAD_LIMIT:
            return None, b""
        head += chunk
    head, rest = head.split(b"\r\n\r\n", 1)
    return head, rest


def connect(target, timeout=CONNECT_TIMEOUT):
    """A connected socket to ``target``: ``(host, port)``, or a Unix socket's path."""
    if isinstance(target, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(target)
        except OSError:
            sock.close()
            raise
        return sock
    return socket.create_connection(target, timeout=timeout)


def pump(one, other):
    """Copy bytes both ways until either side closes."""
    sockets = [one, other]
    while True:
        readable = select.select(sockets, [], [], 300)[0]
        if not readable:
            return
        for source in readable:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                (other if source is one else one).sendall(data)
            except OSError:  # the other side went (a process stopped, a client gave up)
                return
