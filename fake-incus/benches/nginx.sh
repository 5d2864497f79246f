#!/usr/bin/env bash
# Puts Debian's nginx binary under target/nginx (downloaded with apt-get and unpacked, not
# installed: no service is started, nothing outside target/ changes) and prints its path, for
# `BENCH_NGINX=$(bash fake-incus/benches/nginx.sh) cargo bench -p fake-incus --bench reads`.
# The bench runs it on a Unix socket only (loopback: no TCP listener at all).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${CARGO_TARGET_DIR:-$PWD/target}/nginx"
binary="$dir/tree/usr/sbin/nginx"
if [ ! -x "$binary" ]; then
  mkdir -p "$dir"
  (cd "$dir" && { apt-get download nginx || { apt-get update -qq && apt-get download nginx; }; } >&2)
  dpkg -x "$dir"/nginx_*.deb "$dir/tree"
fi
"$binary" -v >&2
echo "$binary"
