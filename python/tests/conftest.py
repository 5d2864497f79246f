"""The package's own tests. They run against the installed wheel (never the source tree), as a user's
would: CI installs the wheel into a fresh virtual environment and runs them from this directory.

FAKE_INCUS_REQUIRE=incus,pylxd turns the skips of tests that need the official client or pylxd into
failures (CI sets it, where both are installed)."""

import os
import shutil

import pytest

pytest_plugins = ["pytester"]

REQUIRED = {x.strip() for x in os.environ.get("FAKE_INCUS_REQUIRE", "").split(",") if x.strip()}


def need(what: str, available: bool, how: str) -> None:
    if available:
        return
    if what in REQUIRED:
        pytest.fail(f"{what} is required here (FAKE_INCUS_REQUIRE) but missing: {how}")
    pytest.skip(f"needs {what}: {how}")


@pytest.fixture
def incus_client():
    need("incus", shutil.which("incus") is not None, "the official incus client on PATH (ci/install-incus.sh)")


@pytest.fixture
def pylxd_module():
    try:
        import pylxd  # noqa: F401
    except ImportError:
        need("pylxd", False, "pip install pylxd")
    else:
        return pylxd
