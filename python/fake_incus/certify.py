"""Certify an implementation of the Incus operations from Python (and from pytest).

:func:`certify` runs ``incus-conformance certify``, the conformance suites through an adapter
(every trial that does not depend on Rust types), and returns a :class:`CertificationReport`::

    from fake_incus.certify import certify

    def test_my_implementation_is_certified():
        certify(handle).assert_passed()                # handle(request) -> result, in this process
        certify("python3 my_adapter.py").assert_passed()   # or an adapter program

A failing run's :meth:`CertificationReport.assert_passed` raises :class:`CertificationFailed` (an
AssertionError) naming each failing trial, its clause and its reason; the whole report, with a
reproducer per failure, is in :attr:`CertificationReport.output`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _binaries
from .adapter import AdapterRequest, HttpAdapter
from .errors import CertificationFailed

Adapter = Union[str, Sequence[str], Callable[[AdapterRequest], Mapping]]


@dataclass(frozen=True)
class TrialFailure:
    """A trial that failed: its name (``area::clause::trial``) and what the harness said."""

    name: str
    message: str

    @property
    def clause(self) -> str:
        return self.name.rsplit("::", 1)[0]


@dataclass
class CertificationReport:
    """What a certification run found."""

    exit_code: int
    passed: int
    failed: List[TrialFailure]
    skipped: int
    output: str = field(repr=False)
    command: List[str] = field(repr=False)
    clauses: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.failed

    @property
    def total(self) -> int:
        return self.passed + len(self.failed) + self.skipped

    def failing_clauses(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for failure in self.failed:
            counts[failure.clause] = counts.get(failure.clause, 0) + 1
        return counts

    def summary(self, limit: int = 20) -> str:
        lines = [f"{self.passed} passed, {len(self.failed)} failed, {self.skipped} skipped (exit status {self.exit_code})"]
        for failure in self.failed[:limit]:
            first = failure.message.strip().splitlines()[0] if failure.message.strip() else ""
            lines.append(f"  FAILED {failure.name}: {first}")
        if len(self.failed) > limit:
            lines.append(f"  ... and {len(self.failed) - limit} more")
        lines += [f"  {line}" for line in self.clauses]
        return "\n".join(lines)

    def assert_passed(self) -> "CertificationReport":
        """Raises :class:`CertificationFailed` unless every trial passed."""
        if not self.ok:
            tail = "" if self.failed else "\n" + "\n".join(self.output.strip().splitlines()[-30:])
            raise CertificationFailed(
                f"certification failed: {self.summary()}{tail}\ncommand: {shlex.join(self.command)}"
            )
        return self


def _help_has(binary: str, flag: str) -> bool:
    return flag in _binaries.run_checked([binary, "certify", "--help"]).stdout


def certify(
    adapter: Adapter,
    *,
    filter: Optional[str] = None,
    exact: bool = False,
    skip: Sequence[str] = (),
    backend: str = "unix",
    junit: Optional[str] = None,
    expected_failures: Optional[str] = None,
    incus_version: Optional[str] = None,
    binary: Optional[str] = None,
    timeout: Optional[float] = 1800.0,
    extra_args: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
) -> CertificationReport:
    """Runs the conformance suites through ``adapter`` and returns the report (never raises for
    failing trials; call :meth:`CertificationReport.assert_passed`).

    ``adapter`` is a command line (``"python3 my_adapter.py"`` or a list of words) speaking the
    protocol on standard input and output, an ``http://`` URL of an adapter service, or a Python
    function ``handle(request) -> result`` served in this process over HTTP.

    ``filter`` keeps the trials whose names contain it (``exact``: equal to it), ``skip`` leaves
    some out, ``backend`` is ``"unix"`` or ``"https"`` (the fakes over HTTPS with certificates),
    ``junit`` writes a JUnit report there, ``expected_failures`` names a baseline file.
    """
    binary = _binaries.find(_binaries.INCUS_CONFORMANCE, binary)
    server: Optional[HttpAdapter] = None
    argv = [binary, "certify"]
    if callable(adapter):
        server = HttpAdapter(adapter)
        argv += ["--adapter-url", server.url]
    elif isinstance(adapter, str) and adapter.startswith(("http://", "https://")):
        argv += ["--adapter-url", adapter]
    else:
        argv += ["--adapter", adapter if isinstance(adapter, str) else shlex.join(list(adapter))]
    if backend != "unix":
        argv += ["--backend", backend]
    if incus_version is not None:
        if not _help_has(binary, "--incus-version"):
            line = _binaries.normalize_line(incus_version)
            if line != _binaries.LINE_WITHOUT_VERSION_FLAG:
                from .errors import UnsupportedIncusVersion

                raise UnsupportedIncusVersion(
                    f"this incus-conformance ({binary}) has no --incus-version option and certifies against "
                    f"Incus {_binaries.LINE_WITHOUT_VERSION_FLAG} only: install a newer one to certify against {line}, "
                    "or leave the version out.",
                    line,
                    [_binaries.LINE_WITHOUT_VERSION_FLAG],
                )
        else:
            argv += ["--incus-version", _binaries.normalize_line(incus_version)]
    if expected_failures:
        argv += ["--expected-failures", expected_failures]
    for name in skip:
        argv += ["--skip", name]
    if exact:
        argv.append("--exact")
    argv += list(extra_args)
    with tempfile.TemporaryDirectory(prefix="incus-certify-") as work:
        report_path = junit or os.path.join(work, "junit.xml")
        argv += ["--junit", report_path]
        if filter:
            argv.append(filter)
        try:
            done = subprocess.run(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
                env={**os.environ, **(env or {})},
                check=False,
            )
        except OSError as error:
            raise _binaries.unusable(binary, error) from error
        finally:
            if server is not None:
                server.stop()
        return _report(done.returncode, done.stdout, argv, report_path)


def _report(exit_code: int, output: str, argv: List[str], junit: str) -> CertificationReport:
    passed, skipped, failed = 0, 0, []
    try:
        tree = ElementTree.parse(junit)
    except (OSError, ElementTree.ParseError):
        tree = None
    if tree is not None:
        for case in tree.iter("testcase"):
            name = case.get("name", "")
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if problem is not None:
                failed.append(TrialFailure(name, (problem.get("message") or "") + "\n" + (problem.text or "")))
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    clauses = []
    match = re.search(r"^clauses: .*$", output, re.M)
    if match:
        clauses = output[match.start():].strip().splitlines()[:40]
    return CertificationReport(exit_code, passed, failed, skipped, output, argv, clauses)
