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

step "browser, e2e packages, formd (e2e/harness/ci.sh)"
# Shared with the SDK's suite (.ci/run builds formd once for both).
. ../harness/ci.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
e2e_prepare "$tmp"

step "browser tests (Chromium + formd)"
FORMD_SCREENSHOTS="${FORMD_SCREENSHOTS:-0}" e2e_test ./*.test.js
