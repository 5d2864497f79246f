#!/usr/bin/env bash
# Real-Incus acceptance for CI: runs real-incus-acceptance (every operation against a real daemon, in a
# throw-away project) and its differential mode (portable scenarios on the real daemon and on the fake),
# on Incus 6.0 (the system daemon) and on Incus 7.0 (ci/incus7.sh: a daemon from a trixie tree beside it).
# On the 6.0 daemon it also runs the operator CI recipes as written (ci/recipes.sh --only operator).
#
# Works from a clean clone, as root, on Debian 12:
#   - installs incus-base/incus-client (ci/install-incus.sh) and busybox-static when missing;
#   - starts incusd only when no daemon answers on the socket (its downloads go to a closed loopback
#     proxy, so nothing leaves the machine), and stops exactly that process (by PID) on exit;
#   - makes sure a storage pool "default" (dir) and a root disk in profile "default" exist.
# When a daemon is already running it starts and stops nothing.
#
# The 7.0 leg: ci/incus7.sh up (idempotent: builds the tree and starts its daemon only when missing), then
# the acceptance run, its differential run (the fake as Incus 7.0), the runner's real-daemon tests, the raw
# differential probe (both its trials: the request sequence with the fake as the daemon's line, and every
# endpoint of 7.0's list) and the recorded CLI sessions with the 7.0 client, against the 7.0 socket; the
# daemon is stopped at the end only when this run started it. The 7.0 differential's differences count as
# the 6.0 leg's do (REAL_INCUS7_COMPARE_GATES=0 reports them without counting). The leg reuses the runner
# and test binaries of the 6.0 leg.
#
# Environment: INCUS_DIR (default /var/lib/incus; the daemon started here uses it), INCUS_SOCKET
# (default $INCUS_DIR/unix.socket; a daemon is started only for that default), REAL_INCUS_REPORT_DIR (default
# target/real-incus; the 7.0 leg writes into its incus7/), REAL_INCUS_SKIP_COMPARE=1 to leave out the
# differential run, REAL_INCUS_SKIP_INCUS7=1 to leave out the 7.0 leg, REAL_INCUS7_COMPARE_GATES (default 1;
# 0 reports the 7.0 differential's differences without counting them), INCUS7_ROOT (the 7.0 tree, see
# ci/incus7.sh), REAL_INCUS_CARGO_PROFILE (default release; dev for a quick local check).
set -euo pipefail
cd "$(dirname "$0")/.."

DAEMON_DIR=${INCUS_DIR:-/var/lib/incus}
SOCKET=${INCUS_SOCKET:-$DAEMON_DIR/unix.socket}
REPORT_DIR=${REAL_INCUS_REPORT_DIR:-target/real-incus}
PROFILE=${REAL_INCUS_CARGO_PROFILE:-release}
STATE=$(mktemp -d)
STARTED_PID=""
INCUS7_STARTED=""

log() { echo "== real-incus: $*" >&2; }

stop_started_daemon() {
  if [ -n "$INCUS7_STARTED" ]; then
    log "stopping the Incus 7.0 daemon this run started (pid $INCUS7_STARTED)"
    bash ci/incus7.sh down || true
  fi
  if [ -n "$STARTED_PID" ] && kill -0 "$STARTED_PID" 2>/dev/null; then
    log "stopping the incusd this script started (pid $STARTED_PID)"
    kill -TERM "$STARTED_PID" 2>/dev/null || true
    for _ in $(seq 1 120); do kill -0 "$STARTED_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$STARTED_PID" 2>/dev/null; then
      log "incusd did not stop within 60 s; killing pid $STARTED_PID"
      kill -KILL "$STARTED_PID" 2>/dev/null || true
    fi
  fi
  rm -rf "$STATE"
}
trap stop_started_daemon EXIT

