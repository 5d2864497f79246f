#!/usr/bin/env bash
# A real Incus 7.0 LTS daemon beside the 6.0 one on a Debian 12 machine, from Debian's own packages, for CI
# (ci/real-incus.sh runs the acceptance run against both). Needs root.
#
# Debian ships Incus 7.0 for trixie (trixie-backports), not for bookworm. So `up`
#   1. builds a minimal trixie tree with debootstrap (into $INCUS7_ROOT.partial, renamed when complete, so an
#      interrupted build is started again rather than reused half-made);
#   2. installs incus-base and incus-client from trixie-backports inside it (again when either is missing);
#   3. starts incusd from that tree in a mount namespace of its own, rooted with pivot_root (a chroot will not
#      do: the kernel refuses to create user namespaces inside a chroot, so containers would not start), and
#      in a network namespace of its own with only its loopback: LXC names each container's command socket
#      "@<INCUS_DIR>/containers/<project>_<name>/command" in the abstract socket namespace, which belongs to
#      the network namespace, and every daemon's INCUS_DIR reads /var/lib/incus, so two daemons sharing a
#      network namespace would clash on an instance of the same name in the same project; its downloads go
#      to a closed loopback proxy, so nothing leaves the machine;
#   4. makes sure a dir storage pool "default", a root disk in profile "default" and a busybox image (alias
#      busybox, ci/busybox-image.sh) exist.
# Idempotent: a step already done is not done again, and when a daemon already answers on the tree's socket
# nothing is started. The daemon is reached through its Unix socket ($INCUS7_ROOT/var/lib/incus/unix.socket)
# and creates no bridge; its /run is a tmpfs of its own and its network namespace holds any address or port
# it is given, so it shares no directory, socket, bridge or port with the 6.0 daemon (/var/lib/incus) or with
# a 7.0 daemon of another tree. Its network list shows only `lo`. `up` prints, one per line:
#   INCUS7_SOCKET=<socket>   INCUS7_CLIENT=<the 7.0 client, a Go binary that runs on the host too>
#   INCUS7_STARTED=<PID of the daemon this call started, empty when it started none>
#
# `down` stops the daemon that an earlier `up` of this script started for this tree (its PID and mount
# namespace are recorded in $INCUS7_ROOT/var/lib/incus-operations-ci/) and nothing else: SIGPWR, so that it
# stops its instances before it exits, then SIGKILL after 60 s; then any process left in that mount
# namespace (an instance's monitor) by PID. A daemon this script did not start is never stopped. The tree
# stays, so the next `up` takes seconds; `purge` (after `down`) removes it.
#
# Environment: INCUS7_ROOT (the tree, default /var/lib/incus-operations-ci/incus7), INCUS7_SUITE (default
# trixie), INCUS7_MIRROR (default the Debian mirror of the machine's apt sources).
#
# Usage: ci/incus7.sh [up|down|purge]
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${INCUS7_ROOT:-/var/lib/incus-operations-ci/incus7}
ROOT=${ROOT%/}
SUITE=${INCUS7_SUITE:-trixie}
SOCKET=$ROOT/var/lib/incus/unix.socket
CLIENT=$ROOT/usr/bin/incus
# What this script records about the daemon it started, inside the tree (so two trees never share it).
STATE=$ROOT/var/lib/incus-operations-ci
COMMAND=${1:-up}

log() { echo "== incus7: $*" >&2; }
die() {
  log "$*"
  exit 1
}

