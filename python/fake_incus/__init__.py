"""A scriptable fake Incus for tests, and the conformance harness of the Incus operations.

The wheel installs two programs, ``fake-incus`` and ``incus-conformance``, and this package drives
them:

- :class:`FakeIncus` starts a fake (``FakeIncus.start()``), gives clients its Unix socket, HTTPS
  address and certificates, scripts faults (:mod:`fake_incus.faults`), reads and waits on the
  journal, verifies requests, resets, saves named snapshots and takes cluster members down;
- the pytest plugin (loaded by pytest by itself) gives the ``fake_incus`` fixture;
- :mod:`fake_incus.adapter` and :func:`fake_incus.certify.certify` certify a Python
  implementation of the operations through the wire protocol ``incus-operations-adapter/1``.

See the package's README for examples with pylxd, the official ``incus`` client and raw HTTP.
"""

from __future__ import annotations

from . import faults
from ._binaries import FAKE_INCUS, INCUS_CONFORMANCE, find, incus_lines
from ._fake import SOCKET_PATH_LIMIT, FakeIncus, Journal, JournalEntry, Member, Verification
from ._http import Response, UnixHTTPConnection
from .errors import (
    BinaryNotFound,
    BinaryUnusable,
    CertificationFailed,
    ControlError,
    FakeIncusError,
    FakeStopped,
    JournalTimeout,
    RuleRejected,
    SocketPathTooLong,
    StartError,
    UnknownMember,
    UnknownSnapshot,
    UnsupportedIncusVersion,
    VerificationFailed,
)

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("fake-incus")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def fake_incus_binary() -> str:
    """The path of the ``fake-incus`` program this package runs (raises :class:`BinaryNotFound`)."""
    return find(FAKE_INCUS)


def incus_conformance_binary() -> str:
    """The path of the ``incus-conformance`` program (raises :class:`BinaryNotFound`)."""
    return find(INCUS_CONFORMANCE)


def supported_incus_versions() -> list:
    """The Incus lines (``"6.0"``, ``"7.0"``) that the installed ``fake-incus`` imitates."""
    return list(incus_lines(find(FAKE_INCUS)))


__all__ = [
    "BinaryNotFound",
    "BinaryUnusable",
    "CertificationFailed",
    "ControlError",
    "FakeIncus",
    "FakeIncusError",
    "FakeStopped",
    "Journal",
    "JournalEntry",
    "JournalTimeout",
    "Member",
    "Response",
    "RuleRejected",
    "SOCKET_PATH_LIMIT",
    "SocketPathTooLong",
    "StartError",
    "UnixHTTPConnection",
    "UnknownMember",
    "UnknownSnapshot",
    "UnsupportedIncusVersion",
    "Verification",
    "VerificationFailed",
    "fake_incus_binary",
    "faults",
    "incus_conformance_binary",
    "supported_incus_versions",
    "__version__",
]
