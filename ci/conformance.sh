#!/usr/bin/env bash
# The README's main job: the full conformance run over an embedded fake Incus, with a JUnit report.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/conformance
echo "== cargo run --release -p incus-conformance"
cargo run --release -p incus-conformance -- run --junit target/conformance/junit.xml
# The same trials on real time: virtual time must never hide a bug that only real time shows
# (about 40 s, most of it the trials that wait: exec graces, stalls, the member-down timeline).
echo "== incus-conformance run --real-time"
cargo run --release -p incus-conformance -- run --real-time \
  --junit target/conformance/junit-real-time.xml
# The same suites over the wire protocol, through the reference adapter (the core behind
# incus-operations-adapter/1): every trial that can be expressed over the wire, its own JUnit report.
echo "== incus-conformance certify --adapter 'incus-conformance adapter'"
cargo run --release -p incus-conformance -- certify \
  --adapter "'${CARGO_TARGET_DIR:-$PWD/target}/release/incus-conformance' adapter" \
  --junit target/conformance/junit-wire.xml
