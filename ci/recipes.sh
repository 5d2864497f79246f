#!/usr/bin/env bash
# The CI recipes of ci/recipes/ (GitHub Actions and GitLab CI), every command run as written on a fresh
# clone of this repository (ci/recipes/run.py says how each CI system is stood in for). Runs after
# ci/test.sh: the clones reuse its dev build (CARGO_TARGET_DIR). The operator recipes need a real Incus
# (RECIPES_OPERATOR_SOCKET, its Unix socket): without one they are reported skipped; ci/real-incus.sh
# runs them against its daemon (`--only operator`). Logs in target/recipes/.
# Usage: ci/recipes.sh [--only NAME]...
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
tools=target/python/tools-venv
if ! "$tools/bin/python" -c 'import yaml' 2>/dev/null; then
  [ -x "$tools/bin/python" ] || python3 -m venv "$tools"
  "$tools/bin/pip" install -q pyyaml
fi
# The recipes build in the dev profile, as `cargo test` (ci/test.sh) does: their clones reuse it.
cargo build -q -p incus-conformance
operator=()
[ -n "${RECIPES_OPERATOR_SOCKET:-}" ] && operator=(--operator-socket "$RECIPES_OPERATOR_SOCKET")
echo "== recipes: the commands of ci/recipes/{github,gitlab}/* on a fresh clone"
"$tools/bin/python" ci/recipes/run.py --repo . --target-dir "$target" \
  --incus-conformance "$target/debug/incus-conformance" "${operator[@]}" "$@"
