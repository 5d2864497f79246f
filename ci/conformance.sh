#!/usr/bin/env bash
# The README's main job: the full conformance run over an embedded fake Incus, with a JUnit report.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/conformance
echo "== cargo run --release -p incus-conformance"
cargo run --release -p incus-conformance -- run --junit target/conformance/junit.xml
