#!/usr/bin/env bash
# Builds the flightns container image with podman, with no registry and
# no network: the local image $IMAGE (default localhost/flightns:latest)
# and the OCI archive $ARCHIVE (default bin/flightns-image.tar), which
# `podman load` and `docker load` (Docker 25 or later) read.
#
# The server is built stripped, its version and commit stamped; the root
# filesystem (internal/tools/rootfs) holds it, redis-server, the libraries
# both link, CA certificates and time zones; deploy/image/Containerfile
# puts it in an empty image.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
scripts/ensure-redis.sh
scripts/ensure-podman.sh
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/image/containers.conf}"

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
COMMIT="${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
IMAGE="${IMAGE:-localhost/flightns:latest}"
ARCHIVE="${ARCHIVE:-bin/flightns-image.tar}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
go build -tags duckdb_arrow -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
  -o "$work/flightns" ./cmd/flightns
go run ./internal/tools/rootfs -flightns "$work/flightns" -redis "$(command -v redis-server)" -o "$work/rootfs.tar"
cp deploy/image/Containerfile "$work/"
podman build --quiet --network=none --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" \
  -t "$IMAGE" -f "$work/Containerfile" "$work" >/dev/null
mkdir -p "$(dirname "$ARCHIVE")"
rm -f "$ARCHIVE"
podman save --quiet --format oci-archive -o "$ARCHIVE" "$IMAGE"
echo "image $IMAGE ($VERSION, $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes unpacked); archive $ARCHIVE ($(stat -c %s "$ARCHIVE") bytes)"
