// Package deploy builds flightns as people deploy catalogs and runs it
// that way, and holds nothing but tests: the container image (make image),
// the compose file (deploy/compose.yaml) and the Helm chart
// (deploy/helm/flightns), each run by a real container runtime (podman
// with runc) with no registry and no network.
//
// Its tests carry the build tag deploy, so that `go test ./...` does not
// build an image: `make test-deploy` runs them (and .ci/run calls it after
// `make test`). TestMain builds the image once with scripts/build-image.sh,
// removes it, and loads it back from the OCI archive the script wrote, so
// every test runs the image as a user who was handed the archive would.
package deploy
