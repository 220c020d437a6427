"""pod_network: the API server's egress proxy connects a pod's address to the process that serves it."""

import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from local_gpu_cluster.pod_network import PodNetwork, read_head


@pytest.fixture
def echo():
    """A loopback server that answers each line with ``echo: <line>``; yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn = listener.accept()[0]
            except OSError:
                return
            with conn:
                data = conn.recv(1024)
                conn.sendall(b"echo: " + data)
    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def connect(path, target, payload=b"ping\n"):
    """What the API server's HTTPConnect dialer does: CONNECT over the Unix socket, then the payload."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        status, rest = read_head(sock)
        status = status or b""
        if not status.startswith(b"HTTP/1.1 200"):
            return status.split(b"\r\n")[0].decode(), rest.decode()
        sock.sendall(payload)
        return status.split(b"\r\n")[0].decode(), sock.recv(1024).decode()


@pytest.fixture
def network(tmp_path):
    net = PodNetwork(["10.0.0.0/24"]).serve(str(tmp_path / "pod-network.sock"))
    yield net
    net.close()


def test_a_pods_port_reaches_the_process_serving_it_and_nothing_else(network, echo):
    network.add("10.0.0.7", 9443, echo)
    assert connect(network.path, "10.0.0.7:9443") == ("HTTP/1.1 200 Connection established", "echo: ping\n")
    status, body = connect(network.path, "10.0.0.7:8443")  # a port of that pod nobody serves
    assert status.startswith("HTTP/1.1 503") and "no process serves the pod address 10.0.0.7:8443" in body
    network.remove("10.0.0.7", [9443])  # the process stopped
    assert connect(network.path, "10.0.0.7:9443")[0].startswith("HTTP/1.1 503")


def test_an_address_outside_the_pod_network_is_dialled_as_it_is(network, echo):
    # a kubelet (KWOK serves the nodes' logs on loopback) is reached directly, as on the node's network
    assert connect(network.path, "127.0.0.1:%d" % echo) == ("HTTP/1.1 200 Connection established", "echo: ping\n")


def test_anything_but_connect_is_refused(network):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(network.path)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 405")


# A pod's process for the network-namespace test: it serves 9443 (every interface, as controller-runtime's webhook
# server does) and answers with its name and what it read from the "API server" at the address it was given.
POD_PROCESS = """
import http.server, sys, urllib.request
name, api = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("%s saw %s" % (name, urllib.request.urlopen("http://" + api, timeout=5).read().decode())).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", 9443), Handler).serve_forever()
"""


def _get_over(path):
    """GET / through the Unix socket ``path``: the body, or None while nothing answers there."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(path)
            sock.sendall(b"GET / HTTP/1.0\r\nHost: pod\r\n\r\n")
            data = b""
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    return data.split(b"\r\n\r\n", 1)[1].decode() if b" 200 " in data.split(b"\r\n", 1)[0] else None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"),
                    reason="a network namespace needs root, unshare (util-linux) and ip (iproute2)")
def test_two_processes_in_namespaces_of_their_own_serve_the_same_port_and_reach_the_api_server(network, tmp_path):
    """What KAI's queue and pod-group controllers need (both serve :9443, no flag moves it): each in its own network
    namespace (operator_processes.in_own_network) binds 9443, reaches the machine's 127.0.0.1:<API port> through the
    pod network, and is reached at its pod IP's 9443 through its own socket; when it ends its bridge goes too."""
    from local_gpu_cluster.operator_processes import in_own_network
    api = socket.socket()
    api.bind(("127.0.0.1", 0))
    api.listen(8)
    address = "127.0.0.1:%d" % api.getsockname()[1]

    def serve_api():
        while True:
            try:
                conn = api.accept()[0]
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\napi")
    threading.Thread(target=serve_api, daemon=True).start()
    procs, sockets = {}, {}
    try:
        for name in ("queue", "podgroup"):
            sockets[name] = str(tmp_path / ("%s-9443.sock" % name))
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-ec",
                    "exec %s -c %s %s %s" % (sys.executable, shlex.quote(POD_PROCESS), name, address)]
            procs[name] = subprocess.Popen(in_own_network(argv, network.path, address, {9443: sockets[name]}),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        answers = {}
        while time.monotonic() < deadline and len(answers) < 2:
            answers = {n: a for n, a in ((n, _get_over(p)) for n, p in sockets.items()) if a}
            time.sleep(0.1)
        assert answers == {"queue": "queue saw api", "podgroup": "podgroup saw api"}, \
            {n: p.poll() for n, p in procs.items()}
        network.add("10.0.0.9", 9443, sockets["podgroup"])  # the API server dials the pod's address
        status, body = connect(network.path, "10.0.0.9:9443", b"GET / HTTP/1.0\r\n\r\n")
        assert status == "HTTP/1.1 200 Connection established" and body.startswith("HTTP/1.0 200")
        procs["queue"].terminate()
        procs["queue"].wait(10)
        deadline = time.monotonic() + 10
        while os.path.exists(sockets["queue"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(sockets["queue"])  # its bridge ended with it
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        api.close()
