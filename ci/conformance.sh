#!/usr/bin/env bash
# The README's main job: the full conformance run over an embedded fake Incus, with a JUnit report.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/conformance
echo "== cargo run --release -p incus-conformance"
cargo run --release -p incus-conformance -- run --junit target/conformance/junit.xml
# The same run with the fake answering as Incus 7.0 (its server version, API extensions and
# behaviour), so that a producer certifying against the Incus its users run is covered too; the
# binary is already built, so this costs one more run (about as long as the first).
echo "== cargo run --release -p incus-conformance -- run --incus-version 7.0"
cargo run --release -p incus-conformance -- run --incus-version 7.0 \
  --junit target/conformance/junit-incus-7.0.xml
# The same suites over the wire protocol, through the reference adapter (the core behind
# incus-operations-adapter/1): every trial that can be expressed over the wire, its own JUnit report.
echo "== incus-conformance certify --adapter 'incus-conformance adapter'"
cargo run --release -p incus-conformance -- certify \
  --adapter "'${CARGO_TARGET_DIR:-$PWD/target}/release/incus-conformance' adapter" \
  --junit target/conformance/junit-wire.xml
