"""Small loopback servers and process helpers for the HAProxy and dnsmasq tests.

Every server binds 127.0.0.1 on a free port and is stopped by the test that started it.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from loopback import LOOPBACK, free_port, wait_for_port  # noqa: F401  (re-exported for the OpenShift tests)
from procs import stop  # noqa: F401  (re-exported for the OpenShift tests)


class TcpResponder:
    """Accepts connections and answers each with its name (a stand-in node port)."""

    def __init__(self, name: str):
        self.name = name
        self.hits = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((LOOPBACK, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                try:
                    conn.sendall(f"{self.name}\n".encode())
                except OSError:
                    pass  # a health check that already hung up
                self.hits += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def make_cert(directory: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for the TLS stand-ins (openssl CLI)."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=api-test"],
        check=True, capture_output=True, timeout=30,
    )
    return cert, key


class TlsApiResponder:
    """A TLS HTTP stand-in for a kube-apiserver: /readyz (200 or 500) and /whoami (its name)."""

    def __init__(self, name: str, cert: Path, key: Path, healthy: bool = True):
        self.name = name
        self.healthy = healthy
        self.whoami_hits = 0
        self.readyz_hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                if self.path == "/readyz":
                    outer.readyz_hits += 1
                    code, body = (200, "ok") if outer.healthy else (500, "not ready")
                elif self.path == "/whoami":
                    outer.whoami_hits += 1
                    code, body = 200, outer.name
                else:
                    code, body = 404, "no"
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=2)


def https_get(port: int, path: str, timeout_s: float = 3.0) -> str:
    """GET over TLS through a proxy port; certificate not verified (a throwaway test cert)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(LOOPBACK, port, context=ctx, timeout=timeout_s)
    try:
        conn.request("GET", path)
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def tcp_read(port: int, timeout_s: float = 3.0) -> str:
    with socket.create_connection((LOOPBACK, port), timeout=timeout_s) as s:
        s.settimeout(timeout_s)
        return s.recv(256).decode().strip()


_ENDPOINT = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})\b")


def remap_endpoints(text: str, target: Callable[[str, int], int]) -> tuple[str, dict[tuple[str, int], int]]:
    """Replace every address:port in `text` by 127.0.0.1:<target(address, port)>; nothing else changes."""
    mapping: dict[tuple[str, int], int] = {}

    def swap(match: re.Match) -> str:
        key = (match.group(1), int(match.group(2)))
        if key not in mapping:
            mapping[key] = target(*key)
        return f"{LOOPBACK}:{mapping[key]}"

    return _ENDPOINT.sub(swap, text), mapping


