#!/usr/bin/env bash
# Builds the busybox test image that the acceptance runs and the raw differential probe expect, as the
# split tarballs `incus image import META ROOTFS` takes: DIR/meta.tar.gz and DIR/rootfs.tar.gz.
# /bin holds busybox and the applets sh ls cat echo printf sleep true false env id head yes dd (the fake's
# default command set follows the same list), /sbin/init is busybox's init. Needs busybox on PATH.
#
# Usage: ci/busybox-image.sh DIR
set -euo pipefail
out=${1:?usage: ci/busybox-image.sh DIR}
command -v busybox >/dev/null || { echo "busybox-image: no busybox on PATH for the test image" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/bin" "$work/rootfs/sbin" "$work/rootfs/etc" "$work/rootfs/proc" "$work/rootfs/sys" \
  "$work/rootfs/dev" "$work/rootfs/tmp" "$work/rootfs/root"
cp "$(command -v busybox)" "$work/rootfs/bin/busybox"
for c in sh ls cat echo printf sleep true false env id head yes dd; do ln -sf busybox "$work/rootfs/bin/$c"; done
ln -sf ../bin/busybox "$work/rootfs/sbin/init"
printf '::sysinit:/bin/true\n::respawn:/bin/sleep 100000\n' >"$work/rootfs/etc/inittab"
printf 'architecture: %s\ncreation_date: %s\nproperties:\n  description: busybox test image\n  os: busybox\n  release: "1"\n' \
  "$(uname -m)" "$(date +%s)" >"$work/metadata.yaml"
mkdir -p "$out"
tar -czf "$out/rootfs.tar.gz" -C "$work/rootfs" .
tar -czf "$out/meta.tar.gz" -C "$work" metadata.yaml
