"""The fixture and the FakeIncus handle, with the official client, pylxd and raw HTTP."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fake_incus
from fake_incus import FakeIncus, faults


def create(fake, name):
    """Creates an empty instance and waits for its operation (creation is asynchronous, as on Incus)."""
    answer = fake.api("POST", "/1.0/instances", {"name": name, "source": {"type": "none"}})
    assert answer.status == 202, answer.text
    waited = fake.api("GET", answer.json()["operation"] + "/wait?timeout=30")
    assert waited.json()["metadata"]["status"] == "Success", waited.text


def test_the_fixture_serves_incus_on_its_socket(fake_incus):
    answer = fake_incus.api("GET", "/1.0")
    assert answer.status == 200
    assert answer.json()["metadata"]["api_version"] == "1.0"
    assert os.environ["INCUS_SOCKET"] == fake_incus.unix_socket


def test_the_package_runs_the_programs_its_wheel_installed():
    binary = Path(fake_incus.fake_incus_binary())
    assert binary.parent == Path(sys.executable).parent, f"{binary} is not the wheel's (in {sys.executable}'s bin)"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    assert version == f"fake-incus {fake_incus.__version__}\n"
    conformance = Path(fake_incus.incus_conformance_binary())
    assert conformance.parent == binary.parent
    assert "certify" in subprocess.run([str(conformance), "--help"], capture_output=True, text=True, check=True).stdout


class TestEachTestGetsAFreshFake:
    """Two tests in order on the same fake: the second sees nothing of the first."""

    pid = None

    def test_first_changes_everything(self, fake_incus):
        TestEachTestGetsAFreshFake.pid = fake_incus.pid
        create(fake_incus, "left")
        fake_incus.add_rules(faults.rule("GET", "/1.0", faults.error(500, "broken")))
        fake_incus.save_snapshot("kept")
        assert fake_incus.journal().entries

    def test_second_starts_from_the_start_state(self, fake_incus):
        assert fake_incus.pid == TestEachTestGetsAFreshFake.pid, "reset, not restarted"
        assert fake_incus.api("GET", "/1.0").status == 200, "the rules are gone"
        assert fake_incus.api("GET", "/1.0/instances").json()["metadata"] == []
        assert fake_incus.snapshots() == []
        assert [e.path for e in fake_incus.journal().entries] == ["/1.0", "/1.0/instances"]


def test_the_official_client_launches_and_execs(fake_incus, incus_client):
    fake_incus.incus("launch", "busybox", "c1")
    out = subprocess.run(["incus", "exec", "c1", "--", "sh", "-c", "echo out; echo err >&2; exit 3"],
                         capture_output=True, text=True)
    assert (out.returncode, out.stdout, out.stderr) == (3, "out\n", "err\n")
    fake_incus.verify(method="POST", path="/1.0/instances", body={"name": "c1"}, count=1)


@pytest.mark.fake_incus(https=True)
def test_the_official_client_over_https_is_trusted_with_the_pinned_certificate(fake_incus, incus_client):
    out = fake_incus.incus("info", "fake:")
    assert "auth: trusted" in out.stdout
    entries = fake_incus.requests("GET", "/1.0")
    assert entries and all(e.listener == "https" and e.trusted and e.raw["cert_fingerprint"] for e in entries)


def test_pylxd_creates_starts_and_execs(fake_incus, pylxd_module):
    client = pylxd_module.Client(endpoint=fake_incus.unix_socket)
    instance = client.instances.create({"name": "p1", "source": {"type": "image", "alias": "busybox"}}, wait=True)
    instance.start(wait=True)
    assert client.instances.get("p1").status == "Running"
    result = instance.execute(["echo", "hello"])
    assert (result.exit_code, result.stdout) == (0, "hello\n")


@pytest.mark.fake_incus(https=True)
def test_pylxd_over_https_with_the_fakes_certificates(fake_incus, pylxd_module, monkeypatch):
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace pylxd's pinned certificate.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    client = pylxd_module.Client(
        endpoint=fake_incus.https_url, cert=(fake_incus.client_cert, fake_incus.client_key), verify=fake_incus.server_cert
    )
    assert client.trusted
    client.instances.create({"name": "p2", "source": {"type": "none"}}, wait=True)
    assert [e.listener for e in fake_incus.requests("POST", "/1.0/instances")] == ["https"]


@pytest.mark.fake_incus(rules=[faults.rule("POST", "/1.0/instances", faults.close_after_apply(), nth=1)])
def test_a_marker_rule_applies_then_closes_without_answering(fake_incus):
    with pytest.raises(Exception):
        fake_incus.api("POST", "/1.0/instances", {"name": "c1", "source": {"type": "none"}})
    # Applied although the client never heard back: the creation runs, and the instance appears.
    deadline = time.monotonic() + 10
    while fake_incus.api("GET", "/1.0/instances/c1").status != 200:
        assert time.monotonic() < deadline, "the instance never appeared"
        time.sleep(0.01)
    [entry] = fake_incus.requests("POST", "/1.0/instances")
    assert entry.applied and entry.faults == ["close_after_apply"]


def test_a_rule_the_fake_refuses_says_why_and_installs_nothing(fake_incus):
    with pytest.raises(fake_incus_module().RuleRejected, match="nth"):
        fake_incus.add_rules(
            faults.rule("GET", "/1.0", faults.delay(1)),
            {"method": "GET", "path": "/1.0", "which": {"nth": 0}, "fault": {"kind": "delay", "ms": 1}},
        )
    assert fake_incus.rules() == []


def fake_incus_module():
    return fake_incus


def test_wait_for_returns_requests_as_they_arrive_and_times_out_with_what_came(fake_incus):
    since = fake_incus.last_seq
    fake_incus.api("GET", "/1.0/instances")
    [entry] = fake_incus.wait_for("GET", "/1.0/instances", since=since, timeout=5)
    assert entry.status == 200
    started = time.monotonic()
    with pytest.raises(fake_incus_module().JournalTimeout, match="0 arrived"):
        fake_incus.wait_for("DELETE", "/1.0/instances/*", since=since, timeout=0.2)
    assert time.monotonic() - started < 5


def test_a_failed_verification_shows_the_nearest_miss(fake_incus):
    create(fake_incus, "c2")
    with pytest.raises(AssertionError, match='body.name is \\\\?"c2\\\\?", not \\\\?"c3'):
        fake_incus.verify(method="POST", path="/1.0/instances", body={"name": "c3"}, count=1)
    result = fake_incus.verify(method="POST", path="/1.0/instances", body={"name": "c3"}, count=1, raise_on_failure=False)
    assert not result.passed and result.nearest


def test_verify_sequence_checks_the_order(fake_incus):
    fake_incus.api("GET", "/1.0")
    fake_incus.api("GET", "/1.0/instances")
    fake_incus.verify_sequence({"path": "/1.0"}, {"path": "/1.0/instances"})
    with pytest.raises(AssertionError):
        fake_incus.verify_sequence({"path": "/1.0/instances"}, {"path": "/1.0"})


def test_state_dump_and_replace(fake_incus):
    state = fake_incus.state()
    assert "format_version" in state
    create(fake_incus, "gone")
    fake_incus.set_state(state)
    assert fake_incus.api("GET", "/1.0/instances").json()["metadata"] == []


def test_named_snapshots_save_and_restore(fake_incus):
    create(fake_incus, "s1")
    fake_incus.save_snapshot("with-s1")
    fake_incus.reset()
    assert fake_incus.api("GET", "/1.0/instances/s1").status == 404
    fake_incus.restore_snapshot("with-s1")
    assert fake_incus.api("GET", "/1.0/instances/s1").status == 200
    with pytest.raises(fake_incus_module().UnknownSnapshot, match="with-s1"):
        fake_incus.restore_snapshot("nope")


@pytest.mark.fake_incus(state={"instances": []})
def test_a_seeded_start_state_is_what_reset_returns_to(fake_incus):
    assert fake_incus.api("GET", "/1.0/instances").json()["metadata"] == []


@pytest.mark.fake_incus(cluster=["m1", "m2", "m3"])
def test_a_cluster_member_down_answers_as_a_real_cluster_and_comes_back(fake_incus, incus_client):
    assert [m.name for m in fake_incus.members] == ["m1", "m2", "m3"]
    fake_incus.incus("launch", "busybox", "web", "--target", "m2")
    fake_incus.member_down("m2")
    with pytest.raises(OSError):
        fake_incus.api("GET", "/1.0", member="m2")
    assert fake_incus.incus("list", "--format", "csv", "-c", "nsL").stdout == "web,ERROR,m2\n"
    routed = fake_incus.api("GET", "/1.0/instances/web", member="m1")
    assert routed.status == 500, routed.text
    fake_incus.member_up("m2")
    assert fake_incus.api("GET", "/1.0/instances/web", member="m1").json()["metadata"]["status"] == "Running"
    fake_incus.member_down("m3")  # left down: the next test gets it back


@pytest.mark.fake_incus(cluster=["m1", "m2", "m3"])
def test_the_next_test_gets_every_member_back(fake_incus):
    assert fake_incus.members_down == []
    for member in fake_incus.members:
        assert fake_incus.api("GET", "/1.0", member=member.name).status == 200
    members = fake_incus.api("GET", "/1.0/cluster/members?recursion=1").json()["metadata"]
    assert {m["server_name"]: m["status"] for m in members} == {"m1": "Online", "m2": "Online", "m3": "Online"}


def test_an_unknown_member_is_named(fake_incus):
    with pytest.raises(fake_incus_module().UnknownMember, match="start it with cluster"):
        fake_incus.member_down("m9")


@pytest.mark.fake_incus(version="6.0")
def test_the_six_line_is_imitated(fake_incus):
    version = fake_incus.api("GET", "/1.0").json()["metadata"]["environment"]["server_version"]
    assert version.startswith("6.0")


def test_the_seven_line_is_imitated_or_refused_with_what_to_do():
    if "7.0" in fake_incus.supported_incus_versions():
        with FakeIncus.start(incus_version="7.0") as fake:
            version = fake.api("GET", "/1.0").json()["metadata"]["environment"]["server_version"]
            assert version.startswith("7.0")
    else:
        with pytest.raises(fake_incus.UnsupportedIncusVersion, match="imitates Incus 6.0"):
            FakeIncus.start(incus_version="7.0")


def test_a_line_the_fake_does_not_imitate_is_refused_naming_those_it_does():
    with pytest.raises(fake_incus.UnsupportedIncusVersion) as raised:
        FakeIncus.start(incus_version="5.21")
    assert raised.value.requested == "5.21"
    assert "6.0" in raised.value.supported and "6.0" in str(raised.value)
    with pytest.raises(fake_incus.UnsupportedIncusVersion, match="not a version"):
        FakeIncus.start(incus_version="latest")


def test_a_socket_path_too_long_is_refused_before_starting(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with pytest.raises(fake_incus.SocketPathTooLong) as raised:
        FakeIncus.start(directory=deep)
    message = str(raised.value)
    assert "107 bytes" in message and "shorter directory" in message


def test_a_long_tmpdir_still_gets_a_short_enough_directory(monkeypatch, tmp_path):
    import tempfile

    long_tmp = tmp_path / ("t" * 100)
    long_tmp.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    with FakeIncus.start(cluster=["m1", "m2"]) as fake:
        assert fake.api("GET", "/1.0", member="m2").status == 200


def test_no_binary_for_this_platform_says_what_to_do(monkeypatch):
    from fake_incus import _binaries

    monkeypatch.delenv("FAKE_INCUS_BIN", raising=False)
    monkeypatch.setattr(_binaries, "_candidates", lambda name: [])
    monkeypatch.setenv("PATH", "")
    with pytest.raises(fake_incus.BinaryNotFound) as raised:
        FakeIncus.start()
    message = str(raised.value)
    assert "no fake-incus program for this platform" in message
    assert "maturin build" in message and "FAKE_INCUS_BIN" in message


def test_a_binary_for_another_platform_is_named_as_such(monkeypatch, tmp_path):
    foreign = tmp_path / "fake-incus"
    foreign.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x02\x00\xb7\x00" + b"\0" * 100)  # an aarch64 ELF header
    foreign.chmod(0o755)
    monkeypatch.setenv("FAKE_INCUS_BIN", str(foreign))
    with pytest.raises(fake_incus.BinaryUnusable, match="not a program for this platform"):
        FakeIncus.start()


def test_a_fake_that_cannot_start_shows_its_error(tmp_path):
    bad = tmp_path / "state.json"
    bad.write_text("{not json")
    with pytest.raises(fake_incus.StartError) as raised:
        FakeIncus.start(state=str(bad))
    assert "state.json" in str(raised.value) and raised.value.exit_code == 1


def test_stop_ends_the_process_and_removes_its_sockets():
    fake = FakeIncus.start(https=True)
    socket_path, directory, pid = fake.unix_socket, fake.directory, fake.pid
    assert os.path.exists(socket_path)
    fake.stop()
    assert not fake.running
    assert not os.path.exists(directory)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(fake_incus.FakeStopped):
        fake.reset()


def test_the_fake_dies_with_the_process_that_started_it(tmp_path):
    script = (
        "import sys, fake_incus\n"
        "fake = fake_incus.FakeIncus.start()\n"
        "print(fake.pid, flush=True)\n"
        "import os; os._exit(0)\n"  # dies without stopping it
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    pid = int(done.stdout)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    pytest.fail("the fake outlived the process that started it")


def test_the_package_is_typed():
    assert (Path(fake_incus.__file__).parent / "py.typed").is_file()


def test_a_raw_unix_socket_client_reads_the_journal_entry_it_made(fake_incus):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(fake_incus.unix_socket)
    sock.sendall(b"GET /1.0/instances?recursion=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.1 200")
    [entry] = fake_incus.requests("GET", "/1.0/instances")
    assert entry.query == "recursion=1" and entry.listener == "unix"
    assert json.loads(data.split(b"\r\n\r\n", 1)[1])["metadata"] == []
