# slotmeta — the two set-up commands are `make run` and `make test`.
GO       ?= go
BIN      := bin/slotmeta
DATA_DIR ?= ./data
# The race detector doubles build time on 2 cores; it stays on for `make test`.
TEST_FLAGS ?= -race -count=1 -timeout 25m
# Node tools, run through npx at pinned versions; neither `make build` nor
# `make test` needs Node (the Swagger UI files are vendored into web/).
REDOCLY_VERSION    ?= 2.77.0
SWAGGER_UI_VERSION ?= 5.35.0

SIM_SCENARIOS ?= internal/sim/testdata/*.sim

.PHONY: sim chaos run build dist test test-short generate lint lint-spec update-swagger-ui bench soak scale fmt clean

run: build
	$(BIN) --data-dir $(DATA_DIR)

# A pure-Go binary: Pebble then keeps its memtables and block cache in Go
# memory instead of glibc malloc arenas, whose fragmentation made RSS creep
# for as long as data grew (bench/README.md, soak).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$$(git describe --always --dirty 2>/dev/null || echo unknown)" -o $(BIN) ./cmd/server

# Release tarballs: dist/slotmeta-VERSION-OS-ARCH.tar.gz for each platform
# (a pure-Go, trimmed binary; README.md, docs/runbook.md, the systemd unit and
# its sysusers.d file, the Prometheus rules and dashboard), and dist/SHA256SUMS.
# Files are owned by root and dated at the commit, so the same commit makes
# the same tarballs. VERSION: `git describe` (a tag v0.x.y when there is one).
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
DIST_DIR       ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64
dist:
	rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR)
	set -e; when=$$(git log -1 --format=%ct 2>/dev/null || echo 0); \
	for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=slotmeta-$(VERSION)-$$os-$$arch; stage=$(DIST_DIR)/$$name; \
	  mkdir -p $$stage/deploy $$stage/docs; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $$stage/slotmeta ./cmd/server; \
	  cp README.md $$stage/; cp docs/runbook.md $$stage/docs/; \
	  cp -r deploy/slotmeta.service deploy/slotmeta.sysusers deploy/prometheus $$stage/deploy/; \
	  tar -C $(DIST_DIR) --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$$when -cf - $$name | gzip -n > $(DIST_DIR)/$$name.tar.gz; \
	  rm -rf $$stage; \
	done; \
	cd $(DIST_DIR) && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

test:
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

# Every scenario of the control-plane simulator (package sim): the real
# controller, balancer and task executor on a simulated clock, up to 1 000
# nodes; reports, and plots in bin/sim/. Fails when an outcome is not as
# expected. `make test` runs the short scenarios (internal/sim/testdata/short).
sim:
	$(GO) run ./cmd/slotsim -out bin/sim $(SIM_SCENARIOS)

# Without the race detector: a quicker loop while developing.
test-short:
	$(GO) test -count=1 ./...

# Regenerates committed code: client/client.gen.go from openapi.yaml
# (oapi-codegen, a tool of go.mod: offline once the module cache has it).
generate:
	$(GO) generate ./...

# gofmt, go vet, staticcheck (a tool of go.mod), and the generated templ
# files must be what `templ generate` makes of the .templ sources.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@before=$$(cat $$(git ls-files '*_templ.go') | sha256sum); \
	$(GO) tool templ generate -path internal/console >/dev/null 2>&1 || { echo "templ generate failed"; exit 1; }; \
	after=$$(cat $$(git ls-files '*_templ.go') | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "templ: the generated *_templ.go files were stale (now regenerated: commit them)"; exit 1; fi

# Lints openapi.yaml with Redocly's recommended rules (redocly.yaml says
# which are off and why). Needs Node >= 20.19 and, the first time, the npm
# registry. The Go contract test (internal/contract) validates the spec too,
# in `make test`.
REDOCLY := REDOCLY_TELEMETRY=off NO_UPDATE_NOTIFIER=1 npx --yes @redocly/cli@$(REDOCLY_VERSION)
lint-spec:
	$(REDOCLY) lint openapi.yaml

# Re-vendors Swagger UI for /docs from the npm package swagger-ui-dist.
update-swagger-ui:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent swagger-ui-dist@$(SWAGGER_UI_VERSION) >/dev/null && \
	tar xzf swagger-ui-dist-$(SWAGGER_UI_VERSION).tgz && \
	cp package/swagger-ui-bundle.js package/swagger-ui.css package/LICENSE package/NOTICE $(CURDIR)/web/static/swagger/ && \
	rm -rf $$tmp

# The Go micro-benchmarks (also in bench/latest.txt) and cmd/slotbench against a
# 3-node cluster on 127.0.0.1 (every workload at c=1/16/64); the report lands in
# bench/results/. BENCH_DURATION=5s per run; see bench/run.sh for the other knobs.
# bench/compare-etcd.sh runs the same workloads against etcd side by side.
bench:
	GO=$(GO) bench/run.sh

# scale: 3 capped nodes on network-namespace hosts, 3 more join, the balancer
# settles, the 3 are drained back out; throughput of each phase
# (bench/scale.sh; root, iproute2, cgroup v1 cpu). Results in bench/results/.
scale:
	GO=$(GO) bench/scale.sh

# soak: 10 minutes of rotating load on a 3-node cluster; memory and goroutines must stay flat.
soak:
	GO=$(GO) bench/soak.sh

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

clean:
	rm -rf bin

# Randomized fault schedules (CHAOS_SEEDS of them, CHAOS_DURATION each) with
# the history checks of internal/chaos, the overload tests and 100k fuzzed
# HTTP requests. Each schedule runs a 4-node cluster (2 groups of 3 replicas)
# under leader transfers, restarts, isolated nodes, partitions, one-way and
# lossy links, slow fsync, a follower lagging until it installs a snapshot,
# replica moves while the controller leader is lost, and moves followed by
# restarts of the nodes they changed. The summary lands in
# chaos/results/<UTC time>.txt: per schedule the lines "seed=<seed> faults:",
# "ops:", "idempotency:", "cluster:" (snapshots, moves, dropped messages,
# delayed fsyncs) and "checks:" (violations, lost writes, duplicate applies,
# hash-slot checks, watch-history checks, snapshot installs, moves done) and
# "watch:" (the change feed followed through the schedule: streams, resumes
# on another node, changes, acknowledged puts found once), then a TOTAL line
# summed over the "checks:" lines, a WATCH line summed over the "watch:"
# lines and a FAULTS line (faults injected by kind). No
# snapshot installed in the whole run fails it. A linearizability
# violation's porcupine visualization is written next to it (violation-*.html).
# Then availability on separate hosts (TestAvailability: three processes on
# network-namespace hosts, as root): AVAILABILITY_ROUNDS faults of each kind
# that hits a group leader (cut off, SIGKILL) and half as many of the others
# (a follower cut off, the controller leader cut off, 30% loss on the
# leader's link), each measured for how long writes on the majority side
# are refused or hang; the table per kind ends the summary (AVAILABILITY
# lines), next to the safety checks of the same histories. Then
# TestQuiesceAvailability: QUIESCE_ROUNDS rounds of a quiesced cluster (8 idle
# groups, --quiesce) whose leader node is killed or cut off, measured per
# group until a write is acknowledged, and of wake reads that cost an
# election (the "quiesce availability" line). And TestKillsAfterPlacementChanges:
# on separate hosts, kill -9 of the nodes a replica move and a drain changed,
# under history clients. And TestPausedNodesServeNoStaleReads: SIGSTOP of a
# group leader (1× and 3× the election timeout), the controller leader (2×) and
# a follower (4×) under history clients and readers pinned to each node. And
# TestDiskFaultsAvailability: AVAILABILITY_ROUNDS/2 episodes each of a group
# leader's disk filled under its reserve and a follower's under half of it
# (each node's data directory a tmpfs of its own), measured as the others.
QUIESCE_ROUNDS ?= 6
CHAOS_SEEDS ?= 50
CHAOS_DURATION ?= 5s
AVAILABILITY_ROUNDS ?= 20
chaos: SHELL := /bin/bash
chaos:
	mkdir -p chaos/results
	out=chaos/results/$$(date -u +%Y%m%dT%H%M%SZ).txt; log=$${out%.txt}.log; \
	CHAOS_SEEDS=$(CHAOS_SEEDS) CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_VIS_DIR=$(CURDIR)/chaos/results FUZZ_REQUESTS=100000 \
		AVAILABILITY_ROUNDS=$(AVAILABILITY_ROUNDS) QUIESCE_ROUNDS=$(QUIESCE_ROUNDS) \
		$(GO) test -count=1 -timeout 150m -v -run 'TestShortChaos|TestOverload|TestHTTPFuzz|TestAvailability|TestQuiesceAvailability|TestKillsAfterPlacementChanges|TestPausedNodesServeNoStaleReads|TestDiskFaultsAvailability' ./internal/chaos/ 2>&1 \
		| tee $$log | grep -aE '^(=== RUN|--- |ok|FAIL|PASS|[[:space:]]+[a-z_]+_test\.go:)' | tee $$out; \
	status=$${PIPESTATUS[0]}; \
	if [ $$status -ne 0 ]; then \
		grep -a -m1 -A40 -E '^(panic:|fatal error:)' $$log | tee -a $$out; \
		echo "the whole output (servers' logs included): $$log (CHAOS_SEED=<seed> replays one schedule)" | tee -a $$out; \
	fi; \
	awk '/ seed=[0-9]+ checks: /{ n++; lq = 0; lv = 0; for (i = 1; i <= NF; i++) { sub(/;$$/, "", $$i); split($$i, kv, "="); \
		if (kv[1] == "violations") { v += kv[2]; lv = kv[2] } if (kv[1] == "lost") l += kv[2]; if (kv[1] == "duplicate_applies") d += kv[2]; \
		if (kv[1] == "snapshot_installs") s += kv[2]; if (kv[1] == "moves_done") m += kv[2]; if (kv[1] == "move_violations") mv += kv[2]; \
		if (kv[1] == "quiesce" && kv[2] == "true") lq = 1; if (kv[1] == "watch_violations") wv += kv[2] } if (lq) { q++; qv += lv } } \
		/ seed=[0-9]+ watch: /{ ws++; for (i = 1; i <= NF; i++) { split($$i, kv, "="); if (kv[1] == "streams") wst += kv[2]; if (kv[1] == "resumed_elsewhere") wel += kv[2]; \
			if (kv[1] == "cut_by_restart") wcut += kv[2]; if (kv[1] == "changes") wch += kv[2]; if (kv[1] == "acked_puts_checked") wap += kv[2] } } \
		/ seed=[0-9]+ faults: / { if (match($$0, /faults: [0-9]+ \([^)]*\)/)) { f = substr($$0, RSTART, RLENGTH); sub(/^faults: [0-9]+ \(/, "", f); sub(/\)$$/, "", f); \
			k = split(f, parts, ", "); for (i = 1; i <= k; i++) { split(parts[i], kn, " "); byKind[kn[1]] += kn[2]; nf += kn[2] } } } \
		END { printf "TOTAL schedules=%d violations=%d lost=%d duplicate_applies=%d snapshot_installs=%d moves_done=%d move_violations=%d quiesce_schedules=%d quiesce_violations=%d\n", n, v, l, d, s, m, mv, q, qv; \
			printf "WATCH schedules=%d streams=%d resumed_elsewhere=%d cut_by_restart=%d changes=%d acked_puts_checked=%d watch_violations=%d\n", ws, wst, wel, wcut, wch, wap, wv; \
			printf "FAULTS total=%d", nf; for (k in byKind) printf " %s=%d", k, byKind[k]; printf "\n"; \
			if (n > 0 && s == 0) { print "FAIL: no snapshot was installed in any schedule"; exit 1 } }' $$out | tee -a $$out; \
	summary=$${PIPESTATUS[0]}; \
	grep -a -o 'availability: kind=.*' $$out | sed 's/^availability: /AVAILABILITY /' | tee -a $$out; \
	test $$status -eq 0 && test $$summary -eq 0
