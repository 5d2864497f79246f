#!/usr/bin/env bash
# Real-Incus acceptance on a real 3-member Incus cluster, for CI (called by .ci/run after ci/real-incus.sh).
#
# Works from a clean clone, as root, on Debian 12. It
#   - installs incus-base/incus-client (ci/install-incus.sh) and busybox-static when missing;
#   - brings up three incusd daemons m1, m2, m3 on loopback addresses, each with its own INCUS_DIR under a
#     temporary directory (never /var/lib/incus: a standalone daemon there is left alone), their downloads
#     sent to a closed loopback proxy; m1 bootstraps the cluster from a preseed (dir pool "default", the
#     default profile's root disk), m2 and m3 join with single-use tokens; ready means that
#     GET /1.0?target=mN through m1 answers 200 for every member (ONLINE is not enough);
#   - imports a busybox test image (alias busybox), as ci/real-incus.sh does, and trusts a client
#     certificate made for the run;
#   - runs the acceptance runner through m1's Unix socket (with --compare-fake: also on a fake cluster of
#     the same members) and through m2 over HTTPS with the pinned
#     cluster certificate ($INCUS_DIR/cluster.crt), then the fake-versus-real differential of the
#     cluster (fake-incus's differential_cluster_real: reads, placement, moves, copies, evacuation and
#     restore, groups, member config, step by step through m1 on both), then the cluster tests of the
#     runner (ignored elsewhere), the last of which runs the cluster scenarios (scenarios/cluster/: m3's
#     daemon killed and started again, the member-down answers checked by the scenario engine);
#   - tears everything down in an EXIT trap: instances deleted through the API first, each incusd stopped
#     by its PID, leftover "[lxc monitor] <INCUS_DIR>/containers NAME" processes killed by PID, mounts
#     under the INCUS_DIRs unmounted, the directories removed.
#
# Cost: with the cluster differential (72 steps, ~35 s of which ~25 s waiting for m3's heartbeat round
# and Offline, then its restart) the whole script took 582 s with REAL_INCUS_CARGO_PROFILE=dev, the
# builds of the runner and the test binaries included, on the same shared machine. Before it: 179 s
# (`time bash ci/real-incus-cluster.sh`, binaries already built, on a 2-core machine shared with other
# builds): bring-up 8 s, acceptance through m1's socket with
# --compare-fake ~80 s, through m2's HTTPS ~55 s, member-down checks 19 s (of which ~10 s waiting for m3
# to show Offline), restart of m3, cleanup and tear-down ~15 s. In .ci/run the release runner is already
# built by ci/real-incus.sh; building the release test binary of real-incus comes on top (a few minutes
# at most), so the whole .ci/run (1,403 s before this script) stays near 30 min, its limit being 90 min.
#
# Subcommands (default: all): `up` brings a cluster up and leaves it running (state in
# $REAL_INCUS_CLUSTER_DIR, printed), `down` tears down the cluster described there, `start MEMBER` starts
# a member of it again after its daemon was killed, `all` does up, the checks and down.
#
# Environment: REAL_INCUS_CLUSTER_ADDRESSES (three loopback addresses, default "127.0.0.11 127.0.0.12
# 127.0.0.13"; port 8443 on each), REAL_INCUS_CLUSTER_DIR (default a new temporary directory),
# REAL_INCUS_REPORT_DIR (default target/real-incus-cluster), REAL_INCUS_CARGO_PROFILE (default release).
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a ADDRS <<<"${REAL_INCUS_CLUSTER_ADDRESSES:-127.0.0.11 127.0.0.12 127.0.0.13}"
PORT=8443
MEMBERS=(m1 m2 m3)
REPORT_DIR=${REAL_INCUS_REPORT_DIR:-target/real-incus-cluster}
PROFILE=${REAL_INCUS_CARGO_PROFILE:-release}
COMMAND=${1:-all}

log() { echo "== real-incus-cluster: $*" >&2; }
die() {
  log "$*"
  exit 1
}

[ "${#ADDRS[@]}" = 3 ] || die "REAL_INCUS_CLUSTER_ADDRESSES must hold three addresses"
for a in "${ADDRS[@]}"; do
  case "$a" in 127.*) ;; *) die "address $a is not a loopback address" ;; esac
done

if [ -n "${REAL_INCUS_CLUSTER_DIR:-}" ]; then
  ROOT=$REAL_INCUS_CLUSTER_DIR
  mkdir -p "$ROOT"
else
  ROOT=$(mktemp -d /tmp/incus-cluster.XXXXXX)
fi
# mktemp makes it 0700: the containers' unprivileged root must be able to reach their rootfs below it.
chmod 0711 "$ROOT"
ROOT=$(cd "$ROOT" && pwd)
case "$ROOT" in /var/lib/incus*) die "refusing to use $ROOT" ;; esac

