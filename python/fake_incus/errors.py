"""The errors of the package. Each one says what happened and what to do about it.

Every error is a :class:`FakeIncusError`; the ones a test asserts with are also
:class:`AssertionError` (pytest then shows them as failed assertions, not as errors).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class FakeIncusError(Exception):
    """The base of every error this package raises."""


class BinaryNotFound(FakeIncusError):
    """A program (``fake-incus`` or ``incus-conformance``) is not in this installation.

    Raised when the wheel installed here carries no binary for this platform, or the package was
    installed without one (from a source tree, or files copied by hand).
    """


class BinaryUnusable(FakeIncusError):
    """The program was found but cannot run here (built for another platform, not executable)."""


class SocketPathTooLong(FakeIncusError):
    """A Unix socket path is longer than the kernel accepts (107 bytes on Linux)."""

    def __init__(self, message: str, path: str, limit: int) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit


class UnsupportedIncusVersion(FakeIncusError):
    """The fake was asked to imitate an Incus line that this ``fake-incus`` does not imitate."""

    def __init__(self, message: str, requested: str, supported: List[str]) -> None:
        super().__init__(message)
        self.requested = requested
        self.supported = supported


class StartError(FakeIncusError):
    """``fake-incus serve`` stopped, or did not say it was ready, before the bound."""

    def __init__(self, message: str, stderr: str = "", exit_code: Optional[int] = None) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.exit_code = exit_code


class ControlError(FakeIncusError):
    """The fake's control socket refused a request (its status and error text are kept)."""

    def __init__(self, message: str, status: int, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RuleRejected(ControlError):
    """A fault rule was refused (none of the rules sent with it was installed)."""


class UnknownMember(ControlError):
    """A cluster member name that the fake does not have."""


class UnknownSnapshot(ControlError):
    """A named snapshot that does not exist."""


class FakeStopped(FakeIncusError):
    """The fake was stopped (or died) and cannot answer."""


class JournalTimeout(FakeIncusError, AssertionError):
    """Fewer matching requests than awaited arrived within the timeout."""

    def __init__(self, message: str, matched: int, entries: List[Dict[str, Any]]) -> None:
        super().__init__(message)
        self.matched = matched
        self.entries = entries


class VerificationFailed(FakeIncusError, AssertionError):
    """The journal does not hold the requests a verification asked for."""

    def __init__(self, message: str, result: Dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


class CertificationFailed(FakeIncusError, AssertionError):
    """A certification run ended with failing trials (or could not run)."""
