#!/usr/bin/env bash
# Makes the upgrade fixtures: for each earlier release below, builds formd
# from this repository's own history (git archive into a temporary
# directory, nothing checked out here), runs it on a fresh data directory
# through gen (stored, waitlisted, duplicate and cancelled entries, entries
# with files for the releases that have uploads,
# deliveries pending to a closed port, and a burst of async submissions
# killed with SIGKILL right after their acknowledgements, so that some are
# journaled and not decided) and keeps the directory with what each
# answer was (expected.json) as COMMIT.tar.gz.
#
# With FORMD_TEST_POSTGRES_URL set it makes COMMIT-postgres.tar.gz too: the
# same run against a PostgreSQL schema, kept as a pg_dump (store.sql) with
# the sqlite journal beside it.
#
# TestUpgradeFromEarlierReleases (internal/server) opens each with today's
# defaults. Run from anywhere: testdata/upgrade/make.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
# The first release, the last commit before the embedded fast path, and
# main when the upgrade tests began, the release that added backups,
# HTTPS and uploads, and the one that added S3 uploads, proof-of-work and
# intake's refusal counts, and the one that made the uploads directory
# content-addressed and let uploads resume on any instance, and v0.1.0
# (drafts, the participant's link and changes, check-in, option places,
# review, the erasure notice; RELEASES="…" makes only those named).
releases="${RELEASES:-b3f9691 d2ed5ed 567ad3d 37359fb 40587a2 c547f67 e32961e 089b4a0}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$repo" && go build -o "$tmp/gen" ./testdata/upgrade/gen)
for c in $releases; do
  mkdir -p "$tmp/src-$c"
  git -C "$repo" archive "$c" | tar -x -C "$tmp/src-$c"
  (cd "$tmp/src-$c" && go build -o "$tmp/formd-$c" ./cmd/formd)
  # Webhooks came after the first release.
  webhooks=true
  [ "$c" = b3f9691 ] && webhooks=false
  # Uploads came with 37359fb: its fixtures and later ones have entries
  # with files (one document in two entries).
  files=true
  case "$c" in b3f9691|d2ed5ed|567ad3d) files=false;; esac
  "$tmp/gen" -formd "$tmp/formd-$c" -out "$tmp/fx-$c" -commit "$c" -webhooks="$webhooks" -uploads="$files" 2>"$tmp/gen-$c.log" \
    || { cat "$tmp/gen-$c.log"; exit 1; }
  tail -1 "$tmp/gen-$c.log"
  tar -C "$tmp/fx-$c" -czf "$here/$c.tar.gz" data expected.json
  if [ -n "${FORMD_TEST_POSTGRES_URL:-}" ]; then
    schema="formd_upgrade_$c"
    sep='?'; case "$FORMD_TEST_POSTGRES_URL" in *\?*) sep='&';; esac
    "$tmp/gen" -formd "$tmp/formd-$c" -out "$tmp/pg-$c" -commit "$c" -webhooks="$webhooks" -uploads="$files" \
      -store "$FORMD_TEST_POSTGRES_URL${sep}search_path=$schema" 2>"$tmp/gen-pg-$c.log" \
      || { cat "$tmp/gen-pg-$c.log"; exit 1; }
    tail -1 "$tmp/gen-pg-$c.log"
    pg_dump --inserts --no-owner --no-privileges --schema="$schema" "$FORMD_TEST_POSTGRES_URL" >"$tmp/pg-$c/store.sql"
    PGOPTIONS=--client-min-messages=warning psql -q "$FORMD_TEST_POSTGRES_URL" -c "DROP SCHEMA $schema CASCADE"
    tar -C "$tmp/pg-$c" -czf "$here/$c-postgres.tar.gz" data expected.json store.sql
  fi
done
ls -l "$here"/*.tar.gz
