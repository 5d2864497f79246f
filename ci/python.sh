#!/usr/bin/env bash
# The Python package (python/), proved the way a Python user takes it:
#   1. the wheel is built from the tree with maturin (in a tools venv, target/python/tools-venv),
#      from the build the other steps made: same target directory and profile
#      (CONFORMANCE_CARGO_PROFILE, default release; .ci/run uses dev, what `cargo test` built), so
#      only the wheel's two entry points (fake-incus, incus-conformance) compile;
#   2. it is installed into a fresh virtual environment with nothing else but pytest, and the time from
#      `pip install` of the wheel to the first green test is measured;
#   3. pylxd joins that environment, and the package's suite (python/tests/) runs there from its own
#      directory, with the official client and pylxd required (FAKE_INCUS_REQUIRE): the fixture with
#      pylxd and `incus`, faults and journal, a cluster with a member down, the README's examples,
#      the certification of a Python adapter.
# Timings go to target/python/timings.txt (and stdout); the suite's JUnit report to
# target/python/junit.xml. Needs python3 with venv and PyPI (pip), which CI has.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=target/python
mkdir -p "$out"
log() { echo "== python: $*"; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
command -v python3 >/dev/null || { log "no python3 on this machine: the Python package cannot be proved"; exit 1; }

tools=$out/tools-venv
if ! "$tools/bin/maturin" --version >/dev/null 2>&1; then
  log "maturin into $tools"
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q "maturin>=1.5,<2"
fi

profile=${CONFORMANCE_CARGO_PROFILE:-release}
log "maturin build --profile $profile -m python/Cargo.toml"
t=$(now)
rm -rf "$out/wheels"
"$tools/bin/maturin" build --locked --profile "$profile" -m python/Cargo.toml --out "$out/wheels"
build_s=$(took "$t" "$(now)")
wheel=$(ls "$out"/wheels/fake_incus-*.whl)
wheel_mb=$(du -m "$wheel" | cut -f1)

log "a fresh virtual environment: pip install $(basename "$wheel") pytest, then the first test"
rm -rf "$out/venv"
python3 -m venv "$out/venv"
py=$root/$out/venv/bin
t0=$(now)
"$py/pip" install -q "$wheel"
t_wheel=$(now)
"$py/pip" install -q pytest
t_pytest=$(now)
(cd python/tests && "$py/pytest" -q -p no:cacheprovider "test_fixture.py::test_the_fixture_serves_incus_on_its_socket")
t1=$(now)

log "pip install pylxd (for the pylxd tests)"
"$py/pip" install -q pylxd
t_pylxd=$(now)

log "the package's suite (official client and pylxd required)"
t=$(now)
status=0
(cd python/tests && FAKE_INCUS_REQUIRE=incus,pylxd "$py/pytest" -q -p no:cacheprovider -rs \
  --junitxml="$root/$out/junit.xml") || status=$?
suite_s=$(took "$t" "$(now)")

cat >"$out/timings.txt" <<EOF
python package (ci/python.sh), $(nproc) cores, $(python3 --version 2>&1)
maturin build --profile $profile (after the workspace's $profile build): ${build_s} s; wheel ${wheel_mb} MB
pip install of the wheel into a fresh venv: $(took "$t0" "$t_wheel") s
pip install pytest: $(took "$t_wheel" "$t_pytest") s
from pip install of the wheel to the first green test: $(took "$t0" "$t1") s
pip install pylxd: $(took "$t1" "$t_pylxd") s
the package's suite: ${suite_s} s (exit status ${status})
EOF
cat "$out/timings.txt"
exit "$status"
