"""Write an ``incus-operations-adapter/1`` adapter in Python.

The conformance harness (``incus-conformance certify``) judges an implementation of the Incus
operations in any language through an *adapter*: it sends one call at a time (the operation, its
input, the caller's scopes, the Incus to use and what the host's callbacks answer) and takes the
result object back. This module does the protocol; you write one function::

    from fake_incus.adapter import AdapterRequest, serve_stdio

    def handle(request: AdapterRequest) -> dict:
        host = MyHost(request.backend, request.host)      # your implementation's host object
        return my_operations.run(request.operation, request.input,
                                 host=host, caller=request.caller, scopes=request.scopes)

    if __name__ == "__main__":
        serve_stdio(handle)                                # JSON lines on stdin/stdout

then ``incus-conformance certify --adapter 'python3 my_adapter.py'``, or from pytest,
``fake_incus.certify.certify(handle).assert_passed()``. ``request.host`` is a
:class:`ScriptedHost`: the callbacks as the request scripts them (``binding()``,
``authorize()``, ``image_remote(name)``, ``allow_restricted(items)``), ready to be called by
your implementation where its host would be. :class:`ReferenceAdapter` forwards a request to the
reference implementation, for the operations yours does not implement yet.

The protocol is described in ``conformance/adapter-protocol/README.md`` of the source tree.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _binaries

PROTOCOL = "incus-operations-adapter/1"

SCOPES = ("incus.read", "incus.write", "incus.exec", "incus.delete")


class HostCallbackFailed(Exception):
    """A host callback scripted ``fail``: the host cannot decide (an error the implementation reports)."""


class HostCallbackCrashed(Exception):
    """A host callback scripted ``crash``: the callback raises, as a host with a bug does."""


@dataclass(frozen=True)
class UnixBackend:
    """The Incus to use is at this Unix socket (the trial's fake)."""

    unix_socket: str
    timeout_ms: Optional[int] = None
    stream_timeout_ms: Optional[int] = None
    max_stream_bytes: Optional[int] = None


@dataclass(frozen=True)
class HttpsBackend:
    """The Incus to use is this HTTPS URL, with this client identity and the server certificate
    pinned (all PEM text); :meth:`files` writes them where a client library wants files."""

    url: str
    client_cert: str = field(repr=False)
    client_key: str = field(repr=False)
    server_cert: str = field(repr=False)
    timeout_ms: Optional[int] = None
    stream_timeout_ms: Optional[int] = None
    max_stream_bytes: Optional[int] = None

    @contextmanager
    def files(self) -> Iterator[Tuple[str, str, str]]:
        """``(client_cert, client_key, server_cert)`` file paths, removed after the block."""
        with tempfile.TemporaryDirectory(prefix="incus-adapter-") as directory:
            paths = []
            for name, text in (("client.crt", self.client_cert), ("client.key", self.client_key), ("server.crt", self.server_cert)):
                path = os.path.join(directory, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                os.chmod(path, 0o600)
                paths.append(path)
            yield paths[0], paths[1], paths[2]


Backend = Union[UnixBackend, HttpsBackend]


def _backend(raw: Mapping[str, Any]) -> Backend:
    bounds = {k: raw.get(k) for k in ("timeout_ms", "stream_timeout_ms", "max_stream_bytes")}
    if "unix_socket" in raw:
        return UnixBackend(str(raw["unix_socket"]), **bounds)
    https = raw.get("https") or {}
    return HttpsBackend(
        url=str(https.get("url", "")),
        client_cert=str(https.get("client_cert", "")),
        client_key=str(https.get("client_key", "")),
        server_cert=str(https.get("server_cert", "")),
        **bounds,
    )


@dataclass(frozen=True)
class Binding:
    """What an allowed ``binding`` callback gives: the Incus to use, and the project."""

    backend: Backend
    project: str


class ScriptedHost:
    """The host's callbacks as the request scripts them.

    Each callback's scripted answer is ``allow``, ``deny``, ``fail`` (raises
    :class:`HostCallbackFailed`), ``crash`` (raises :class:`HostCallbackCrashed`) or ``hang``
    (never returns: the implementation's callback bound, :attr:`callback_timeout` seconds, must
    end the wait). Absent callbacks are the reference host's defaults: binding allowed in project
    ``default``, authorize allowed, no image remote, restricted input denied.
    """

    def __init__(self, raw: Optional[Mapping[str, Any]], backend: Backend) -> None:
        self.raw: Dict[str, Any] = dict(raw or {})
        self.backend = backend
        self.callback_timeout: float = float(self.raw.get("callback_timeout_ms", 300)) / 1000.0

    def answer(self, callback: str) -> str:
        """The scripted answer of ``callback`` (``binding``, ``authorize``, ``image_remote``,
        ``allow_restricted``): ``allow``, ``deny``, ``fail``, ``crash`` or ``hang``."""
        default = "deny" if callback == "allow_restricted" else "allow"
        return str((self.raw.get(callback) or {}).get("answer", default))

    def _decide(self, callback: str) -> bool:
        answer = self.answer(callback)
        if answer == "allow":
            return True
        if answer == "deny":
            return False
        if answer == "fail":
            raise HostCallbackFailed(f"the host cannot decide {callback} (scripted: fail)")
        if answer == "crash":
            raise HostCallbackCrashed(f"the host's {callback} callback crashed (scripted: crash)")
        if answer == "hang":
            # Never returns on its own: bounded only so that an abandoned thread ends one day.
            threading.Event().wait(3600.0)
            raise HostCallbackFailed(f"the host's {callback} callback hung for an hour (scripted: hang)")
        raise HostCallbackFailed(f"unknown scripted answer {answer!r} for {callback}")

    def binding(self) -> Optional[Binding]:
        """The Incus the caller uses and the project (None: the host refuses)."""
        if not self._decide("binding"):
            return None
        return Binding(self.backend, str((self.raw.get("binding") or {}).get("project") or "default"))

    def authorize(self) -> bool:
        """Whether the caller may run the operation."""
        return self._decide("authorize")

    def image_remote(self, name: str) -> Optional[Dict[str, Any]]:
        """The image remote of that name (``{"server", "protocol"}``), None when unknown or refused."""
        if not self._decide("image_remote"):
            return None
        remote = (self.raw.get("image_remotes") or {}).get(name)
        return dict(remote) if remote is not None else None

    def allow_restricted(self, items: Sequence[Mapping[str, Any]]) -> bool:
        """Whether restricted input may pass: ``items`` as the protocol writes them
        (``{"kind": "config_key", "key": ...}``, ``{"kind": "device", "name": ..., "type": ...}``)."""
        if not self._decide("allow_restricted"):
            return False
        only = (self.raw.get("allow_restricted") or {}).get("only")
        if only is None:
            return True
        return all(any(all(item.get(k) == v for k, v in entry.items()) for entry in only) for item in items)


@dataclass(frozen=True)
class AdapterRequest:
    """One call: the operation and its input (unchanged: unknown names and malformed input are
    valid tests), the caller's verified scopes, the caller, the backend and the scripted host."""

    operation: str
    input: Any
    scopes: List[str]
    caller: str
    backend: Backend
    host: ScriptedHost
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "AdapterRequest":
        backend = _backend(raw.get("backend") or {})
        return cls(
            operation=str(raw.get("operation", "")),
            input=raw.get("input"),
            scopes=[str(s) for s in raw.get("scopes") or []],
            caller=str(raw.get("caller", "")),
            backend=backend,
            host=ScriptedHost(raw.get("host"), backend),
            raw=dict(raw),
        )


Handler = Callable[[AdapterRequest], Mapping[str, Any]]


def answer(handler: Handler, message: Union[str, bytes]) -> Dict[str, Any]:
    """The answer to one request (its JSON text): the handler's result, or ``{"adapter_error":
    why}`` when the request cannot be read or the handler raised."""
    try:
        raw = json.loads(message)
    except ValueError as error:
        return {"adapter_error": f"not JSON: {error}"}
    if not isinstance(raw, dict):
        return {"adapter_error": "a request is a JSON object"}
    if raw.get("protocol") != PROTOCOL:
        return {"adapter_error": f"this adapter speaks {PROTOCOL}, not {raw.get('protocol')!r}"}
    try:
        result = handler(AdapterRequest.from_json(raw))
    except Exception as error:  # the implementation's bug: the trial fails with its reason
        last = traceback.extract_tb(error.__traceback__)[-1]
        return {"adapter_error": f"the implementation raised {type(error).__name__}: {error} ({last.filename}:{last.lineno})"}
    return dict(result)


def serve_stdio(handler: Handler, stdin: Optional[IO[str]] = None, stdout: Optional[IO[str]] = None) -> None:
    """The standard input and output transport: one request per line in, one answer per line
    out, in order, until standard input closes."""
    source = stdin if stdin is not None else sys.stdin
    sink = stdout if stdout is not None else sys.stdout
    for line in source:
        if not line.strip():
            continue
        sink.write(json.dumps(answer(handler, line)) + "\n")
        sink.flush()


class HttpAdapter:
    """The HTTP transport, in this process: each request is a ``POST`` body, the answer the body
    of a 200. ``HttpAdapter(handle).url`` is what ``--adapter-url`` takes; ``stop()`` ends it."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        class Handle(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.dumps(answer(handler, self.rfile.read(length))).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handle)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="incus-adapter", daemon=True)
        self._thread.start()
        address, bound = self._server.server_address[:2]
        host_text = address.decode() if isinstance(address, bytes) else str(address)
        self.url = f"http://{host_text}:{bound}/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "HttpAdapter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class ReferenceAdapter:
    """The reference implementation (the project's core, ``incus-conformance adapter``) behind a
    call: ``ReferenceAdapter()(request)`` is what the reference answers. Thread-safe: one child
    process per thread that calls it. Forward the operations yours does not implement yet::

        reference = ReferenceAdapter()

        def handle(request):
            if request.operation == "incus_instance_list":
                return my_instance_list(request)
            return reference(request)
    """

    def __init__(self, command: Union[None, str, Sequence[str]] = None) -> None:
        if command is None:
            self._argv = [_binaries.find(_binaries.INCUS_CONFORMANCE), "adapter"]
        elif isinstance(command, str):
            self._argv = shlex.split(command)
        else:
            self._argv = list(command)
        self._local = threading.local()
        self._children: List[subprocess.Popen] = []
        self._lock = threading.Lock()

    def _child(self) -> subprocess.Popen:
        child = getattr(self._local, "child", None)
        if child is None or child.poll() is not None:
            try:
                child = subprocess.Popen(
                    self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
                )
            except OSError as error:
                raise _binaries.unusable(self._argv[0], error) from error
            self._local.child = child
            with self._lock:
                self._children.append(child)
        return child

    def call(self, raw: Mapping[str, Any]) -> Dict[str, Any]:
        """Sends one raw request (a dict in the protocol's shape) and returns the answer."""
        child = self._child()
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(dict(raw)) + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the reference adapter ({' '.join(self._argv)}) closed its output")
        return json.loads(line)

    def __call__(self, request: AdapterRequest) -> Dict[str, Any]:
        return self.call(request.raw)

    def close(self) -> None:
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            _binaries.end(child, lambda p: p.stdin.close() if p.stdin is not None else None)

    def __enter__(self) -> "ReferenceAdapter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

