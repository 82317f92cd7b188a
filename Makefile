# flightns — build, test, run, lint, bench.
#
# The duckdb_arrow build tag enables DuckDB's Arrow API (the embedded SQL
# engine); every target passes it.

GO       ?= go
TAGS     := duckdb_arrow
GOFLAGS_ := -tags $(TAGS)
BIN      := $(CURDIR)/bin
GOLANGCI_LINT_VERSION := v2.15.0
TEST_TIMEOUT ?= 30m
# The S3 server of the tests and benchmarks (run as its own process, never
# linked): internal/minioproc.Version must be the same.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := $(BIN)/minio-$(MINIO_VERSION)

export PATH := $(PATH):/usr/local/go/bin

LANCEDB_DIR := interop/lancedb
BROWSER_DIR := interop/browser

.PHONY: all build server test run bench reliability soak fmt lint vet deps redis-server lancedb browser minio clean fuzz image test-deploy podman helm-tools

all: build

## build: compile bin/flightns (the server and its CLI) and
## bin/flightns-bench (the benchmarks, which `flightns bench` runs)
build: server
	$(GO) build $(GOFLAGS_) -o $(BIN)/flightns-bench ./cmd/flightns-bench

## server: compile bin/flightns alone
server:
	$(GO) build $(GOFLAGS_) -o $(BIN)/flightns ./cmd/flightns

## test: the whole suite against real Redis servers, MinIO and LanceDB
test: deps minio
	$(GO) test $(GOFLAGS_) -timeout $(TEST_TIMEOUT) ./...

## image: the container image localhost/flightns:latest and its OCI
## archive bin/flightns-image.tar (podman load, docker load), built with
## podman from the stripped server, redis-server and what they link: no
## registry, no network (installs podman and runc when missing)
image: redis-server podman
	@scripts/build-image.sh

## test-deploy: build the image and run it, the compose file
## (deploy/compose.yaml) and the Helm chart (deploy/helm/flightns) with
## podman; .ci/run runs it after `make test`
test-deploy: deps minio podman helm-tools
	$(GO) test -tags $(TAGS),deploy -count=1 -timeout 40m ./tests/deploy

## run: start flightns with its defaults (data in ./flightns-data, private
## redis-server); installs only what serving needs (redis-server)
run: redis-server server
	$(BIN)/flightns serve

## bench: measure throughput and latency; JSON report under bench-results/
bench: build lancedb minio
	$(BIN)/flightns-bench

## reliability: the long form of the reliability suite (faults under a
## linearizability check, hostile input, a 10-minute soak); `make test`
## runs its short form. FLIGHTNS_SOAK=30m changes the soak's duration.
reliability: redis-server minio
	$(GO) test $(GOFLAGS_) -count=1 -timeout 100m -v ./tests/reliability -args -long
	$(GO) test $(GOFLAGS_) -count=5 -timeout 30m -v -run TestFailoverKeeps ./redisclaim

## soak: only the soak, for FLIGHTNS_SOAK (default 10m)
soak: redis-server minio
	$(GO) test $(GOFLAGS_) -count=1 -timeout 60m -v -run 'TestSoak' ./tests/reliability -args -long

## deps: install what the tests and the server need when it is missing
deps: redis-server lancedb browser

redis-server:
	@scripts/ensure-redis.sh

## podman: podman with runc and podman-compose (apt-get when missing)
podman:
	@scripts/ensure-podman.sh

## helm-tools: the pinned Helm and kubectl-validate, installed into bin/
## with go install when missing
helm-tools:
	@scripts/ensure-helm.sh

## minio: the pinned MinIO server of the S3 tests and benchmarks, built
## with `go install` into bin/ when missing (about 4 minutes on 2 cores,
## once); internal/minioproc finds it there.
minio: $(MINIO)

$(MINIO):
	@mkdir -p $(BIN)/.minio-build
	@echo "installing the MinIO server $(MINIO_VERSION) into bin/ (go install; a few minutes, once)" >&2
	GOBIN=$(BIN)/.minio-build $(GO) install github.com/minio/minio@$(MINIO_VERSION)
	mv $(BIN)/.minio-build/minio $@
	@rmdir $(BIN)/.minio-build

