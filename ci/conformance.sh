#!/usr/bin/env bash
# The README's main job: the full conformance run over an embedded fake Incus, with a JUnit report.
# CONFORMANCE_CARGO_PROFILE: the cargo profile (default release, as the README's main job runs;
# .ci/run uses dev, the profile `cargo test` has just built, so CI builds nothing more).
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${CONFORMANCE_CARGO_PROFILE:-release}
case "$PROFILE" in dev) OUT=debug ;; *) OUT=$PROFILE ;; esac
mkdir -p target/conformance
echo "== cargo run --profile $PROFILE -p incus-conformance"
cargo run --profile "$PROFILE" -p incus-conformance -- run --junit target/conformance/junit.xml
# The same trials on real time: virtual time must never hide a bug that only real time shows
# (about 40 s, most of it the trials that wait: exec graces, stalls, the member-down timeline).
echo "== incus-conformance run --real-time"
cargo run --profile "$PROFILE" -p incus-conformance -- run --real-time \
  --junit target/conformance/junit-real-time.xml
# The runs above answer as the fake's default line, Incus 7.0. The same run with the fake
# answering as Incus 6.0 (its server version, API extensions and behaviour), so that a producer
# certifying against the Incus its users run is covered on both lines (on virtual time, a few
# seconds; the binary is already built).
echo "== incus-conformance run --incus-version 6.0"
cargo run --profile "$PROFILE" -p incus-conformance -- run --incus-version 6.0 \
  --junit target/conformance/junit-incus-6.0.xml
# The same suites over the wire protocol, through the reference adapter (the core behind
# incus-operations-adapter/1): every trial that can be expressed over the wire, its own JUnit report.
echo "== incus-conformance certify --adapter 'incus-conformance adapter'"
cargo run --profile "$PROFILE" -p incus-conformance -- certify \
  --adapter "'${CARGO_TARGET_DIR:-$PWD/target}/$OUT/incus-conformance' adapter" \
  --junit target/conformance/junit-wire.xml
