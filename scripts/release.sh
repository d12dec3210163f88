#!/usr/bin/env bash
# Builds formd's release binaries: static linux/amd64 and linux/arm64
# executables (no libc needed on the target, so they run on any Linux and
# in a FROM scratch image), the version and commit stamped, with
# SHA256SUMS. The SQLite driver is cgo (mattn/go-sqlite3): amd64 links
# with the machine's gcc, arm64 with Debian's cross compiler
# (gcc-aarch64-linux-gnu), both statically against glibc. netgo and
# osusergo keep the resolver and user lookups in Go (glibc's would need
# its shared NSS modules at run time); sqlite_omit_load_extension drops
# SQLite's dlopen, which formd does not use.
#
#   scripts/release.sh [VERSION]     (default: scripts/version.sh)  → dist/
#
# On a fresh Debian/Ubuntu machine it installs the cross compiler and, to
# run the arm64 binary once as a check, qemu-user-static.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

version=${1:-$(scripts/version.sh)}
commit=$(git rev-parse --short=12 HEAD)
out=$(realpath -m "${DIST:-dist}")

need=()
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v file >/dev/null || need+=(file)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi

rm -rf "$out"
mkdir -p "$out"
# Built from a clean clone of HEAD: a release is what is committed, and
# the go command stamps the commit (vcs.revision, which formd version
# prints) only where .git is a directory, not in a git worktree.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git clone --quiet --no-checkout . "$src"
git -C "$src" checkout --quiet "$(git rev-parse HEAD)"
# The version goes into internal/release (formd version, and what the data
# records as the release that wrote it) and into main.version, which
# printed it before internal/release existed; -X on a name a build does
# not have is ignored. The commit is the build's own VCS stamp
# (-buildvcs=true: fail rather than build without it), and stamped too
# (internal/release.commit), so that a build whose VCS stamp is lost
# (issue 34: -buildvcs=false said "commit unknown") still names it.
commit=$(git -C "$src" rev-parse --short=12 HEAD)
ldflags="-s -w -X main.version=$version -X github.com/formd/formd/internal/release.version=$version -X github.com/formd/formd/internal/release.commit=$commit"
build() { # GOARCH CC
  local arch=$1 cc=$2 bin="$out/formd-$version-linux-$1"
  CGO_ENABLED=1 GOOS=linux GOARCH="$arch" CC="$cc" \
    go -C "$src" build -trimpath -buildvcs=true -tags 'netgo osusergo sqlite_omit_load_extension' \
      -ldflags "$ldflags -linkmode external -extldflags -static" -o "$bin" ./cmd/formd
  echo "$bin: $(file -b "$bin")"
  if file -b "$bin" | grep -q 'dynamically linked'; then
    echo "$bin is dynamically linked"; exit 1
  fi
}
build amd64 gcc
build arm64 aarch64-linux-gnu-gcc
(cd "$out" && sha256sum formd-* >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)

# Each binary says its version and commit; the arm64 one under qemu.
check() { # binary [runner]
  local got
  got=$("${@:2}" "$1" version)
  echo "  $got"
  case "$got" in
    *"$version"*"$commit"*) ;;
    *) echo "$1 version does not name $version and $commit"; exit 1 ;;
  esac
}
check "$out/formd-$version-linux-amd64"
check "$out/formd-$version-linux-arm64" qemu-aarch64-static
cat "$out/SHA256SUMS"
