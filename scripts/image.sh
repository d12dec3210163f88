#!/usr/bin/env bash
# Builds formd's image from Containerfile with buildah and runs it once
# with podman until its /readyz passes (and its HEALTHCHECK, formd
# healthcheck, says healthy). Storage is vfs and isolation chroot, so that
# it works unprivileged and inside a container; nothing is pulled.
#
#   scripts/image.sh [BINARY]   (default: a static amd64 build made here)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi
tmp=$(mktemp -d)
root="$tmp/storage"
store=(--root "$root/root" --runroot "$root/run" --storage-driver vfs)
run=("${store[@]}" --runtime runc --cgroup-manager cgroupfs)
limits=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
name="formd-ci-$$"
cleanup() {
  podman "${run[@]}" rm -f "$name" >/dev/null 2>&1 || true
  podman "${run[@]}" volume rm -f "$name-data" >/dev/null 2>&1 || true
  buildah "${store[@]}" rm --all >/dev/null 2>&1 || true
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

ctx="$tmp/context"
mkdir -p "$ctx/data"
if [ -n "${1:-}" ]; then
  cp "$1" "$ctx/formd"
else
  # The commit stamped (formd version): a git worktree gives the go
  # command no VCS stamp of its own.
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  if [ "$commit" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit-dirty"; fi
  version=$(scripts/version.sh 2>/dev/null || echo dev)
  CGO_ENABLED=1 go build -trimpath -tags 'netgo osusergo sqlite_omit_load_extension' \
    -ldflags "-s -w -X github.com/formd/formd/internal/release.version=$version -X github.com/formd/formd/internal/release.commit=$commit -linkmode external -extldflags -static" -o "$ctx/formd" ./cmd/formd
fi
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
cp Containerfile "$ctx/"

buildah "${store[@]}" bud --isolation chroot --format docker -t formd:ci -f "$ctx/Containerfile" "$ctx"
buildah "${store[@]}" inspect --format '{{.Docker.Config.User}} {{.Docker.Config.Volumes}} {{.Docker.Config.Healthcheck.Test}}' formd:ci

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
podman "${run[@]}" run -d --name "$name" --network host "${limits[@]}" -e FORMD_ADDR="127.0.0.1:$port" \
  -v "$name-data:/data" formd:ci >/dev/null
for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  sleep 0.2
done
if ! curl -fsS "http://127.0.0.1:$port/readyz"; then
  echo "the container never became ready:"; podman "${run[@]}" logs "$name"; exit 1
fi
podman "${run[@]}" healthcheck run "$name" && echo "healthcheck: healthy"
podman "${run[@]}" exec "$name" /formd version
echo "uid in the container: $(podman "${run[@]}" top "$name" user | tail -1)"
podman "${run[@]}" stop -t 20 "$name" >/dev/null
