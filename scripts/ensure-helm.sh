#!/usr/bin/env bash
# Installs the pinned Helm and kubectl-validate into bin/ when missing
# (go install from the Go module proxy; a few minutes once): the chart's
# tests lint and render it with Helm and validate what it renders against
# the Kubernetes schemas, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
HELM_VERSION=v4.3.2
KUBECTL_VALIDATE_VERSION=v0.0.4
install() { # install <binary> <module path>@<version>
  local bin="bin/$1" tmp="bin/.$1-build"
  [ -x "$bin" ] && return 0
  echo "installing $2 into bin/ (go install; a few minutes, once)" >&2
  mkdir -p "$tmp"
  GOBIN="$PWD/$tmp" go install "$2"
  mv "$tmp/$(basename "${2%@*}")" "$bin"
  rmdir "$tmp"
}
install "helm-$HELM_VERSION" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
install "kubectl-validate-$KUBECTL_VALIDATE_VERSION" "sigs.k8s.io/kubectl-validate@$KUBECTL_VALIDATE_VERSION"
