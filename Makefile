# guarded-exchange: every target works on a fresh machine with Go installed.
BIN      := bin/guarded-exchange
GO       ?= go
PKGS     := ./...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)

.PHONY: build test bench demo lint fuzz clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/guarded-exchange

# The README's test command: vet, the gofmt check and every test under the
# race detector.
test: lint
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Benchmarks for the speed and memory targets; numbers go in the issue notes.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=2s -timeout 60m $(PKGS)

# A scripted walkthrough on the embedded paper venue: no keys, no network.
demo: build
	./$(BIN) demo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Fuzz the journal record decoder, the MCP argument readers and the stdio
# line filter and the confirmation form's requestState (FUZZTIME=60s each
# by default).
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeRecord -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./wal/
	$(GO) test -run '^$$' -fuzz FuzzArgs -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./mcp/
	$(GO) test -run '^$$' -fuzz FuzzStdioFilter -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./mcp/
	$(GO) test -run '^$$' -fuzz FuzzRequestStateOpen -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./mcp/

clean:
	rm -rf bin
