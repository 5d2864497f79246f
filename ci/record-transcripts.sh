#!/usr/bin/env bash
# Re-records the transcripts kept in fake-incus/tests/data/transcripts/ (the regression tests of
# `fake-incus replay`) from the real daemon on INCUS_SOCKET (default /var/lib/incus/unix.socket):
# runs the sessions of fake-incus/tests/record_real.rs through the recorder (each in a throw-away
# project it deletes), writes NAME.jsonl and NAME.state.json (the capture taken when the recording
# began), and replaces the kept ones only when every session was recorded and replayed with no
# difference but the known ones. Start the daemon first (ci/real-incus.sh does, when needed).
#
# With INCUS7_SOCKET set (an Incus 7.0 daemon; ci/incus7.sh prints it, and INCUS7_CLIENT, its own
# client, which then runs the sessions), the sessions named in SESSIONS7 (default: cli-session) are
# recorded from that daemon too and kept as NAME-7.0.jsonl and NAME-7.0.state.json: the capture
# names the version it read, so the kept-transcript test replays them against the fake as 7.0,
# with KNOWN_7_0 beside KNOWN (fake-incus/tests/transcripts/mod.rs). A transcript's header names
# the socket by its path in the daemon's own layout, never where this machine keeps the daemon.
# RECORD_TRANSCRIPTS_SKIP_6_0=1 records only the 7.0 sessions.
set -euo pipefail
cd "$(dirname "$0")/.."

SOCKET=${INCUS_SOCKET:-/var/lib/incus/unix.socket}
KEPT=fake-incus/tests/data/transcripts
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

log() { echo "== record-transcripts: $*" >&2; }

# record SOCKET CLIENT DIR [FILTER]: the sessions of record_real (those FILTER names) into DIR.
record() {
  mkdir -p "$3"
  INCUS_SOCKET="$1" INCUS_CLIENT="$2" RECORD_TRANSCRIPTS_TO="$3" \
    cargo test -q -p fake-incus --test record_real -- --nocapture ${4:+"$4"}
}

if [ "${RECORD_TRANSCRIPTS_SKIP_6_0:-0}" != 1 ]; then
  record "$SOCKET" "${INCUS_CLIENT:-incus}" "$OUT/6.0"
  recorded=$(find "$OUT/6.0" -name '*.jsonl' | wc -l)
  kept=$(find "$KEPT" -name '*.jsonl' ! -name '*-7.0.jsonl' | wc -l)
  if [ "$recorded" = 0 ] || [ "$recorded" -lt "$kept" ]; then
    log "only $recorded of $kept sessions were recorded (does a daemon answer on $SOCKET?): nothing replaced"
    exit 1
  fi
fi

if [ -n "${INCUS7_SOCKET:-}" ]; then
  [ -n "${INCUS7_CLIENT:-}" ] || { log "INCUS7_SOCKET needs INCUS7_CLIENT (the 7.0 client)"; exit 1; }
  for session in ${SESSIONS7:-cli-session}; do
    # The trial's name ends with `::SESSION`: the filter picks that one session.
    record "$INCUS7_SOCKET" "$INCUS7_CLIENT" "$OUT/7.0" "::$session"
    if [ ! -s "$OUT/7.0/$session.jsonl" ]; then
      log "the 7.0 session $session was not recorded (does a daemon answer on $INCUS7_SOCKET?): nothing replaced"
      exit 1
    fi
    mv "$OUT/7.0/$session.jsonl" "$OUT/7.0/$session-7.0.jsonl"
    mv "$OUT/7.0/$session.state.json" "$OUT/7.0/$session-7.0.state.json"
  done
fi

for dir in "$OUT/6.0" "$OUT/7.0"; do
  [ -d "$dir" ] || continue
  cp "$dir"/*.jsonl "$dir"/*.state.json "$KEPT"/
  log "re-recorded $(find "$dir" -name '*.jsonl' | wc -l) transcripts of Incus ${dir##*/} into $KEPT"
done
git status --short "$KEPT" >&2 || true
