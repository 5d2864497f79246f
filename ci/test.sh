#!/usr/bin/env bash
# The README's test command, plus the cheap checks that keep the tree clean.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --workspace --all-targets"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test --workspace"
cargo test --workspace
