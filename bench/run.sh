#!/usr/bin/env bash
# The benchmark of BENCHMARKS.md, through formd loadtest (its virtual
# clients, the same generator and the same payloads for every system):
#
#   ceiling       bench/ceiling: net/http that only decodes the JSON body
#                 (no validation, no disk); plain mode, one POST per person.
#   formd         formd serve, embedded SQLite journal and store, the run's
#                 form is durability: sync (each acknowledgement waits for the
#                 journal's group-commit fsync; SQLite synchronous=FULL);
#                 client protocol, idempotency keys, checker.
#   formd-faults  the same, through the fault proxy: 15% of requests and 15%
#                 of answers dropped, 2% resets, kill -9 every 10 s, with
#                 double clicks, re-registrations and invalid input.
#   pocketbase    stock PocketBase v0.36.8 (bench/pocketbase), default
#                 settings (SQLite WAL, synchronous=NORMAL: commits are not
#                 fsync'd one by one), a base collection with a unique index
#                 on phone; plain mode, POST /api/collections/…/records.
#
# at 50, 500 and 3,000 clients, ROUNDS rounds of SECONDS each, the systems
# alternating within a round; then bench/summary prints the medians and the
# ratios formd/ceiling and formd/PocketBase taken within each round. The
# load generator runs on the same machine as the server: on a small
# machine they compete for the same cores.
#
# Usage: bench/run.sh [ROUNDS] [SECONDS]     (defaults 3 and 20)
#   CLIENTS="50 500 3000"  SYSTEMS="ceiling formd formd-faults pocketbase"
#   OUT=DIR keeps the JSON reports there (default: a temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
ROUNDS=${1:-3}
SECS=${2:-20}
CLIENTS=${CLIENTS:-"50 500 3000"}
SYSTEMS=${SYSTEMS:-"ceiling formd formd-faults pocketbase"}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/json"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

go build -o "$OUT/formd" ./cmd/formd
go build -o "$OUT/ceiling" ./bench/ceiling
case " $SYSTEMS " in *" pocketbase "*)
  (cd bench/pocketbase && go build -o "$OUT/pocketbase" .) ;;
esac
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LT="$OUT/formd loadtest --duration ${SECS}s --json"

port=19100
wait_http() {
  for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "no answer from $1" >&2
  return 1
}
stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

run_one() {
  local sys=$1 c=$2 r=$3 pid json="$OUT/json/$1-c$2-r$3.json"
  port=$((port + 1))
  case $sys in
    ceiling)
      "$OUT/ceiling" -addr "127.0.0.1:$port" 2>/dev/null & pid=$!
      pids+=("$pid")
      wait_http "http://127.0.0.1:$port/"
      $LT --plain --url "http://127.0.0.1:$port/v1/forms/x/submissions" --clients "$c" --server-pid "$pid" >"$json" || true
      stop "$pid"
      ;;
    formd)
      $LT --spawn "$OUT/formd serve --log-level warn" --clients "$c" >"$json" 2>/dev/null || true
      ;;
    formd-faults)
      $LT --spawn "$OUT/formd serve --log-level warn" --clients "$c" \
        --drop-requests 15% --drop-responses 15% --resets 2% --kill-every 10s --timeout 5s --wait 2s \
        --double-click 10% --reregister 10% --invalid 5% >"$json" 2>/dev/null || true
      ;;
    pocketbase)
      rm -rf "$OUT/pb"
      "$OUT/pocketbase" serve --http "127.0.0.1:$port" --dir "$OUT/pb" >"$OUT/pocketbase.log" 2>&1 & pid=$!
      pids+=("$pid")
      wait_http "http://127.0.0.1:$port/api/health"
      $LT --plain --url "http://127.0.0.1:$port/api/collections/registrations/records" --clients "$c" --server-pid "$pid" >"$json" || true
      # PocketBase's own count, against the 2xx answers the clients got.
      local n
      n=$(curl -s "http://127.0.0.1:$port/api/collections/registrations/records?perPage=1&fields=id" | grep -o '"totalItems":[0-9]*' | cut -d: -f2)
      echo "  pocketbase c=$c r=$r: $n records stored, $(grep -o '"ok_2xx": [0-9]*' "$json" | cut -d' ' -f2) answered 2xx"
      stop "$pid"
      ;;
  esac
  printf '%-13s c=%-5s r=%s  %s acks/s  ok=%s\n' "$sys" "$c" "$r" \
    "$(grep -o '"acks_per_s": [0-9.]*' "$json" | cut -d' ' -f2)" "$(grep -o '"ok": [a-z]*' "$json" | head -1 | cut -d' ' -f2)"
}

echo "# $(date -u +%FT%TZ) on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of ${SECS}s"
echo "# $(go version)"
for c in $CLIENTS; do
  for r in $(seq 1 "$ROUNDS"); do
    for sys in $SYSTEMS; do
      run_one "$sys" "$c" "$r"
    done
  done
done
echo
go run ./bench/summary "$OUT/json"
echo
echo "reports: $OUT/json"