answers() {
  if command -v curl >/dev/null; then
    curl -sf --max-time 2 --unix-socket "$SOCKET" http://incus/1.0 >/dev/null 2>&1
  else
    INCUS_SOCKET="$SOCKET" timeout 5 incus query /1.0 >/dev/null 2>&1
  fi
}

install_missing() {
  ci/install-incus.sh
  if ! command -v busybox >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
  fi
  command -v incus >/dev/null || { log "the incus client is not installed (not root?)"; exit 1; }
  command -v busybox >/dev/null || { log "no busybox on PATH for the test image"; exit 1; }
}

start_daemon_if_needed() {
  if answers; then
    log "a daemon already answers on $SOCKET: starting nothing"
    return
  fi
  [ -x /usr/libexec/incus/incusd ] || { log "no daemon answers and incusd is not installed"; exit 1; }
  [ "$(id -u)" = 0 ] || { log "no daemon answers and starting incusd needs root"; exit 1; }
  if [ "$SOCKET" != "$DAEMON_DIR/unix.socket" ]; then
    log "no daemon answers on $SOCKET, and a daemon started here would listen on $DAEMON_DIR/unix.socket"
    exit 1
  fi
  log "starting incusd (log in $STATE/incusd.log)"
  HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
    http_proxy=http://127.0.0.1:9 NO_PROXY= no_proxy= INCUS_DIR="$DAEMON_DIR" \
    setsid /usr/libexec/incus/incusd --group root --logfile "$STATE/incusd.log" >"$STATE/incusd.out" 2>&1 &
  STARTED_PID=$!
  for _ in $(seq 1 120); do answers && break; kill -0 "$STARTED_PID" 2>/dev/null || break; sleep 0.5; done
  if ! answers; then
    log "incusd did not answer within 60 s"
    cat "$STATE/incusd.out" "$STATE/incusd.log" >&2 2>/dev/null || true
    exit 1
  fi
}

prepare_pool_and_profile() {
  export INCUS_SOCKET="$SOCKET"
  incus storage show default >/dev/null 2>&1 || incus storage create default dir >/dev/null
  incus profile device show default 2>/dev/null | grep -q '^root:' ||
    incus profile device add default root disk path=/ pool=default >/dev/null
}

# The raw differential probe of fake-incus expects a busybox image (alias "busybox") in project default,
# as a freshly set-up host has it; the acceptance runner itself imports its own image into its project.
ensure_busybox_alias() {
  incus image alias list --format csv 2>/dev/null | grep -q '^busybox,' && return
  local img
  img=$(mktemp -d)
  bash ci/busybox-image.sh "$img"
  incus image import "$img/meta.tar.gz" "$img/rootfs.tar.gz" --alias busybox >/dev/null
  rm -rf "$img"
  log "imported a busybox test image (alias busybox) into project default"
}

install_missing
start_daemon_if_needed
prepare_pool_and_profile
ensure_busybox_alias

mkdir -p "$REPORT_DIR"
status=0
log "building the runner"
cargo build --profile "$PROFILE" -p real-incus

# The acceptance run against one daemon: leftovers of earlier runs removed, then the run (report in $2).
acceptance() {
  local socket=$1 report_dir=$2
  log "removing leftovers of earlier runs on $socket"
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$socket" --cleanup-only || status=1
  log "acceptance run on $socket (report in $report_dir)"
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$socket" \
    --report-dir "$report_dir" || status=1
}

summary() {
  if [ -f "$1/real-incus-acceptance.md" ]; then
    grep -E '^(# |- Server|\| `incus_|## Safety values)' "$1/real-incus-acceptance.md" >&2 || true
  fi
}

log "Incus 6.0 leg: $SOCKET"
acceptance "$SOCKET" "$REPORT_DIR"
log "the operator CI recipes (ci/recipes/*/operator*) as written, on a fresh clone, against this daemon"
RECIPES_OPERATOR_SOCKET="$SOCKET" bash ci/recipes.sh --only operator || status=1
if [ "${REAL_INCUS_SKIP_COMPARE:-0}" != 1 ]; then
  log "differential run against the fake (report in $REPORT_DIR/compare-fake)"
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$SOCKET" --compare-fake \
    --report-dir "$REPORT_DIR/compare-fake" || status=1
