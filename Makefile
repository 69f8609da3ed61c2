# Zimmer developer entry points. `make help` lists them.
# Everything runs from a clean checkout: tools are built into bin/ on demand
# (reusing the Go build cache) and state lives in the git-ignored .data/.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN              := $(CURDIR)/bin
ZIMMER_DEV       := $(BIN)/zimmer-dev
BUF_VERSION      := v1.75.0
TEMPORAL_VERSION := v1.5.1
GOLANGCI_VERSION := v2.15.0
GOLANGCI_LINT    := $(BIN)/golangci-lint-$(GOLANGCI_VERSION)

# go.work modules, resolved only by the targets that use them.
MODULES = $(shell go list -m -f '{{.Dir}}')

# Packages a domain layer must never depend on (see the style guide's dependency rules).
DOMAIN_FORBIDDEN := jackc/pgx|google\.golang\.org/grpc|go\.temporal\.io|genproto|google\.golang\.org/protobuf|zimmerhq/zimmer/proto/gen

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Run and test

.PHONY: run
run: zimmer-dev ## Run Postgres, Temporal (Web UI :8233), all services and the gateway (:8080)
	$(ZIMMER_DEV) run

.PHONY: test
test: zimmer-dev ## Test every go.work module against private Postgres and Temporal, crash tests aside (ARGS=... for go test)
	$(ZIMMER_DEV) test $(ARGS)

.PHONY: test-chaos
test-chaos: zimmer-dev ## The e2e crash tests (kill -9 mid-turn; devstack.CrashTests) against the same (ARGS=...)
	$(ZIMMER_DEV) test-chaos $(ARGS)

.PHONY: screenshots
screenshots: zimmer-dev ## Retake the console's screenshots in docs/screenshots (a browser test; needs chromium)
	$(ZIMMER_DEV) screenshots $(ARGS)

.PHONY: test-short
test-short: zimmer-dev ## Like test, with -short
	$(ZIMMER_DEV) test -short $(ARGS)

# Always rebuilt (cheap with the build cache) so it never runs stale code.
.PHONY: zimmer-dev
zimmer-dev:
	@go build -o $(ZIMMER_DEV) ./deploy/devstack/cmd/zimmer-dev

##@ Database (the `make run` cluster in .data/postgres)

.PHONY: db-up
db-up: zimmer-dev ## Start (or reuse) the dev Postgres and create the service databases
	$(ZIMMER_DEV) db-up

.PHONY: db-down
db-down: zimmer-dev ## Stop the dev Postgres (data is kept)
	$(ZIMMER_DEV) db-down

.PHONY: db-reset
db-reset: db-down ## Stop the dev Postgres, delete its data, start it afresh
	rm -rf "$${ZIMMER_DATA_DIR:-$(CURDIR)/.data}/postgres"
	$(ZIMMER_DEV) db-up

##@ Tools and protobuf

.PHONY: tools
tools: $(BIN)/temporal $(BIN)/buf $(GOLANGCI_LINT) ## Build the pinned temporal CLI, buf and golangci-lint into bin/

$(BIN)/temporal:
	@echo "building temporal CLI $(TEMPORAL_VERSION) (first time: 2-3 min)"
	GOBIN=$(BIN) go install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_VERSION)

# Built from source through the module proxy (no prebuilt binary is fetched);
# the version is in the file name, so a bump rebuilds it.
$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_VERSION) (first time: 2-3 min)"
	GOBIN=$(BIN)/.golangci go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(BIN)/.golangci/golangci-lint $@

$(BIN)/buf:
	@echo "building buf $(BUF_VERSION)"
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

.PHONY: proto
proto: $(BIN)/buf ## Generate Go code and OpenAPI from proto/
	$(BIN)/buf generate
	go run ./gateway/cmd/openapi-finish gateway/openapi/zimmer.swagger.json

.PHONY: docs
docs: ## Regenerate docs/state-machine.md from the lifecycle rules table
	cd services/lifecycle && go generate ./rules

.PHONY: doc-links
doc-links: ## Check that every relative link in README.md, deploy/README.md and docs/ resolves
	go run scripts/doclinks.go

.PHONY: proto-lint
proto-lint: $(BIN)/buf ## Lint the protos
	$(BIN)/buf lint

.PHONY: proto-breaking
proto-breaking: $(BIN)/buf ## Check the protos for breaking changes against main
	$(BIN)/buf breaking --against '.git#branch=main,subdir=proto'

.PHONY: proto-check
proto-check: proto ## Fail when generated code differs from what is committed
	@git diff --exit-code --stat -- proto/gen gateway/openapi || \
		{ echo "generated code is stale: run make proto and commit the result"; exit 1; }
	@changes=$$(git status --porcelain --untracked-files=all -- proto/gen gateway/openapi); \
	if [ -n "$$changes" ]; then \
		echo "$$changes"; echo "generated files are not committed: run make proto and commit them"; exit 1; \
	fi

##@ Code quality

.PHONY: fmt
fmt: ## gofmt every module
	gofmt -w $(MODULES)

.PHONY: vet
vet: ## go vet every go.work module
	@for d in $(MODULES); do echo "go vet $${d#$(CURDIR)/}"; (cd "$$d" && go vet ./...); done

.PHONY: lint
lint: vet layering $(GOLANGCI_LINT) ## golangci-lint (.golangci.yml) in every module, and the domain layering check
	@failed=0; for d in $(MODULES); do \
		echo "golangci-lint $${d#$(CURDIR)/}"; \
		(cd "$$d" && $(GOLANGCI_LINT) run --allow-parallel-runners ./...) || failed=1; \
	done; [ $$failed -eq 0 ]

# Every service (a services/ module with a cmd/) keeps its decisions in
# internal/domain, which may use the standard library (and uuid, and
# lifecycle's published rules) only. A service without one fails: a
# missing domain is decisions living in an adapter, not a pass.
.PHONY: layering
layering: ## Check that every service has internal/domain and that it imports no adapter
	@failed=0; for cmd in services/*/cmd; do \
		svc=$${cmd%/cmd}; d=$$svc/internal/domain; \
		if [ ! -d "$$d" ]; then echo "$$svc has no internal/domain: its decisions belong there (docs/architecture.md)"; failed=1; continue; fi; \
		deps=$$(cd "$$d" && go list -deps ./...) || { failed=1; continue; }; \
		bad=$$(grep -E '$(DOMAIN_FORBIDDEN)' <<<"$$deps" || true); \
		if [ -n "$$bad" ]; then echo "$$d must only use the standard library (and uuid), but depends on:"; echo "$$bad"; failed=1; continue; fi; \
		echo "layering ok: $$d"; \
	done; [ $$failed -eq 0 ]

.PHONY: tidy
tidy: ## go mod tidy in every module
	@for d in $(MODULES); do echo "tidy $${d#$(CURDIR)/}"; (cd "$$d" && go mod tidy); done

##@ Housekeeping

.PHONY: clean
clean: ## Remove bin/ and .data/ (refuses while anything runs from them; kills nothing)
	@go run ./deploy/devstack/cmd/zimmer-dev clean

.PHONY: ci
ci: ## What .ci/run runs: tools, proto-check, vet, lint, doc-links, test, test-chaos
	@for t in tools proto-check vet lint doc-links test test-chaos; do \
		start=$$SECONDS; echo "::: make $$t"; \
		$(MAKE) --no-print-directory $$t; \
		echo "::: make $$t done in $$((SECONDS - start))s"; \
	done
