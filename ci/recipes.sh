#!/usr/bin/env bash
# The CI recipes of ci/recipes/ (GitHub Actions and GitLab CI), every command run as written on a fresh
# clone of this repository (ci/recipes/run.py says how each CI system is stood in for). Runs after
# ci/test.sh and ci/python.sh: the clones reuse their dev build (CARGO_TARGET_DIR), and the wheel's
# fake-incus stands in for the operator's Incus. Logs in target/recipes/.
# Usage: ci/recipes.sh [--only NAME]...
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
tools=target/python/tools-venv
if ! "$tools/bin/python" -c 'import yaml' 2>/dev/null; then
  [ -x "$tools/bin/python" ] || python3 -m venv "$tools"
  "$tools/bin/pip" install -q pyyaml
fi
fake=target/python/venv/bin/fake-incus
[ -x "$fake" ] || { echo "== recipes: no $fake: run ci/python.sh first" >&2; exit 1; }
# The recipes build in the dev profile, as `cargo test` (ci/test.sh) does: their clones reuse it.
cargo build -q -p incus-conformance
echo "== recipes: every command of ci/recipes/{github,gitlab}/* on a fresh clone"
"$tools/bin/python" ci/recipes/run.py --repo . --target-dir "$target" --fake-incus "$fake" \
  --incus-conformance "$target/debug/incus-conformance" "$@"