fi
log "the tests that need a real daemon (ignored elsewhere; the cluster ones run in ci/real-incus-cluster.sh)"
INCUS_SOCKET="$SOCKET" cargo test -q -p real-incus --test runner -- --ignored --skip cluster:: || status=1
log "raw differential probe: the same requests on the real daemon and on the fake"
INCUS_SOCKET="$SOCKET" cargo test -q -p fake-incus --test differential_real -- --nocapture || status=1
log "record and replay: incus CLI sessions recorded through fake-incus record, replayed on a fresh fake"
INCUS_SOCKET="$SOCKET" cargo test -q -p fake-incus --test record_real -- --nocapture || status=1
summary "$REPORT_DIR"

if [ "${REAL_INCUS_SKIP_INCUS7:-0}" != 1 ]; then
  leg_started=$(date +%s)
  log "Incus 7.0 leg: ci/incus7.sh up"
  up_status=0
  up=$(bash ci/incus7.sh up) || up_status=$?
  INCUS7_SOCKET=$(sed -n 's/^INCUS7_SOCKET=//p' <<<"$up")
  INCUS7_STARTED=$(sed -n 's/^INCUS7_STARTED=//p' <<<"$up")
  INCUS7_CLIENT=$(sed -n 's/^INCUS7_CLIENT=//p' <<<"$up")
  if [ "$up_status" = 0 ]; then
    log "Incus 7.0 daemon ready on $INCUS7_SOCKET after $(($(date +%s) - leg_started)) s"
    acceptance "$INCUS7_SOCKET" "$REPORT_DIR/incus7"
    if [ "${REAL_INCUS_SKIP_COMPARE:-0}" != 1 ]; then
      log "differential run against the fake as Incus 7.0 (report in $REPORT_DIR/incus7/compare-fake)"
      if cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$INCUS7_SOCKET" \
        --compare-fake --report-dir "$REPORT_DIR/incus7/compare-fake"; then
        :
      elif [ "${REAL_INCUS7_COMPARE_GATES:-1}" = 1 ]; then
        status=1
      else
        log "the 7.0 differential found differences: reported, not counted (REAL_INCUS7_COMPARE_GATES=0)"
      fi
    fi
    log "the tests that need a real daemon, on Incus 7.0"
    INCUS_SOCKET="$INCUS7_SOCKET" cargo test -q -p real-incus --test runner -- --ignored --skip cluster:: || status=1
    INCUS_SOCKET="$INCUS7_SOCKET" ensure_busybox_alias
    log "raw differential probe on Incus 7.0: the request sequence (the fake as the daemon's line) and every endpoint"
    INCUS_SOCKET="$INCUS7_SOCKET" INCUS7_SOCKET="$INCUS7_SOCKET" \
      cargo test -q -p fake-incus --test differential_real -- --nocapture || status=1
    log "record and replay on Incus 7.0: the CLI sessions with the 7.0 client ($INCUS7_CLIENT)"
    INCUS_SOCKET="$INCUS7_SOCKET" INCUS_CLIENT="$INCUS7_CLIENT" \
      cargo test -q -p fake-incus --test record_real -- --nocapture || status=1
    summary "$REPORT_DIR/incus7"
  else
    log "ci/incus7.sh up failed: no Incus 7.0 leg"
    status=1
  fi
  log "Incus 7.0 leg took $(($(date +%s) - leg_started)) s (the daemon's stop at exit not included)"
fi

if [ "$status" != 0 ] && [ -n "$STARTED_PID" ] && [ -f "$STATE/incusd.log" ]; then
  log "last lines of the log of the incusd this script started:"
  tail -n 40 "$STATE/incusd.log" >&2 || true
fi
log "done (status $status)"
exit "$status"
