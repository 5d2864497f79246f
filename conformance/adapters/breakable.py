#!/usr/bin/env python3
"""An incus-operations-adapter/1 adapter that forwards every request to the reference adapter
(the core behind the protocol) and, when told to, breaks one promise of the specification.

    INCUS_REFERENCE_ADAPTER='incus-conformance adapter' \\
    INCUS_ADAPTER_BREAK=accept_yes \\
    incus-conformance certify --adapter 'python3 conformance/adapters/breakable.py'

INCUS_ADAPTER_BREAK names the promise to break (unset: break none):

  resend_mutation      a call whose result has a status (a mutation, an exec) is sent twice
  skip_scope_check     the caller is given every scope, whatever it holds
  accept_yes           "yes" is accepted as the confirmation of a destructive call
  allow_restricted     the host is told to let restricted config keys and devices through
  exceed_output_bound  a list the core truncated to fit the output bound gets an item back
  drop_uncertain       an `uncertain` mutation is reported as `failed`
  hang_past_wait       a mutation that was still `running` at the end of its wait is answered
                       only after the wait had time to pass a second time

Standard library only. One request per line on standard input, one result per line on standard
output; the reference adapter runs as a child process with the same protocol.
"""

import json
import os
import shlex
import subprocess
import sys
import time

SCOPES = ["incus.read", "incus.write", "incus.exec", "incus.delete"]
MUTATION_STATUSES = {"completed", "failed", "running", "uncertain"}


def confirmation(request):
    """The value a destructive call must confirm: the resource it names."""
    given = request["input"]
    if "instance" in given and "snapshot" in given:
        return f"{given['instance']}/{given['snapshot']}"
    if "fingerprint" in given:
        return given["fingerprint"]
    return given.get("name")


class Reference:
    """The reference adapter, one request at a time."""

    def __init__(self, command):
        self.process = subprocess.Popen(
            shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def call(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the reference adapter closed its output")
        return json.loads(line)


def answer(reference, request, broken):
    given = request.get("input")
    if broken == "skip_scope_check":
        request["scopes"] = SCOPES
    if broken == "accept_yes" and isinstance(given, dict) and given.get("confirm") == "yes":
        given["confirm"] = confirmation(request)
    if broken == "allow_restricted":
        request["host"]["allow_restricted"] = {"answer": "allow"}
    started = time.monotonic()
    result = reference.call(request)
    status = result.get("status")
    if broken == "resend_mutation" and status in MUTATION_STATUSES | {"timed_out", "output_limited"}:
        reference.call(request)
    if broken == "exceed_output_bound" and result.get("truncated") is True and result.get("items"):
        result["items"].append(result["items"][-1])
    if broken == "drop_uncertain" and status == "uncertain":
        result["status"] = "failed"
    if broken == "hang_past_wait" and status == "running" and "waited_seconds" in result:
        time.sleep(max(0.0, 2 * (time.monotonic() - started)) + 1.0)
    return result


def main():
    broken = os.environ.get("INCUS_ADAPTER_BREAK", "")
    reference = Reference(os.environ.get("INCUS_REFERENCE_ADAPTER", "incus-conformance adapter"))
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            result = {"adapter_error": f"not JSON: {error}"}
        else:
            result = answer(reference, request, broken)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
