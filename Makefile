# assessd build, code generation and test entry points.
SHELL := /bin/bash
BIN := $(CURDIR)/bin
GO ?= go
# The google/api annotation protos come from this pinned module in the Go module cache.
GOOGLEAPIS_MODULE := github.com/grpc-ecosystem/grpc-gateway@v1.16.0
GENERATED := api/gen api/openapi/openapi.yaml sdk/typescript/src/schema.ts sdk/typescript/src/operations.ts deploy/grafana/dashboards


.PHONY: all build tools deps generate dashboards check-generated test bench bench-oauth run lint fmt lint-openapi lint-deploy sdk qti-check embed-assets webhook-verify

all: build

build:
	$(GO) build -o $(BIN)/assessd ./cmd/assessd

$(BIN)/protoc-gen-go $(BIN)/protoc-gen-connect-go $(BIN)/protoc-gen-connect-openapi &: tools/go.mod
	cd tools && GOBIN=$(BIN) $(GO) install tool

$(BIN)/buf: tools/buf/go.mod
	cd tools/buf && GOBIN=$(BIN) $(GO) install tool

# The Temporal CLI (dev server for `assessd dev` and the integration tests),
# built from the module proxy: no download happens at run time.
$(BIN)/temporal: tools/temporal/go.mod
	cd tools/temporal && GOBIN=$(BIN) $(GO) install tool

# golangci-lint and Temporal's workflowcheck, pinned in their own module so
# their dependencies never reach go.mod (decision 0082).
$(BIN)/golangci-lint $(BIN)/workflowcheck &: tools/lint/go.mod
	cd tools/lint && GOBIN=$(BIN) $(GO) install tool

tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-connect-go $(BIN)/protoc-gen-connect-openapi $(BIN)/temporal $(BIN)/golangci-lint $(BIN)/workflowcheck

# The Debian packages the tests and lint-deploy run (xmllint, PgBouncer,
# Chromium, poppler-utils, Prometheus, Redis, PostgreSQL) and the local
# PostgreSQL and Redis: installed and started as root, else named with the
# command that would (decision 0184).
deps:
	@tools/deps.sh

third_party/googleapis/google/api/annotations.proto:
	dir=$$(cd tools && $(GO) mod download -json $(GOOGLEAPIS_MODULE) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	mkdir -p third_party/googleapis/google/api && \
	install -m 0644 $$dir/third_party/googleapis/google/api/{annotations,http,httpbody}.proto third_party/googleapis/google/api/

generate: tools third_party/googleapis/google/api/annotations.proto
	rm -rf api/gen
	$(BIN)/buf generate
	$(GO) run ./cmd/openapigen api/openapi/openapi.yaml api/openapi/oauth.yaml api/openapi/examples.yaml
	$(MAKE) sdk/typescript/node_modules
	cd sdk/typescript && npm run --silent generate
	$(MAKE) dashboards

tools/dashboards/node_modules: tools/dashboards/package.json tools/dashboards/package-lock.json
	cd tools/dashboards && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Grafana dashboards as code (Grafana foundation SDK, pinned).
dashboards: tools/dashboards/node_modules
	cd tools/dashboards && npm run --silent generate

# CI: regenerate and fail if the committed generated files differ.
check-generated: generate
	@git add -N $(GENERATED) && git diff --exit-code --stat -- $(GENERATED) || \
		{ echo "generated code is stale: run 'make generate' and commit"; exit 1; }

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '^api/gen/')

# gofmt, go vet, golangci-lint (.golangci.yml) and workflowcheck, which
# rejects non-deterministic calls reachable from workflow code.
lint: $(BIN)/golangci-lint $(BIN)/workflowcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^api/gen/'))" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(BIN)/golangci-lint run ./...
	$(BIN)/workflowcheck ./workflows/...

# The packages whose own tests run their SQL.
SQL_PACKAGES := ./internal/store/... ./tenancy/... ./internal/assessment/... ./internal/identity/... \
	./internal/webhooks/... ./internal/outbox/... ./internal/media/... ./internal/audit/... \
	./internal/generation/... ./internal/regeneration/... ./internal/scanning/... ./internal/idempotency/... \
	./internal/classes/... ./internal/delivery/... ./internal/lti/... ./internal/platform/signingkeys/... \
	./activities/...

# QTI_CHECK=1: the QTI export is also scored by the independent player.
# internal/app's end-to-end tests run in parallel and take 3-5 minutes under
# the race detector on two busy cores; the 20-minute bound leaves room for a
# slower machine beyond go test's default 10 minutes per package.
test: deps lint sdk webhook-verify $(BIN)/temporal tools/qti-check/node_modules
	QTI_CHECK=1 $(GO) test -count=1 -race -timeout 20m ./...
	# The packages that own SQL again, with prepared statements (decision 0122),
	# and the random sweeps at full length without the race detector (0210).
	TEST_QUERY_EXEC_MODE=cache_statement $(GO) test -count=1 $(SQL_PACKAGES) ./internal/app/sweeps

bench: $(BIN)/temporal
	$(GO) run ./cmd/benchhttp
	$(GO) run ./cmd/benchsummary
	$(GO) run ./cmd/benchgrading
	$(GO) run ./cmd/benchexchange
	$(GO) run ./cmd/benchwebhooks
	$(GO) run ./cmd/benchdeadlines
	$(GO) run ./cmd/benchexamday
	$(GO) run ./cmd/benchlti
	$(GO) test ./internal/pbjson -run '^$$' -bench JSON -benchtime 2s
	$(GO) test ./internal/assessment/expr -run '^$$' -bench ScoringRules -benchtime 2s

