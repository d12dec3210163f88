#!/usr/bin/env bash
# CI for the client layer (issue 5): the SDK's types and unit tests, its
# size budget, then the end-to-end tests in real headless Chromium against
# a freshly built formd. Works on a fresh clone; .ci/run calls it as
# `bash sdk/js/ci.sh`.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/local/go/bin:$PATH"

step() { printf '\n==> sdk/js: %s\n' "$*"; }

step "browser"
# Debian's Chromium, never a downloaded browser build. A Chinese font is
# only for legible screenshots; the tests do not depend on it.
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
if ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei; } ||
    echo "no Chinese font: the zh screenshots will show boxes"
fi
/usr/bin/chromium --version 2>/dev/null

step "npm ci"
# Install scripts are not needed (esbuild's binary comes in its platform
# package) and are not run.
npm ci --ignore-scripts --no-audit --no-fund

step "types (tsc --noEmit)"
npx tsc --noEmit -p .

step "unit tests"
node --test test/*.test.js

step "size (minified + gzip)"
size=$(npm run --silent size | tr -d ' ')
echo "formd.js: $size bytes minified and gzipped (budget 6144)"
if [ "$size" -gt 6144 ]; then
  echo "the SDK is over its 6 KB budget"
  exit 1
fi

step "build formd"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd ../.. && go build -o "$tmp/formd" ./cmd/formd)

step "end-to-end tests (Chromium + formd)"
FORMD_BIN="$tmp/formd" node --test --test-concurrency=1 e2e/*.test.js
