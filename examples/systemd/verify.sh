#!/usr/bin/env bash
# Checks examples/systemd/formd.service with systemd-analyze verify, on a
# copy whose ExecStart names a formd built here (verify insists that the
# binary exists). systemd-analyze exits 0 on unknown keys and values it
# ignores, so any output at all fails the check.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v systemd-analyze >/dev/null; then
  apt-get install -y --no-install-recommends systemd >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/formd" ./cmd/formd
sed "s|/usr/local/bin/formd|$tmp/formd|g" examples/systemd/formd.service >"$tmp/formd.service"
out=$(systemd-analyze verify "$tmp/formd.service" 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "systemd-analyze verify:"; echo "$out"; exit 1; fi
echo "formd.service verifies (systemd $(systemd-analyze --version | head -1 | awk '{print $2}'))"
