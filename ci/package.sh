#!/usr/bin/env bash
# Rust users install the programs with cargo, and every publishable crate packages:
#   1. every package that is not `publish = false` has its metadata (description, license, repository,
#      readme, keywords, categories) and `cargo package` packs and builds it as crates.io would (its
#      path dependencies replaced by versions: the workspace's crates among themselves, and the empty
#      `workspace-hack` 0.1 of crates.io, as cargo-hakari's workspaces publish);
#   2. `cargo install --locked --path fake-incus` and `--path conformance` into a temporary root (with the
#      CI's target directory and profile, CONFORMANCE_CARGO_PROFILE, default release, so that build is
#      reused), then the installed programs run from
#      another directory: the main job (`incus-conformance run`) and a fake serving the official client.
# Timings go to target/package/timings.txt. PACKAGE_VERIFY=0 packs without the build of step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
log() { echo "== package: $*"; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
mkdir -p target/package

log "metadata of every publishable crate"
publishable=$(cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
required = ("description", "license", "repository", "readme", "keywords", "categories")
missing, names = [], []
for p in json.load(sys.stdin)["packages"]:
    if p.get("publish") == []:
        continue
    names.append(p["name"])
    missing += [p["name"] + ": no " + key for key in required if not p.get(key)]
if missing:
    sys.exit("package metadata missing:\n  " + "\n  ".join(missing))
print(" ".join(names))
')
log "publishable: $publishable"
args=()
for name in $publishable; do args+=(-p "$name"); done
# cargo verifies each crate against the others' .crate files through a local registry, which it unpacks
# once per name and version under $CARGO_HOME/registry/src/-HASH/, and whose builds it takes for
# immutable (never rebuilt once in a target directory): an earlier run's copies (same 0.1.0, older
# sources) would be compiled, or linked, instead of this tree's. Remove the unpacked copies, and verify
# in a target directory of its own, emptied first.
for name in $publishable; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$name"-[0-9]*
done
t=$(now)
if [ "${PACKAGE_VERIFY:-1}" = 0 ]; then
  cargo package --locked --no-verify "${args[@]}"
else
  # The packaged crates are built with the workspace's dev profile (a packaged manifest carries none).
  # The packaged crates themselves (taken from a local registry, so not "local" to cargo) compile
  # without optimisation, as the workspace's own crates do.
  own=()
  for name in $publishable; do own+=(--config "profile.dev.package.$name.opt-level=0"); done
  rm -rf target/package-verify
  cargo package --locked "${args[@]}" --target-dir target/package-verify \
    --config 'profile.dev.debug="line-tables-only"' \
    --config 'profile.dev.package."*".opt-level=1' --config 'profile.dev.package."*".debug=false' "${own[@]}"
fi
package_s=$(took "$t" "$(now)")
ls -l target/package/*.crate target/package-verify/package/*.crate 2>/dev/null || true

log "cargo install --path into a temporary root"
install_root=$(mktemp -d)
elsewhere=$(mktemp -d)
trap 'rm -rf "$install_root" "$elsewhere"' EXIT
t=$(now)
profile=${CONFORMANCE_CARGO_PROFILE:-release}
for path in fake-incus conformance; do
  cargo install --locked --profile "$profile" --path "$path" --root "$install_root" \
    --target-dir "${CARGO_TARGET_DIR:-$root/target}"
done
install_s=$(took "$t" "$(now)")
ls -l "$install_root/bin"

log "the installed programs, from another directory"
cd "$elsewhere"
t=$(now)
"$install_root/bin/incus-conformance" run -q --junit "$elsewhere/junit.xml"
run_s=$(took "$t" "$(now)")
"$install_root/bin/fake-incus" serve --unix "$elsewhere/incus.socket" >"$elsewhere/ready.json" &
fake=$!
for _ in $(seq 200); do [ -s "$elsewhere/ready.json" ] && break; sleep 0.05; done
[ -s "$elsewhere/ready.json" ] || { log "the installed fake-incus did not start"; kill "$fake"; exit 1; }
if command -v incus >/dev/null; then
  INCUS_SOCKET="$elsewhere/incus.socket" INCUS_CONF="$elsewhere" incus launch busybox c1 -q
  [ "$(INCUS_SOCKET="$elsewhere/incus.socket" INCUS_CONF="$elsewhere" incus exec c1 -- echo installed)" = installed ]
  log "the official client launched and exec'd on the installed fake"
else
  curl -sf --unix-socket "$elsewhere/incus.socket" http://incus/1.0 >/dev/null
fi
kill "$fake"
wait "$fake" || true
cd "$root"
cat >target/package/timings.txt <<EOF
cargo package of $publishable ($([ "${PACKAGE_VERIFY:-1}" = 0 ] && echo "--no-verify" || echo "with its verify build")): ${package_s} s
cargo install --profile $profile --path fake-incus and --path conformance (CI's target directory): ${install_s} s
the installed incus-conformance run from another directory: ${run_s} s
EOF
cat target/package/timings.txt
