"""Fault rules, as the fake takes them (``--script``, control ``POST /rules``), built with types.

A rule selects requests by method and path pattern (``*`` within one segment, ``**`` across
segments, the query ignored) and says what goes wrong::

    from fake_incus import faults

    faults.rule("POST", "/1.0/instances", faults.close_after_apply(), nth=2)
    faults.rule("GET", "/1.0/instances/*", faults.delay(200), probability=0.1, seed=7)
    faults.rule("PUT", "/1.0/instances/*/state", faults.operation_fail("disk full"), first=1)

A rule is a plain ``dict`` (the JSON the fake reads), so rules written as dicts work too. The
faults and their fields are in the fake's README ("Fault rules").
"""

from __future__ import annotations

from typing import Any, Dict, Optional

Fault = Dict[str, Any]
Rule = Dict[str, Any]


def rule(
    method: str,
    path: str,
    *faults: Fault,
    nth: Optional[int] = None,
    first: Optional[int] = None,
    every: bool = False,
    probability: Optional[float] = None,
    seed: Optional[int] = None,
    jitter_ms: Optional[int] = None,
) -> Rule:
    """A rule: requests with ``method`` (``"*"``: any) on ``path`` get ``faults``.

    ``nth=N`` selects the N-th matching request only, ``first=N`` the first N, ``every`` (the
    default when neither is given) all of them. ``probability``, ``seed`` and ``jitter_ms`` leave
    it to reproducible chance.
    """
    if not faults:
        raise ValueError("a rule needs at least one fault (faults.delay(100), faults.error(500, 'x'), ...)")
    if sum(x is not None and x is not False for x in (nth, first, every or None)) > 1:
        raise ValueError("give at most one of nth=, first= and every=")
    built: Rule = {"method": method, "path": path}
    if nth is not None:
        built["which"] = {"nth": nth}
    elif first is not None:
        built["which"] = {"first": first}
    built["fault"] = faults[0] if len(faults) == 1 else list(faults)
    if probability is not None:
        built["probability"] = probability
    if seed is not None:
        built["seed"] = seed
    if jitter_ms is not None:
        built["jitter_ms"] = jitter_ms
    return built


def delay(ms: int) -> Fault:
    """Answer normally after ``ms`` milliseconds."""
    return {"kind": "delay", "ms": ms}


def error(status: int, message: str) -> Fault:
    """An Incus error envelope with this status; nothing is applied."""
    return {"kind": "error", "status": status, "message": message}


def respond(status: int, body: str = "", headers: Optional[Dict[str, str]] = None, apply: bool = False) -> Fault:
    """Exactly this answer; the request is applied only with ``apply=True``."""
    fault: Fault = {"kind": "respond", "status": status, "body": body, "apply": apply}
    if headers:
        fault["headers"] = headers
    return fault


def close_before_apply() -> Fault:
    """Close the connection without applying or answering."""
    return {"kind": "close_before_apply"}


def close_after_apply() -> Fault:
    """Apply the request (the change is made), then close without answering."""
    return {"kind": "close_after_apply"}


def stall() -> Fault:
    """Never answer; nothing is applied."""
    return {"kind": "stall"}


def garbage_body() -> Fault:
    """Apply, then answer 200 with a body that is not JSON."""
    return {"kind": "garbage_body"}


def truncated_body() -> Fault:
    """Apply, then send half the body and cut the connection."""
    return {"kind": "truncated_body"}


def dribble(chunk_bytes: int, interval_ms: int) -> Fault:
    """Apply, then send the body in chunks with pauses."""
    return {"kind": "dribble", "chunk_bytes": chunk_bytes, "interval_ms": interval_ms}


def reset() -> Fault:
    """A TCP reset on HTTPS (a plain close on the Unix socket); nothing is applied."""
    return {"kind": "reset"}


def operation_duration(ms: int) -> Fault:
    """The operation the request creates finishes after ``ms``."""
    return {"kind": "operation_duration", "ms": ms}


def operation_fail(message: str) -> Fault:
    """The operation fails with ``err = message``; nothing is applied."""
    return {"kind": "operation_fail", "message": message}


def operation_never_finish() -> Fault:
    """The operation stays ``Running``."""
    return {"kind": "operation_never_finish"}


def operation_cancellable() -> Fault:
    """The operation can be cancelled and never finishes on its own."""
    return {"kind": "operation_cancellable"}


def operation_finish_during_wait() -> Fault:
    """The operation finishes only while a wait request for it is in flight."""
    return {"kind": "operation_finish_during_wait"}


def exec_ignore_sigkill() -> Fault:
    """The exec command ignores SIGKILL."""
    return {"kind": "exec_ignore_sigkill"}


def exec_exit_after(ms: int) -> Fault:
    """The exec operation ends ``ms`` after the command exited."""
    return {"kind": "exec_exit_after", "ms": ms}


def exec_drop_websocket(fd: str) -> Fault:
    """That exec websocket (``"0"``, ``"1"``, ``"2"``, ``"control"``) is dropped right after it connects."""
    return {"kind": "exec_drop_websocket", "fd": fd}
