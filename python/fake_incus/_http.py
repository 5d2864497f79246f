"""A small HTTP/1.1 client over a Unix socket (and HTTPS with a client certificate), standard library only."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Union


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client`` over a Unix socket: ``UnixHTTPConnection("/path/unix.socket")``."""

    def __init__(self, path: str, timeout: Optional[float] = 60.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


@dataclass
class Response:
    """One HTTP answer: its status, headers and body (``json()`` decodes it)."""

    status: int
    headers: Dict[str, str]
    body: bytes = field(repr=False)

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


Body = Union[None, bytes, str, Mapping[str, Any], list]


def request(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: Body = None,
    headers: Optional[Mapping[str, str]] = None,
) -> Response:
    """Sends one request on a fresh connection and reads the whole answer."""
    sent_headers = dict(headers or {})
    payload: Optional[bytes]
    if body is None:
        payload = None
    elif isinstance(body, bytes):
        payload = body
    elif isinstance(body, str):
        payload = body.encode("utf-8")
    else:
        payload = json.dumps(body).encode("utf-8")
        sent_headers.setdefault("Content-Type", "application/json")
    try:
        connection.request(method, path, body=payload, headers=sent_headers)
        answer = connection.getresponse()
        data = answer.read()
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, data)
    finally:
        connection.close()


def unix(path: str, timeout: Optional[float] = 60.0) -> UnixHTTPConnection:
    return UnixHTTPConnection(path, timeout=timeout)


def https(
    address: str, client_cert: str, client_key: str, server_cert: str, timeout: Optional[float] = 60.0
) -> http.client.HTTPSConnection:
    """HTTPS to ``host:port`` with this client certificate, trusting ``server_cert`` alone (pinned)."""
    context = ssl.create_default_context(cafile=server_cert)
    context.load_cert_chain(client_cert, client_key)
    host, _, port = address.rpartition(":")
    return http.client.HTTPSConnection(host.strip("[]"), int(port), context=context, timeout=timeout)
