"""A running ``fake-incus serve``, driven through its control socket."""

from __future__ import annotations

import http.client
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _binaries, _http
from .errors import (
    ControlError,
    FakeStopped,
    JournalTimeout,
    RuleRejected,
    SocketPathTooLong,
    StartError,
    UnknownMember,
    UnknownSnapshot,
    VerificationFailed,
)

# sun_path holds 108 bytes on Linux, the last one the terminating NUL (104 on macOS and BSDs).
SOCKET_PATH_LIMIT = 107 if sys.platform.startswith("linux") else 103

State = Dict[str, Any]
Matcher = Dict[str, Any]


@dataclass(frozen=True)
class Member:
    """A member of a fake cluster: a daemon of its own to clients."""

    name: str
    unix_socket: str
    https_url: Optional[str]
    https_address: Optional[str]


@dataclass(frozen=True)
class JournalEntry:
    """One request the fake received (the fields of the fake's journal; ``raw`` has them all)."""

    seq: int
    method: str
    path: str
    query: Optional[str]
    listener: str
    trusted: bool
    applied: bool
    faults: List[str]
    answer: Dict[str, Any]
    body: Optional[str]
    member: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> "JournalEntry":
        return cls(
            seq=int(entry.get("seq", 0)),
            method=str(entry.get("method", "")),
            path=str(entry.get("path", "")),
            query=entry.get("query"),
            listener=str(entry.get("listener", "")),
            trusted=bool(entry.get("trusted", False)),
            applied=bool(entry.get("applied", False)),
            faults=list(entry.get("faults") or []),
            answer=dict(entry.get("answer") or {}),
            body=entry.get("body"),
            member=entry.get("member"),
            raw=dict(entry),
        )

    @property
    def status(self) -> Optional[int]:
        """The HTTP status answered (None: a fault answered nothing, or no answer yet)."""
        code = self.answer.get("code")
        return int(code) if code is not None else None

    def json(self) -> Any:
        """The request body decoded as JSON (None when there was none)."""
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Journal:
    """A page of the journal: the kept entries after ``since``, and how many were let go."""

    entries: List[JournalEntry]
    dropped: int
    limit: int
    last_seq: int


@dataclass(frozen=True)
class Verification:
    """What ``POST /verify`` answered (``nearest``: the closest misses, each with its ``misses``)."""

    passed: bool
    matched: int
    matches: List[int]
    nearest: List[Dict[str, Any]]
    failed_step: Optional[int]
    raw: Dict[str, Any] = field(repr=False)

    def explain(self) -> str:
        lines = [f"expected {self.raw.get('expected', '?')}, matched {self.matched}"]
        if self.failed_step is not None:
            lines.append(f"the sequence broke at step {self.failed_step}")
        for near in self.nearest:
            entry = near.get("entry", near)
            misses = near.get("misses", [])
            lines.append(
                f"  nearest: #{entry.get('seq')} {entry.get('method')} {entry.get('path')}: " + "; ".join(misses)
            )
        return "\n".join(lines)


def _short_tempdir() -> str:
    """A new private directory whose socket paths fit: under $TMPDIR, else under /tmp."""
    base = tempfile.gettempdir()
    # Room for the deepest path a fake makes: DIR/<member>/unix.socket with a 16-byte member name.
    if len(os.fsencode(base)) + len("/fake-incus-XXXXXXXX/") + 16 + len("/unix.socket") > SOCKET_PATH_LIMIT:
        base = "/tmp"
    return tempfile.mkdtemp(prefix="fake-incus-", dir=base)


