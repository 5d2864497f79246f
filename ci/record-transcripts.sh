#!/usr/bin/env bash
# Re-records the transcripts kept in fake-incus/tests/data/transcripts/ (the regression tests of
# `fake-incus replay`) from the real daemon on INCUS_SOCKET (default /var/lib/incus/unix.socket):
# runs the sessions of fake-incus/tests/record_real.rs through the recorder (each in a throw-away
# project it deletes), writes NAME.jsonl and NAME.state.json (the capture taken when the recording
# began), and replaces the kept ones only when every session was recorded and replayed with no
# difference but the known ones. Start the daemon first (ci/real-incus.sh does, when needed).
set -euo pipefail
cd "$(dirname "$0")/.."

SOCKET=${INCUS_SOCKET:-/var/lib/incus/unix.socket}
KEPT=fake-incus/tests/data/transcripts
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

log() { echo "== record-transcripts: $*" >&2; }

INCUS_SOCKET="$SOCKET" RECORD_TRANSCRIPTS_TO="$OUT" \
  cargo test -q -p fake-incus --test record_real -- --nocapture
recorded=$(find "$OUT" -name '*.jsonl' | wc -l)
kept=$(find "$KEPT" -name '*.jsonl' | wc -l)
if [ "$recorded" = 0 ] || [ "$recorded" -lt "$kept" ]; then
  log "only $recorded of $kept sessions were recorded (does a daemon answer on $SOCKET?): nothing replaced"
  exit 1
fi
cp "$OUT"/*.jsonl "$OUT"/*.state.json "$KEPT"/
log "re-recorded $recorded transcripts into $KEPT"
git status --short "$KEPT" >&2 || true