## lancedb: the pinned LanceDB (Node) of the REST interop tests and the lance
## benchmarks, and the pinned dynalite (a DynamoDB emulator in Node) that
## lance-s3 runs Lance's DynamoDB commit store on, installed from the
## lockfile when missing or out of date.
## Not `npm ci`: the npm registry reachable here serves LanceDB 0.39.0's
## optional native packages for linux-x64 only (darwin-arm64 is a 404), so
## the lockfile cannot list the others and `npm ci` refuses it as out of
## sync; `npm install --no-save` installs exactly the locked versions and
## never rewrites the lockfile.
lancedb: $(LANCEDB_DIR)/node_modules/.package-lock.json

$(LANCEDB_DIR)/node_modules/.package-lock.json: $(LANCEDB_DIR)/package.json $(LANCEDB_DIR)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the interop tests need Node.js (20 or later) and npm" >&2; exit 1; }
	cd $(LANCEDB_DIR) && npm install --no-save --no-audit --no-fund
	@touch $@

## browser: the pinned Playwright (playwright-core, driving Debian's
## /usr/bin/chromium) of the web console's browser test, and the uPlot
## vendored in internal/console/web/vendor/, installed from the lockfile when
## missing or out of date; `npm install --no-save` as for lancedb (the
## locked versions exactly, the lockfile never rewritten).
browser: $(BROWSER_DIR)/node_modules/.package-lock.json
	@scripts/ensure-chromium.sh

$(BROWSER_DIR)/node_modules/.package-lock.json: $(BROWSER_DIR)/package.json $(BROWSER_DIR)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the console's browser test needs Node.js (20 or later) and npm" >&2; exit 1; }
	cd $(BROWSER_DIR) && npm install --no-save --no-audit --no-fund
	@touch $@

## fuzz: every fuzzer for FUZZ_TIME (default 2000 inputs each) from its
## committed seeds, then the plan_scan differential oracle over
## ORACLE_CHECKS random catalogs (`make test` runs 12); `make fuzz
## FUZZ_TIME=5m ORACLE_CHECKS=2000` for a longer hunt
FUZZ_TIME ?= 2000x
ORACLE_CHECKS ?= 500
FUZZERS := planner:FuzzParseFilter planner:FuzzPlanFilter planner:FuzzSpec planner:FuzzSchema \
	internal/restserver:FuzzParseID objstore:FuzzValidateKey internal/lancemanifest:FuzzParseManifestName tests/reliability:FuzzRESTRequest \
	manifesttable:FuzzSQL manifesttable:FuzzSQLGrammar internal/lancemanifest:FuzzRead internal/auth:FuzzBearer internal/auth:FuzzParseRoleMap internal/auth:FuzzParsePassword \
	internal/sqlengine:FuzzGateScanner flightserver:FuzzFlightRPC internal/lancemanifest:FuzzReferences internal/namespace:FuzzRetentionProps internal/namespace:FuzzCompactionProps manifesttable:FuzzTransactionOperation \
	client:FuzzChanges internal/restserver:FuzzAcceptsGzip

fuzz: deps minio
	@set -e; for f in $(FUZZERS); do \
	  pkg=$${f%%:*}; name=$${f##*:}; \
	  echo "fuzz $$pkg $$name ($(FUZZ_TIME))"; \
	  $(GO) test $(GOFLAGS_) -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) ./$$pkg; \
	done
	FLIGHTNS_ORACLE_CHECKS=$(ORACLE_CHECKS) $(GO) test $(GOFLAGS_) -count=1 -timeout 60m -run '^TestPlanScanOracle$$' ./planner

## fmt: gofmt every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## vet: go vet with the build tags
vet:
	$(GO) vet $(GOFLAGS_) ./...

## lint: golangci-lint, pinned, installed into bin/ on first use
lint: $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
	$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) run --build-tags $(TAGS),deploy ./...

$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

clean:
	rm -rf $(BIN) bench-results