def _check_socket_path(path: str, what: str) -> None:
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_LIMIT:
        raise SocketPathTooLong(
            f"{what} {path} is {size} bytes long; Unix socket paths hold at most {SOCKET_PATH_LIMIT} bytes. "
            "Give the fake a shorter directory (FakeIncus.start(directory='/tmp/f1'), or leave directory "
            "out to get one under /tmp), or set TMPDIR to a shorter directory.",
            path,
            SOCKET_PATH_LIMIT,
        )


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child
    """Linux: the fake gets SIGTERM if the process that started it dies without stopping it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _stop_process(process: subprocess.Popen, directory: Optional[str]) -> None:
    _binaries.end(process, lambda p: p.send_signal(signal.SIGTERM))
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class FakeIncus:
    """A fake Incus daemon (``fake-incus serve``) for one test or a whole session.

    Start one with :meth:`start` (or the pytest fixture ``fake_incus``), point clients at
    :attr:`unix_socket` (or :attr:`https_url` with the certificates), script faults, read the
    journal, and stop it with :meth:`stop` (or a ``with`` block)::

        with FakeIncus.start() as fake:
            subprocess.run(["incus", "launch", "busybox", "c1"], env={**os.environ, **fake.env}, check=True)
            fake.verify(method="POST", path="/1.0/instances", count=1)
    """

    def __init__(
        self,
        process: subprocess.Popen,
        ready: Mapping[str, Any],
        directory: str,
        owns_directory: bool,
        binary: str,
        incus_version: Optional[str],
    ) -> None:
        self._process = process
        self._ready = dict(ready)
        self.directory = directory
        self.binary = binary
        self.requested_incus_version = incus_version
        self.unix_socket: str = str(ready["unix_socket"])
        self.control_socket: str = str(ready["control_socket"])
        self.https_url: Optional[str] = ready.get("https_url")
        self.https_address: Optional[str] = ready.get("https_address")
        self.server_cert: str = str(ready["server_cert"])
        self.client_cert: str = str(ready["client_cert"])
        self.client_key: str = str(ready["client_key"])
        self._members = [
            Member(name, str(m["unix_socket"]), m.get("https_url"), m.get("https_address"))
            for name, m in (ready.get("members") or {}).items()
        ]
        self._down: set = set()
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(
            self, _stop_process, process, directory if owns_directory else None
        )
        self.incus_conf = os.path.join(directory, "incus-conf")
        self.write_incus_conf(self.incus_conf)

    # ----- starting and stopping -------------------------------------------------------------

    @classmethod
    def start(
        cls,
        *,
        https: bool = False,
        cluster: Optional[Sequence[str]] = None,
        incus_version: Optional[str] = None,
        state: Union[None, State, str, os.PathLike] = None,
        rules: Iterable[Mapping[str, Any]] = (),
        directory: Union[None, str, os.PathLike] = None,
        cluster_timings: str = "fast",
        seed: int = 0,
        trust: Iterable[Union[str, os.PathLike]] = (),
        journal_limit: Optional[int] = None,
        operation_retention_ms: Optional[int] = None,
        exec_connect_timeout_ms: Optional[int] = None,
        exec_start_delay_ms: Optional[int] = None,
        binary: Optional[str] = None,
        ready_timeout: float = 30.0,
        extra_args: Sequence[str] = (),
    ) -> "FakeIncus":
        """Starts ``fake-incus serve`` and returns once it is ready (within ``ready_timeout`` s).

        - ``https``: also serve HTTPS with mutual TLS on a free loopback port.
        - ``cluster``: member names (``["m1", "m2", "m3"]``): a fake cluster, one socket each.
          ``cluster_timings`` is ``"fast"`` (member-down phases in milliseconds, the default here)
          or ``"real"`` (the real daemon's seconds); ``seed`` pins their draws.
        - ``incus_version``: the Incus line to imitate (``"6.0"``, ``"7.0"``); None: the fake's default.
        - ``state``: the start state (the fake's seed format) as a dict or a JSON file; ``reset()``
          goes back to it.
        - ``rules``: fault rules installed from the start (see :mod:`fake_incus.faults`).
        - ``directory``: where its sockets, certificates and log go (default: a new temporary
          directory, removed at stop).
        """
        binary = _binaries.find(_binaries.FAKE_INCUS, binary)
        version_flag = _binaries.check_line(binary, incus_version)
        owns = directory is None
        work = _short_tempdir() if directory is None else os.fspath(directory)
        os.makedirs(work, exist_ok=True)
        try:
            socket_path = os.path.join(work, "unix.socket")
            control = os.path.join(work, "control.socket")
            _check_socket_path(socket_path, "the fake's socket")
            _check_socket_path(control, "the fake's control socket")
            for name in cluster or ():
                _check_socket_path(os.path.join(work, name, "unix.socket"), f"member {name}'s socket")
            argv = [binary, "serve", "--unix", socket_path, "--control", control, "--tls-dir", os.path.join(work, "tls")]
            if https:
                argv.append("--https=127.0.0.1:0")
            if cluster:
                argv += ["--cluster", ",".join(cluster), "--cluster-timings", cluster_timings, "--seed", str(seed)]
            if version_flag is not None:
                argv += ["--incus-version", version_flag]
            if state is not None:
                if isinstance(state, (str, os.PathLike)):
                    state_file = os.fspath(state)
                else:
                    state_file = os.path.join(work, "state.json")
                    with open(state_file, "w", encoding="utf-8") as f:
                        json.dump(state, f)
                argv += ["--state", state_file]
            rules = list(rules)
            if rules:
                script = os.path.join(work, "rules.json")
                with open(script, "w", encoding="utf-8") as f:
                    json.dump(rules, f)
                argv += ["--script", script]
            for cert in trust:
                argv += ["--trust", os.fspath(cert)]
            for flag, value in (
                ("--journal-limit", journal_limit),
                ("--operation-retention-ms", operation_retention_ms),
                ("--exec-connect-timeout-ms", exec_connect_timeout_ms),
                ("--exec-start-delay-ms", exec_start_delay_ms),
            ):
                if value is not None:
                    argv += [flag, str(value)]
            argv += list(extra_args)
            ready = cls._spawn(argv, work, ready_timeout)
        except BaseException:
            if owns:
                shutil.rmtree(work, ignore_errors=True)
            raise
        process, line = ready
        return cls(process, line, work, owns, binary, incus_version)

    @staticmethod
    def _spawn(argv: List[str], work: str, ready_timeout: float) -> Tuple[subprocess.Popen, Dict[str, Any]]:
        log_path = os.path.join(work, "fake-incus.log")
        log = open(log_path, "wb")
        main_thread = threading.current_thread() is threading.main_thread()
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") and main_thread else None,
            )
        except OSError as error:
            raise _binaries.unusable(argv[0], error) from error
        finally:
            log.close()

        def failure(why: str) -> StartError:
            with open(log_path, "rb") as f:
                stderr = f.read().decode("utf-8", "replace")[-4000:]
            return StartError(
                f"fake-incus serve {why}.\ncommand: {' '.join(argv)}\nits standard error:\n{stderr or '(empty)'}",
                stderr,
                process.returncode,
            )

        deadline = time.monotonic() + ready_timeout
        buffer = b""
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    _stop_process(process, None)
                    raise failure(f"did not say it was ready within {ready_timeout} s")
                if selector.select(timeout=min(left, 0.5)):
                    chunk = os.read(process.stdout.fileno(), 65536)
                    if not chunk:
                        process.wait(timeout=10)
                        raise failure(f"exited with status {process.returncode} before it was ready")
                    buffer += chunk
        line = buffer.split(b"\n", 1)[0]
        try:
            return process, json.loads(line)
        except ValueError:
            _stop_process(process, None)
            raise failure(f"printed {line[:200]!r} instead of its ready line")

    def stop(self) -> None:
        """Stops the fake (SIGTERM, then SIGKILL after 10 s) and removes its temporary directory."""
        self._finalizer()

    @property
    def running(self) -> bool:
        return self._finalizer.alive and self._process.poll() is None

    @property
    def pid(self) -> int:
        return self._process.pid

    def __enter__(self) -> "FakeIncus":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<FakeIncus {self.unix_socket} pid={self._process.pid}{' stopped' if not self.running else ''}>"

    @property
    def incus_version(self) -> str:
        """The Incus version the fake answers as (``environment.server_version`` of ``GET /1.0``)."""
        return str(self.api("GET", "/1.0").json()["metadata"]["environment"]["server_version"])

    @property
    def log(self) -> str:
        """What the fake wrote on its standard error so far (``RUST_LOG=fake_incus=debug`` says more)."""
        try:
            with open(os.path.join(self.directory, "fake-incus.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # ----- for clients -----------------------------------------------------------------------

    @property
    def env(self) -> Dict[str, str]:
        """``INCUS_SOCKET`` and ``INCUS_CONF`` for the official ``incus`` client (and tools that read them)."""
        return {"INCUS_SOCKET": self.unix_socket, "INCUS_CONF": self.incus_conf}

    def write_incus_conf(self, directory: str) -> str:
        """Writes an ``INCUS_CONF`` directory for the official client: remote ``local`` is the Unix
        socket (with ``INCUS_SOCKET``), ``fake`` the HTTPS listener (client certificate and pinned
        server certificate in place), and each cluster member a remote of its name (its socket)."""
        os.makedirs(os.path.join(directory, "servercerts"), exist_ok=True)
        remotes = ["  local:", "    addr: unix://", "    public: false"]
        if self.https_url:
            shutil.copyfile(self.client_cert, os.path.join(directory, "client.crt"))
            shutil.copyfile(self.client_key, os.path.join(directory, "client.key"))
            os.chmod(os.path.join(directory, "client.key"), 0o600)
            shutil.copyfile(self.server_cert, os.path.join(directory, "servercerts", "fake.crt"))
            remotes += [
                "  fake:",
                f"    addr: {self.https_url}",
                "    auth_type: tls",
                "    protocol: incus",
                "    public: false",
            ]
        for member in self._members:
            remotes += [f"  {member.name}:", f"    addr: unix://{member.unix_socket}", "    protocol: incus", "    public: false"]
        with open(os.path.join(directory, "config.yml"), "w", encoding="utf-8") as f:
            f.write("default-remote: local\nremotes:\n" + "\n".join(remotes) + "\naliases: {}\n")
        return directory

    def incus(
        self,
        *args: str,
        member: Optional[str] = None,
        input: Optional[str] = None,
        check: bool = True,
        timeout: float = 120.0,
    ) -> subprocess.CompletedProcess:
        """Runs the official ``incus`` client against the fake (through ``member``'s socket if
        given) and returns its completed process (text output); ``check`` raises on failure,
        showing its standard error."""
        incus = shutil.which("incus")
        if incus is None:
            raise FileNotFoundError(
                "the official `incus` client is not on PATH (Debian 12: `apt-get install -t bookworm-backports incus-client`)"
            )
        env = {**os.environ, **self.env}
        if member is not None:
            env["INCUS_SOCKET"] = self.member(member).unix_socket
        done = subprocess.run(
            [incus, *args], env=env, input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        return done

    def api(
        self,
        method: str,
        path: str,
        body: _http.Body = None,
        *,
        member: Optional[str] = None,
        https: bool = False,
        headers: Optional[Mapping[str, str]] = None,
        timeout: float = 60.0,
    ) -> _http.Response:
        """One request to the Incus API (``fake.api("GET", "/1.0/instances").json()``), on the Unix
        socket (of ``member`` if given) or with ``https=True`` over HTTPS as the trusted client."""
        connection: http.client.HTTPConnection
        if https:
            address = self.member(member).https_address if member else self.https_address
            if not address:
                raise ValueError("this fake serves no HTTPS: start it with https=True")
            connection = _http.https(address, self.client_cert, self.client_key, self.server_cert, timeout)
        else:
            connection = _http.unix(self.member(member).unix_socket if member else self.unix_socket, timeout)
        return _http.request(connection, method, path, body, headers)

    # ----- the control socket ----------------------------------------------------------------

    def _control(self, method: str, path: str, body: _http.Body = None, timeout: float = 70.0) -> _http.Response:
        if not self.running:
            raise FakeStopped(f"the fake ({self.unix_socket}) has stopped; its log:\n{self.log[-2000:]}")
        try:
            return _http.request(_http.unix(self.control_socket, timeout), method, path, body)
        except OSError as error:
            if not self.running:
                raise FakeStopped(f"the fake stopped while asked {method} {path}; its log:\n{self.log[-2000:]}") from error
            raise

    def _control_json(self, method: str, path: str, body: _http.Body = None, ok: Sequence[int] = (200,)) -> Any:
        answer = self._control(method, path, body)
        if answer.status not in ok:
            payload = _json_or_text(answer)
            message = payload.get("error") if isinstance(payload, dict) else payload
            raise ControlError(f"{method} {path}: {answer.status} {message}", answer.status, payload)
        return answer.json()

    def reset(self) -> None:
        """Back to the start state: resources, files, operations, exec sessions and journal
        entries as at start. Fault rules stay (``clear_rules()`` removes them)."""
        self._control_json("POST", "/reset")

    def state(self) -> State:
        """The whole state, in the seed format (``start(state=...)`` and ``set_state`` take it)."""
        return self._control_json("GET", "/state")

    def set_state(self, state: State) -> None:
        """Replaces the whole state (the seed format)."""
        self._control_json("PUT", "/state", state)

    # Rules

    def add_rules(self, *rules: Mapping[str, Any]) -> int:
        """Installs fault rules (see :mod:`fake_incus.faults`); all or none: a rule the fake refuses
        raises :class:`RuleRejected` with its reason and nothing is installed."""
        answer = self._control("POST", "/rules", list(rules))
        payload = _json_or_text(answer)
        if answer.status == 400:
            message = payload.get("error") if isinstance(payload, dict) else payload
            raise RuleRejected(f"the fake refused the rules: {message}", 400, payload)
        if answer.status != 200:
            raise ControlError(f"POST /rules: {answer.status} {payload}", answer.status, payload)
        return int(payload.get("installed", len(rules)))

    def rules(self) -> List[Dict[str, Any]]:
        """The installed rules, in order, with their match counts."""
        return self._control_json("GET", "/rules")

    def clear_rules(self) -> None:
        self._control_json("DELETE", "/rules")

    # Journal

    def journal(self, since: int = 0) -> Journal:
        """The kept journal entries after ``since`` (a ``seq``), and how many were let go."""
        page = self._control_json("GET", f"/journal?since={int(since)}")
        return Journal(
            [JournalEntry.from_json(e) for e in page.get("entries", [])],
            int(page.get("dropped", 0)),
            int(page.get("limit", 0)),
            int(page.get("last_seq", 0)),
        )

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last request so far: pass it as ``since`` to look only after it."""
        return self.journal(since=1 << 62).last_seq

    def clear_journal(self) -> None:
        self._control_json("DELETE", "/journal")

    def requests(
        self,
        method: Optional[str] = None,
        path: Optional[str] = None,
        *,
        query: Optional[Mapping[str, str]] = None,
        body: Any = None,
        since: int = 0,
    ) -> List[JournalEntry]:
        """The kept requests that match (the fake's matcher: ``*``/``**`` path patterns, query
        parameters, a body the request's contains), in arrival order."""
        result = self.verify(
            method=method, path=path, query=query, body=body, since=since, at_least=0, raise_on_failure=False
        )
        wanted = set(result.matches)
        return [e for e in self.journal(since=since).entries if e.seq in wanted]

    def wait_for(
        self,
        method: Optional[str] = None,
        path: str = "/**",
        *,
        count: int = 1,
        since: int = 0,
        timeout: float = 5.0,
    ) -> List[JournalEntry]:
        """Waits until ``count`` kept requests after ``since`` match, and returns them; raises
        :class:`JournalTimeout` (an AssertionError) with what did arrive after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            params = {"path": path, "count": str(count), "since": str(since), "timeout_ms": str(min(left_ms, 60000))}
            if method:
                params["method"] = method
            answer = self._control("GET", "/journal/wait?" + urllib.parse.urlencode(params))
            payload = _json_or_text(answer)
            if answer.status == 200:
                return [JournalEntry.from_json(e) for e in payload.get("entries", [])]
            if answer.status != 408:
                raise ControlError(f"GET /journal/wait: {answer.status} {payload}", answer.status, payload)
            if time.monotonic() >= deadline:
                entries = payload.get("entries", [])
                raise JournalTimeout(
                    f"waited {timeout} s for {count} request(s) {method or '*'} {path} after #{since}; "
                    f"{payload.get('matched', 0)} arrived",
                    int(payload.get("matched", 0)),
                    entries,
                )

    def verify(
        self,
        method: Optional[str] = None,
        path: Optional[str] = None,
        *,
        query: Optional[Mapping[str, str]] = None,
        body: Any = None,
        count: Optional[int] = None,
        at_least: Optional[int] = None,
        at_most: Optional[int] = None,
        since: Optional[int] = None,
        raise_on_failure: bool = True,
    ) -> Verification:
        """Checks the journal: ``count=N`` exactly N matching requests, or ``at_least``/``at_most``
        (neither: at least one). Raises :class:`VerificationFailed` (an AssertionError) showing the
        nearest misses, unless ``raise_on_failure=False``."""
        matcher = _matcher(method, path, query, body)
        for key, value in (("count", count), ("at_least", at_least), ("at_most", at_most), ("since", since)):
            if value is not None:
                matcher[key] = value
        return self._verify(matcher, raise_on_failure)

    def verify_sequence(self, *steps: Matcher, since: Optional[int] = None, raise_on_failure: bool = True) -> Verification:
        """Checks that requests matching each step arrived in this order (others may come
        between); a step is a dict of ``method``, ``path``, ``query``, ``body``."""
        matcher: Dict[str, Any] = {"sequence": [dict(s) for s in steps]}
        if since is not None:
            matcher["since"] = since
        return self._verify(matcher, raise_on_failure)

    def _verify(self, matcher: Matcher, raise_on_failure: bool) -> Verification:
        answer = self._control("POST", "/verify", matcher)
        payload = _json_or_text(answer)
        if answer.status != 200:
            message = payload.get("error") if isinstance(payload, dict) else payload
            raise ControlError(f"POST /verify refused {matcher}: {message}", answer.status, payload)
        result = Verification(
            passed=bool(payload.get("pass")),
            matched=int(payload.get("matched", 0) or 0),
            matches=list(payload.get("matches") or []),
            nearest=list(payload.get("nearest") or []),
            failed_step=payload.get("failed_step"),
            raw=payload,
        )
        if raise_on_failure and not result.passed:
            raise VerificationFailed(f"the journal does not hold {json.dumps(matcher)}:\n{result.explain()}", payload)
        return result

    # Named snapshots

    def save_snapshot(self, name: str) -> None:
        """Saves the whole state under ``name`` (replacing one of that name)."""
        self._control_json("POST", f"/snapshots/{urllib.parse.quote(name, safe='')}")

    def restore_snapshot(self, name: str) -> None:
        """Goes back to a saved state, as ``reset()`` goes back to the start state."""
        answer = self._control("POST", f"/snapshots/{urllib.parse.quote(name, safe='')}/restore")
        if answer.status == 404:
            raise UnknownSnapshot(f"no snapshot named {name!r} (saved: {self.snapshots()})", 404, _json_or_text(answer))
        if answer.status != 200:
            raise ControlError(f"restore {name}: {answer.status} {answer.text}", answer.status, _json_or_text(answer))

    def delete_snapshot(self, name: str) -> None:
        answer = self._control("DELETE", f"/snapshots/{urllib.parse.quote(name, safe='')}")
        if answer.status == 404:
            raise UnknownSnapshot(f"no snapshot named {name!r}", 404, _json_or_text(answer))

    def snapshots(self) -> List[str]:
        """The names of the saved snapshots."""
        return [s["name"] for s in self._control_json("GET", "/snapshots").get("snapshots", [])]

    # Trust

    def trust(self, certificate_pem: Union[str, bytes]) -> str:
        """Trusts one more client certificate (PEM) on HTTPS; returns its SHA-256 fingerprint."""
        pem = certificate_pem.decode() if isinstance(certificate_pem, bytes) else certificate_pem
        return str(self._control_json("POST", "/trust", pem)["fingerprint"])

    # Cluster

    @property
    def members(self) -> List[Member]:
        """The cluster's members, in order (empty when the fake is not a cluster)."""
        return list(self._members)

    def member(self, name: str) -> Member:
        for member in self._members:
            if member.name == name:
                return member
        known = ", ".join(m.name for m in self._members) or "none: start it with cluster=[...]"
        raise UnknownMember(f"no cluster member {name!r} (members: {known})", 404)

    def member_down(self, name: str) -> None:
        """The member's daemon dies: its sockets refuse connections, and the others answer for it
        as a real cluster does (see the fake's CLUSTER.md)."""
        self.member(name)
        self._control_json("POST", f"/cluster/members/{urllib.parse.quote(name, safe='')}/down")
        with self._lock:
            self._down.add(name)

    def member_up(self, name: str, *, wait: bool = True, timeout: float = 30.0) -> None:
        """The member comes back; with ``wait`` (default), returns once the cluster serves it again
        (``GET /1.0?target=NAME`` answers 200 through another member)."""
        self.member(name)
        self._control_json("POST", f"/cluster/members/{urllib.parse.quote(name, safe='')}/up")
        with self._lock:
            self._down.discard(name)
        if wait:
            self._wait_member_ready(name, timeout)

    def _wait_member_ready(self, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        through = next((m for m in self._members if m.name not in self._down), self.member(name))
        last = ""
        while time.monotonic() < deadline:
            try:
                answer = _http.request(
                    _http.unix(through.unix_socket, 5.0), "GET", f"/1.0?target={urllib.parse.quote(name)}"
                )
                if answer.status == 200:
                    return
                last = f"{answer.status} {answer.text.strip()[:200]}"
            except OSError as error:
                last = str(error)
            time.sleep(0.01)
        raise ControlError(f"member {name} did not serve again within {timeout} s (last answer: {last})", 408)

    @property
    def members_down(self) -> List[str]:
        """The members this handle took down and has not brought back."""
        with self._lock:
            return sorted(self._down)

    # Everything a test changed, undone

    def fresh(self) -> None:
        """What the pytest fixture does before each test: members back up, rules removed, named
        snapshots deleted, then ``reset()`` (start state, empty journal)."""
        for name in self.members_down:
            self.member_up(name)
        self.clear_rules()
        for name in self.snapshots():
            self.delete_snapshot(name)
        self.reset()


def _matcher(method: Optional[str], path: Optional[str], query: Optional[Mapping[str, str]], body: Any) -> Matcher:
    matcher: Matcher = {}
    if method is not None:
        matcher["method"] = method
    if path is not None:
        matcher["path"] = path
    if query is not None:
        matcher["query"] = dict(query)
    if body is not None:
        matcher["body"] = body
    return matcher


def _json_or_text(answer: _http.Response) -> Any:
    try:
        return answer.json()
    except ValueError:
        return answer.text
