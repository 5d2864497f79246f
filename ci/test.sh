#!/usr/bin/env bash
# The README's test command, plus the cheap checks that keep the tree clean.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --workspace --all-targets"
cargo clippy --workspace --all-targets -- -D warnings
# The pylxd trial runs where ci/install-pylxd.sh installed pylxd (and is ignored with its reason elsewhere).
if [ -z "${PYLXD_PYTHON:-}" ] && [ -x target/pylxd-venv/bin/python ]; then
  export PYLXD_PYTHON="$PWD/target/pylxd-venv/bin/python"
fi
echo "== cargo test --workspace"
cargo test --workspace