# The OAuth rows compare with an Ory Hydra the operator runs (decision 0124):
# make bench-oauth HYDRA_PUBLIC=http://127.0.0.1:4444 HYDRA_ADMIN=http://127.0.0.1:4445
bench-oauth:
	$(GO) run ./cmd/benchoauth -hydra-public "$(HYDRA_PUBLIC)" -hydra-admin "$(HYDRA_ADMIN)"

run: $(BIN)/temporal
	$(GO) run ./cmd/assessd dev

tools/openapi/node_modules: tools/openapi/package.json tools/openapi/package-lock.json
	cd tools/openapi && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Lint (Redocly) and validate (swagger-parser) the OpenAPI description.
lint-openapi: tools/openapi/node_modules
	cd tools/openapi && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		npx redocly lint --config redocly.yaml ../../api/openapi/openapi.yaml
	cd tools/openapi && node validate.mjs ../../api/openapi/openapi.yaml

sdk/typescript/node_modules: sdk/typescript/package.json sdk/typescript/package-lock.json
	cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript SDK: type-check (with the negative type tests) and build
# the ESM and CommonJS packages. Its tests run inside `make test` against a
# real server (app.TestTypeScriptSDK).
sdk: sdk/typescript/node_modules
	cd sdk/typescript && npm run --silent typecheck && npm run --silent build

# The Standard Webhooks reference verifier (npm standardwebhooks, pinned):
# the webhook integration test checks every delivery with it once installed.
tools/webhook-verify/node_modules: tools/webhook-verify/package.json tools/webhook-verify/package-lock.json
	cd tools/webhook-verify && npm ci --no-audit --no-fund --loglevel=error
	touch $@

webhook-verify: tools/webhook-verify/node_modules

tools/qti-check/node_modules: tools/qti-check/package.json tools/qti-check/package-lock.json
	cd tools/qti-check && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Score exported QTI 3 items with an independent QTI 3 implementation
# (Citolab qti-components, pinned) in Debian's Chromium (apt-get install chromium).
qti-check: tools/qti-check/node_modules
	QTI_CHECK=1 $(GO) test -count=1 -run "TestIndependentPlayerScoresLikeAssessd|TestImportsPackageWrittenByCitolab" ./internal/exchange/
# Helm and kubeconform, built from the module proxy like the Temporal CLI
# (helm takes about 18 minutes cold).
$(BIN)/helm: tools/helm/go.mod
	cd tools/helm && GOBIN=$(BIN) nice -n 19 $(GO) install tool
$(BIN)/kubeconform: tools/kubeconform/go.mod
	cd tools/kubeconform && GOBIN=$(BIN) $(GO) install tool
# Strict JSON schemas for kubeconform, generated offline from the
# Kubernetes OpenAPI document of a pinned release (no schema download).
KUBERNETES_VERSION := v1.34.1
K8S_SCHEMAS := tmp/k8s-schemas
$(K8S_SCHEMAS)/.stamp: tools/kubeconform/k8sschema/main.go
	dir=$$(cd tools/kubeconform && $(GO) mod download -json k8s.io/kubernetes@$(KUBERNETES_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	cd tools/kubeconform && $(GO) run ./k8sschema $$dir/api/openapi-spec/swagger.json $(CURDIR)/$(K8S_SCHEMAS)
# The chart rendered with its defaults and with every option on.
CHART := deploy/helm/assessd
CHART_ALL_ON := --set serviceMonitor.enabled=true --set temporal.tlsSecret=temporal-tls \
	--set temporal.apiKeySecret=temporal-api-key --set temporal.serverName=temporal.example.com
# ServiceMonitor is a Prometheus Operator CRD, not in Kubernetes' OpenAPI
# document, so kubeconform skips it; its fields follow the operator's v1 API.
KUBECONFORM := $(BIN)/kubeconform -strict -summary -skip ServiceMonitor \
	-schema-location '$(K8S_SCHEMAS)/{{ .ResourceKind }}-{{ .Group }}-{{ .ResourceAPIVersion }}.json'
# Deployment files, checked offline (no Prometheus server, Grafana, Docker
# or Kubernetes runs here): Prometheus configuration and alert rules with
# their unit tests (promtool from the Debian prometheus package), the Helm
# chart (helm lint, helm template validated by kubeconform against strict
# schemas), and the compose file (compose-go, the loader of docker compose).
lint-deploy: deps $(BIN)/helm $(BIN)/kubeconform $(K8S_SCHEMAS)/.stamp
	promtool check config deploy/prometheus/prometheus.yml
	promtool check config deploy/prometheus/compose.yml
	promtool check rules deploy/prometheus/alerts.yml
	promtool test rules deploy/prometheus/alerts_test.yml
	$(BIN)/helm lint --strict $(CHART)
	$(BIN)/helm lint --strict $(CHART) $(CHART_ALL_ON)
	$(BIN)/helm template assessd $(CHART) | $(KUBECONFORM)
	$(BIN)/helm template assessd $(CHART) $(CHART_ALL_ON) | $(KUBECONFORM)
	cd tools/compose && $(GO) run ./composecheck ../../deploy/compose.yaml
	cd tools/temporal && $(GO) run ./dynconfigcheck ../../deploy/temporal/dynamicconfig/assessd.yaml

tools/embedassets/node_modules: tools/embedassets/package.json tools/embedassets/package-lock.json
	cd tools/embedassets && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The pinned client scripts, committed where go:embed reads them: htmx for
# the embedded flows, axe-core for their browser tests only.
embed-assets: tools/embedassets/node_modules
	install -m 0644 tools/embedassets/node_modules/htmx.org/dist/htmx.min.js internal/web/embed/htmx.min.js
	install -m 0644 tools/embedassets/node_modules/axe-core/axe.min.js internal/testkit/browsertest/axe.min.js
