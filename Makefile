# flowgen developer targets. `make help` lists them.

GO        ?= go
# Golden packages of the generator live under testdata, which ./... skips.
PKGS      := ./... $(patsubst %/,./%,$(dir $(wildcard gen/testdata/*/connector.yaml gen/testdata/*/schemas/types_gen.go gen/testdata/flows/doc.go)))
# Fuzz targets run briefly by `make test`: package:target:executions (a few
# seconds each on 2 cores). Counts, not durations: a time budget makes the
# fuzz coordinator fail with "context deadline exceeded" on a loaded
# machine. FUZZTIME=30s (or 100000x) overrides every target's budget.
FUZZ      := ./runtime:FuzzDecode:50000x ./runtime/wasmabi:FuzzReaders:20000x ./connectorspec:FuzzParseSpec:3000x ./flowir:FuzzParseFlow:20000x ./runtime/idemkey:FuzzEncode:200000x ./runtime/runtype:FuzzParse:20000x ./gen:FuzzGenerate:500x
FUZZTIME  ?=
# What a confined connector's module links from flowgen, linted as wasip1
# builds it (the guest's files exist only there).
WASMPKGS  := ./runtime ./runtime/wasmabi ./runtime/wasmguest

.PHONY: help build services test unit fuzz chaos lint bench bench-postgres bench-certify demo verify

help: ## List targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## Compile every package, and flowgen, registryd and flowgen-vet into ./bin.
	$(GO) build $(PKGS)
	$(GO) build -o bin/ ./cmd/flowgen ./cmd/registryd ./cmd/flowgen-vet

services: ## Install and start what the tests need (PostgreSQL, bubblewrap, MinIO, cosign), idempotently.
	.ci/services.sh

test: services ## Everything CI runs: lint, race-enabled tests, fuzz smoke, chaos (starts the services first).
	$(MAKE) lint unit fuzz chaos

unit: ## Run the test suite with the race detector (and, without it, the confined-connector tests and the certification corpus it would make too slow).
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	$(GO) test -count=1 ./runtime/wasmhost
	$(GO) test -count=1 -timeout 30m ./certify

fuzz: ## Run each fuzz target briefly (FUZZTIME overrides the budget).
	@set -e; for t in $(FUZZ); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		budget=$${FUZZTIME:-$$budget}; \
		echo "fuzz $$pkg $$name ($$budget)"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$$budget -fuzzminimizetime=100x $$pkg; \
	done

chaos: ## Chaos runs on PostgreSQL (they stop and restart the server, so they run alone, one package at a time).
	$(GO) test -tags chaos -count=1 -p 1 -run '^TestChaos(PostgresRestart)?$$' ./runtime/chaos ./registry

lint: ## gofmt, go vet, staticcheck and the import layers (internal/layers).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags chaos $(PKGS)
	$(GO) tool staticcheck -tags chaos $(PKGS)
	GOOS=wasip1 GOARCH=wasm $(GO) vet $(WASMPKGS)
	@# U1000 off: the guest's roots are go:wasmexport functions the host calls, which staticcheck cannot see.
	$(GO) build -o $(CURDIR)/bin/staticcheck honnef.co/go/tools/cmd/staticcheck && GOOS=wasip1 GOARCH=wasm bin/staticcheck -checks=inherit,-U1000 $(WASMPKGS)
	$(GO) test -count=1 ./internal/layers

bench: ## Benchmarks with figures and ratios against in-run baselines (the retention soak takes 12 minutes; FLOWGEN_SOAK=1m shortens it).
	$(GO) test -run='^$$' -bench=. -benchmem -timeout 90m $(PKGS)
	bench/postgres.sh
	bench/certify.sh

bench-postgres: ## PostgreSQL node executions/s (1/2/4 processes) and protocol cost vs River and DBOS, same database, ratios last.
	bench/postgres.sh

bench-certify: ## Certification time of charge and normalize, before the sandbox and now, with the ratio.
	bench/certify.sh

demo: ## The main job end to end: generate, run, certify, registry, publish, pull, build, console (KEEP=1 leaves the console and registry up).
	.ci/postgres.sh
	.ci/bubblewrap.sh
	$(GO) run ./examples/demo $(if $(KEEP),--keep --stay)

verify: ## Check generated artefacts are up to date (schemas, goldens).
	$(GO) test ./schemas -run TestSchemasInSync
