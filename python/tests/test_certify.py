"""Certification of a Python adapter written with fake_incus.adapter, from pytest: the whole wire
suite through an adapter program, a subset through a function in this process, and a broken
adapter caught by the clause it breaks."""

import io
import json
import sys
from pathlib import Path

import pytest

from fake_incus import CertificationFailed
from fake_incus.adapter import PROTOCOL, AdapterRequest, HostCallbackCrashed, HostCallbackFailed, ReferenceAdapter, ScriptedHost, answer, serve_stdio
from fake_incus.certify import certify

FORWARD = Path(__file__).resolve().parent / "adapters" / "forward.py"


def test_a_python_adapter_program_passes_every_wire_trial(tmp_path):
    junit = tmp_path / "junit.xml"
    report = certify([sys.executable, str(FORWARD)], junit=str(junit))
    report.assert_passed()
    assert report.passed > 400, report.summary()
    assert junit.is_file() and "testcase" in junit.read_text()
    assert report.clauses and report.clauses[0].startswith("clauses:")


def test_a_python_function_certifies_in_this_process():
    with ReferenceAdapter() as reference:
        calls = []

        def handle(request: AdapterRequest) -> dict:
            calls.append(request.operation)
            return reference(request)

        report = certify(handle, filter="scopes::")
    report.assert_passed()
    assert report.passed > 0 and len(calls) >= report.passed


def test_a_broken_promise_fails_its_clause_with_the_reason(monkeypatch):
    monkeypatch.setenv("INCUS_ADAPTER_BREAK", "accept_yes")
    report = certify([sys.executable, str(FORWARD)], filter="confirmation::inferred_consent")
    assert not report.ok
    assert set(report.failing_clauses()) == {"confirmation::inferred_consent"}
    with pytest.raises(CertificationFailed) as raised:
        report.assert_passed()
    assert "confirmation::inferred_consent::instance_delete_yes_is_refused" in str(raised.value)
    assert "confirmation_mismatch" in str(raised.value)


def _request(**overrides):
    raw = {
        "protocol": PROTOCOL,
        "operation": "incus_instance_list",
        "input": {},
        "scopes": ["incus.read"],
        "caller": "conformance",
        "backend": {"unix_socket": "/nonexistent/unix.socket", "timeout_ms": 3000},
        "host": {},
    }
    raw.update(overrides)
    return raw


def test_the_scripted_host_answers_as_the_protocol_says():
    host = AdapterRequest.from_json(_request()).host
    assert host.binding().project == "default"
    assert host.authorize() is True
    assert host.image_remote("images") is None
    assert host.allow_restricted([{"kind": "config_key", "key": "raw.lxc"}]) is False

    scripted = {
        "binding": {"answer": "allow", "project": "team"},
        "authorize": {"answer": "deny"},
        "image_remote": {"answer": "allow"},
        "image_remotes": {"images": {"server": "https://images.example.invalid", "protocol": "simplestreams"}},
        "allow_restricted": {"answer": "allow", "only": [{"kind": "device", "type": "unix-char"}]},
        "callback_timeout_ms": 250,
    }
    host = AdapterRequest.from_json(_request(host=scripted)).host
    assert host.binding().project == "team"
    assert host.authorize() is False
    assert host.image_remote("images") == {"server": "https://images.example.invalid", "protocol": "simplestreams"}
    assert host.image_remote("other") is None
    assert host.allow_restricted([{"kind": "device", "name": "d0", "type": "unix-char"}]) is True
    assert host.allow_restricted([{"kind": "device", "name": "d0", "type": "unix-block"}]) is False
    assert host.callback_timeout == 0.25

    assert AdapterRequest.from_json(_request(host={"authorize": {"answer": "deny"}})).host.binding() is not None
    with pytest.raises(HostCallbackFailed):
        ScriptedHost({"binding": {"answer": "fail"}}, None).binding()
    with pytest.raises(HostCallbackCrashed):
        ScriptedHost({"authorize": {"answer": "crash"}}, None).authorize()


def test_an_https_backend_gives_its_certificates_as_files():
    request = AdapterRequest.from_json(
        _request(backend={"https": {"url": "https://127.0.0.1:1", "client_cert": "C", "client_key": "K", "server_cert": "S"}})
    )
    with request.backend.files() as (cert, key, server):
        assert [Path(p).read_text() for p in (cert, key, server)] == ["C", "K", "S"]
    assert not Path(cert).exists()


def test_unreadable_requests_and_implementation_errors_are_adapter_errors():
    assert "not JSON" in answer(lambda r: {}, "{nope")["adapter_error"]
    assert "incus-operations-adapter/1" in answer(lambda r: {}, json.dumps({"protocol": "other/2"}))["adapter_error"]

    def broken(request):
        raise KeyError("name")

    assert "raised KeyError" in answer(broken, json.dumps(_request()))["adapter_error"]


def test_serve_stdio_answers_one_line_per_request_in_order():
    requests = "\n".join(json.dumps(_request(operation=f"op{i}")) for i in range(3)) + "\n\n"
    out = io.StringIO()
    serve_stdio(lambda r: {"echo": r.operation}, io.StringIO(requests), out)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"echo": "op0"}, {"echo": "op1"}, {"echo": "op2"}]
