#!/usr/bin/env bash
# Installs pylxd (a widely used Python client of the Incus/LXD API) into target/pylxd-venv, so that the
# fake's pylxd trial (tests/official_client/exec.rs) runs instead of being reported as ignored; ci/test.sh
# points PYLXD_PYTHON at it. Needs python3 with venv and PyPI. Never fatal: where it cannot install, the
# trial stays ignored with its reason.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=target/pylxd-venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import pylxd' 2>/dev/null; then
  echo "== pylxd: already in $venv"
  exit 0
fi
command -v python3 >/dev/null || { echo "== pylxd: no python3; the pylxd trial stays ignored"; exit 0; }
mkdir -p target
if python3 -m venv "$venv" && timeout 300 "$venv/bin/pip" install -q pylxd; then
  echo "== pylxd: installed in $venv ($("$venv/bin/python" -c 'import pylxd; print(pylxd.__version__)' 2>/dev/null))"
else
  echo "== pylxd: could not be installed; the pylxd trial stays ignored"
fi
exit 0