dir_of() { echo "$ROOT/$1"; }
addr_of() {
  local i
  for i in 0 1 2; do
    if [ "${MEMBERS[$i]}" = "$1" ]; then
      echo "${ADDRS[$i]}:$PORT"
      return 0
    fi
  done
  return 1
}
# The incus client for one member.
on() {
  local member=$1
  shift
  INCUS_DIR=$(dir_of "$member") INCUS_SOCKET=$(dir_of "$member")/unix.socket incus "$@"
}
sock() { echo "$(dir_of "$1")/unix.socket"; }
# One API request through a member's socket; prints the HTTP status.
status_of() {
  curl -s -o /dev/null -w '%{http_code}' --max-time "${3:-5}" --unix-socket "$(sock "$1")" "http://incus$2" || true
}

start_member() {
  local member=$1 dir
  dir=$(dir_of "$member")
  mkdir -p "$dir"
  log "starting incusd for $member (INCUS_DIR=$dir, $(addr_of "$member"))"
  HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
    http_proxy=http://127.0.0.1:9 NO_PROXY= no_proxy= INCUS_SKIP_INSTANCE_TYPES=1 INCUS_DIR="$dir" \
    setsid /usr/libexec/incus/incusd --group root --logfile "$dir/incusd.log" >"$dir/incusd.out" 2>&1 &
  echo $! >"$dir/incusd.pid"
  INCUS_DIR="$dir" timeout -k 5 40 incus admin waitready --timeout=30 ||
    die "incusd of $member did not become ready (log: $dir/incusd.log)"
}

bootstrap() {
  local addr
  addr=$(addr_of m1)
  on m1 admin init --preseed <<EOF
config:
  core.https_address: $addr
  cluster.https_address: $addr
cluster:
  server_name: m1
  enabled: true
storage_pools:
- name: default
  driver: dir
profiles:
- name: default
  devices:
    root:
      path: /
      pool: default
      type: disk
EOF
}

join() {
  local member=$1 addr token
  addr=$(addr_of "$member")
  token=$(on m1 cluster add "$member" --quiet)
  on "$member" admin init --preseed <<EOF
cluster:
  enabled: true
  server_name: $member
  server_address: $addr
  cluster_token: $token
  member_config:
  - entity: storage-pool
    name: default
    key: source
    value: ""
EOF
  on "$member" config set core.https_address "$addr"
}

# Ready: every member answers 200 to GET /1.0?target=mN through m1 (bounded: 60 s).
wait_cluster_ready() {
  local deadline=$((SECONDS + 60)) m pending
  while :; do
    pending=""
    for m in "${MEMBERS[@]}"; do
      [ "$(status_of m1 "/1.0?target=$m")" = 200 ] || pending="$pending $m"
    done
    [ -z "$pending" ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || die "members not ready through m1 within 60 s:$pending"
    sleep 0.5
  done
}

import_busybox() {
  local img
  img=$(mktemp -d)
  bash ci/busybox-image.sh "$img"
  on m1 image import "$img/meta.tar.gz" "$img/rootfs.tar.gz" --alias busybox >/dev/null
  rm -rf "$img"
}

trust_client() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:secp384r1 -nodes -days 2 -subj "/CN=acceptance" \
    -keyout "$ROOT/client.key" -out "$ROOT/client.crt" >/dev/null 2>&1
  on m1 config trust add-certificate "$ROOT/client.crt" --name acceptance >/dev/null
  cp "$(dir_of m1)/cluster.crt" "$ROOT/cluster.crt"
}

up() {
  bash ci/install-incus.sh >&2
  command -v busybox >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
  [ -x /usr/libexec/incus/incusd ] || die "incusd is not installed"
  [ "$(id -u)" = 0 ] || die "starting incusd needs root"
  local started=$SECONDS m
  start_member m1
  bootstrap
  for m in m2 m3; do
    start_member "$m"
    join "$m"
  done
  wait_cluster_ready
  import_busybox
  trust_client
  log "cluster up in $((SECONDS - started)) s: ${MEMBERS[*]} at ${ADDRS[*]} (state in $ROOT)"
  on m1 cluster list --format csv >&2 || true
}

