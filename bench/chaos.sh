#!/usr/bin/env bash
# The exactly-once chaos check (nothing acknowledged is lost, nothing is
# stored twice, nothing is oversold), short enough for CI:
# a few hundred virtual clients register people into a form with a capacity
# and a waitlist, with double clicks, re-registrations written differently
# and invalid input, through a loopback proxy that drops 15% of requests
# before the server and 15% of answers after it, while the server is killed
# with SIGKILL every 10 s and restarted. The checker then reads the store:
# any lost, duplicated or oversold entry, any submission left unresolved,
# or any other violation fails the script. Then `formd audit` checks that
# every journal entry reached an outcome.
#
# About 75 s on two cores (45 s of load, the grace period, the checks),
# bounded at 115 s; plus the build.
#
# Usage: bench/chaos.sh            (CLIENTS, DURATION, WHEN_FULL override)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

CLIENTS=${CLIENTS:-300}
DURATION=${DURATION:-45s}
WHEN_FULL=${WHEN_FULL:-waitlist}

tmp=$(mktemp -d)
keep=0
trap '[ "$keep" = 1 ] || rm -rf "$tmp"' EXIT

go build -o "$tmp/formd" ./cmd/formd

set +e
timeout --kill-after=5s 115s "$tmp/formd" loadtest \
  --spawn "$tmp/formd serve --log-level warn" --work-dir "$tmp/work" \
  --clients "$CLIENTS" --duration "$DURATION" --grace 20s \
  --timeout 3s --wait 2s \
  --drop-requests 15% --drop-responses 15% --resets 2% --kill-every 10s \
  --double-click 10% --reregister 10% --invalid 5% \
  --capacity 2000 --when-full "$WHEN_FULL" --seed "$RANDOM"
status=$?
set -e
if [ "$status" -ne 0 ]; then
  keep=1
  echo "chaos check FAILED (exit $status); server data and log kept in $tmp/work" >&2
  exit 1
fi

# Every journal entry must have reached an outcome, kill -9 or not.
"$tmp/formd" audit --data "$tmp/work/data" --log-level warn
echo "chaos check passed"
