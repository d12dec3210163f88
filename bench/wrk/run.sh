#!/usr/bin/env bash
# The intake benchmark of BENCHMARKS.md: formd (embedded journal and store,
# a sync form, every acknowledgement fsync'd) and, in the same run, the
# bare net/http decode ceiling (bench/ceiling), both driven by wrk with
# bench/wrk/submit.lua at 500 and 3,000 connections on 127.0.0.1.
#
# Each cell is run ROUNDS times, alternating the two servers, and the
# median is reported: these machines are shared and noisy. Besides the
# rate and latency, it reports the server's own CPU time per request (from
# /proc), which is far less sensitive to other load on the machine.
#
# Usage: bench/wrk/run.sh [ROUNDS] [SECONDS]    (defaults 3 and 20)
#   CONNS="500 3000"
#   SERVERS="ceiling formd"  any of: ceiling; formd (every default: the
#     embedded fast path decides at append); formd-processor (the same,
#     --decide-at-append=false: every entry through the processor);
#     formd-base (the binary at $FORMD_BASE, such as an earlier commit's
#     build, with every default), for a before/after in one run; and
#     LABEL=PATH: the formd binary at PATH, shown as LABEL (steps of a
#     change, each an earlier commit's build, in one run); inmem (the
#     study of BENCHMARKS.md §12, bench/inmem: formd's intake with the
#     decisions in memory over the same journal, the store a projection;
#     its projection lag at the end of each run is printed); inmem-journal
#     (the same without the projector: the journal alone, to show what the
#     store's projection costs).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECS=${2:-20}
CONNS=${CONNS:-"500 3000"}
SERVERS=${SERVERS:-"ceiling formd"}
OUT=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$OUT"' EXIT

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)"; exit 1; }
go build -o "$OUT/formd" ./cmd/formd
go build -o "$OUT/ceiling" ./bench/ceiling
case " $SERVERS " in *" inmem "* | *" inmem-journal "*) go build -o "$OUT/inmem" ./bench/inmem ;; esac
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

port=18600
cputicks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# run_one NAME CONNS → appends "name conns rps p50 p99 cpu_us_per_req statuses" to $OUT/results
run_one() {
  local name=$1 conns=$2 pid url
  port=$((port + 1))
  local label=${name%%=*}
  case $name in
    *=*)
      rm -rf "$OUT/data"
      "${name#*=}" serve --data "$OUT/data" --addr "127.0.0.1:$port" --forms bench/wrk/bench.yaml \
        --log-level warn >"$OUT/formd.log" 2>&1 & pid=$!
      ;;
    ceiling)
      "$OUT/ceiling" -addr "127.0.0.1:$port" & pid=$!
      ;;
    inmem | inmem-journal)
      local project=true
      [ "$name" = inmem-journal ] && project=false
      rm -rf "$OUT/data"
      "$OUT/inmem" -addr "127.0.0.1:$port" -data "$OUT/data" -forms bench/wrk/bench.yaml -project=$project 2>"$OUT/inmem.log" & pid=$!
      ;;
    formd | formd-processor | formd-base)
      local bin="$OUT/formd" extra=()
      [ "$name" = formd-processor ] && extra=(--decide-at-append=false)
      [ "$name" = formd-base ] && bin=${FORMD_BASE:?set FORMD_BASE to a formd binary}
      rm -rf "$OUT/data"
      "$bin" serve --data "$OUT/data" --addr "127.0.0.1:$port" --forms bench/wrk/bench.yaml \
        --log-level warn "${extra[@]}" >"$OUT/formd.log" 2>&1 & pid=$!
      ;;
  esac
  url="http://127.0.0.1:$port/v1/forms/bench/submissions"
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  # Warm up (connections, page cache), then measure.
  wrk -t2 -c"$conns" -d3s -s bench/wrk/submit.lua "$url" -- 0 >/dev/null 2>&1 || true
  local before after
  before=$(cputicks "$pid")
  wrk -t2 -c"$conns" -d"${SECS}s" --timeout 10s -s bench/wrk/submit.lua "$url" -- 1 >"$OUT/wrk.txt" 2>&1
  after=$(cputicks "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local rps reqs p50 p99 statuses cpu
  rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/wrk.txt")
  reqs=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
  p50=$(awk '/^p50_ms/ {print $2}' "$OUT/wrk.txt")
  p99=$(awk '/^p99_ms/ {print $2}' "$OUT/wrk.txt")
  statuses=$(awk '/^statuses/ {$1=""; print}' "$OUT/wrk.txt" | xargs | tr ' ' ',')
  errors=$(awk '/Socket errors|Non-2xx/ {printf "%s ", $0}' "$OUT/wrk.txt")
  # inmem's projector may still owe the store some records when the load
  # stops: the CPU it spends catching up (it reports it) is counted too.
  local owed=0
  [ "$name" = inmem ] && owed=$(grep -ho 'catch-up CPU [0-9.]*' "$OUT/inmem.log" | awk '{print $3 / 1000}')
  cpu=$(awk -v t=$((after - before)) -v hz="$hz" -v o="${owed:-0}" -v n="$reqs" 'BEGIN {printf "%.1f", (t / hz + o) * 1e6 / n}')
  echo "$label $conns $rps $p50 $p99 $cpu $statuses" >>"$OUT/results"
  printf '%-8s c=%-5s %10s req/s  p50 %7s ms  p99 %7s ms  cpu %6s us/req  %s %s\n' "$label" "$conns" "$rps" "$p50" "$p99" "$cpu" "$statuses" "$errors"
  if [ "$name" = inmem ] || [ "$name" = inmem-journal ]; then
    # Its projector's lag when the load stopped, and the time to catch up
    # (written by bench/inmem as it stops).
    grep -h 'projection' "$OUT/inmem.log" | sed "s/^/         c=$conns /" | tee -a "$OUT/lags" || echo "         inmem did not report its lag: $(tail -n 3 "$OUT/inmem.log")"
  fi
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ${ROUNDS} rounds of ${SECS}s"
for conns in $CONNS; do
  for r in $(seq 1 "$ROUNDS"); do
    for name in $SERVERS; do
      run_one "$name" "$conns"
    done
  done
done

[ -s "$OUT/lags" ] && { echo; echo "inmem's projection at the end of each run:"; cat "$OUT/lags"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "| server | connections | req/s (median) | p50 ms | p99 ms | server CPU µs/req |"
echo "|---|---:|---:|---:|---:|---:|"
for conns in $CONNS; do
  for name in $SERVERS; do
    name=${name%%=*}
    sel() { awk -v n="$name" -v c="$conns" -v k="$1" '$1==n && $2==c {print $k}' "$OUT/results" | median; }
    echo "| $name | $conns | $(sel 3) | $(sel 4) | $(sel 5) | $(sel 6) |"
  done
done
echo
case " $SERVERS " in *" ceiling "*)
  for conns in $CONNS; do
    c=$(awk -v c="$conns" '$1=="ceiling" && $2==c {print $3}' "$OUT/results" | median)
    for name in $SERVERS; do
      name=${name%%=*}
      [ "$name" = ceiling ] && continue
      f=$(awk -v n="$name" -v c="$conns" '$1==n && $2==c {print $3}' "$OUT/results" | median)
      echo "$name / ceiling at $conns connections: $(awk -v f="$f" -v c="$c" 'BEGIN {printf "%.2f", f/c}')"
    done
  done
esac
