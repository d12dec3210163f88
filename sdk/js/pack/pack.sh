#!/usr/bin/env bash
# The SDK as an integrator installs it (issue 21 item 12): `npm pack` of
# sdk/js, the tarball installed into this test project (its own pinned
# package-lock.json: Vite, webpack 5, TypeScript, miniprogram-simulate),
# then pack.test.js. Called from sdk/js/ci.sh; works on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --ignore-scripts --no-audit --no-fund
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(cd .. && npm pack --silent --pack-destination "$tmp" | tail -n 1)
echo "packed $tarball: $(tar -tzf "$tmp/$tarball" | sed 's|^package/||' | sort | tr '\n' ' ')"
# --no-save: the lock pins the tools, the SDK comes from the tarball just
# packed, as from the registry.
npm install --no-save --ignore-scripts --no-audit --no-fund "$tmp/$tarball"
node --test --test-concurrency=1 pack.test.js
