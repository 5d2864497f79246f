"""The pytest plugin: the ``fake_incus`` fixture, its marker and its options.

pytest loads it by itself once the package is installed (entry point ``pytest11``)::

    def test_launch(fake_incus):
        fake_incus.incus("launch", "busybox", "c1")
        fake_incus.verify(method="POST", path="/1.0/instances", count=1)

    @pytest.mark.fake_incus(version="7.0", cluster=["m1", "m2", "m3"], https=True)
    def test_member_down(fake_incus):
        fake_incus.member_down("m2")
        ...

``fake_incus`` (function scope) is one fake per configuration for the whole session, made fresh
before each test by a reset (start state, empty journal, no rules, no named snapshots, every
member up), not by a restart; ``INCUS_SOCKET`` and ``INCUS_CONF`` point at it during the test.
``fake_incus_session`` (session scope) is one fake shared as it is by every test that asks for it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, Optional, Tuple

import pytest

from ._fake import FakeIncus

MARKER = (
    "fake_incus(version=None, cluster=None, https=False, state=None, rules=None, cluster_timings='fast', seed=0): "
    "how the fake_incus fixture's fake starts for this test: the Incus line it imitates ('6.0', '7.0'), "
    "cluster member names, HTTPS, a start state (dict or JSON file), fault rules installed before the test"
)

_START_KEYS = ("version", "cluster", "https", "state", "cluster_timings", "seed")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fake-incus", "the fake_incus fixture")
    group.addoption(
        "--fake-incus-version",
        dest="fake_incus_version",
        default=None,
        help="the Incus line the fake_incus fixture imitates (6.0, 7.0); a test's marker wins. "
        "Default: the ini value fake_incus_version, else the fake's own default (7.0).",
    )
    group.addoption(
        "--fake-incus-binary",
        dest="fake_incus_binary",
        default=None,
        help="the fake-incus program to run (default: $FAKE_INCUS_BIN, else the one the wheel installed)",
    )
    parser.addini("fake_incus_version", "the Incus line the fake_incus fixture imitates (6.0, 7.0)", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


class FakeIncusPool:
    """The session's fakes, one per start configuration, started when first asked for."""

    def __init__(self, binary: Optional[str]) -> None:
        self.binary = binary
        self._fakes: Dict[Tuple[Any, ...], FakeIncus] = {}

    def get(
        self,
        version: Optional[str] = None,
        cluster: Optional[Any] = None,
        https: bool = False,
        state: Any = None,
        cluster_timings: str = "fast",
        seed: int = 0,
    ) -> FakeIncus:
        members = tuple(cluster) if cluster else None
        state_key = json.dumps(state, sort_keys=True) if isinstance(state, dict) else (os.fspath(state) if state else None)
        key = (version, members, bool(https), state_key, cluster_timings, seed)
        fake = self._fakes.get(key)
        if fake is None or not fake.running:
            fake = FakeIncus.start(
                incus_version=version,
                cluster=members,
                https=https,
                state=state,
                cluster_timings=cluster_timings,
                seed=seed,
                binary=self.binary,
            )
            self._fakes[key] = fake
        return fake

    def stop_all(self) -> None:
        for fake in self._fakes.values():
            fake.stop()
        self._fakes.clear()


def _default_version(config: pytest.Config) -> Optional[str]:
    return config.getoption("fake_incus_version") or config.getini("fake_incus_version") or None


@pytest.fixture(scope="session")
def fake_incus_pool(pytestconfig: pytest.Config) -> Iterator[FakeIncusPool]:
    """The session's fakes (one per configuration); ``fake_incus`` takes its fake from here."""
    pool = FakeIncusPool(pytestconfig.getoption("fake_incus_binary"))
    yield pool
    pool.stop_all()


@pytest.fixture
def fake_incus(
    request: pytest.FixtureRequest,
    fake_incus_pool: FakeIncusPool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[FakeIncus]:
    """A fake Incus, fresh for this test (reset, not restarted), with ``INCUS_SOCKET`` and
    ``INCUS_CONF`` set for the official client. ``@pytest.mark.fake_incus(...)`` configures it."""
    options: Dict[str, Any] = {"version": _default_version(request.config)}
    rules = []
    marker = request.node.get_closest_marker("fake_incus")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("@pytest.mark.fake_incus takes keyword arguments only (version=..., cluster=[...])")
        unknown = set(marker.kwargs) - set(_START_KEYS) - {"rules"}
        if unknown:
            raise pytest.UsageError(
                f"@pytest.mark.fake_incus: unknown argument(s) {sorted(unknown)}; it takes {', '.join(_START_KEYS)}, rules"
            )
        options.update({k: v for k, v in marker.kwargs.items() if k in _START_KEYS})
        rules = list(marker.kwargs.get("rules") or [])
    fake = fake_incus_pool.get(**options)
    fake.fresh()
    if rules:
        fake.add_rules(*rules)
    fake.incus_conf = fake.write_incus_conf(str(tmp_path_factory.mktemp("incus-conf")))
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    request.node.stash[_FAKE_KEY] = fake
    yield fake


@pytest.fixture(scope="session")
def fake_incus_session(pytestconfig: pytest.Config) -> Iterator[FakeIncus]:
    """One fake for the whole session, never reset by the plugin (``fake_incus_session.reset()``
    when a test wants it); its environment is in ``fake_incus_session.env``."""
    fake = FakeIncus.start(
        incus_version=_default_version(pytestconfig), binary=pytestconfig.getoption("fake_incus_binary")
    )
    yield fake
    fake.stop()


_FAKE_KEY = pytest.StashKey[FakeIncus]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
    """A failed test that used ``fake_incus`` shows the last requests the fake received."""
    outcome: Any = yield
    report = outcome.get_result()
    fake = item.stash.get(_FAKE_KEY, None)
    if fake is None or report.passed or call.when != "call" or not fake.running:
        return
    try:
        entries = fake.journal().entries[-30:]
    except Exception as error:  # the fake may be what failed
        report.sections.append(("fake-incus journal", f"(could not read it: {error})"))
        return
    lines = [
        f"#{e.seq} {e.listener}{'@' + e.member if e.member else ''} {e.method} {e.path}"
        f"{'?' + e.query if e.query else ''} -> {e.status if e.status is not None else e.answer.get('kind')}"
        f"{' faults=' + ','.join(e.faults) if e.faults else ''}"
        for e in entries
    ]
    report.sections.append(("fake-incus journal (last 30 requests)", "\n".join(lines) or "(no requests)"))
