#!/usr/bin/env bash
# CI for the owner's console (issue 10): the browser tests in real headless
# Chromium (Debian's, never a downloaded build) against a freshly built
# formd. Works on a fresh clone; .ci/run calls it as
# `bash e2e/console/ci.sh`. FORMD_SCREENSHOTS=1 also writes the
# screenshots under docs/console/ (off in CI, so a run leaves the work
# tree as it found it).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

step() { printf '\n==> e2e/console: %s\n' "$*"; }

step "browser"
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
# A Chinese font, for the zh pages and their screenshots.
if ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei; } ||
    echo "no Chinese font: the zh screenshots will show boxes"
fi
/usr/bin/chromium --version 2>/dev/null

step "npm ci"
npm ci --ignore-scripts --no-audit --no-fund

step "build formd"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd ../.. && go build -o "$tmp/formd" ./cmd/formd)

step "browser tests (Chromium + formd)"
FORMD_BIN="$tmp/formd" FORMD_SCREENSHOTS="${FORMD_SCREENSHOTS:-0}" node --test --test-concurrency=1 ./*.test.js
