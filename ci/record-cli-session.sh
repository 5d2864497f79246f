#!/usr/bin/env bash
# Records a session of a few hundred everyday `incus` commands against the real daemon on
# INCUS_SOCKET (default /var/lib/incus/unix.socket) through `fake-incus record`, in a throw-away
# project it deletes, then replays the transcript against a fresh fake seeded with the capture
# taken when the recording began, and prints the differences (the fake's fidelity gaps).
#
#   ci/record-cli-session.sh [ROUNDS]     (default 6 rounds of about 45 commands)
#
# Writes session.jsonl, session.state.json, replay.txt and replay.json to $OUT (default: a
# temporary directory, printed). Each round: launch, exec (arguments, environment, files and
# redirections, standard input, a failing command), file push/pull/delete, config, snapshots
# (create, restore, rename, delete), copy, stop/start/restart, rename, profiles, storage volumes
# and their snapshots, networks, images, operations. The busybox image must be there
# (ci/busybox-image.sh).
set -uo pipefail
cd "$(dirname "$0")/.."

SOCKET=${INCUS_SOCKET:-/var/lib/incus/unix.socket}
ROUNDS=${1:-6}
OUT=${OUT:-$(mktemp -d)}
BIN=${FAKE_INCUS:-}
log() { echo "== record-cli-session: $*" >&2; }

if [ -z "$BIN" ]; then
  cargo build -q -p fake-incus --bin fake-incus || exit 1
  BIN="${CARGO_TARGET_DIR:-target}/debug/fake-incus"
fi
PROJECT="cli$(head -c5 /dev/urandom | od -An -tx1 | tr -d ' \n')"
CONF=$(mktemp -d)
printf 'hello from the session\n' >"$CONF/hello.txt"
REC=""

cleanup() {
  [ -n "$REC" ] && kill "$REC" 2>/dev/null && wait "$REC" 2>/dev/null
  local real=(env INCUS_SOCKET="$SOCKET" incus)
  for name in $("${real[@]}" list --project "$PROJECT" --format csv -c n 2>/dev/null); do
    "${real[@]}" delete --force "$name" --project "$PROJECT" >/dev/null 2>&1
  done
  for vol in $("${real[@]}" storage volume list default --project "$PROJECT" --format csv -c tn 2>/dev/null \
    | awk -F, '$1=="custom"{print $2}'); do
    "${real[@]}" storage volume delete default "$vol" --project "$PROJECT" >/dev/null 2>&1
  done
  for profile in $("${real[@]}" profile list --project "$PROJECT" --format csv -c n 2>/dev/null); do
    [ "$profile" = default ] || "${real[@]}" profile delete "$profile" --project "$PROJECT" >/dev/null 2>&1
  done
  "${real[@]}" project delete "$PROJECT" >/dev/null 2>&1
  rm -rf "$CONF"
}
trap cleanup EXIT

"$BIN" capture --unix "$SOCKET" --project default --instances no-instance-has-this-name \
  --output "$OUT/session.state.json" || exit 1
"$BIN" record --upstream "$SOCKET" --unix "$CONF/recorder.socket" \
  --transcript "$OUT/session.jsonl" >"$CONF/record.out" &
REC=$!
for _ in $(seq 100); do
  [ -s "$CONF/record.out" ] && break
  sleep 0.1
done
[ -s "$CONF/record.out" ] || { log "the recorder did not start"; exit 1; }

commands=0 failed=0
run() {
  commands=$((commands + 1))
  if ! INCUS_SOCKET="$CONF/recorder.socket" INCUS_CONF="$CONF" incus "$@" >/dev/null 2>&1 </dev/null; then
    failed=$((failed + 1))
  fi
}
# A command with standard input or a shell around it.
run_sh() {
  commands=$((commands + 1))
  if ! INCUS_SOCKET="$CONF/recorder.socket" INCUS_CONF="$CONF" bash -c "$1" >/dev/null 2>&1; then
    failed=$((failed + 1))
  fi
}