answers() { curl -sf --max-time 2 --unix-socket "$SOCKET" http://incus/1.0 >/dev/null 2>&1; }
I7() { INCUS_SOCKET=$SOCKET "$CLIENT" "$@"; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (debootstrap, mount namespaces, incusd)"; }

apt_install_host() {
  local missing=()
  for pair in "$@"; do command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}"); done
  [ "${#missing[@]}" = 0 ] && return
  log "installing on the host: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The Debian mirror the machine already uses (as ci/install-incus.sh finds it).
mirror() {
  if [ -n "${INCUS7_MIRROR:-}" ]; then
    echo "$INCUS7_MIRROR"
    return
  fi
  local m
  m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$m" ] || m=$(awk '/^deb / && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$m" ] || die "no Debian mirror found in the apt sources; set INCUS7_MIRROR"
  echo "$m"
}

build_tree() {
  if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    [ ! -e "$ROOT" ] || die "$ROOT exists but is not a $SUITE tree; remove it or set INCUS7_ROOT"
    local partial=$ROOT.partial m
    m=$(mirror)
    rm -rf "$partial"
    mkdir -p "$(dirname "$ROOT")"
    log "debootstrap --variant=minbase $SUITE from $m (log: $partial.log)"
    debootstrap --variant=minbase "$SUITE" "$partial" "$m" >"$partial.log" 2>&1 ||
      die "debootstrap failed; last lines of $partial.log: $(tail -n 5 "$partial.log")"
    printf 'Types: deb\nURIs: %s\nSuites: %s-backports\nComponents: main\nSigned-By: %s\n' \
      "$m" "$SUITE" /usr/share/keyrings/debian-archive-keyring.gpg >"$partial/etc/apt/sources.list.d/backports.sources"
    mv "$partial" "$ROOT"
    rm -f "$partial.log"
  fi
  if [ ! -x "$ROOT/usr/libexec/incus/incusd" ] || [ ! -x "$CLIENT" ]; then
    mkdir -p "$STATE"
    log "installing incus-base and incus-client from $SUITE-backports in the tree (log: $STATE/apt.log)"
    {
      chroot "$ROOT" apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get install -y -qq -t "$SUITE-backports" \
          --no-install-recommends incus-base incus-client
    } >"$STATE/apt.log" 2>&1 || die "apt-get in the tree failed; last lines of $STATE/apt.log: $(tail -n 5 "$STATE/apt.log")"
  fi
}

# The daemon, in a mount namespace of its own rooted at the tree. Its PID is the incusd process itself
# (setsid and unshare exec, and so does bash at the end).
start_daemon() {
  mkdir -p "$STATE"
  rm -f "$STATE/incusd.pid" "$STATE/incusd.mntns"
  log "starting incusd from the tree (log: $ROOT/var/log/incusd.log)"
  setsid unshare --mount --net --propagation private bash -c '
    set -e
    R=$1
    mount --rbind "$R" "$R"
    mount -t proc proc "$R/proc"
    mount -t sysfs sysfs "$R/sys"
    mount --rbind /sys/fs/cgroup "$R/sys/fs/cgroup"
    mount --rbind /dev "$R/dev"
    mount -t tmpfs tmpfs "$R/run"
    mkdir -p "$R/run/lock" "$R/.oldroot"
    cd "$R"
    pivot_root . .oldroot
    umount -l /.oldroot
    cd /
    ip link set lo up
    export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
      http_proxy=http://127.0.0.1:9 NO_PROXY= no_proxy= PATH=/usr/sbin:/usr/bin:/sbin:/bin
    exec /usr/libexec/incus/incusd --group root --logfile /var/log/incusd.log
  ' incus7 "$ROOT" </dev/null >"$STATE/incusd.out" 2>&1 &
  local pid=$!
  echo "$pid" >"$STATE/incusd.pid"
  for _ in $(seq 1 120); do
    answers && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if ! answers; then
    cat "$STATE/incusd.out" >&2 || true
    tail -n 20 "$ROOT/var/log/incusd.log" >&2 2>/dev/null || true
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    rm -f "$STATE/incusd.pid"
    die "incusd did not answer within 60 s"
  fi
  readlink "/proc/$pid/ns/mnt" >"$STATE/incusd.mntns"
  STARTED=$pid
}

prepare() {
  I7 storage show default >/dev/null 2>&1 || I7 storage create default dir >/dev/null
  I7 profile device show default 2>/dev/null | grep -q '^root:' ||
    I7 profile device add default root disk path=/ pool=default >/dev/null
  if ! I7 image alias list --format csv 2>/dev/null | grep -q '^busybox,'; then
    local img
    img=$(mktemp -d)
    bash ci/busybox-image.sh "$img"
    I7 image import "$img/meta.tar.gz" "$img/rootfs.tar.gz" --alias busybox >/dev/null
    rm -rf "$img"
    log "imported a busybox test image (alias busybox) into project default"
  fi
}

up() {
  need_root
  apt_install_host curl:curl busybox:busybox-static debootstrap:debootstrap
  build_tree
  echo "INCUS7_SOCKET=$SOCKET"
  echo "INCUS7_CLIENT=$CLIENT"
  STARTED=""
  if answers; then
    log "a daemon already answers on $SOCKET: starting nothing"
  else
    start_daemon
  fi
  # Printed before anything else can fail, so that a caller can stop what was started.
  echo "INCUS7_STARTED=$STARTED"
  prepare
  log "Incus $(I7 query /1.0 | sed -n 's/.*"server_version": *"\([^"]*\)".*/\1/p' | head -n 1) on $SOCKET"
}

# The processes in the daemon's mount namespace (its instances' monitors, forkfile helpers, ...).
namespace_pids() {
  local ns=$1 p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "${p#/proc/}"
  done
  return 0
}

down() {
  [ -f "$STATE/incusd.pid" ] || {
    log "no daemon started by this script for $ROOT: stopping nothing"
    return
  }
  local pid ns
  pid=$(cat "$STATE/incusd.pid")
  ns=$(cat "$STATE/incusd.mntns" 2>/dev/null || true)
  # Only that process, and only while it is still the incusd of this tree's namespace (a PID is reused).
  if kill -0 "$pid" 2>/dev/null && [ -n "$ns" ] && [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$ns" ]; then
    log "stopping incusd (pid $pid): SIGPWR, so that it stops its instances first"
    kill -PWR "$pid"
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      log "incusd did not stop within 60 s; killing pid $pid"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  else
    log "incusd (pid $pid) is no longer running"
  fi
  if [ -n "$ns" ]; then
    local left
    left=$(namespace_pids "$ns" | tr '\n' ' ')
    if [ -n "${left// /}" ]; then
      log "killing what is left in its mount namespace: $left"
      # shellcheck disable=SC2086
      kill -KILL $left 2>/dev/null || true
    fi
  fi
  rm -f "$STATE/incusd.pid" "$STATE/incusd.mntns"
}

purge() {
  need_root
  [ ! -f "$STATE/incusd.pid" ] || die "a daemon started by this script may still run: run '$0 down' first"
  answers && die "a daemon answers on $SOCKET: it is not removed"
  log "removing the tree $ROOT"
  rm -rf --one-file-system "$ROOT" "$ROOT.partial" "$ROOT.partial.log"
}

case "$COMMAND" in
up) up ;;
down) down ;;
purge) purge ;;
*) die "usage: ci/incus7.sh [up|down|purge]" ;;
esac
