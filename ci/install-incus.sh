#!/usr/bin/env bash
# Installs the official Incus packages (daemon and client) from Debian 12 bookworm-backports when missing.
# Idempotent; needs root (CI runs as root). Used by .ci/run so that the official-client tests of fake-incus
# and the real-Incus acceptance run on every submission.
set -euo pipefail

have_incus() { command -v incus >/dev/null && [ -x /usr/libexec/incus/incusd ]; }

if have_incus; then
  echo "incus already installed: $(incus --version)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-incus: not root; skipping the install (tests that need incus will say so)" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-incus: no apt-get on this machine; skipping (tests that need incus will say so)" >&2
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-cache policy incus-base 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  # Add bookworm-backports from the Debian mirror that the machine already uses.
  mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '/^deb / && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || { echo "install-incus: no Debian mirror found in the apt sources" >&2; exit 1; }
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
    "$mirror" /usr/share/keyrings/debian-archive-keyring.gpg >/etc/apt/sources.list.d/bookworm-backports.sources
  apt-get update -qq
fi
apt-get install -y -qq -t bookworm-backports --no-install-recommends incus-base incus-client >/dev/null
command -v busybox >/dev/null || apt-get install -y -qq busybox-static >/dev/null
echo "installed: $(incus --version)"