P=(--project "$PROJECT")
run project create "$PROJECT" -c features.images=false -c features.profiles=true
run profile device add default root disk path=/ pool=default "${P[@]}"
for i in $(seq "$ROUNDS"); do
  c="c$i"
  run launch busybox "$c" "${P[@]}"
  run exec "$c" "${P[@]}" -- echo hello
  run exec "$c" "${P[@]}" -- env
  run exec "$c" "${P[@]}" --env FOO=bar -- sh -c 'echo $FOO'
  run exec "$c" "${P[@]}" -- sh -c 'echo out; echo err >&2; exit 3'
  run exec "$c" "${P[@]}" -- sh -c 'echo kept > /tmp/f; cat /tmp/f >> /tmp/g; wc -c < /tmp/g'
  run exec "$c" "${P[@]}" -- ls /nope
  run_sh "printf 'from stdin\n' | incus exec $c --project $PROJECT -- cat"
  run_sh "incus exec $c --project $PROJECT -- cat /etc/hostname > $CONF/hostname"
  run file push "$CONF/hello.txt" "$c/tmp/hello.txt" "${P[@]}"
  run file pull "$c/tmp/hello.txt" "$CONF/pulled.txt" "${P[@]}"
  run file pull "$c/tmp/nothing" "$CONF/nothing" "${P[@]}"
  run file delete "$c/tmp/hello.txt" "${P[@]}"
  run config set "$c" user.k=v "${P[@]}"
  run config get "$c" user.k "${P[@]}"
  run config unset "$c" user.k "${P[@]}"
  run config show "$c" "${P[@]}"
  run info "$c" "${P[@]}"
  run list "${P[@]}" --format csv
  run snapshot create "$c" s1 "${P[@]}"
  run snapshot list "$c" "${P[@]}" --format csv
  run snapshot restore "$c" s1 "${P[@]}"
  run snapshot rename "$c" s1 s2 "${P[@]}"
  run snapshot delete "$c" s2 "${P[@]}"
  run copy "$c" "$c-copy" "${P[@]}"
  run stop --force "$c" "${P[@]}"
  run rename "$c" "d$i" "${P[@]}"
  run start "d$i" "${P[@]}"
  run restart --force "d$i" "${P[@]}"
  run profile create "p$i" "${P[@]}"
  run profile set "p$i" user.x=1 "${P[@]}"
  run profile show "p$i" "${P[@]}"
  run profile add "d$i" "p$i" "${P[@]}"
  run profile remove "d$i" "p$i" "${P[@]}"
  run profile delete "p$i" "${P[@]}"
  run storage volume create default "v$i" "${P[@]}"
  run storage volume set default "v$i" user.a=b "${P[@]}"
  run storage volume show default "v$i" "${P[@]}"
  run storage volume snapshot create default "v$i" vs1 "${P[@]}"
  run storage volume list default "${P[@]}" --format csv
  run storage volume delete default "v$i" "${P[@]}"
  run network list "${P[@]}" --format csv
  run image list "${P[@]}" --format csv
  run image info busybox "${P[@]}"
  run operation list "${P[@]}" --format csv
  run delete --force "d$i" "${P[@]}"
  run delete --force "$c-copy" "${P[@]}"
done
run profile device remove default root "${P[@]}"
run project delete "$PROJECT"
kill "$REC"
wait "$REC"
REC=""
log "$commands commands recorded ($failed failed, as some are meant to)"

"$BIN" replay "$OUT/session.jsonl" --state "$OUT/session.state.json" --max-pause-ms 20 \
  >"$OUT/replay.txt"
"$BIN" replay "$OUT/session.jsonl" --state "$OUT/session.state.json" --max-pause-ms 20 --json \
  >"$OUT/replay.json"
status=$?
log "transcript, capture and reports in $OUT (replay exit status $status)"
tail -n 40 "$OUT/replay.txt"
