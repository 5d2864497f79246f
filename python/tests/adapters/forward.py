"""An incus-operations-adapter/1 adapter written with fake_incus.adapter: every call goes to the
reference implementation, except what INCUS_ADAPTER_BREAK says to break (the same words as
conformance/adapters/breakable.py, for the ones this file knows)."""

import os

from fake_incus.adapter import AdapterRequest, ReferenceAdapter, serve_stdio

reference = ReferenceAdapter()
BROKEN = os.environ.get("INCUS_ADAPTER_BREAK", "")


def handle(request: AdapterRequest) -> dict:
    raw = dict(request.raw)
    given = request.input
    if BROKEN == "accept_yes" and isinstance(given, dict) and given.get("confirm") == "yes":
        # Treats "yes" as the confirmation of any destructive call: a broken promise.
        if "instance" in given and "snapshot" in given:
            named = f"{given['instance']}/{given['snapshot']}"
        else:
            named = given.get("fingerprint") or given.get("name")
        raw["input"] = {**given, "confirm": named}
    if BROKEN == "skip_scope_check":
        raw["scopes"] = ["incus.read", "incus.write", "incus.exec", "incus.delete"]
    return reference.call(raw)


if __name__ == "__main__":
    serve_stdio(handle)
