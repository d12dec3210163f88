# The CI steps the two browser suites share (the SDK's, sdk/js/ci.sh, and
# the owner console's, e2e/console/ci.sh); each sources this file, and so
# does .ci/run before them, so that formd is built once for both.
#
#   e2e_prepare DIR   Debian's Chromium and a Chinese font (installed if
#                     missing), the e2e packages (npm ci in e2e/), and
#                     formd built into DIR: exports FORMD_BIN, or keeps
#                     the one already exported.
#   e2e_test FILE...  node --test over the files, one at a time; fails if
#                     a formd or a Chromium they started outlives them.

e2e_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

e2e_prepare() {
  local dir=$1
  # Debian's Chromium, never a downloaded browser build.
  if [ ! -x /usr/bin/chromium ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  fi
  # A Chinese font, for the zh pages and their screenshots; the tests do
  # not depend on it.
  if ! fc-list :lang=zh 2>/dev/null | grep -q .; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei; } ||
      echo "no Chinese font: the zh screenshots will show boxes"
  fi
  /usr/bin/chromium --version 2>/dev/null
  # playwright-core and read-excel-file, pinned in e2e/package-lock.json.
  # Install scripts are not needed (playwright-core downloads nothing: the
  # browser is Debian's) and are not run.
  (cd "$e2e_root/e2e" && npm ci --ignore-scripts --no-audit --no-fund)
  if [ -n "${FORMD_BIN:-}" ] && [ -x "$FORMD_BIN" ]; then
    echo "formd: $FORMD_BIN (already built)"
    return
  fi
  (cd "$e2e_root" && go build -o "$dir/formd" ./cmd/formd)
  export FORMD_BIN="$dir/formd"
  echo "formd: built into $FORMD_BIN"
}

e2e_test() {
  local run rc=0 left=
  # The tests' temporary directories (formd's data, Chromium's profiles,
  # whatever else they or Chromium make) all go under $run, which is in
  # formd's and Chromium's command lines: what outlives the tests is
  # found by it, and what they left on disk goes with it.
  run=$(mktemp -d -t formd-e2e-run.XXXXXX)
  TMPDIR=$run node --test --test-concurrency=1 "$@" || rc=$?
  for _ in $(seq 1 50); do
    left=$(pgrep -f -- "$run/" || true)
    [ -z "$left" ] && break
    sleep 0.2
  done
  if [ -n "$left" ]; then
    echo "still running after the tests (now killed):"
    ps -o pid=,args= -p "$(echo $left | tr ' ' ,)" | cut -c1-300 || true
    # shellcheck disable=SC2086 # one pid a word
    kill -9 $left 2>/dev/null || true
    [ "$rc" -ne 0 ] || rc=1
  fi
  rm -rf "$run"
  return "$rc"
}
