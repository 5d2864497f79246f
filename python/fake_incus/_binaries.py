"""Where the programs are, whether they run here, and which Incus lines the fake imitates."""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from .errors import BinaryNotFound, BinaryUnusable, UnsupportedIncusVersion

FAKE_INCUS = "fake-incus"
INCUS_CONFORMANCE = "incus-conformance"

# An environment variable per program overrides where it is taken from.
OVERRIDES = {FAKE_INCUS: "FAKE_INCUS_BIN", INCUS_CONFORMANCE: "INCUS_CONFORMANCE_BIN"}

# The line a fake-incus without the --incus-version flag imitates (one with it defaults to 7.0).
LINE_WITHOUT_VERSION_FLAG = "6.0"

_BUILD_HINT = (
    "Build a wheel for this machine from the source tree "
    "(`pip install maturin && maturin build --release -m python/Cargo.toml`, then "
    "`pip install target/wheels/fake_incus-*.whl`; see python/README.md), or build the programs "
    "with cargo (`cargo install --locked --path fake-incus`, and `--path conformance`) and set {override}=/path/to/{name}."
)


def _platform() -> str:
    return f"{platform.system() or sys.platform} {platform.machine() or 'unknown machine'}"


def _candidates(name: str) -> List[Path]:
    """The directories an installation of this wheel puts its programs in, in order."""
    dirs: List[Path] = []
    for scheme in (None, f"{os.name}_user"):
        try:
            path = sysconfig.get_path("scripts") if scheme is None else sysconfig.get_path("scripts", scheme)
        except KeyError:
            continue
        if path:
            dirs.append(Path(path))
    # `pip install --target DIR` puts the scripts in DIR/bin, next to the package.
    dirs.append(Path(__file__).resolve().parent.parent / "bin")
    # A virtual environment's interpreter sits beside its scripts.
    dirs.append(Path(sys.executable).parent)
    seen = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return [d / name for d in seen]


def find(name: str, explicit: Optional[str] = None) -> str:
    """The path of program ``name``: ``explicit``, else $FAKE_INCUS_BIN / $INCUS_CONFORMANCE_BIN,
    else the one this wheel installed, else the first on PATH.

    Raises :class:`BinaryNotFound` (saying what to do) when there is none.
    """
    override = OVERRIDES[name]
    if os.name == "nt":
        raise BinaryNotFound(
            f"{name} serves and uses Unix sockets and runs on Linux; there is no build for Windows. "
            "Run your tests in WSL or a Linux container."
        )
    for origin, value in (("argument", explicit), (override, os.environ.get(override))):
        if value:
            path = Path(value)
            if not path.is_file():
                raise BinaryNotFound(f"{name}: {origin} names {value}, which is not a file. Point it at a {name} program.")
            return str(path)
    for path in _candidates(name):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise BinaryNotFound(
        f"no {name} program for this platform ({_platform()}) in this installation of the fake-incus "
        f"package (looked in {', '.join(str(p.parent) for p in _candidates(name))} and on PATH). "
        + _BUILD_HINT.format(override=override, name=name)
    )


def run_checked(argv: List[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Runs a program of this package, turning "cannot run here" into :class:`BinaryUnusable`."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except OSError as error:
        raise unusable(argv[0], error) from error


def end(process: subprocess.Popen, ask: Callable[[subprocess.Popen], None], grace: float = 10.0) -> None:
    """Ends a program this package started: ``ask`` (SIGTERM, or closing its input), up to
    ``grace`` seconds to exit, then SIGKILL; its output pipe is closed."""
    if process.poll() is None:
        ask(process)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)
    if process.stdout is not None:
        process.stdout.close()


def unusable(path: str, error: OSError) -> BinaryUnusable:
    name = Path(path).name
    override = OVERRIDES.get(name, "FAKE_INCUS_BIN")
    if error.errno == 8:  # ENOEXEC: another architecture or format
        why = f"it is not a program for this platform ({_platform()}): {error.strerror}"
    elif error.errno == 13:  # EACCES
        why = f"it is not executable ({error.strerror}); `chmod +x {path}` if it is the right program"
    else:
        why = str(error)
    return BinaryUnusable(f"cannot run {path}: {why}. " + _BUILD_HINT.format(override=override, name=name))


@functools.lru_cache(maxsize=None)
def _serve_help(fake_incus: str) -> str:
    return run_checked([fake_incus, "serve", "--help"]).stdout


def incus_lines(fake_incus: str) -> Tuple[str, ...]:
    """The Incus lines (``"6.0"``, ``"7.0"``, ...) that this ``fake-incus`` can imitate, read from
    ``fake-incus serve --help``: its ``--incus-version`` option, or 6.0 alone when it has none."""
    text = _serve_help(fake_incus)
    match = re.search(r"--incus-version\b(.*?)(?=\n\s*-{1,2}[a-zA-Z]|\Z)", text, re.S)
    if match is None:
        return (LINE_WITHOUT_VERSION_FLAG,)
    lines: List[str] = []
    for version in re.findall(r"\b(\d+\.\d+)(?:\.\d+)?\b", match.group(0)):
        if version not in lines:
            lines.append(version)
    return tuple(lines) or (LINE_WITHOUT_VERSION_FLAG,)


def has_incus_version_flag(fake_incus: str) -> bool:
    return "--incus-version" in _serve_help(fake_incus)


def normalize_line(requested: str) -> str:
    """``"7"``, ``"7.0"`` and ``"7.0.2"`` name the 7.0 line."""
    text = str(requested).strip()
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.\d+)?", text)
    if match is None:
        raise UnsupportedIncusVersion(
            f"incus_version={requested!r} is not a version: give an Incus line such as '6.0' or '7.0'.",
            text,
            [],
        )
    return f"{match.group(1)}.{match.group(2) or '0'}"


def check_line(fake_incus: str, requested: Optional[str]) -> Optional[str]:
    """The ``--incus-version`` value to pass for ``requested`` (None: pass none), or
    :class:`UnsupportedIncusVersion` naming the lines this binary imitates."""
    if requested is None:
        return None
    line = normalize_line(requested)
    supported = list(incus_lines(fake_incus))
    if line not in supported:
        if has_incus_version_flag(fake_incus):
            hint = f"use one of {', '.join(supported)}"
        else:
            hint = (
                f"this fake-incus ({fake_incus}) has no --incus-version option and imitates Incus "
                f"{LINE_WITHOUT_VERSION_FLAG} only: install a newer fake-incus to imitate {line}, or leave the version out"
            )
        raise UnsupportedIncusVersion(
            f"the fake does not imitate Incus {line} (asked for {requested!r}); it imitates "
            f"{', '.join(supported)}: {hint}.",
            line,
            supported,
        )
    if not has_incus_version_flag(fake_incus):
        return None
    return line