# Tear-down, in the order the reference gives; every step is best effort and bounded.
down() {
  local m dir pid monitor mnt
  for m in "${MEMBERS[@]}"; do
    dir=$(dir_of "$m")
    pid=$(cat "$dir/incusd.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
    # Instances through the API, by project (this member's view of the cluster; owners must be up).
    for p in $(timeout -k 2 10 env INCUS_DIR="$dir" incus project list --format csv -c n 2>/dev/null | sed 's/ (current)//'); do
      for i in $(timeout -k 2 10 env INCUS_DIR="$dir" incus list --project "$p" --format csv -c n 2>/dev/null); do
        timeout -k 2 30 env INCUS_DIR="$dir" incus delete --force --project "$p" "$i" >/dev/null 2>&1 || true
      done
    done
    break
  done
  for m in "${MEMBERS[@]}"; do
    dir=$(dir_of "$m")
    pid=$(cat "$dir/incusd.pid" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/incusd.pid"
  done
  # A daemon whose PID file was lost (a failed restart) is still found by its own log file.
  for pid in $(pgrep -f "^/usr/libexec/incus/incusd --group root --logfile $ROOT/m[123]/incusd.log" || true); do
    log "stopping a daemon of this cluster without a PID file (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
  done
  for m in "${MEMBERS[@]}"; do
    dir=$(dir_of "$m")
    # "[lxc monitor] $dir/containers NAME" outlives its daemon.
    for monitor in $(pgrep -f "^\[lxc monitor\] $dir/containers " 2>/dev/null || true); do
      log "killing leftover container monitor $monitor of $m"
      kill -KILL "$monitor" 2>/dev/null || true
    done
  done
  for m in "${MEMBERS[@]}"; do
    dir=$(dir_of "$m")
    # Deepest first.
    for mnt in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
      umount -l "$mnt" 2>/dev/null || true
    done
  done
  if ! awk -v d="$ROOT/" 'index($2, d) == 1 {found=1} END {exit !found}' /proc/mounts; then
    rm -rf "$ROOT"
  else
    log "mounts are left under $ROOT; not removing it"
  fi
}

run_checks() {
  local status=0 sock1
  sock1=$(sock m1)
  mkdir -p "$REPORT_DIR"
  log "building the runner"
  cargo build --profile "$PROFILE" -p real-incus
  log "acceptance through m1's Unix socket, compared with a fake cluster (report in $REPORT_DIR/unix)"
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$sock1" --compare-fake \
    --report-dir "$REPORT_DIR/unix" || status=1
  log "acceptance through m2 over HTTPS, cluster certificate pinned (report in $REPORT_DIR/https)"
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --url "https://$(addr_of m2)" \
    --client-cert "$ROOT/client.crt" --client-key "$ROOT/client.key" --server-cert "$ROOT/cluster.crt" \
    --report-dir "$REPORT_DIR/https" || status=1
  log "the fake-versus-real differential on the cluster, step by step through m1 (a fake cluster of the same members)"
  REAL_INCUS_CLUSTER_SOCKET="$sock1" REAL_INCUS_CLUSTER_DIR="$ROOT" \
    REAL_INCUS_CLUSTER_START="bash $PWD/ci/real-incus-cluster.sh start" \
    timeout -k 10 900 cargo test --profile "$PROFILE" -q -p fake-incus \
    --test differential_cluster_real -- --nocapture || status=1
  log "the cluster scenarios of the runner's tests (ignored elsewhere; they kill m3's daemon and start it again)"
  REAL_INCUS_CLUSTER_SOCKET="$sock1" REAL_INCUS_CLUSTER_VICTIM=m3 REAL_INCUS_CLUSTER_DIR="$ROOT" \
    REAL_INCUS_CLUSTER_START="bash $PWD/ci/real-incus-cluster.sh start" \
    timeout -k 10 900 cargo test --profile "$PROFILE" -q -p real-incus --test runner -- --ignored cluster:: \
    --test-threads 1 --nocapture || status=1
  log "m3 again if a run left it down, then removing the runs' projects from every member"
  pid=$(cat "$(dir_of m3)/incusd.pid" 2>/dev/null || true)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    log "m3's daemon is down: starting it"
    start_member m3
  fi
  wait_cluster_ready || status=1
  cargo run --profile "$PROFILE" -q -p real-incus -- --yes-create-resources --unix "$sock1" --cleanup-only ||
    status=1
  for r in unix https; do
    [ -f "$REPORT_DIR/$r/real-incus-acceptance.md" ] &&
      grep -E '^(# |- Server|- Cluster)' "$REPORT_DIR/$r/real-incus-acceptance.md" >&2 || true
  done
  return "$status"
}

case "$COMMAND" in
  up)
    up
    echo "REAL_INCUS_CLUSTER_DIR=$ROOT"
    echo "INCUS_SOCKET=$(sock m1)"
    ;;
  down) down ;;
  start)
    # Starts a member of the cluster in $REAL_INCUS_CLUSTER_DIR again (its daemon was killed) and
    # waits until every member answers through m1.
    [ -n "${2:-}" ] && addr_of "$2" >/dev/null || die "start needs a member name (${MEMBERS[*]})"
    start_member "$2"
    wait_cluster_ready
    ;;
  all)
    trap down EXIT
    started=$SECONDS
    up
    status=0
    run_checks || status=1
    log "done in $((SECONDS - started)) s (status $status)"
    exit "$status"
    ;;
  *) die "unknown subcommand $COMMAND (up, down, start MEMBER or all)" ;;
esac
