# slotmeta — the two set-up commands are `make run` and `make test`.
GO       ?= go
BIN      := bin/slotmeta
DATA_DIR ?= ./data
# The race detector doubles build time on 2 cores; it stays on for `make test`.
TEST_FLAGS ?= -race -count=1 -timeout 25m

.PHONY: run build test test-short generate lint bench fmt clean

run: build
	$(BIN) --data-dir $(DATA_DIR)

build:
	$(GO) build -o $(BIN) ./cmd/server

test:
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

# Without the race detector: a quicker loop while developing.
test-short:
	$(GO) test -count=1 ./...

generate:
	$(GO) generate ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=1s ./... | tee bench/latest.txt

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

clean:
	rm -rf bin
