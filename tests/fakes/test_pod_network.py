"""pod_network: the API server's egress proxy connects a pod's address to the process that serves it."""

import socket
import threading

import pytest

from .pod_network import PodNetwork


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
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(1024)
            if not chunk:
                break
            head += chunk
        status, rest = (head.split(b"\r\n\r\n", 1) + [b""])[:2]
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
