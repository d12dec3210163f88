#!/usr/bin/env bash
# The backup benchmark of BENCHMARKS.md: intake while `formd backup` copies
# a store of ENTRIES entries (default 1,000,000) from the running server's
# --data, against intake without a backup, in the same run.
#
# 1. formd serve (every default: embedded journal and store, a sync form,
#    every acknowledgement fsync'd) gets ENTRIES real registrations from
#    wrk (bench/backup/submit.lua: a new person per request), in runs of
#    30 s until the journal's last position reaches ENTRIES.
# 2. ROUNDS rounds of two SECONDS-long wrk runs at CONNS connections: one
#    with nothing else, one while formd backup runs back to back the whole
#    time (each into a new directory, the previous one removed); the order
#    alternates from round to round, as the store grows by each run.
# 3. Prints each run, the medians, the ratio with/without per round and
#    its median, and each backup's duration and size.
#
# Usage: bench/backup/run.sh [ROUNDS] [SECONDS]    (defaults 3 and 20)
#   ENTRIES=1000000 CONNS=500 DATA=DIR (kept: a second run on it skips
#   the filling; its wrk runs go on from RUN0, default 0, so they never
#   reuse a person of the first: RUN0=100)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECS=${2:-20}
ENTRIES=${ENTRIES:-1000000}
CONNS=${CONNS:-500}
OUT=$(mktemp -d)
# DATA outside OUT is kept, to measure again on the same store.
DATA=${DATA:-$OUT/data}
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$OUT"' EXIT

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)"; exit 1; }
go build -o "$OUT/formd" ./cmd/formd
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
port=18650
"$OUT/formd" serve --data "$DATA" --addr "127.0.0.1:$port" --forms bench/wrk/bench.yaml --log-level warn >"$OUT/formd.log" 2>&1 &
pid=$!
base="http://127.0.0.1:$port"
url="$base/v1/forms/bench/submissions"
for _ in $(seq 1 100); do curl -s -o /dev/null "$base/readyz" && break; sleep 0.1; done
lastseq() { curl -s "$base/metrics" | awk '$1=="formd_journal_last_seq" {printf "%d", $2}'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ${ROUNDS} rounds of ${SECS}s at ${CONNS} connections"
run=${RUN0:-0}
t0=$(date +%s)
while [ "$(lastseq)" -lt "$ENTRIES" ]; do
  run=$((run + 1))
  wrk -t2 -c"$CONNS" -d30s --timeout 10s -s bench/backup/submit.lua "$url" -- "$run" >/dev/null
done
echo "store filled: $(lastseq) entries in $(( $(date +%s) - t0 )) s; store.db $(du -m "$DATA/store.db" | cut -f1) MiB, journal.db $(du -m "$DATA/journal.db" | cut -f1) MiB"

# measure KIND: one wrk run; with KIND=backup, formd backup back to back.
measure() {
  local kind=$1 loop=
  run=$((run + 1))
  if [ "$kind" = backup ]; then
    (
      bp=
      trap '[ -n "$bp" ] && kill "$bp" 2>/dev/null; exit 0' TERM
      i=0
      while :; do
        i=$((i + 1))
        s=$(date +%s.%N)
        echo "$s" >"$OUT/backup.started"
        "$OUT/formd" backup --data "$DATA" --to "$OUT/b$i" >/dev/null 2>"$OUT/backup.err" &
        bp=$!
        wait "$bp" || exit 0
        bp=
        e=$(date +%s.%N)
        rm -f "$OUT/backup.started"
        echo "$s $e $(du -sm "$OUT/b$i" | cut -f1)" >>"$OUT/backups"
        rm -rf "$OUT/b$((i - 1))"
      done
    ) &
    loop=$!
  fi
  local ws we
  ws=$(date +%s.%N)
  wrk -t2 -c"$CONNS" -d"${SECS}s" --timeout 10s -s bench/backup/submit.lua "$url" -- "$run" >"$OUT/wrk.txt" 2>&1
  we=$(date +%s.%N)
  if [ -n "$loop" ]; then
    # A backup still running at the window's end covered the rest of it.
    [ -f "$OUT/backup.started" ] && echo "$(cat "$OUT/backup.started") $we -" >>"$OUT/backups.cut"
    kill "$loop" 2>/dev/null || true
    wait "$loop" 2>/dev/null || true
    rm -rf "$OUT"/b[0-9]*
  fi
  local rps p50 p99 statuses
  rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/wrk.txt")
  p50=$(awk '/^p50_ms/ {print $2}' "$OUT/wrk.txt")
  p99=$(awk '/^p99_ms/ {print $2}' "$OUT/wrk.txt")
  statuses=$(awk '/^statuses/ {$1=""; print}' "$OUT/wrk.txt" | xargs | tr ' ' ',')
  # Seconds of the window a backup was running in.
  local covered=0
  if [ "$kind" = backup ]; then
    covered=$({ cat "$OUT/backups" "$OUT/backups.cut" 2>/dev/null || true; } | awk -v ws="$ws" -v we="$we" '{s=$1<ws?ws:$1; e=$2>we?we:$2; if (e>s) c+=e-s} END {printf "%.1f", c}')
  fi
  rm -f "$OUT/backups.cut" "$OUT/backup.started"
  echo "$kind $rps $p50 $p99 $covered" >>"$OUT/results"
  printf 'round %d %-7s %10s req/s  p50 %7s ms  p99 %7s ms  %s  (backups running %s of %s s)\n' "$r" "$kind" "$rps" "$p50" "$p99" "$statuses" "$covered" "$SECS"
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="none backup"; else order="backup none"; fi
  for kind in $order; do measure "$kind"; done
  if [ -f "$OUT/backups" ]; then cat "$OUT/backups" >>"$OUT/allbackups"; rm "$OUT/backups"; fi
done

# One backup with no load, for its duration alone.
s=$(date +%s.%N)
"$OUT/formd" backup --data "$DATA" --to "$OUT/quiet" >/dev/null
e=$(date +%s.%N)
quiet="$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.1f", e-s}') s, $(du -sm "$OUT/quiet" | cut -f1) MiB"
rm -rf "$OUT/quiet"

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
none=$(awk '$1=="none" {print $2}' "$OUT/results" | median)
with=$(awk '$1=="backup" {print $2}' "$OUT/results" | median)
ratios=$(paste <(awk '$1=="backup" {print $2}' "$OUT/results") <(awk '$1=="none" {print $2}' "$OUT/results") | awk '{printf "%.2f\n", $1/$2}')
echo
echo "| intake | req/s (median) | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|"
echo "| without a backup | $none | $(awk '$1=="none" {print $3}' "$OUT/results" | median) | $(awk '$1=="none" {print $4}' "$OUT/results" | median) |"
echo "| during formd backup | $with | $(awk '$1=="backup" {print $3}' "$OUT/results" | median) | $(awk '$1=="backup" {print $4}' "$OUT/results" | median) |"
echo
echo "ratio during / without, per round: $(echo $ratios | tr '\n' ' '); median $(echo "$ratios" | median)"
echo "one backup without intake: $quiet"
if [ -f "$OUT/allbackups" ]; then
  echo "backups finished during intake: $(wc -l <"$OUT/allbackups"); duration median $(awk '{printf "%.1f\n", $2-$1}' "$OUT/allbackups" | median) s (min $(awk '{printf "%.1f\n", $2-$1}' "$OUT/allbackups" | sort -n | head -1), max $(awk '{printf "%.1f\n", $2-$1}' "$OUT/allbackups" | sort -n | tail -1)); size $(awk '{print $3}' "$OUT/allbackups" | median) MiB"
fi
echo "entries at the end: $(lastseq)"
