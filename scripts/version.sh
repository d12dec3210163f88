#!/usr/bin/env bash
# Prints the release this tree is, for the release binaries' names and
# `formd version` (scripts/release.sh and scripts/image.sh stamp it):
#
# - the tag at HEAD, when the commit is tagged (v0.1.0);
# - otherwise the newest release heading of CHANGELOG.md ("## v0.1.0 —
#   2026-12-02"), the release this tree was cut as;
# - while CHANGELOG.md's newest heading is "## Unreleased" (work after a
#   release), the release before it with "+dev.COMMIT" (v0.1.0+dev.1a2b3c4d5e6f),
#   so that a build between releases never claims to be one.
set -euo pipefail
cd "$(dirname "$0")/.."
if tag=$(git describe --tags --exact-match HEAD 2>/dev/null); then
  echo "$tag"
  exit 0
fi
newest=$(sed -n 's/^## \(Unreleased\|v[0-9][0-9.]*\).*/\1/p' CHANGELOG.md | head -1)
case "$newest" in
  v*) echo "$newest" ;;
  Unreleased)
    last=$(sed -n 's/^## \(v[0-9][0-9.]*\).*/\1/p' CHANGELOG.md | head -1)
    echo "${last:-v0.0.0}+dev.$(git rev-parse --short=12 HEAD)" ;;
  *) echo "CHANGELOG.md has no release heading (## Unreleased or ## vX.Y.Z — YYYY-MM-DD)" >&2; exit 1 ;;
esac
