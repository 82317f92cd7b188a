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

export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build test run bench fmt lint vet deps redis-server clean

all: build

## build: compile bin/flightns
build:
	$(GO) build $(GOFLAGS_) -o $(BIN)/flightns ./cmd/flightns

## test: the whole suite against real Redis servers and an in-process S3 server
test: deps
	$(GO) test $(GOFLAGS_) -timeout $(TEST_TIMEOUT) ./...

## run: start flightns with its defaults (data in ./flightns-data, private redis-server)
run: deps build
	$(BIN)/flightns serve

## bench: measure throughput and latency; JSON report under bench-results/
bench: build
	$(BIN)/flightns bench

## deps: install what the tests and the server need when it is missing
deps: redis-server

redis-server:
	@scripts/ensure-redis.sh

## fmt: gofmt every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## vet: go vet with the build tags
vet:
	$(GO) vet $(GOFLAGS_) ./...

## lint: golangci-lint, pinned, installed into bin/ on first use
lint: $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
	$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION) run --build-tags $(TAGS) ./...

$(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

clean:
	rm -rf $(BIN) bench-results
