#!/usr/bin/env bash
# A real S3-compatible server for the upload tests on a bucket: SeaweedFS
# (Apache-2.0) as `weed mini` (master, volume, filer and S3 gateway in one
# process), built from its Go module at a pinned version, never into
# formd's go.mod.
#
#   scripts/s3server.sh build        # prints the weed binary's path
#   scripts/s3server.sh start DIR    # starts it with its data in DIR,
#                                    # prints the lines to export
#
# weed's go.mod has replace directives, so `go install weed@version`
# refuses it: the module is downloaded (go mod download, into the module
# cache) and built in a copy of its own directory. The build takes
# minutes (a big module), so the binary is kept under
# ${FORMD_CACHE:-~/.cache/formd}/weed-VERSION and built again only for
# another version. `start` runs it on free loopback ports with one admin
# identity from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (made up for
# the test when unset) and a bucket formd-test, waits until the S3 API
# answers, and prints FORMD_TEST_S3_URL and the credentials; its pid is
# in DIR/weed.pid, its log in DIR/weed.log.
set -euo pipefail
version=v0.0.0-20261109003541-7506e5f91cd6
module=github.com/seaweedfs/seaweedfs
cache=${FORMD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/formd}
bin=$cache/weed-$version

build() {
  mkdir -p "$cache"
  # One build at a time (CI starts one early in the background).
  exec 9>"$cache/weed.lock"
  flock 9
  if [ -x "$bin" ]; then echo "$bin"; return; fi
  src=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { echo "s3server.sh: go mod download $module@$version gave no directory" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  cp -r "$src" "$work/weed-src"
  chmod -R u+w "$work/weed-src"
  (cd "$work/weed-src" && GOFLAGS=-mod=mod go build -o "$bin.tmp" ./weed)
  mv "$bin.tmp" "$bin"
  echo "$bin"
}

# free_port prints a loopback port that nothing listens on, and whose
# gRPC twin (+10000, weed's default) is free too.
free_port() {
  while :; do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null; then
      echo "$p"; return
    fi
  done 2>/dev/null
}

# http_status prints the status code of GET http://127.0.0.1:PORT/PATH
# (bash's /dev/tcp: no curl needed), or nothing.
http_status() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n' "$2" >&3 &&
    head -1 <&3 | cut -d' ' -f2) 2>/dev/null || true
}

start() {
  dir=$1
  mkdir -p "$dir"
  weed=$(build)
  key=${AWS_ACCESS_KEY_ID:-formdtest}
  secret=${AWS_SECRET_ACCESS_KEY:-formdtest-secret-$RANDOM$RANDOM}
  s3=$(free_port); master=$(free_port); volume=$(free_port); filer=$(free_port)
  AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret setsid "$weed" mini -dir="$dir" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="$master" -volume.port="$volume" -filer.port="$filer" -s3.port="$s3" \
    -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false -bucket=formd-test \
    >"$dir/weed.log" 2>&1 </dev/null &
  echo $! >"$dir/weed.pid"
  # Ready when the S3 API answers and the bucket is in the filer (its
  # HTTP API lists /buckets/NAME/).
  ok=
  for _ in $(seq 1 600); do
    case $(http_status "$s3" /) in 2*|3*|4*) [ "$(http_status "$filer" /buckets/formd-test/)" = 200 ] && { ok=1; break; } ;; esac
    kill -0 "$(cat "$dir/weed.pid")" 2>/dev/null || { echo "weed mini died:" >&2; tail -50 "$dir/weed.log" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$ok" ] || { echo "weed mini's S3 API or its bucket formd-test did not come up (S3 :$s3, filer :$filer)" >&2; tail -50 "$dir/weed.log" >&2; exit 1; }
  echo "export FORMD_TEST_S3_URL='s3://formd-test?endpoint=http://127.0.0.1:$s3'"
  echo "export AWS_ACCESS_KEY_ID='$key'"
  echo "export AWS_SECRET_ACCESS_KEY='$secret'"
}

case ${1:-} in
  build) build ;;
  start) [ -n "${2:-}" ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
  *) echo "usage: $0 build | start DIR" >&2; exit 2 ;;
esac
